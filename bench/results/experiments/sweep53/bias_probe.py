"""Sweep 53 probe: ``x * 2 + b`` (float32; b one per column, broadcast
along the rows) with x row-major and column-major (``x.t()`` of a
contiguous tensor), into a given output or a new one, against torch eager on
the same tensors. Column-major calls now run on row-major views through the
definition written again (fuser_mlir/frontend/relayout.py).

    python3 bench/results/experiments/sweep53/bias_probe.py

Device time of 8192x8192 calls (bench/run.py's median_ms), then host CPU
time of 8x8 calls (host_us_per_call). Each result, and its layout, is
checked against a float64 torch reference first.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # bench/
from run import host_us_per_call, median_ms  # noqa: E402

from fuser_mlir import DataType, FusionDefinition  # noqa: E402

with FusionDefinition(name="bias") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
    fd.add_output(x * 2.0 + b)


def layouts(n: int) -> dict:
    a, w = torch.randn(n, n, device="cuda"), torch.randn(n, device="cuda")
    return {
        "row-major, given": (a, w, torch.empty(n, n, device="cuda")),
        "column-major, given": (a.t(), w, torch.empty(n, n, device="cuda").t()),
        "row-major, new output": (a, w, None),
        "column-major, new output": (a.t(), w, None),
    }


def checked(x_, b_, out):
    outputs = None if out is None else [out]
    if out is not None:
        out.fill_(float("nan"))
    (result,) = fd.execute([x_, b_], outputs=outputs)
    torch.testing.assert_close(result.double(), x_.double() * 2 + b_.double(), rtol=1e-6, atol=1e-6)
    assert result.stride() == x_.stride(), (result.stride(), x_.stride())
    return outputs


n = 8192
for label, (x_, b_, out) in layouts(n).items():
    outputs = checked(x_, b_, out)
    ours = median_ms(lambda: fd.execute([x_, b_], outputs=outputs), 50, 5, None) * 1e3
    eager = median_ms((lambda: x_ * 2.0 + b_) if out is None else (lambda: torch.add(x_ * 2.0, b_, out=out)), 50, 5, None) * 1e3
    print(f"{label:<26} ours {ours:8.1f} us ({2 * n * n * 4 / ours / 1e3:.0f} GB/s of 512 MB)   torch eager {eager:8.1f} us")
for label, (x_, b_, out) in layouts(8).items():
    outputs = checked(x_, b_, out)
    host = host_us_per_call(lambda: fd.execute([x_, b_], outputs=outputs), 5000, 5, sync=torch.cuda.synchronize)
    print(f"host, 8x8 {label:<26} {host['cpu_us']:6.2f} us CPU per call")
