# Run on the GPU host from the repository root: bash bench/results/experiments/sweep47/call2.sh (results under $OUT).
# Session 47's second call: the GPU suite at this code, then the write-only broadcast's block shape on this card.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; for f in /tmp/gt/shard.*.log; do echo "== $f"; grep -E "FAILED|ERROR|passed|failed" $f | tail -30; done >> $OUT/suite.txt 2>&1
date >> $OUT/gpu.txt
FUSER_CACHE=0 timeout 150 python3 -u scripts/gpu_schedule_sweep.py '["", "WRITE_ONLY_BLOCK = (256, 2)", "WRITE_ONLY_BLOCK = (128, 4)", "WRITE_ONLY_BLOCK = (64, 2)"]' broadcast_add:float32:1024,broadcast_add:bfloat16:1024 256 --compile > $OUT/47d.txt 2>&1
date >> $OUT/gpu.txt
