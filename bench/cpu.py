"""CPU benchmarks: fused fuser-mlir kernels against NumPy, side by side.

    python bench/cpu.py [--json bench/results/cpu.json] [--repeat 10] [--scale 0]

Cases: a 6-op pointwise chain on 16M float32 elements, a row softmax of a
4096x4096 float32 array, a softmax over its columns (3 segments, whose
intermediates the plan keeps from call to call), a layer norm over its rows
(also as a ``[1, 4096, 4096]`` array: a batch of one) and a column sum.
Each is checked against a float64 NumPy reference first, then timed (median
of --repeat runs after a warm-up) together with the NumPy expression of the
same computation in the same process: fuser-mlir on one thread
(``FUSER_CPU_THREADS=1``) and on every CPU this process may use (the
default; kernels that split run cut into blocks, see
fuser_mlir/lowering/cpu_split.py). Speed-ups are NumPy time / fuser-mlir
time. Then the chain on 16K to 16M elements, on one thread and on all of
them: where cutting a call into blocks starts to pay
(``fuser_mlir.runtime.cpu.BLOCK_BYTES``). Then sums over dim 0 of 256 to
16384 columns, float32 and bfloat16, and over dims 0 and 1 of a 3-D
float32, as compiled and with ``fuser-unroll-jam-reductions{factor=1}`` (a
row at a time), on one thread and on all. Then the row softmax and the
layer norm, and a softmax of one row of 16M elements, as compiled
(``fuser-block-rows``: block by block of rows), without
``fuser-share-call-results`` and with
``fuser-block-rows{block-bytes=0}`` (each loop nest over the whole arrays),
on one thread and on all. Then the chain on 16M elements as rows of 1, 3,
7 and 1024, with dims merged (as the runtime runs an elementwise kernel's
short rows, ``fuser_mlir.runtime.cpu.merged_dims``) and as they are
(``MERGE_BELOW = 0``), on one thread and on all, NumPy beside. Prints
tables and writes JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from fuser_mlir import DataType, FusionDefinition, config
from fuser_mlir.pipeline import PIPELINES
from fuser_mlir.runtime import cpu as cpu_runtime


def pointwise_chain(scale: int = 0):
    with FusionDefinition(name="chain6") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t = fd.ops.exp(x * 0.5 + y)
        t = fd.ops.tanh(t - 1.0) * y
        fd.add_output(t)
    n = (16 * 1024 * 1024) >> (2 * scale)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)

    def numpy_version(x, y):
        return np.tanh(np.exp(x * np.float32(0.5) + y) - np.float32(1.0)) * y

    ref = np.tanh(np.exp(x.astype(np.float64) * 0.5 + y) - 1.0) * y
    return f"pointwise chain (6 ops, {n >> 20}M f32)" if n >= 1 << 20 else f"pointwise chain (6 ops, {n} f32)", fd, [x, y], numpy_version, ref, 3 * n * 4


def softmax_over(dim: int, scale: int = 0):
    """A softmax over ``dim`` of a 4096x4096 float32 array: over the rows
    (``dim`` 1) one segment, over the columns three."""
    with FusionDefinition(name=f"softmax_over_{dim}") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[dim], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[dim], keepdim=True))
    side = 4096 >> scale
    x = np.random.default_rng(3 - 2 * dim).standard_normal((side, side)).astype(np.float32)

    def numpy_version(x):
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)

    name = f"row softmax ({side}x{side} f32)" if dim == 1 else f"column softmax ({side}x{side} f32, 3 segments)"
    return name, fd, [x], numpy_version, numpy_version(x.astype(np.float64)), 2 * x.nbytes


def softmax(scale: int = 0):
    return softmax_over(1, scale)


def one_row_softmax(scale: int = 0):
    """A softmax of one row of 16M float32 elements (``scale``: 4**scale
    fewer): a block of rows holds the whole row."""
    with FusionDefinition(name="one_row_softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    n = 16 * 1024 * 1024 >> (2 * scale)
    x = np.random.default_rng(5).standard_normal((1, n)).astype(np.float32)

    def numpy_version(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    name = f"softmax of one row ({n >> 20}M f32)" if n >= 1 << 20 else f"softmax of one row ({n} f32)"
    return name, fd, [x], numpy_version, numpy_version(x.astype(np.float64)), 2 * x.nbytes


def column_softmax(scale: int = 0):
    return softmax_over(0, scale)


def layer_norm(scale: int = 0, batch: bool = False):
    """A layer norm over the rows of a 4096x4096 float32 array, with a weight
    and a bias: one segment of three loop nests (mean, variance, result).
    With ``batch``, the same values as a ``[1, 4096, 4096]`` array (a batch
    of one: its calls are cut along the rows, the inner split)."""
    side = 4096 >> scale
    shape = [1, side, side] if batch else [side, side]
    last = len(shape) - 1
    with FusionDefinition(name="layer_norm_of_a_batch" if batch else "layer_norm") as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        mean = fd.ops.sum(x, dims=[last], keepdim=True) / float(side)
        d = x - mean
        var = fd.ops.sum(d * d, dims=[last], keepdim=True) / float(side)
        y = d * fd.ops.rsqrt(var + 1e-5)
        weights = [True] * last + [False]
        fd.add_output(y * fd.ops.broadcast(w, weights) + fd.ops.broadcast(b, weights))
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    w, b = rng.standard_normal(side).astype(np.float32), rng.standard_normal(side).astype(np.float32)

    def numpy_version(x, w, b):
        d = x - x.mean(axis=-1, keepdims=True)
        return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5) * w + b

    ref = numpy_version(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    name = f"layer norm (1x{side}x{side} f32, a batch of one)" if batch else f"layer norm ({side}x{side} f32)"
    return name, fd, [x, w, b], numpy_version, ref, 2 * x.nbytes


def batch_layer_norm(scale: int = 0):
    return layer_norm(scale, batch=True)


def column_sum(scale: int = 0):
    with FusionDefinition(name="column_sum") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    side = 4096 >> scale
    x = np.random.default_rng(2).standard_normal((side, side)).astype(np.float32)

    def numpy_version(x):
        return x.sum(axis=0)

    return f"column sum ({side}x{side} f32)", fd, [x], numpy_version, x.astype(np.float64).sum(axis=0), x.nbytes


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


@contextlib.contextmanager
def environment(name: str, value: str):
    """``os.environ[name] = value`` inside, as it was after."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def timed_on(threads: int, fn, repeat: int) -> float:
    """median_time of ``fn`` with ``FUSER_CPU_THREADS=threads``."""
    with environment("FUSER_CPU_THREADS", str(threads)):
        return median_time(fn, repeat)


