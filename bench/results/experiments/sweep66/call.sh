# Run on the GPU host from the repository root: bash bench/results/experiments/sweep66/call.sh (results under $OUT).
# On an H200: sweep65/call.sh (the GPU suite, the bench at 256 MB, the wide mid-offset fuzz). On another card: with
# LAYOUTS_ONLY=1, only test/test_random_layouts.py's GPU tests (the derandomized draws that changed at 523ccef, the
# mid-offset test among them) into $OUT/layouts.txt; else the GPU suite alone (sweep58/call.sh's way).
. scripts/gpu-env.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash bench/results/experiments/sweep65/call.sh
  exit
fi
if [ -z "${LAYOUTS_ONLY:-}" ]; then
  EXPERIMENT_SECONDS=1 bash bench/results/experiments/sweep58/call.sh
  exit
fi
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
PYTEST_ADDOPTS="--durations=4" GPU_TEST_LOGS=/tmp/gt bash scripts/gpu-tests.sh 2 test/test_random_layouts.py > $OUT/layouts.txt 2>&1
echo "rc=$?" >> $OUT/layouts.txt
cat /tmp/gt/shard.*.log >> $OUT/layouts.txt
date >> $OUT/gpu.txt
