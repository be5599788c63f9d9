"""A first look at a GPU host: versions, and three fusions run with torch
tensors against a float64 reference. python3 scripts/gpu_smoke.py"""

import sys
import time

import numpy as np
import torch

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir import config
from fuser_mlir.runtime import cuda

print("python", sys.version.split()[0], "torch", torch.__version__, "cuda available", cuda.available(), "cc", cuda.compute_capability())
print("libdevice", config.libdevice_path())

with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    y = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
    t = fd.ops.exp(x + y)
    fd.add_output(fd.ops.sum(t, dims=[1]))
    fd.add_output(fd.ops.tanh(t))

x = torch.randn(1000, 333, device="cuda")
y = torch.randn(1, 333, device="cuda")
start = time.perf_counter()
s, th = fd.execute([x, y])
torch.cuda.synchronize()
print("first call (compile + run) s:", round(time.perf_counter() - start, 2), type(s).__name__)
t64 = torch.exp(x.double() + y.double())
print("sum err", (s.double() - t64.sum(1)).abs().max().item() / t64.sum(1).abs().max().item(), "tanh err", (th.double() - torch.tanh(t64)).abs().max().item())

with FusionDefinition() as sm:
    a = sm.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
    m = sm.ops.max(a, dims=[1], keepdim=True)
    e = sm.ops.exp(a - m)
    sm.add_output(e / sm.ops.sum(e, dims=[1], keepdim=True))
a = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
(out,) = sm.execute([a])
ref = torch.softmax(a.double(), dim=1)
print("softmax bf16 err", (out.double() - ref).abs().max().item(), out.dtype)

# in place on the GPU
with FusionDefinition() as ip:
    t0 = ip.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    t1 = ip.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
    ip.add_output(ip.ops.relu(t0), t0)
    ip.add_output(t0 + t1)
t0 = torch.randn(4, 5, device="cuda")
t1 = torch.randn(3, 4, 5, device="cuda")
e0 = t0.clone()
(t3,) = ip.execute([t0, t1])
print("2839 ok:", torch.allclose(t3, e0 + t1), torch.equal(t0, torch.relu(e0)))
