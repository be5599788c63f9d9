# Run on the GPU host from the repository root: bash bench/results/experiments/sweep53/call.sh (results under $OUT).
# The GPU suite at this code on whatever card comes, the failures' lines, then the host overhead with its
# side-by-side torch eager reference, then the host breakdown of one pointwise hit.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; git log --oneline -1 2>/dev/null; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 220 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
cat /tmp/gt/shard.*.log > $OUT/shards.txt 2>/dev/null
grep -h "^FAILED\|^ERROR" /tmp/gt/shard.*.log | head -40 > $OUT/failures.txt
timeout 90 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
timeout 60 python3 scripts/gpu_host_breakdown.py pointwise > $OUT/breakdown.txt 2>&1
date >> $OUT/gpu.txt
