# Run on the GPU host from the repository root: bash bench/results/experiments/sweep53/final.sh (results under $OUT).
# The GPU suite at the session's final code, the reductions of column-major tensors (and the nvFuser-style softmax,
# now one segment), then the host overhead.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
timeout 30 python3 bench/results/experiments/sweep53/reduction_probe.py > $OUT/reductions.txt 2>&1
timeout 40 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
date >> $OUT/gpu.txt
