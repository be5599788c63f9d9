"""Sweep 53 probe: reductions of column-major (``x.t()``) float32 8192x8192 tensors, run as they are (strided, the
relayout off) and on row-major views through the definition written again (fuser_mlir/frontend/relayout.py),
against the row-major call and torch eager on the same tensors: a sum of each row, a softmax of each row, and a
layer norm of each row with a weight.

    python3 bench/results/experiments/sweep53/reduction_probe.py

Device time (bench/run.py's median_ms); each result checked against a float64 torch reference first.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # bench/
from run import median_ms  # noqa: E402

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache  # noqa: E402


def rows(fd, x):
    return fd.ops.broadcast_in_dim(x, [-1, 1], [0])


def row_sum(fd, x, w):
    return fd.ops.sum(x, [1])


def softmax(fd, x, w):
    e = fd.ops.exp(x - rows(fd, fd.ops.max(x, [1])))
    return e / rows(fd, fd.ops.sum(e, [1]))


def layer_norm(fd, x, w):
    var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
    return (x - mean) * fd.ops.rsqrt(var + 1e-5) * w


TORCH = {
    "row_sum": lambda x, w: x.sum(1),
    "softmax": lambda x, w: torch.softmax(x, 1),
    "layer_norm": lambda x, w: torch.nn.functional.layer_norm(x, (x.shape[1],), w, None, 1e-5),
}
n = 8192
base, w = torch.randn(n, n, device="cuda"), torch.randn(n, device="cuda")
for build in (row_sum, softmax, layer_norm):
    with FusionDefinition(name=build.__name__) as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        wt = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(build(fd, x, wt))
    reference = TORCH[build.__name__]
    line = []
    for label, tensor, relaid in [("row-major", base, True), ("column-major strided", base.t(), False), ("column-major relaid", base.t(), True)]:
        fec = FusionExecutorCache(fd)
        if not relaid:
            fec._relayout_rank = 0  # the relayout off: the strided kernels
        (out,) = fec.run([tensor, w])
        torch.testing.assert_close(out.double(), reference(tensor.double(), w.double()), rtol=1e-4, atol=1e-4)
        ours = median_ms(lambda: fec.run([tensor, w]), 20, 3, None) * 1e3
        eager = median_ms(lambda: reference(tensor, w), 20, 3, None) * 1e3
        line.append(f"{label} {ours:8.1f} us (eager {eager:7.1f})")
    print(f"{build.__name__:<11} " + " | ".join(line), flush=True)
