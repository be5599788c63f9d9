# Run on the GPU host from the repository root: bash bench/results/experiments/sweep59/call.sh (results under $OUT).
# The GPU suite (sweep58/call.sh's way, experiment skipped), then, on an H200 only, the whole bench at 256 MB for
# at most BENCH_SECONDS (default 230); last, chain_math.py (what torch.compile's chain kernel computes sin and tanh with).
EXPERIMENT_SECONDS=1 bash bench/results/experiments/sweep58/call.sh
if grep -q H200 $OUT/gpu.txt; then
  FUSER_CACHE=0 timeout "${BENCH_SECONDS:-230}" python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 \
    --commit "$COMMIT" --json $OUT/h200-256.json > $OUT/h200-256.txt 2>&1
fi
date >> $OUT/gpu.txt
TRITON_CACHE_DIR=/tmp/tc-chain timeout 120 python3 -u bench/results/experiments/sweep59/chain_math.py > $OUT/chain_math.txt 2>&1
