# Run on the GPU host from the repository root: bash bench/results/experiments/sweep53/call3.sh (results under $OUT).
# The replays' allocations through torch.compile's allocator: its cost, the GPU tests of the runtime, the relayout
# and the column-major calls, then the host overhead and the bias probe.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
timeout 60 python3 bench/results/experiments/sweep53/alloc_probe.py > $OUT/alloc.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 8 test/runtime test/test_relayout.py test/test_column_major.py > $OUT/tests.txt 2>&1; grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -30 >> $OUT/tests.txt
timeout 90 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
timeout 90 python3 bench/results/experiments/sweep53/bias_probe.py > $OUT/bias.txt 2>&1
date >> $OUT/gpu.txt
