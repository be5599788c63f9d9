"""CPU benchmarks: fused fuser-mlir kernels against NumPy, side by side.

    python bench/cpu.py [--json bench/results/cpu.json] [--repeat 10]

Cases: a 6-op pointwise chain on 16M float32 elements, and a row softmax of a
4096x4096 float32 array. Each is checked against a float64 NumPy reference
first, then timed (median of --repeat runs after a warm-up) together with the
NumPy expression of the same computation in the same process. Prints a table
and writes JSON. Speed-ups are NumPy time / fuser-mlir time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from fuser_mlir import DataType, FusionDefinition


def pointwise_chain():
    with FusionDefinition(name="chain6") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t = fd.ops.exp(x * 0.5 + y)
        t = fd.ops.tanh(t - 1.0) * y
        fd.add_output(t)
    n = 16 * 1024 * 1024
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)

    def numpy_version(x, y):
        return np.tanh(np.exp(x * np.float32(0.5) + y) - np.float32(1.0)) * y

    ref = np.tanh(np.exp(x.astype(np.float64) * 0.5 + y) - 1.0) * y
    return "pointwise chain (6 ops, 16M f32)", fd, [x, y], numpy_version, ref, 3 * n * 4


def softmax():
    with FusionDefinition(name="softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4096, 4096)).astype(np.float32)

    def numpy_version(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return "row softmax (4096x4096 f32)", fd, [x], numpy_version, e / e.sum(axis=1, keepdims=True), 2 * x.nbytes


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="bench/results/cpu.json")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for case in (pointwise_chain, softmax):
        name, fd, inputs, numpy_version, ref, model_bytes = case()
        (out,) = fd.execute(inputs)
        err = float(np.max(np.abs(out - ref)))
        assert err < 1e-4, f"{name}: max abs error {err}"
        given = [np.empty_like(out)]
        ours = median_time(lambda: fd.execute(inputs, outputs=given), args.repeat)
        theirs = median_time(lambda: numpy_version(*inputs), args.repeat)
        rows.append(
            {
                "case": name,
                "fuser_ms": ours * 1e3,
                "numpy_ms": theirs * 1e3,
                "speedup_vs_numpy": theirs / ours,
                "fuser_GBps": model_bytes / ours / 1e9,
                "max_abs_error": err,
            }
        )
    print(f"{'case':<34} {'fuser ms':>9} {'numpy ms':>9} {'speed-up':>9} {'GB/s':>7}")
    for r in rows:
        print(f"{r['case']:<34} {r['fuser_ms']:9.2f} {r['numpy_ms']:9.2f} {r['speedup_vs_numpy']:8.2f}x {r['fuser_GBps']:7.2f}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"commit": commit(), "machine": platform.machine(), "cpus": __import__("os").cpu_count(), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
