# Run on the GPU host from the repository root: bash bench/results/experiments/sweep55/call.sh (results under $OUT).
# fuzz.py on the GPU, WORKERS processes side by side for SECONDS each (seeds 100, 101, ...), then their summaries.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
for k in $(seq 0 $((WORKERS - 1))); do
  FUSER_CACHE=0 timeout $((SECONDS_EACH + 120)) python3 bench/results/experiments/sweep55/fuzz.py cuda $((100 + k)) $SECONDS_EACH $OUT/fuzz-$k.txt > $OUT/fuzz-$k.log 2>&1 &
done
wait
date >> $OUT/gpu.txt
cat $OUT/fuzz-*.log | grep "seed" > $OUT/summary.txt
grep -h -A6 "^==" $OUT/fuzz-*.txt | head -150 > $OUT/first.txt
