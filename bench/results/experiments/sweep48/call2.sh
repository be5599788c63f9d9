# Run on the GPU host from the repository root: bash bench/results/experiments/sweep48/call2.sh (results under $OUT).
# Sweep 48's H200 question, lean (the device budget left after call.sh ran on an H100): BLOCK_OCCUPANCY_CAP (32, 48)
# on the RMS norm bfloat16 of 8K columns, twice in turn, and the host overhead at this code, after the GPU suite.
# Nothing on another card.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
grep -q H200 $OUT/gpu.txt || exit 0
GPU_TEST_LOGS=/tmp/gt timeout 190 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
S1='"BLOCK_OCCUPANCY_CAP = (32, 48)"'
FUSER_CACHE=0 timeout 80 python3 -u scripts/gpu_schedule_sweep.py "[\"\", $S1, \"\", $S1]" rms_norm:bfloat16:8192 256 --compile > $OUT/48b.txt 2>&1
cp fuser_mlir/lowering/gpu_schedule.py /tmp/gs.py; python3 bench/results/experiments/sweep48/decide.py $OUT/48b.txt /tmp/gs.py > $OUT/decide.txt 2>&1
timeout 45 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
date >> $OUT/gpu.txt
