"""Where a normalization's time goes: the bench's layer norm with parts
removed, each timed back to back against a copy of the same bytes.

    python3 scripts/gpu_norm_parts.py [MB:dtype:hidden ...]

(default 256:float32:32768). The variants: ``full`` (bench/run.py's layer
norm), ``one_weight`` (no bias), ``no_weights``, ``one_reduction`` ((x -
mean) * w + b), ``rms`` (bench/run.py's RMS norm), ``rms_no_weight``,
``affine`` (the pointwise x * w + b) and ``scale`` (x * 2). Each is run once
untimed (compiled, not checked: bench/run.py checks the full fusions), then
timed as scripts/gpu_schedule_sweep.py times its back-to-back column.
bench/results/h200-sweeps.txt, sweep 17b, has what it found.
"""

import sys

import torch

sys.path.insert(0, "bench")
sys.path.insert(0, "scripts")
import run as bench  # noqa: E402
from gpu_schedule_sweep import timed  # noqa: E402

from fuser_mlir import DataType, FusionDefinition  # noqa: E402

VARIANTS = ["full", "one_weight", "no_weights", "one_reduction", "rms", "rms_no_weight", "affine", "scale"]
#: Each variant's weights (vectors of the row's length) after x: w, and b.
WEIGHTS = {"full": 2, "one_weight": 1, "one_reduction": 2, "rms": 1, "affine": 2}


def variant(name: str, dtype: str) -> FusionDefinition:
    kind = {"float32": DataType.Float, "bfloat16": DataType.BFloat16}[dtype]
    low = dtype == "bfloat16"
    with FusionDefinition(name=f"{name}_{dtype}") as fd:
        x = bench.fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=kind), low)
        weights = [bench.fd_up(fd, fd.define_tensor(shape=[-1], dtype=kind), low) for _ in range(WEIGHTS.get(name, 0))]
        w, b = (weights + [None, None])[:2]
        if name in ("full", "one_weight", "no_weights"):
            centered = x - fd.ops.mean(x, dims=[1], keepdim=True)
            y = centered * fd.ops.rsqrt(fd.ops.mean(centered * centered, dims=[1], keepdim=True) + 1e-5)
            y = y if w is None else y * w
            y = y if b is None else y + b
        elif name == "one_reduction":
            y = (x - fd.ops.mean(x, dims=[1], keepdim=True)) * w + b
        elif name in ("rms", "rms_no_weight"):
            y = x * fd.ops.rsqrt(fd.ops.mean(x * x, dims=[1], keepdim=True) + 1e-6)
            y = y if w is None else y * w
        elif name == "affine":
            y = x * w + b
        else:
            y = x * 2.0
        fd.add_output(bench.fd_down(fd, y, kind))
    return fd


def main(specs: list[str]) -> None:
    flush = torch.empty(bench.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for spec in specs:
        megabytes, dtype, hidden = spec.split(":")
        element = getattr(torch, dtype)
        rows = (int(megabytes) << 20) // (int(hidden) * torch.empty(0, dtype=element).element_size())
        for name in VARIANTS:
            fd = variant(name, dtype)
            inputs = [torch.randn(rows, int(hidden), device="cuda").to(element)]
            inputs += [torch.randn(int(hidden), device="cuda").to(element) for _ in range(WEIGHTS.get(name, 0))]
            out = torch.empty_like(inputs[0])
            fd.execute(inputs, outputs=[out])
            model = sum(t.nbytes for t in inputs) + out.nbytes
            src = torch.empty(model // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            copy = timed(lambda: dst.copy_(src), 20, flush)
            ours = timed(lambda: fd.execute(inputs, outputs=[out]), 20, flush)  # noqa: B023
            print(f"{megabytes:>5} MB {dtype:<9} h={hidden:<6} {name:<14} {ours:7.1f} us  {copy / ours:.2f} of copy", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["256:float32:32768"])
