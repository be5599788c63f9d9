# Run on the GPU host from the repository root: bash bench/results/experiments/sweep48/bench.sh (results under $OUT).
# The rows of #9 that were short of torch.compile on the H200 (bench/results/h200-large.*), each case and row length
# in a process of its own (sweep 34f: a 256 MB row right after another length's 1 GB row in one process is slower),
# 256 MB, 5 rounds; the layer norm of 32K also at 1 GB.
. scripts/gpu-env.sh
{ nvidia-smi --query-gpu=name --format=csv,noheader; date; } > $OUT/bench-gpu.txt 2>&1
one() { FUSER_CACHE=0 timeout 170 python3 -u bench/run.py --rounds 5 --json $OUT/$1.json "${@:2}" > $OUT/$1.txt 2>&1; }
one broadcast --cases broadcast_add --min-bytes 256M --max-bytes 256M
one rms-bf16-8k --cases rms_norm --dtypes bfloat16 --hidden 8192 --min-bytes 256M --max-bytes 256M
one layer-f32-32k --cases layer_norm --dtypes float32 --hidden 32768 --min-bytes 256M
date >> $OUT/bench-gpu.txt
