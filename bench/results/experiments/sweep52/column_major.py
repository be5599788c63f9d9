"""Sweep 52 probe: sweep 51's elementwise fusion (``x * 2 + y``, 8192x8192
float32) with row-major and column-major (``x.t()`` of a contiguous tensor)
inputs, into a given output or a new one, against torch eager on the same
tensors (``x * 2 + y``: its result follows the inputs' layout).

    python3 bench/results/experiments/sweep52/column_major.py

Prints us per call (CUDA events, the median of 50 calls after a warm-up);
checks each result, and its layout, against a float64 torch reference first.
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
    "row-major, given": (a, b, torch.empty(n, n, device="cuda")),
    "column-major, given": (a.t(), b.t(), torch.empty(n, n, device="cuda").t()),
    "row-major, new output": (a, b, None),
    "column-major, new output": (a.t(), b.t(), None),
}.items():
    outputs = None if out is None else [out]
    if out is not None:
        out.fill_(float("nan"))
    (result,) = fd.execute([x_, y_], outputs=outputs)
    torch.testing.assert_close(result.double(), x_.double() * 2 + y_.double(), rtol=1e-6, atol=1e-6)
    assert result.stride() == x_.stride(), (label, result.stride(), x_.stride())
    ours = timed(lambda: fd.execute([x_, y_], outputs=outputs))
    eager = timed(lambda: x_ * 2.0 + y_) if out is None else timed(lambda: torch.add(x_ * 2.0, y_, out=out))
    print(f"{label:<28} ours {ours:9.1f} us ({3 * n * n * 4 / ours / 1e3:.0f} GB/s of 768 MB read and written)   torch eager {eager:9.1f} us")

# Host time of cache hits on small tensors (8x8: the kernels cost next to
# nothing), CPU time per call, the median of 5 batches of 5000 calls.
import time  # noqa: E402

small = torch.randn(8, 8, device="cuda"), torch.randn(8, 8, device="cuda")
for label, (x_, y_, out) in {
    "row-major, given": (small[0], small[1], torch.empty(8, 8, device="cuda")),
    "column-major, given": (small[0].t(), small[1].t(), torch.empty(8, 8, device="cuda").t()),
    "row-major, new output": (small[0], small[1], None),
    "column-major, new output": (small[0].t(), small[1].t(), None),
}.items():
    outputs = None if out is None else [out]
    (result,) = fd.execute([x_, y_], outputs=outputs)
    torch.testing.assert_close(result.double(), x_.double() * 2 + y_.double(), rtol=1e-6, atol=1e-6)
    assert result.stride() == x_.stride(), (label, result.stride(), x_.stride())
    batches = []
    for _ in range(6):
        start = time.process_time()
        for _ in range(5000):
            fd.execute([x_, y_], outputs=outputs)
        batches.append((time.process_time() - start) / 5000 * 1e6)
        torch.cuda.synchronize()
    print(f"host, 8x8 {label:<26} {statistics.median(batches[1:]):6.2f} us CPU per call")
