"""Sweep 51 probe: an elementwise fusion on the GPU with row-major and with
column-major (Fortran-order: ``x.t()`` of a contiguous tensor) inputs and
given output, against torch eager on the same tensors.

    python3 bench/results/experiments/sweep51/column_major.py

Prints us per call (CUDA events, the median of 50 calls after a warm-up);
checks each result against a float64 torch reference first.
"""

import statistics

import torch

from fuser_mlir import DataType, FusionDefinition

with FusionDefinition(name="axpy") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    fd.add_output(x * 2.0 + y)


def timed(call) -> float:
    for _ in range(5):
        call()
    times = []
    for _ in range(50):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


n = 8192
a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
for label, (x_, y_, out) in {
    "row-major": (a, b, torch.empty(n, n, device="cuda")),
    "column-major": (a.t(), b.t(), torch.empty(n, n, device="cuda").t()),
    "column-major in, row-major out": (a.t(), b.t(), torch.empty(n, n, device="cuda")),
}.items():
    out.fill_(float("nan"))
    fd.execute([x_, y_], outputs=[out])
    torch.testing.assert_close(out.double(), x_.double() * 2 + y_.double(), rtol=1e-6, atol=1e-6)
    ours = timed(lambda: fd.execute([x_, y_], outputs=[out]))
    eager = timed(lambda: torch.add(x_ * 2.0, y_, out=out))
    print(f"{label:<32} ours {ours:9.1f} us ({3 * n * n * 4 / ours / 1e3:.0f} GB/s of 768 MB read and written)   torch eager {eager:9.1f} us")
