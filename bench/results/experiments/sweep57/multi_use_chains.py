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

import numpy as np

from fuser_mlir import FusionDefinition
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.errors import CompileError


def chain(ops: int) -> FusionDefinition:
    with FusionDefinition(name=f"chain{ops}") as fd:
        x = fd.define_tensor(shape=[-1, -1])
        b = fd.define_tensor(shape=[-1, -1])
        y = x + b
        for k in range(ops):
            y = y * y + fd.ops.sin(y) if k % 2 else fd.ops.tanh(y) - y * 0.5
            if k % 25 == 24:
                y = y - fd.ops.max(y, dims=[1], keepdim=True)
        fd.add_output(y)
    return fd


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
