# Run on the GPU host from the repository root: bash bench/results/experiments/sweep54/call.sh (results under $OUT).
# The GPU suite at the session's code; the host time of column-major hits (relaid calls now remembered); the kernels
# of relaid norms; the host overhead; on an H200 only, the whole bench at 256 MB.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 220 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
timeout 60 python3 bench/results/experiments/sweep53/bias_probe.py > $OUT/bias.txt 2>&1
timeout 60 python3 bench/results/experiments/sweep54/kernel_probe.py > $OUT/kernels.txt 2>&1
timeout 40 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
date >> $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  FUSER_CACHE=0 timeout 230 python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 --commit "$COMMIT" --json $OUT/h200-256.json > $OUT/h200-256.txt 2>&1
  date >> $OUT/gpu.txt
fi
