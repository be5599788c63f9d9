"""The Python cost of a CUDA cache hit, measured without a GPU.

Compiles a fusion for CUDA (PTX needs no GPU), builds its segments with no
module loaded, replaces the driver calls of the hit path (context check,
kernel launch) by no-ops, and times FusionExecutorCache.run on DeviceArray
views of fake aligned addresses, outputs given. What is left is the Python
work a hit does on a GPU host, minus the driver's own time (about 1 us per
launch through ctypes on the H200 host).

    python3 scripts/gpu_hit_path_without_gpu.py [--profile]
"""

import cProfile
import pstats
import sys
import time

import numpy as np

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.executor import layout_of, tensor_signature
from fuser_mlir.runtime import cuda
from fuser_mlir.runtime.arrays import DeviceArray

N = 1 << 16
with FusionDefinition(name="pointwise") as fd:
    x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    fd.add_output((fd.ops.exp(x + y) * y - x) * 0.5)

inputs = [DeviceArray(0x10000000, (N,), (4,), np.float32), DeviceArray(0x20000000, (N,), (4,), np.float32)]
outputs = [DeviceArray(0x30000000, (N,), (4,), np.float32)]
fec = FusionExecutorCache(fd)
layouts = {"input": [layout_of(tensor_signature(a)) for a in inputs], "given": {0: layout_of(tensor_signature(outputs[0]))}}
compiled = compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts)
for name, program in compiled.program.programs.items():
    segment = cuda.CudaSegment(name, program, None, compiled.program.arg_kinds[name], 0)
    segment.raw = lambda *args: 0  # no driver: the launch is a no-op
    compiled.kernels[name] = segment
cuda.ensure_context = lambda device=0: None
fec._hits.remember(inputs, outputs, compiled, {0: outputs[0]})

n = 20000
for _ in range(1000):
    assert fec.run(inputs, outputs)[0] is outputs[0]
start = time.perf_counter()
for _ in range(n):
    fec.run(inputs, outputs)
print(f"cache-hit run, launches stubbed: {(time.perf_counter() - start) / n * 1e6:.1f} us per call")
if "--profile" in sys.argv:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        fec.run(inputs, outputs)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(18)
