# Run on the GPU host from the repository root: bash bench/results/experiments/sweep57/call.sh (results under $OUT).
# The GPU suite in PROCESSES processes (default 8), each one's log kept in $OUT with the 12 slowest tests (pytest --durations). At
# SUITE_SECONDS the processes get SIGINT, so one still running prints the test it was in and its summary; then the
# two misuse searches for SECONDS_EACH (seeds SEED0, SEED0 + 1) where SECONDS_EACH is set.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
(sleep "$SUITE_SECONDS"; pkill -INT -f "pytest -q -p no:cacheprovider -m gpu") &
watchdog=$!
PYTEST_ADDOPTS="--durations=12" GPU_TEST_LOGS=/tmp/gt timeout $((SUITE_SECONDS + 60)) bash scripts/gpu-tests.sh "${PROCESSES:-8}" test/ > $OUT/suite.txt 2>&1
echo "rc=$?" >> $OUT/suite.txt
kill $watchdog 2>/dev/null
date >> $OUT/gpu.txt
cp /tmp/gt/shard.*.log $OUT/
if [ -n "${SECONDS_EACH:-}" ]; then
  for k in 0 1; do
    FUSER_CACHE=0 timeout $((SECONDS_EACH + 60)) python3 bench/results/experiments/sweep56/misuse.py cuda $((SEED0 + k)) $SECONDS_EACH /tmp/search-$k.txt > /tmp/search-$k.log 2>&1 &
  done
  wait
  for k in 0 1; do grep "seed" /tmp/search-$k.log || { echo "search $k:"; tail -5 /tmp/search-$k.log; }; done > $OUT/summary.txt
  cat /tmp/search-*.txt > $OUT/found.txt
  date >> $OUT/gpu.txt
fi
