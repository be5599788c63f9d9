# Run on the GPU host from the repository root: bash bench/results/experiments/sweep52/call.sh (results under $OUT).
# The GPU suite and the host overhead (sweep49/suite.sh), then the column-major probe with new outputs.
bash bench/results/experiments/sweep49/suite.sh
. scripts/gpu-env.sh
timeout 60 python3 bench/results/experiments/sweep52/column_major.py > $OUT/column_major.txt 2>&1