def chain_sizes(threads: int, repeat: int, scale: int = 0) -> list[dict]:
    """The pointwise chain at 16K to 16M elements (``scale``: 4**scale times
    fewer), on one thread and on ``threads``."""
    _, fd, (x, y), _, _, _ = pointwise_chain(scale)
    rows = []
    for n in [1 << k for k in range(14 - 2 * scale, 25 - 2 * scale, 2)]:
        inputs, given = [x[:n], y[:n]], [np.empty(n, np.float32)]
        one = timed_on(1, lambda: fd.execute(inputs, outputs=given), repeat)
        many = timed_on(threads, lambda: fd.execute(inputs, outputs=given), repeat)
        rows.append({"elements": n, "bytes": 3 * 4 * n, "one_thread_us": one * 1e6, "threads_us": many * 1e6, "speedup": one / many})
    return rows


@contextlib.contextmanager
def pipeline_edit(old: str, new: str):
    """Kernels compiled inside run ``fuser-cpu-pipeline`` with ``old``
    replaced by ``new``, and stay out of the kernel cache."""
    saved = PIPELINES["fuser-cpu-pipeline"]
    assert old in saved, f"fuser-cpu-pipeline has no {old!r}"
    PIPELINES["fuser-cpu-pipeline"] = saved.replace(old, new)
    try:
        with environment("FUSER_CACHE", "0"):
            yield
    finally:
        PIPELINES["fuser-cpu-pipeline"] = saved


