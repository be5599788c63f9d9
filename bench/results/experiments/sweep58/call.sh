# Run on the GPU host from the repository root: bash bench/results/experiments/sweep58/call.sh (results under $OUT).
# The GPU suite in PROCESSES processes (default 12), SIGINT at SUITE_SECONDS (a process still running prints the
# test it was in and its summary); every process's summary line, FAILED/ERROR lines and 30 slowest tests in
# $OUT/suite.txt (one file: the device tool brings back only a few). Then sweep58/fuse_shared.py for at most
# EXPERIMENT_SECONDS (default 150).
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $COMMIT"; date; } > $OUT/gpu.txt 2>&1
(sleep "$SUITE_SECONDS"; pkill -INT -f "pytest -q -p no:cacheprovider -m gpu") &
watchdog=$!
PYTEST_ADDOPTS="--durations=12" GPU_TEST_LOGS=/tmp/gt timeout $((SUITE_SECONDS + 60)) bash scripts/gpu-tests.sh "${PROCESSES:-12}" test/ > /tmp/suite.txt 2>&1
echo "rc=$?" >> /tmp/suite.txt
kill $watchdog 2>/dev/null
date >> $OUT/gpu.txt
{
  cat /tmp/suite.txt
  echo "== each process's last line"
  for log in /tmp/gt/shard.*.log; do echo "$log: $(tail -n 1 "$log")"; done
  echo "== FAILED / ERROR / interrupted"
  grep -h "^FAILED\|^ERROR\|KeyboardInterrupt" /tmp/gt/shard.*.log
  echo "== slowest"
  grep -h "^[0-9.]*s call" /tmp/gt/shard.*.log | sort -rn | head -30
} > $OUT/suite.txt
FUSER_CACHE=0 timeout "${EXPERIMENT_SECONDS:-150}" python3 -u bench/results/experiments/sweep58/fuse_shared.py 3 > $OUT/fuse_shared.txt 2>&1
date >> $OUT/gpu.txt
