# Run on the GPU host from the repository root: bash bench/results/experiments/sweep47/call.sh (results under $OUT).
# Session 47, on the H100 that came: weight budgets and the uncached walk for the float32 layer norm of long rows,
# then the whole bench at 256 MB side by side (copy, eager, torch.compile), three rounds.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1; date; } > $OUT/gpu.txt 2>&1
C=layer_norm:float32:24576,layer_norm:float32:32768
FUSER_CACHE=0 timeout 200 python3 -u scripts/gpu_schedule_sweep.py '["", "SPLIT_WEIGHTS_BYTES = 64 * 1024", "SPLIT_WEIGHTS_BYTES = 96 * 1024", "SPLIT_WEIGHTS_BYTES = 192 * 1024", "BLOCK_CACHED = ((256, 2), (256, 4), (512, 4), (512, 8), (1024, 4))"]' $C 256 --compile > $OUT/47a.txt 2>&1
date >> $OUT/gpu.txt
FUSER_CACHE=0 timeout 340 python3 -u bench/run.py --min-bytes 256M --max-bytes 256M --rounds 3 --json $OUT/bench.json > $OUT/bench.txt 2>&1
date >> $OUT/gpu.txt
