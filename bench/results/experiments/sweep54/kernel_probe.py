"""Sweep 54 probe: where the device time of column-major (``x.t()``) float32 8192x8192 norms goes, kernel by kernel.
Relaid (fuser_mlir/frontend/relayout.py), a layer norm and a softmax of each row are normalisations of the views'
columns: outer reductions, then a pointwise pass. The row sums of the views' columns, their var_mean alone and their
max alone show what each outer reduction costs against a read of the tensor.

    python3 bench/results/experiments/sweep54/kernel_probe.py

Per case: each kernel's name and its mean device time over 20 calls (torch.profiler, CUPTI), then the whole call's
device time (bench/run.py's median_ms), and torch eager's on the same tensors. Each result is checked against a float64 torch reference first.
"""

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # bench/
from run import median_ms  # noqa: E402

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache  # noqa: E402


def softmax(fd, x, w):
    e = fd.ops.exp(x - fd.ops.max(x, [1], keepdim=True))
    return e / fd.ops.sum(e, [1], keepdim=True)


def layer_norm(fd, x, w):
    var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
    return (x - mean) * fd.ops.rsqrt(var + 1e-5) * w


CASES = {
    "row sum": (lambda fd, x, w: fd.ops.sum(x, [1]), lambda x, w: x.sum(1)),
    "row max": (lambda fd, x, w: fd.ops.max(x, [1]), lambda x, w: x.max(1).values),
    "row var_mean": (lambda fd, x, w: fd.ops.var_mean(x, [1], correction=0)[0], lambda x, w: x.var(1, correction=0)),
    "softmax": (softmax, lambda x, w: torch.softmax(x, 1)),
    "layer norm": (layer_norm, lambda x, w: torch.nn.functional.layer_norm(x, (x.shape[1],), w, None, 1e-5)),
}
n = 8192
base, w = torch.randn(n, n, device="cuda"), torch.randn(n, device="cuda")
for name, (build, reference) in CASES.items():
    with FusionDefinition(name=name.replace(" ", "_")) as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        wt = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(build(fd, x, wt))
    for label, tensor in (("row-major", base), ("column-major", base.t())):
        fec = FusionExecutorCache(fd)
        (out,) = fec.run([tensor, w])
        torch.testing.assert_close(out.double(), reference(tensor.double(), w.double()), rtol=1e-4, atol=1e-4)
        total = median_ms(lambda: fec.run([tensor, w]), 20, 3, None) * 1e3
        eager = median_ms(lambda: reference(tensor, w), 20, 3, None) * 1e3
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fec.run([tensor, w])
            torch.cuda.synchronize()
        kernels = [(e.key, e.device_time_total / e.count) for e in prof.key_averages() if e.device_time_total > 0]
        parts = ", ".join(f"{k[:40]} {t:.1f}" for k, t in kernels)
        print(f"{name:<13} {label:<13} {total:7.1f} us (eager {eager:7.1f}) | {parts}", flush=True)
