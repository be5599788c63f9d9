# Run on the GPU host from the repository root: bash bench/results/experiments/sweep56/call2.sh (results under $OUT).
# The wrong-result searches on the GPU, SECONDS_EACH seconds, seeds from SEED0: misuse.py (2 processes),
# artifact_fuzz.py (3), sweep55's fuzz.py (3) and inplace_fuzz.py (2).
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } >> $OUT/gpu.txt 2>&1
k=0
for search in sweep56/misuse sweep56/misuse sweep56/artifact_fuzz sweep56/artifact_fuzz sweep56/artifact_fuzz sweep55/fuzz sweep55/fuzz sweep55/fuzz sweep55/inplace_fuzz sweep55/inplace_fuzz; do
  FUSER_CACHE=0 timeout $((SECONDS_EACH + 60)) python3 bench/results/experiments/$search.py cuda $((SEED0 + k)) $SECONDS_EACH /tmp/search-$k.txt > /tmp/search-$k.log 2>&1 &
  k=$((k + 1))
done
wait
date >> $OUT/gpu.txt
for k in $(seq 0 9); do grep "seed" /tmp/search-$k.log || { echo "search $k:"; tail -5 /tmp/search-$k.log; }; done > $OUT/summary.txt
cat /tmp/search-*.txt > $OUT/found.txt
