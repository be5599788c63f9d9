"""Pointwise chains whose intermediates are used more than once, compiled for
sm_90 on a machine without a GPU: the launches, full-size temporaries and
kernel parameters of each segment, and where ptxas rejects the kernels.

    python bench/results/experiments/sweep57/multi_use_chains.py [CPU]

The chain is ``y = tanh(y) - y * 0.5`` and ``y = y * y + sin(y)`` in turn
over ``x + b``, with ``y - max(y)`` over the rows every 25 ops; ``CPU`` also
times its compile for the CPU (FUSER_CACHE=0 to time it afresh)."""

import re
import sys
import time
from pathlib import Path

import numpy as np

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "test"), str(root / "test" / "lowering")]
from test_fuse_shared import chain  # noqa: E402  (the chain the tests compile)

from fuser_mlir.compiler import compile_fusion  # noqa: E402
from fuser_mlir.errors import CompileError  # noqa: E402


for ops in (1, 6, 12, 25, 50, 100):
    fd = chain(ops)
    try:
        compiled = compile_fusion(fd, device="cuda:0", layouts={"input": [(False, 16)] * 2, "given": {}})
    except CompileError as err:
        print(f"{ops:4} ops  GPU: {str(err).splitlines()[1][:140]}")
    else:
        ptx = compiled.program.ptx
        params = [m.group(1).count(".param") for m in re.finditer(r"\.entry \w+\((.*?)\)\s*\n", ptx, re.S)]
        for name, program in compiled.program.programs.items():
            launches = sorted({launch.kernel for launch in program.launches})
            print(f"{ops:4} ops  GPU {name}: {len(launches)} kernels, {len(program.temps)} full-size temporaries, "
                  f"at most {max(params)} kernel parameters")
    if sys.argv[1:] == ["CPU"]:
        start = time.perf_counter()
        fd.execute([np.random.rand(64, 100).astype(np.float32)] * 2)
        print(f"{ops:4} ops  CPU compile and run {time.perf_counter() - start:.1f} s")