def pass_option(name: str, option: str, value: int):
    """Kernels compiled inside run pass ``name`` of ``fuser-cpu-pipeline``
    with ``option=value``."""
    return pipeline_edit(name, f"{name}{{{option}={value}}}")


def jam_factor(factor: int):
    """``fuser-unroll-jam-reductions`` with ``factor`` (1: reductions one row
    at a time, as before the pass)."""
    return pass_option("fuser-unroll-jam-reductions", "factor", factor)


#: How ``row_blocks`` compiles each variant: as the pipeline has it; without
#: ``fuser-share-call-results`` (a softmax's exp twice an element); and with
#: ``fuser-block-rows{block-bytes=0}`` (each loop nest over the whole arrays).
ROW_BLOCK_VARIANTS = {
    "blocked": contextlib.nullcontext,
    "unshared": lambda: pipeline_edit("fuser-share-call-results, ", ""),
    "whole": lambda: pass_option("fuser-block-rows", "block-bytes", 0),
}


def row_blocks(threads: int, repeat: int, scale: int = 0) -> list[dict]:
    """The row softmax, the layer norm and the softmax of one long row
    compiled each way of :data:`ROW_BLOCK_VARIANTS`, each on one thread and
    on ``threads``, into one output."""
    rows = []
    for case in (softmax, layer_norm, one_row_softmax):
        name, _, inputs, _, ref, _ = case(scale)
        row = {"case": name}
        for label, variant in ROW_BLOCK_VARIANTS.items():
            given = [np.full(ref.shape, np.nan, np.float32)]
            with variant():
                _, fd, _, _, _, _ = case(scale)
                fd.execute(inputs, outputs=given)  # compiled here for the calls timed below
            err = float(np.max(np.abs(given[0] - ref)))
            assert err < 1e-4 * max(1.0, float(np.max(np.abs(ref)))), f"{name}, {label}: max abs error {err}"
            row[f"{label}_one_thread_ms"] = timed_on(1, lambda: fd.execute(inputs, outputs=given), repeat) * 1e3
            row[f"{label}_ms"] = timed_on(threads, lambda: fd.execute(inputs, outputs=given), repeat) * 1e3
        rows.append(row)
    return rows


