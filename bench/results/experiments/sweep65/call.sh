# Run on the GPU host from the repository root: bash bench/results/experiments/sweep65/call.sh (results under $OUT).
# The GPU suite (sweep58/call.sh's way, its experiment skipped); on an H200 the whole bench at 256 MB for at most
# BENCH_SECONDS (default 230) into $OUT/h200-256.*; then sweep55/fuzz.py on cuda with the wide step kinds and the
# mid offsets (KINDS=wide OFFSETS=mid) for FUZZ_SECONDS (default 120), seed FUZZ_SEED (default 667), into
# $OUT/fuzz.txt.
. scripts/gpu-env.sh
EXPERIMENT_SECONDS=1 bash bench/results/experiments/sweep58/call.sh
if grep -q H200 $OUT/gpu.txt; then
  FUSER_CACHE=0 timeout "${BENCH_SECONDS:-230}" python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 \
    --commit "$COMMIT" --json $OUT/h200-256.json > $OUT/h200-256.txt 2>&1
fi
KINDS=wide OFFSETS=mid FUSER_CACHE=0 timeout $((${FUZZ_SECONDS:-120} + 60)) python3 -u bench/results/experiments/sweep55/fuzz.py \
  cuda "${FUZZ_SEED:-667}" "${FUZZ_SECONDS:-120}" $OUT/fuzz.txt > /dev/null 2>&1
date >> $OUT/gpu.txt
