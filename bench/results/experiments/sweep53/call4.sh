# Run on the GPU host from the repository root: bash bench/results/experiments/sweep53/call4.sh (results under $OUT).
# Reductions of column-major tensors strided and relaid, and the relayout tests on the GPU.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
timeout 150 python3 bench/results/experiments/sweep53/reduction_probe.py > $OUT/reductions.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 150 bash scripts/gpu-tests.sh 8 test/test_relayout.py test/test_column_major.py > $OUT/tests.txt 2>&1; grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -30 >> $OUT/tests.txt
date >> $OUT/gpu.txt
