# Run on the GPU host from the repository root: bash bench/results/experiments/sweep46/call.sh (results under $OUT).
# One device call: the GPU suite at this code, sweep 43b (twice each setting), and where 160 KB wins on the longest
# rows, LONG_ROW_WEIGHTS set, the suite again and the layer norm bench in that state; else sweep 45b.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; sha256sum fuser_mlir/lowering/gpu_schedule.py; git log --oneline -1; date; } > $OUT/gpu.txt 2>&1
suite() {  # $1: label, $2: timeout
  GPU_TEST_LOGS=/tmp/gt timeout $2 bash scripts/gpu-tests.sh 8 test/ > $OUT/suite-$1.txt 2>&1; echo "rc=$?" >> $OUT/suite-$1.txt
  pkill -f pytest; for f in /tmp/gt/shard.*.log; do echo "== $f"; grep -E "FAILED|ERROR|passed|failed" $f | tail -30; done >> $OUT/suite-$1.txt 2>&1
}
suite head 170
C=layer_norm:float32:24576,layer_norm:float32:26624,layer_norm:float32:28672,layer_norm:float32:30720,layer_norm:float32:32768
S='"SPLIT_WEIGHTS_BYTES = 160 * 1024"'
FUSER_CACHE=0 timeout 190 python3 -u scripts/gpu_schedule_sweep.py "[\"\", $S, \"\", $S]" $C 256 --compile > $OUT/43b.txt 2>&1
python3 bench/results/experiments/sweep46/decide.py $OUT/43b.txt fuser_mlir/lowering/gpu_schedule.py > $OUT/decide.txt 2>&1
sha256sum fuser_mlir/lowering/gpu_schedule.py >> $OUT/decide.txt
if grep -q CHANGED $OUT/decide.txt; then
  suite changed 130
  FUSER_CACHE=0 timeout 90 python3 -u bench/run.py --cases layer_norm --dtypes float32 --hidden 32768 --min-bytes 256M --rounds 3 --json $OUT/ln.json > $OUT/ln.txt 2>&1
else
  FUSER_CACHE=0 timeout 200 python3 -u scripts/gpu_schedule_sweep.py '["", "WARP_CACHED = (2, 4, 8)", "WARP_CACHED = (1, 4, 8)"]' layer_norm:float32:128,layer_norm:bfloat16:128,softmax:bfloat16:128,rms_norm:bfloat16:128 256 --compile > $OUT/45b.txt 2>&1
fi
date >> $OUT/gpu.txt
