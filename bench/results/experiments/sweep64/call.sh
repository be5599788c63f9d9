# Run on the GPU host from the repository root: bash bench/results/experiments/sweep64/call.sh (results under $OUT).
# On an H200: sweep59/call.sh (the GPU suite, then the whole bench at 256 MB). On any other card: the whole bench at
# 256 MB alone, for at most BENCH_SECONDS (default 240), into $OUT/bench-256.txt and .json, to set beside the last run
# on that card (bench/results/h100-256.txt for an H100); the suite passed on H100s at this code in sweep 63.
. scripts/gpu-env.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash bench/results/experiments/sweep59/call.sh
else
  { nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
  FUSER_CACHE=0 timeout "${BENCH_SECONDS:-240}" python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 \
    --commit "$COMMIT" --json $OUT/bench-256.json > $OUT/bench-256.txt 2>&1
  date >> $OUT/gpu.txt
fi
