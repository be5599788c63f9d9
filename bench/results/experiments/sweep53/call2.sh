# Run on the GPU host from the repository root: bash bench/results/experiments/sweep53/call2.sh (results under $OUT).
# The launch probe, the bias probe (relaid column-major calls), and the relayout and column-major tests on the GPU.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
timeout 120 python3 bench/results/experiments/sweep53/launch_probe.py > $OUT/launch.txt 2>&1
timeout 90 python3 bench/results/experiments/sweep53/bias_probe.py > $OUT/bias.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 4 test/test_relayout.py test/test_column_major.py > $OUT/tests.txt 2>&1; grep -h "^FAILED\|^ERROR\|Error" /tmp/gt/shard.*.log | head -30 >> $OUT/tests.txt
date >> $OUT/gpu.txt
