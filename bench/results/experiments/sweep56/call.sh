# Run on the GPU host from the repository root: bash bench/results/experiments/sweep56/call.sh (results under $OUT).
# The GPU suite at the session's code; then, on an H200, the whole bench at 256 MB, else the script SEARCHES names
# (call2.sh: the four searches) or session 55's two wrong-result searches on the GPU (WORKERS processes each for
# SECONDS_EACH, seeds from SEED0).
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 330 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
if grep -q H200 $OUT/gpu.txt; then
  FUSER_CACHE=0 timeout 220 python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 --commit "$COMMIT" --json $OUT/h200-256.json > $OUT/h200-256.txt 2>&1
elif [ -n "${SEARCHES:-}" ]; then
  bash "$SEARCHES"
else
  for k in $(seq 0 $((WORKERS - 1))); do
    search=fuzz; [ $((k % 2)) = 1 ] && search=inplace_fuzz
    FUSER_CACHE=0 timeout $((SECONDS_EACH + 60)) python3 bench/results/experiments/sweep55/$search.py cuda $((SEED0 + k)) $SECONDS_EACH /tmp/fuzz-$k.txt > /tmp/fuzz-$k.log 2>&1 &
  done
  wait
  cat /tmp/fuzz-*.log | grep "seed" > $OUT/summary.txt
  cat /tmp/fuzz-*.txt > $OUT/fuzz.txt
fi
date >> $OUT/gpu.txt