def column_sums(threads: int, repeat: int, scale: int = 0) -> list[dict]:
    """Sums over dim 0 of 16M-element arrays (``scale``: 4**scale times fewer
    rows) of 256 to 16384 columns, float32 and bfloat16, and over dims 0
    and 1 of a float32 64x256x1024, compiled with the pipeline's jam factor
    and with none (``jam_factor(1)``), each on one thread and on
    ``threads``, each call with a new output as ``fd.execute([x])`` makes
    it (a row-by-row sum runs slower into an output that is not 64-byte
    aligned, as NumPy's are not: 2.6 ms against 1.7 for a float32 4096x4096
    on one thread here); NumPy beside the float32 ones."""
    elements = 16 * 1024 * 1024 >> (2 * scale)
    cases = [(dtype, (elements // columns or 1, columns), (0,)) for dtype in (DataType.Float, DataType.BFloat16) for columns in (256, 1024, 4096, 16384)]
    cases.append((DataType.Float, (64, (elements // 65536) or 1, 1024), (0, 1)))
    rows = []
    for dtype, shape, dims in cases:
        x = np.random.default_rng(shape[-1]).standard_normal(shape).astype(dtype.numpy)
        ref = x.astype(np.float64).sum(axis=dims)
        row = {"dtype": dtype.name, "shape": list(shape), "dims": list(dims)}
        for label, factor in (("jammed", None), ("row_by_row", 1)):
            with contextlib.nullcontext() if factor is None else jam_factor(factor):
                with FusionDefinition(name=f"column_sum_{label}") as fd:
                    t = fd.define_tensor(shape=[-1] * len(shape), dtype=dtype)
                    fd.add_output(fd.ops.sum(t, dims=list(dims)))
                (out,) = fd.execute([x])
            err = float(np.max(np.abs(out.astype(np.float64) - ref)))
            assert err < (1e-4 if dtype is DataType.Float else 1e-2) * max(1.0, float(np.max(np.abs(ref)))), f"{label} {shape}: max abs error {err}"
            row[f"{label}_one_thread_ms"] = timed_on(1, lambda: fd.execute([x]), repeat) * 1e3
            row[f"{label}_ms"] = timed_on(threads, lambda: fd.execute([x]), repeat) * 1e3
        row["numpy_ms"] = median_time(lambda: x.sum(axis=dims), repeat) * 1e3 if dtype is DataType.Float else None
        rows.append(row)
    return rows


@contextlib.contextmanager
def unmerged():
    """Elementwise kernels run their short rows as they are (no merged dims)."""
    saved = cpu_runtime.MERGE_BELOW
    cpu_runtime.MERGE_BELOW = 0
    try:
        yield
    finally:
        cpu_runtime.MERGE_BELOW = saved


def short_rows(threads: int, repeat: int, scale: int = 0) -> list[dict]:
    """The pointwise chain's operations on 16M float32 elements (``scale``:
    4**scale times fewer) as rows of 1, 3, 7 and 1024 columns, merged and
    unmerged, each on one thread and on ``threads``; NumPy beside."""
    _, _, (x, y), numpy_version, ref, _ = pointwise_chain(scale)
    with FusionDefinition(name="chain6_rows") as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.tanh(fd.ops.exp(a * 0.5 + b) - 1.0) * b)
    rows = []
    for columns in (1, 3, 7, 1024):
        n = x.size // columns * columns
        inputs = [x[:n].reshape(-1, columns), y[:n].reshape(-1, columns)]
        given = [np.full(inputs[0].shape, np.nan, np.float32)]
        fd.execute(inputs, outputs=given)
        err = float(np.max(np.abs(given[0].ravel() - ref[:n])))
        assert err < 1e-4 * max(1.0, float(np.max(np.abs(ref)))), f"rows of {columns}: max abs error {err}"
        row = {"shape": list(inputs[0].shape)}
        for label, variant in (("merged", contextlib.nullcontext), ("unmerged", unmerged)):
            with variant():
                row[f"{label}_one_thread_ms"] = timed_on(1, lambda: fd.execute(inputs, outputs=given), repeat) * 1e3
                row[f"{label}_ms"] = timed_on(threads, lambda: fd.execute(inputs, outputs=given), repeat) * 1e3
        row["numpy_ms"] = median_time(lambda: numpy_version(*inputs), repeat) * 1e3
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="bench/results/cpu.json")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--scale", type=int, default=0, help="4**SCALE times fewer elements in every case (a quick check)")
    args = parser.parse_args(argv)
    threads = config.cpu_threads()
    rows = []
    for case in (pointwise_chain, softmax, column_softmax, layer_norm, batch_layer_norm, column_sum):
        name, fd, inputs, numpy_version, ref, model_bytes = case(args.scale)
        (out,) = fd.execute(inputs)
        err = float(np.max(np.abs(out - ref)))
        assert err < 1e-4 * max(1.0, float(np.max(np.abs(ref)))), f"{name}: max abs error {err}"
        given = [np.empty_like(out)]
        one = timed_on(1, lambda: fd.execute(inputs, outputs=given), args.repeat)
        ours = timed_on(threads, lambda: fd.execute(inputs, outputs=given), args.repeat)
        theirs = median_time(lambda: numpy_version(*inputs), args.repeat)
        rows.append(
            {
                "case": name,
                "fuser_ms": ours * 1e3,
                "fuser_one_thread_ms": one * 1e3,
                "numpy_ms": theirs * 1e3,
                "speedup_vs_numpy": theirs / ours,
                "speedup_vs_one_thread": one / ours,
                "fuser_GBps": model_bytes / ours / 1e9,
                "max_abs_error": err,
            }
        )
    print(f"fuser-mlir on 1 and on {threads} threads (FUSER_CPU_THREADS), against NumPy")
    print(f"{'case':<44} {'1 thread':>9} {'fuser ms':>9} {'numpy ms':>9} {'speed-up':>9} {'GB/s':>7}")
    for r in rows:
        print(
            f"{r['case']:<44} {r['fuser_one_thread_ms']:9.2f} {r['fuser_ms']:9.2f} {r['numpy_ms']:9.2f} "
            f"{r['speedup_vs_numpy']:8.2f}x {r['fuser_GBps']:7.2f}"
        )
    sizes = chain_sizes(threads, args.repeat, args.scale)
    print(f"\nthe chain by size: 1 thread against {threads}")
    print(f"{'elements':>10} {'MB':>7} {'1 thread us':>12} {f'{threads} threads us':>12} {'speed-up':>9}")
    for r in sizes:
        print(f"{r['elements']:>10} {r['bytes'] / 1e6:7.2f} {r['one_thread_us']:12.1f} {r['threads_us']:12.1f} {r['speedup']:8.2f}x")
    sums = column_sums(threads, args.repeat, args.scale)
    print(f"\nsums over dim 0 (or dims 0, 1) by width, ms: jammed (fuser-unroll-jam-reductions) and row by row (factor=1), 1 thread / {threads}")
    print(f"{'dtype':<9} {'shape':>14} {'dims':>5} {'jammed':>15} {'row by row':>15} {'numpy':>7}")
    for r in sums:
        numpy_ms = f"{r['numpy_ms']:7.2f}" if r["numpy_ms"] is not None else f"{'-':>7}"
        print(
            f"{r['dtype']:<9} {'x'.join(map(str, r['shape'])):>14} {','.join(map(str, r['dims'])):>5} {r['jammed_one_thread_ms']:7.2f} {r['jammed_ms']:7.2f} "
            f"{r['row_by_row_one_thread_ms']:7.2f} {r['row_by_row_ms']:7.2f} {numpy_ms}"
        )
    blocks = row_blocks(threads, args.repeat, args.scale)
    print(f"\nblock by block of rows (fuser-block-rows), without fuser-share-call-results, and whole (block-bytes=0), ms, 1 thread / {threads}")
    print(f"{'case':<44} " + " ".join(f"{label:>15}" for label in ROW_BLOCK_VARIANTS))
    for r in blocks:
        print(f"{r['case']:<44} " + " ".join(f"{r[f'{label}_one_thread_ms']:7.2f} {r[f'{label}_ms']:7.2f}" for label in ROW_BLOCK_VARIANTS))
    short = short_rows(threads, args.repeat, args.scale)
    print(f"\nthe chain as rows of 1 to 1024 columns, ms: dims merged (as run) and as they are, 1 thread / {threads}")
    print(f"{'shape':>14} {'merged':>15} {'unmerged':>15} {'numpy':>7}")
    for r in short:
        print(
            f"{'x'.join(map(str, r['shape'])):>14} {r['merged_one_thread_ms']:7.2f} {r['merged_ms']:7.2f} "
            f"{r['unmerged_one_thread_ms']:7.2f} {r['unmerged_ms']:7.2f} {r['numpy_ms']:7.2f}"
        )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "commit": commit(), "machine": platform.machine(), "cpus": os.cpu_count(), "threads": threads, "rows": rows, "chain_sizes": sizes,
        "column_sums": sums, "row_blocks": blocks, "short_rows": short,
    }
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
