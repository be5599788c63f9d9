"""The Python cost of a CUDA cache hit, measured without a GPU.

Compiles fusions for CUDA (PTX needs no GPU), builds their segments with no
module loaded, replaces the driver calls of the hit path by no-ops (context
check, kernel launch, and for ``cuda_graph=True`` the graph calls), and
times FusionExecutorCache.run on DeviceArray views of fake aligned
addresses. What is left is the Python work a hit does on a GPU host, minus
the driver's own time (about 1 us per kernel launch through ctypes on the
H200 host) and torch's (its tensors' attributes and allocator, where the
inputs are torch tensors).

Rows: a one-kernel pointwise fusion with its output given, and a 10-segment
chain (new output and nine intermediates; allocations stubbed too), launched
kernel by kernel and replayed as a CUDA graph.

    python3 scripts/gpu_hit_path_without_gpu.py [--profile]
"""

import cProfile
import ctypes
import pstats
import sys
import time
from pathlib import Path

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.executor import layout_of, tensor_signature
from fuser_mlir.runtime import cuda
from fuser_mlir.runtime.arrays import DeviceArray, contiguous_strides
from fuser_mlir.runtime.cpu import numpy_dtype

N = 1 << 16


def fake(ptr, shape, dtype="float32"):
    dtype = numpy_dtype(dtype)
    return DeviceArray(ptr, shape, contiguous_strides(shape, dtype.itemsize), dtype)


class NoGraphDriver:
    """The driver's graph calls as no-ops that hand out fake handles."""

    def _handle(self, out, *rest):
        ctypes.c_void_p.from_address(out).value = 0x1000
        return 0

    create = add_kernel_node = instantiate = _handle

    def set_kernel_params(self, *args):
        return 0

    launch = set_kernel_params

    def destroy_exec(self, handle):
        return 0

    destroy = destroy_exec

    def synchronize(self, device):
        pass

    def check(self, code, call):
        assert code == 0, call


def stub_driver():
    cuda.ensure_context = lambda device=0: None
    cuda._allocator = lambda device, torch_outputs, raw: lambda shape, dtype: fake(0x5000_0000, shape, dtype)
    cuda.graph_api = NoGraphDriver
    from fuser_mlir.runtime import replay

    replay._device_bytes = lambda device, nbytes: fake(0x6000_0000, (nbytes,), "uint8")


def stubbed_executor(fd, inputs, outputs=None):
    """An executor that remembers ``inputs``/``outputs`` as a full call
    would, with segments whose launches are no-ops."""
    fec = FusionExecutorCache(fd)
    given = {i: b for i, b in enumerate(outputs or ()) if b is not None}
    layouts = {"input": [layout_of(tensor_signature(a)) for a in inputs], "given": {i: layout_of(tensor_signature(b)) for i, b in given.items()}}
    mask = tuple(b is not None for b in outputs) if outputs is not None else None
    compiled = compile_fusion(fd, given_outputs=mask, device="cuda:0", layouts=layouts)
    for name, program in compiled.program.programs.items():
        segment = cuda.CudaSegment(name, program, None, compiled.program.arg_kinds[name], 0)
        segment.raw = lambda *args: 0  # no driver: the launch is a no-op
        compiled.kernels[name] = segment
    fec._hits.remember(inputs, outputs, compiled, given)
    return fec


def pointwise():
    with FusionDefinition(name="pointwise") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output((fd.ops.exp(x + y) * y - x) * 0.5)
    return fd


def chain10():
    """bench/host_overhead.py's 10-segment chain."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from host_overhead import ten_segments

    return ten_segments()[0]


def per_call(run, n: int) -> float:
    for _ in range(1000):
        run()
    start = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    stub_driver()
    inputs = [fake(0x1000_0000, (N,)), fake(0x2000_0000, (N,))]
    outputs = [fake(0x3000_0000, (N,))]
    one = stubbed_executor(pointwise(), inputs, outputs)
    ten = stubbed_executor(chain10(), inputs)
    assert one.run(inputs, outputs)[0] is outputs[0]
    rows = {
        "1 kernel, output given": lambda: one.run(inputs, outputs),
        "10 segments, kernel by kernel": lambda: ten.run(inputs),
        "10 segments, CUDA graph": lambda: ten.run(inputs, cuda_graph=True),
    }
    n = 20000
    print("cache-hit FusionExecutorCache.run, driver stubbed (us per call):")
    for label, run in rows.items():
        print(f"  {label:<32} {per_call(run, n):6.1f}")
    if "--profile" in sys.argv:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(n):
            one.run(inputs, outputs)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
