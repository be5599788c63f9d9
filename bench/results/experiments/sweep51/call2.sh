# Run on the GPU host from the repository root: bash bench/results/experiments/sweep51/call2.sh (results under $OUT).
# The GPU suite (no host overhead: sweep 51b measured it), then the column-major probe.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 220 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
timeout 60 python3 bench/results/experiments/sweep51/column_major.py > $OUT/column_major.txt 2>&1
date >> $OUT/gpu.txt
