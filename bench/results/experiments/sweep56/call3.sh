# Run on the GPU host from the repository root: bash bench/results/experiments/sweep56/call3.sh (results under $OUT).
# The GPU suite at the session's final code; then, on an H200, the whole bench at 256 MB, else call2.sh's searches.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 330 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
if grep -q H200 $OUT/gpu.txt; then
  FUSER_CACHE=0 timeout 220 python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 --commit "$COMMIT" --json $OUT/h200-256.json > $OUT/h200-256.txt 2>&1
  date >> $OUT/gpu.txt
else
  bash bench/results/experiments/sweep56/call2.sh
fi
