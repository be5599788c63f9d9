#!/usr/bin/env bash
# The GPU tests in N pytest processes side by side, on a GPU host:
#
#   . scripts/gpu-env.sh && bash scripts/gpu-tests.sh [N] [PATH...]     (default: 6 processes, test/)
#
# Their time is mostly compiling (MLIR and ptxas, on the host's cores), so N
# processes on one GPU take about 1/N of the time: on the H200 host (16 cores)
# the 172 tests took 103 s in 6 processes, 430 s in one. The collected tests
# are dealt out round-robin; each process's log is $GPU_TEST_LOGS/shard.K.log
# (default /tmp/gpu-tests). Prints each process's summary line and the total,
# and exits non-zero where any process failed or nothing was collected.
set -u
processes=${1:-6}
shift $(( $# > 0 ? 1 : 0 ))
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(test/)
logs=${GPU_TEST_LOGS:-/tmp/gpu-tests}
mkdir -p "$logs" && rm -f "$logs"/shard.* "$logs"/ids.*  # a run of more processes before left more shards
python3 -m pytest -q --collect-only -p no:cacheprovider -m gpu "${paths[@]}" | grep '::' > "$logs/ids.txt"
count=$(wc -l < "$logs/ids.txt")
[ "$count" -gt 0 ] || { echo "gpu-tests.sh: no GPU tests collected from ${paths[*]}"; exit 1; }
[ "$processes" -le "$count" ] || processes=$count  # an empty shard would run every test
split -n "r/$processes" -d "$logs/ids.txt" "$logs/ids."
pids=()
for ids in "$logs"/ids.[0-9]*; do
  mapfile -t tests < "$ids"
  python3 -m pytest -q -p no:cacheprovider -m gpu "${tests[@]}" > "$logs/shard.${ids##*.}.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
passed=0 failed=0 skipped=0
for log in "$logs"/shard.*.log; do
  summary=$(tail -n 1 "$log")
  echo "$log: $summary"
  for n in $(grep -oE '[0-9]+ passed' <<< "$summary" | cut -d' ' -f1); do passed=$(( passed + n )); done
  for n in $(grep -oE '[0-9]+ (failed|errors?)' <<< "$summary" | cut -d' ' -f1); do failed=$(( failed + n )); done
  for n in $(grep -oE '[0-9]+ skipped' <<< "$summary" | cut -d' ' -f1); do skipped=$(( skipped + n )); done
done
echo "$count collected: $passed passed, $failed failed, $skipped skipped"
exit $status
