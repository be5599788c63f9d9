"""Where a cache-hit fd.execute spends host time on the GPU path:
python3 scripts/gpu_profile_host.py [case]"""
import cProfile
import pstats
import sys
import time

import torch

sys.path.insert(0, "bench")
import run as bench  # noqa: E402

case = {c.name: c for c in bench.CASES}[sys.argv[1] if len(sys.argv) > 1 else "pointwise"]
fd = bench.fusion_for(case, "float32")
inputs = bench.random_inputs(case, torch.float32, 1 << 16, seed=0)
outs = [torch.empty_like(case.torch_fn(*inputs))]
for _ in range(20):
    fd.execute(inputs, outputs=outs)
torch.cuda.synchronize()
n = 2000
start = time.perf_counter()
for _ in range(n):
    fd.execute(inputs, outputs=outs)
elapsed = time.perf_counter() - start
torch.cuda.synchronize()
print(f"{case.name}: {elapsed / n * 1e6:.1f} us per call (wall, host side)")
profile = cProfile.Profile()
profile.enable()
for _ in range(n):
    fd.execute(inputs, outputs=outs)
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(25)
