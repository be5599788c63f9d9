# Run on the GPU host from the repository root: bash bench/results/experiments/sweep55/call2.sh (results under $OUT).
# The GPU suite at the session's code, then fuzz.py on the GPU (WORKERS processes for SECONDS_EACH, seeds from SEED0).
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 230 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
for k in $(seq 0 $((WORKERS - 1))); do
  FUSER_CACHE=0 timeout $((SECONDS_EACH + 60)) python3 bench/results/experiments/sweep55/fuzz.py cuda $((SEED0 + k)) $SECONDS_EACH /tmp/fuzz-$k.txt > /tmp/fuzz-$k.log 2>&1 &
done
wait
date >> $OUT/gpu.txt
cat /tmp/fuzz-*.log | grep "seed" > $OUT/summary.txt
cat /tmp/fuzz-*.txt > $OUT/fuzz.txt
