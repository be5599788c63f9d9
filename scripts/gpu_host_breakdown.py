"""Host time of each layer of a cache-hit fd.execute on the GPU path:
python3 scripts/gpu_host_breakdown.py"""
import sys
import time

import torch

sys.path.insert(0, "bench")
import run as bench  # noqa: E402
from fuser_mlir.runtime import arrays, cuda  # noqa: E402


def per_call(label, fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = (time.perf_counter() - start) / n * 1e6
    torch.cuda.synchronize()
    print(f"{label:<44} {elapsed:8.1f} us")


case = {c.name: c for c in bench.CASES}["pointwise"]
fd = bench.fusion_for(case, "float32")
inputs = bench.random_inputs(case, torch.float32, 1 << 16, seed=0)
outs = [torch.empty_like(case.torch_fn(*inputs))]
fd.execute(inputs, outputs=outs)
fec = fd._executor_cache()
compiled, args, given = fec.compiled_for(inputs, outs)
(segment,) = compiled.kernels.values()
views = [*args, given[0]]
launch = segment.launches[0]
drv = arrays.driver()

per_call("fd.execute (cache hit)", lambda: fd.execute(inputs, outputs=outs))
per_call("fec.compiled_for (key + validation)", lambda: fec.compiled_for(inputs, outs))
per_call("compiled.execute (plan + launch)", lambda: compiled.execute(args, given, torch_outputs=True))
per_call("CudaSegment(*views)", lambda: segment(*views))
per_call("pack only", lambda: launch.pack(views, []))
per_call("cuLaunchKernel (cuda-python)", lambda: drv.cuLaunchKernel(launch.function, 64, 1, 1, 256, 1, 1, 0, 0, __import__("ctypes").addressof(launch.pointers), 0))
per_call("torch current stream handle", lambda: arrays.torch_current_stream_handle(0))
per_call("make_current(0)", lambda: arrays.make_current(0))
per_call("device_view(torch tensor)", lambda: arrays.device_view(inputs[0]))
per_call("torch.empty_like", lambda: torch.empty_like(inputs[0]))

import cProfile  # noqa: E402
import pstats  # noqa: E402

profile = cProfile.Profile()
profile.enable()
for _ in range(3000):
    fd.execute(inputs, outputs=outs)
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(22)
