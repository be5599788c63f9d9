"""Host time of each layer of a cache-hit fd.execute on the GPU path, and of
the torch and driver calls under it: python3 scripts/gpu_host_breakdown.py

The cases are bench/run.py's fusions (float32, output given) on 64K
elements (the kernels cost next to nothing): pointwise, or those named on
the command line (python3 scripts/gpu_host_breakdown.py pointwise softmax). Each row is
the CPU time (this thread) and the wall time per call, the median of 200
batches of 100 back-to-back calls with the device synchronised before each
batch (as bench/run.py's host_us), so that the launch queue never fills and
the host never waits for the device.
"""
import cProfile
import ctypes
import pstats
import sys

import torch

sys.path.insert(0, "bench")
import run as bench  # noqa: E402
from fuser_mlir.runtime import cuda  # noqa: E402


def per_call(label, fn):
    for _ in range(200):
        fn()
    host = bench.host_us_per_call(fn, 100, 200, sync=torch.cuda.synchronize)
    print(f"{label:<48} {host['cpu_us']:8.2f} us CPU {host['wall_us']:8.2f} us wall", flush=True)


def breakdown(name):
    case = {c.name: c for c in bench.CASES}[name]
    fd = bench.fusion_for(case, "float32")
    inputs = bench.random_inputs(case, torch.float32, 1 << 18, seed=0, hidden=256)
    outs = [torch.empty_like(case.torch_fn(*inputs))]
    fd.execute(inputs, outputs=outs)
    fd.execute(inputs, outputs=outs)
    fec = fd._executor_cache()
    entry, args, given, pointers = fec._hits.lookup(inputs, outs)
    launch = entry.replay.trace.launches[0]
    stream = ctypes.c_void_p(torch._C._cuda_getCurrentRawStream(0))
    handle, params = ctypes.c_void_p(launch.handle), ctypes.c_void_p(launch.params)
    print(f"-- {name}: {len(inputs)} inputs, output given, {len(launch.slots)} parameter slots, shapes {[tuple(t.shape) for t in inputs]}")
    per_call("fd.execute (cache hit)", lambda: fd.execute(inputs, outputs=outs))
    per_call("fec.run (cache hit)", lambda: fec.run(inputs, outs))
    per_call("guarded replay (what a hit runs: HitEntry.fast)", lambda: entry.fast(inputs, outs, fec.memory))
    per_call("hit lookup (signature, overlap checks)", lambda: fec._hits.lookup(inputs, outs))
    per_call("table replay (stream, cells, cuLaunchKernel)", lambda: entry.replay(args, given, pointers, fec.memory))
    per_call(
        "cuLaunchKernel alone (the replay's launch)",
        lambda: launch.raw(handle, *launch.grid, *launch.block, launch.shared, stream, params, None),
    )
    return fd, inputs, outs


names = sys.argv[1:] or ["pointwise"]
for name in names:
    fd, inputs, outs = breakdown(name)
x = inputs[0]
print("-- torch and driver calls")
per_call("ensure_context", lambda: cuda.ensure_context(0))
per_call("torch current raw stream", lambda: torch._C._cuda_getCurrentRawStream(0))
per_call("x.data_ptr()", lambda: x.data_ptr())
per_call("x.stride()", lambda: x.stride())
per_call("x.shape", lambda: x.shape)
per_call("x.dtype", lambda: x.dtype)
per_call("x.get_device()", lambda: x.get_device())
per_call("empty Python call", lambda: None)
per_call("torch.empty_like", lambda: torch.empty_like(x))
per_call("x.add_(0) (one torch kernel)", lambda: x.add_(0))
profile = cProfile.Profile()
profile.enable()
for _ in range(20000):
    fd.execute(inputs, outputs=outs)
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(16)
