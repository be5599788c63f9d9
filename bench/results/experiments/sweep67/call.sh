# Run on the GPU host from the repository root: bash bench/results/experiments/sweep67/call.sh (results under $OUT).
# On an H200: sweep65/call.sh (the GPU suite, the bench at 256 MB, the wide mid-offset fuzz). On another card, the
# searches that the GPU suite's draws do not reach: WORKERS processes (default 12) for SECONDS_EACH (default 300),
# seeds from SEED0, alternately sweep55/inplace_fuzz.py with OFFSETS=mid (in-place updates of arrays 2 or 3 elements
# past an aligned start) and sweep55/fuzz.py with KINDS=wide OFFSETS=mid; each one's tally into $OUT/summary.txt, its
# failures into $OUT/fuzz.txt.
. scripts/gpu-env.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash bench/results/experiments/sweep65/call.sh
  exit
fi
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
seconds=${SECONDS_EACH:-300} workers=$(seq 0 $((${WORKERS:-12} - 1)))
for k in $workers; do
  search=fuzz; [ $((k % 2)) = 0 ] && search=inplace_fuzz  # inplace_fuzz.py reads no KINDS
  KINDS=wide OFFSETS=mid FUSER_CACHE=0 timeout $((seconds + 90)) python3 -u bench/results/experiments/sweep55/$search.py \
    cuda $((SEED0 + k)) "$seconds" /tmp/fuzz-$k.txt > /tmp/fuzz-$k.log 2>&1 &
done
wait
for k in $workers; do echo "== worker $k: $(tail -n 1 /tmp/fuzz-$k.log)"; done > $OUT/summary.txt
cat /tmp/fuzz-*.txt > $OUT/fuzz.txt 2>/dev/null
date >> $OUT/gpu.txt
