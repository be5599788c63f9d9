"""Whether ``fuser-lower-to-cpu{fuse-shared=true}`` changes the GPU kernels of
the bench's cases: compiles every case and dtype (rows of 1K and 32K
columns, as bench/run.py's fusions, dense and aligned) for sm_90 with the
option off and on, on a machine without a GPU, and prints the cases whose
PTX differs.

    python bench/results/experiments/sweep57/fuse_shared_ptx.py"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # bench/
import run as bench  # noqa: E402

import fuser_mlir.lowering.gpu as G  # noqa: E402
from fuser_mlir.compiler import compile_fusion  # noqa: E402

ON = G.BUFFERS_PIPELINE  # the GPU pipeline asks for the option since session 58
OFF = ON.replace(" fuse-shared=true", "")
assert ON != OFF

same = differ = 0
for case in bench.CASES:
    for dtype in ("float32", "bfloat16"):
        fd = bench.fusion_for(case, dtype)
        layouts = {"input": [(True, 16)] * len(fd.inputs), "given": {0: (True, 16)}}
        ptx = []
        for pipeline in (OFF, ON):
            G.BUFFERS_PIPELINE = pipeline
            ptx.append(compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts).program.ptx)
        if ptx[0] == ptx[1]:
            same += 1
        else:
            differ += 1
            print(f"{case.name} {dtype}: the PTX differs ({len(ptx[0])} -> {len(ptx[1])} characters)", flush=True)
print(f"{same} fusions with the same PTX, {differ} with other PTX")
