# Run on the GPU host from the repository root: bash bench/results/experiments/sweep47/call2.sh (results under $OUT).
# Session 47's second call: the GPU suite at this code, then on an H200 sweep 46's 43b and decide.py (without its
# second suite and bench), on another card the write-only broadcast's block shape.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1; date; } > $OUT/gpu.txt 2>&1
GPU_TEST_LOGS=/tmp/gt timeout 200 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
pkill -f pytest; for f in /tmp/gt/shard.*.log; do echo "== $f"; grep -E "FAILED|ERROR|passed|failed" $f | tail -30; done >> $OUT/suite.txt 2>&1
date >> $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then  # sweep 46's 43b and decide.py, which only an H200 can answer (sweep 47a)
  C=layer_norm:float32:24576,layer_norm:float32:26624,layer_norm:float32:28672,layer_norm:float32:30720,layer_norm:float32:32768
  S='"SPLIT_WEIGHTS_BYTES = 160 * 1024"'
  FUSER_CACHE=0 timeout 190 python3 -u scripts/gpu_schedule_sweep.py "[\"\", $S, \"\", $S]" $C 256 --compile > $OUT/43b.txt 2>&1
  python3 bench/results/experiments/sweep46/decide.py $OUT/43b.txt fuser_mlir/lowering/gpu_schedule.py > $OUT/decide.txt 2>&1
else
FUSER_CACHE=0 timeout 150 python3 -u scripts/gpu_schedule_sweep.py '["", "WRITE_ONLY_BLOCK = (256, 2)", "WRITE_ONLY_BLOCK = (128, 4)", "WRITE_ONLY_BLOCK = (64, 2)"]' broadcast_add:float32:1024,broadcast_add:bfloat16:1024 256 --compile > $OUT/47d.txt 2>&1
fi
date >> $OUT/gpu.txt
