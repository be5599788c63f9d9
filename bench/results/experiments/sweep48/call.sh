# Run on the GPU host from the repository root: bash bench/results/experiments/sweep48/call.sh (results under $OUT).
# Sweep 48: BLOCK_OCCUPANCY_CAP on the RMS norm bfloat16 of 8K columns (the H200 bench's row short of torch.compile
# in every round), twice in turn; decide.py sets the winner (if any) in the host's copy of gpu_schedule.py; then
# the GPU suite and the bench of that row in that state (with no winner: the suite at this code, the cap off).
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
S1='"BLOCK_OCCUPANCY_CAP = (32, 48)"'; S2='"BLOCK_OCCUPANCY_CAP = (32, 40)"'
FUSER_CACHE=0 timeout 150 python3 -u scripts/gpu_schedule_sweep.py "[\"\", $S1, $S2, \"\", $S1, $S2]" rms_norm:bfloat16:8192 256 --compile > $OUT/48a.txt 2>&1
if grep -q H200 $OUT/gpu.txt; then  # the H200 is #9's card: on another the sweep is measured, nothing set
  python3 bench/results/experiments/sweep48/decide.py $OUT/48a.txt fuser_mlir/lowering/gpu_schedule.py > $OUT/decide.txt 2>&1
else echo "NO CHANGE: not an H200" > $OUT/decide.txt; fi
sha256sum fuser_mlir/lowering/gpu_schedule.py >> $OUT/decide.txt; date >> $OUT/gpu.txt
GPU_TEST_LOGS=/tmp/gt timeout 210 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; for f in /tmp/gt/shard.*.log; do echo "== $f"; grep -E "FAILED|ERROR|passed|failed" $f | tail -30; done >> $OUT/suite.txt 2>&1
date >> $OUT/gpu.txt
if grep -q CHANGED $OUT/decide.txt; then
  FUSER_CACHE=0 timeout 120 python3 -u bench/run.py --rounds 3 --cases rms_norm --dtypes bfloat16 --hidden 8192 --min-bytes 256M --json $OUT/rms.json > $OUT/rms.txt 2>&1
fi
date >> $OUT/gpu.txt
