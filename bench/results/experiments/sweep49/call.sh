# Run on the GPU host from the repository root: bash bench/results/experiments/sweep49/call.sh (results under $OUT).
# Session 49's first call: the GPU suite at this code on whatever card comes (the hit path's generated guard changed
# in session 48 and has run only with a stubbed driver); on an H200 also sweep 48's cap question (BLOCK_OCCUPANCY_CAP
# (32, 48) against the shipped setting, twice in turn, RMS norm bfloat16 of 8K columns, 256 MB) and the host overhead.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; date >> $OUT/gpu.txt
grep -h -B30 "passed\|failed" /tmp/gt/shard.*.log | grep -i "error\|fail\|assert" | head -60 > $OUT/failures.txt
grep -q H200 $OUT/gpu.txt || exit 0
S1='"BLOCK_OCCUPANCY_CAP = (32, 48)"'
FUSER_CACHE=0 timeout 80 python3 -u scripts/gpu_schedule_sweep.py "[\"\", $S1, \"\", $S1]" rms_norm:bfloat16:8192 256 --compile > $OUT/48b.txt 2>&1
cp fuser_mlir/lowering/gpu_schedule.py /tmp/gs.py; python3 bench/results/experiments/sweep48/decide.py $OUT/48b.txt /tmp/gs.py > $OUT/decide.txt 2>&1
timeout 45 python3 bench/host_overhead.py --calls 5000 --batches 5 > $OUT/host.txt 2>&1
date >> $OUT/gpu.txt
