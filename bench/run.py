"""GPU benchmark: fused fuser-mlir kernels against a device-to-device copy,
PyTorch eager and torch.compile, measured side by side in one process.

    python3 bench/run.py [--quick] [--max-bytes 1G] [--cases softmax,rms_norm] [--dtypes float32]

Cases (each written once with fd.ops primitives and once in PyTorch, the same
arithmetic: bfloat16 inputs are computed in float32 and the results rounded
back, as fusions do): a pointwise chain ``(exp(x + y) * y - x) * 0.5``, a
broadcast add of a column and a row vector, a scale and bias ``x * w + b``
(``w`` and ``b`` vectors of the row's length), an inner and an outer sum, a
row softmax, a layer norm and an RMS norm. 2-D cases have rows of 1024
elements, and the scale and bias, the inner sum and the normalizations
(softmax, layer norm, RMS norm) rows of each length in --hidden (default
128, 1024, 8192 and 32768 elements).
A case's size is the bytes of its largest tensor, from 1 MB to --max-bytes
(default 1 GB) in steps of 4x, in float32 and bfloat16.

Method, per case, dtype and size:

1. Correctness first: fresh random inputs (seeded), the given outputs
   poisoned with NaN, ``fd.execute(inputs, outputs=outs)`` on torch CUDA
   tensors, then every output compared with the same function evaluated by
   PyTorch in float64: ``|out - ref| <= tol * (|ref| + rms(ref))`` with tol
   2e-4 (float32) or 2e-2 (bfloat16). Inputs must be unchanged and the outputs
   written in place. A mismatch is reported and the run exits non-zero.
2. Timing: after warm-up (--warmup calls, and more until --warmup-ms have
   passed: a row after a larger one settles), each call runs between two CUDA events on the
   current stream, after the L2 cache is flushed (a 256 MB write) and the
   device synchronised; the median of --repeat calls is kept (with
   --rounds R, ours, copy, eager and compile are measured R times in turn,
   and each keeps the median of its R medians; the table's ``range`` column
   and the JSON's ``vs_compile_range`` say how far x compile moved between
   the rounds, ``rounds_ms`` has every round's times). The events time
   the device's work alone: a spin kernel holds the stream until the host has
   enqueued the start event, the call and the end event (a call the host took
   longer to enqueue is timed again under a longer hold), as NVBench's
   blocking kernel does. The host's cost is step 3's. ``--host-in-events``
   times the older way, the device idle while the host launches, so host
   latency is inside the events.
3. Host cost: --host-calls back-to-back ``fd.execute`` calls on the same
   inputs (no flush, no synchronisation between them; the device works
   behind), timed with ``time.thread_time_ns`` (CPU time of the calling
   thread: what the host spends per call) and ``time.perf_counter_ns`` (wall,
   which includes waiting when the launch queue is full); the median of
   --host-batches batches, in microseconds per call (``host_us``,
   ``host_wall_us``). The device is synchronised before each batch, and a
   batch (default 100 calls) stays well below the driver's launch queue, so
   the host does not wait for the device inside a batch.

Compared: ours (``fd.execute`` into preallocated outputs), a device-to-device
copy moving the same model bytes (``dst.copy_(src)``, src and dst each half
of the model bytes), PyTorch eager, and ``torch.compile`` of the same function
(``dynamic=False``, one compile per case, dtype and size). Model bytes are the
bytes of every input read once plus every output written once; GB/s are model
bytes per second for all four. Ratios: ``/copy`` is our throughput as a
fraction of the copy's (copy time / our time); ``x eager`` and ``x compile``
are speed-ups (their time / our time), so > 1 means ours is faster.

Prints each row's numbers to stderr as it is measured (a run stopped by
Ctrl-C or SIGTERM, as ``timeout`` sends, prints the table of the rows so far
and writes no JSON), then a table, and writes ``bench/results/h200.json`` on an H200 (another
GPU: ``bench/results/<gpu name, sanitised>.json``; or --json) with the git
commit. ``bench/plot.py`` draws GB/s against size from that file. Runs on a
GPU host with torch and cuda-bindings; ``--help`` works anywhere, and the
pure helpers (paths, host timing, the table) are tested in
``test/test_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HIDDEN = 1024  # the row length of 2-D cases (the scale and bias, the inner sum and the normalizations take --hidden)
NORM_HIDDEN = "128,1024,8192,32768"  # --hidden's default (128: rows that a group of a warp's lanes takes, SPAN_ROWS)
MB = 1 << 20
TOLERANCE = {"float32": 2e-4, "bfloat16": 2e-2}
L2_FLUSH_BYTES = 256 * MB


# ---------------------------------------------------------------------------
# The cases: a fusion builder, the same function in PyTorch, and input shapes
# ---------------------------------------------------------------------------


def fd_up(fd, t, low_precision: bool):
    """A fusion value in float32 (bfloat16 inputs are computed in float32)."""
    from fuser_mlir import DataType

    return fd.ops.cast(t, DataType.Float) if low_precision else t


def fd_down(fd, t, dtype):
    """A float32 fusion value rounded back to the case's dtype."""
    from fuser_mlir import DataType

    return fd.ops.cast(t, dtype) if dtype != DataType.Float else t


def th_up(t):
    """A torch tensor in float32 when it is bfloat16 (float32 and float64 stay)."""
    import torch

    return t.float() if t.dtype == torch.bfloat16 else t


def build_pointwise(fd, dtype, low):
    x = fd.define_tensor(shape=[-1], dtype=dtype)
    y = fd.define_tensor(shape=[-1], dtype=dtype)
    xf, yf = fd_up(fd, x, low), fd_up(fd, y, low)
    fd.add_output(fd_down(fd, (fd.ops.exp(xf + yf) * yf - xf) * 0.5, dtype))


def torch_pointwise(x, y):
    xf, yf = th_up(x), th_up(y)
    return ((xf.add(yf).exp() * yf - xf) * 0.5).to(x.dtype)


def build_broadcast_add(fd, dtype, low):
    column = fd.define_tensor(shape=[-1, 1], dtype=dtype)
    row = fd.define_tensor(shape=[1, -1], dtype=dtype)
    fd.add_output(fd_down(fd, fd_up(fd, column, low) + fd_up(fd, row, low), dtype))


def torch_broadcast_add(column, row):
    return (th_up(column) + th_up(row)).to(column.dtype)


def build_scale_bias(fd, dtype, low):
    x = fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=dtype), low)
    w = fd_up(fd, fd.define_tensor(shape=[-1], dtype=dtype), low)
    b = fd_up(fd, fd.define_tensor(shape=[-1], dtype=dtype), low)
    fd.add_output(fd_down(fd, x * w + b, dtype))


def torch_scale_bias(x, w, b):
    return (th_up(x) * th_up(w) + th_up(b)).to(x.dtype)


def build_inner_sum(fd, dtype, low):
    x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
    fd.add_output(fd_down(fd, fd.ops.sum(fd_up(fd, x, low), dims=[1]), dtype))


def torch_inner_sum(x):
    return th_up(x).sum(dim=1).to(x.dtype)


def build_outer_sum(fd, dtype, low):
    x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
    fd.add_output(fd_down(fd, fd.ops.sum(fd_up(fd, x, low), dims=[0]), dtype))


def torch_outer_sum(x):
    return th_up(x).sum(dim=0).to(x.dtype)


def build_softmax(fd, dtype, low):
    x = fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=dtype), low)
    e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
    fd.add_output(fd_down(fd, e / fd.ops.sum(e, dims=[1], keepdim=True), dtype))


def torch_softmax(x):
    xf = th_up(x)
    e = (xf - xf.amax(dim=1, keepdim=True)).exp()
    return (e / e.sum(dim=1, keepdim=True)).to(x.dtype)


def build_layer_norm(fd, dtype, low):
    x = fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=dtype), low)
    w = fd_up(fd, fd.define_tensor(shape=[-1], dtype=dtype), low)
    b = fd_up(fd, fd.define_tensor(shape=[-1], dtype=dtype), low)
    centered = x - fd.ops.mean(x, dims=[1], keepdim=True)
    var = fd.ops.mean(centered * centered, dims=[1], keepdim=True)
    fd.add_output(fd_down(fd, centered * fd.ops.rsqrt(var + 1e-5) * w + b, dtype))


def torch_layer_norm(x, w, b):
    xf, wf, bf = th_up(x), th_up(w), th_up(b)
    centered = xf - xf.mean(dim=1, keepdim=True)
    var = (centered * centered).mean(dim=1, keepdim=True)
    return (centered * (var + 1e-5).rsqrt() * wf + bf).to(x.dtype)


def build_rms_norm(fd, dtype, low):
    x = fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=dtype), low)
    w = fd_up(fd, fd.define_tensor(shape=[-1], dtype=dtype), low)
    fd.add_output(fd_down(fd, x * fd.ops.rsqrt(fd.ops.mean(x * x, dims=[1], keepdim=True) + 1e-6) * w, dtype))


def torch_rms_norm(x, w):
    xf = th_up(x)
    return (xf * ((xf * xf).mean(dim=1, keepdim=True) + 1e-6).rsqrt() * th_up(w)).to(x.dtype)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable  # (fd, DataType, low_precision) -> None, inside `with FusionDefinition()`
    torch_fn: Callable  # (*inputs) -> output tensor
    shapes: Callable[[int, int], list[tuple[int, ...]]]  # (largest tensor's element count, row length) -> input shapes
    long_rows: bool = False  # rows of each --hidden length


def row_count(n: int, hidden: int) -> int:
    return max(n // hidden, 1)


CASES = [
    Case("pointwise", build_pointwise, torch_pointwise, lambda n, h: [(n,), (n,)]),
    Case("broadcast_add", build_broadcast_add, torch_broadcast_add, lambda n, h: [(row_count(n, h), 1), (1, h)]),
    Case("scale_bias", build_scale_bias, torch_scale_bias, lambda n, h: [(row_count(n, h), h), (h,), (h,)], True),
    Case("inner_sum", build_inner_sum, torch_inner_sum, lambda n, h: [(row_count(n, h), h)], True),
    Case("outer_sum", build_outer_sum, torch_outer_sum, lambda n, h: [(row_count(n, h), h)]),
    Case("softmax", build_softmax, torch_softmax, lambda n, h: [(row_count(n, h), h)], True),
    Case("layer_norm", build_layer_norm, torch_layer_norm, lambda n, h: [(row_count(n, h), h), (h,), (h,)], True),
    Case("rms_norm", build_rms_norm, torch_rms_norm, lambda n, h: [(row_count(n, h), h), (h,)], True),
]


def fusion_for(case: Case, dtype_name: str):
    from fuser_mlir import DataType, FusionDefinition

    dtype = {"float32": DataType.Float, "bfloat16": DataType.BFloat16}[dtype_name]
    with FusionDefinition(name=f"{case.name}_{dtype_name}") as fd:
        case.build(fd, dtype, dtype == DataType.BFloat16)
    return fd


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


class Mismatch(Exception):
    """Our result differs from the float64 reference (or the call misbehaved)."""


def check_correct(fd, case: Case, inputs, dtype_name: str) -> float:
    """Run ours once on poisoned outputs and compare with PyTorch in float64;
    return the max abs error, or raise Mismatch."""
    import torch

    reference = case.torch_fn(*[t.double() for t in inputs])
    outs = [torch.full_like(case.torch_fn(*inputs), float("nan"))]
    before = [t.clone() for t in inputs]
    result = fd.execute(inputs, outputs=outs)
    torch.cuda.synchronize()
    if len(result) != 1 or result[0].data_ptr() != outs[0].data_ptr():
        raise Mismatch("the given output was not returned (written in place)")
    for i, (t, t0) in enumerate(zip(inputs, before)):
        if not torch.equal(t, t0):
            raise Mismatch(f"input {i} was modified")
    got = outs[0].double()
    error = (got - reference).abs()
    bound = TOLERANCE[dtype_name] * (reference.abs() + reference.square().mean().sqrt())
    if not bool((error <= bound).all()):  # NaN fails too
        worst = int(torch.argmax(torch.nan_to_num(error / bound, nan=float("inf"))))
        raise Mismatch(
            f"max abs error {error.max().item():.3g}; at flat index {worst}: got {got.flatten()[worst].item():.6g}, "
            f"expected {reference.flatten()[worst].item():.6g} (bound {bound.flatten()[worst].item():.3g})"
        )
    return float(error.max())


HOLD_CYCLES = 1 << 18  # the first hold: about 130 us of GPU clock, doubled whenever the host needs longer
#: Least time a measurement's untimed calls take (--warmup-ms). With 5 calls
#: alone, a row measured right after a larger one of the same fusion could
#: stay slow through its 50 timed calls: the scale and bias bfloat16 of 8K
#: columns at 256 MB after the 1 GB rows of 1K, 141.4 us against 128.3 (its
#: copy too, once; sweeps 34f and 37d). After 300 untimed calls (about 40
#: ms of it) it took 128.7, as it does in a process of its own; this default
#: is twice that. With it, every row of the bench in one process measured as
#: it does alone (that row 128.4-128.5 us; bench/results/h200-rounds.*, sweep 38c).
WARMUP_MS = 100.0


def warm_up(fn, calls: int, seconds: float, sync, clock=time.perf_counter) -> int:
    """Untimed calls of ``fn``, each followed by ``sync``: at least ``calls``
    and, past them, more until ``seconds`` have passed on ``clock``. Returns how many ran."""
    done, start = 0, clock()
    while done < calls or clock() - start < seconds:
        fn()
        sync()
        done += 1
    return done


def median_ms(fn, repeat: int, warmup: int, flush, hold: bool = True, warmup_ms: float = WARMUP_MS) -> float:
    """Median device time of ``fn`` between CUDA events, each call after an L2
    flush and a synchronisation.

    With ``hold``, a spin kernel (``torch.cuda._sleep``) holds the stream while
    the host enqueues the start event, ``fn`` and the end event, so the events
    time the device's work alone; the host's own cost is measured apart
    (``host_us_per_call``). A call whose enqueueing outlasted the hold is timed
    again with a hold twice as long, so host time never enters the window.
    Without ``hold`` (``--host-in-events``), the device idles while the host
    launches, and that latency is inside the events. First, untimed calls:
    ``warmup`` of them and as many more as ``warmup_ms`` takes (:func:`warm_up`)."""
    import torch

    global HOLD_CYCLES
    warm_up(fn, warmup, warmup_ms / 1e3, torch.cuda.synchronize)
    held, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    times = []
    while len(times) < repeat:
        if flush is not None:
            flush.zero_()
        torch.cuda.synchronize()
        enqueue = time.perf_counter()
        if hold:
            held.record()
            torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        fn()
        end.record()
        enqueue = (time.perf_counter() - enqueue) * 1e3
        end.synchronize()
        if hold and held.elapsed_time(start) < 1.5 * enqueue + 0.01:
            HOLD_CYCLES *= 2  # the host was still enqueueing when the hold ended
            continue
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def random_inputs(case: Case, dtype, nbytes: int, seed: int, hidden: int = HIDDEN):
    import torch

    generator = torch.Generator(device="cuda").manual_seed(seed)
    n = nbytes // torch.empty((), dtype=dtype).element_size()
    return [torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32).to(dtype) for shape in case.shapes(n, hidden)]


def measure(case: Case, fd, dtype_name: str, nbytes: int, args, flush, hidden: int = HIDDEN) -> dict:
    import torch

    dtype = getattr(torch, dtype_name)
    inputs = random_inputs(case, dtype, nbytes, seed=nbytes + len(case.name), hidden=hidden)
    row = {"case": case.name, "dtype": dtype_name, "size_bytes": nbytes, "hidden": hidden, "shapes": [list(t.shape) for t in inputs]}
    row["max_abs_error"] = check_correct(fd, case, inputs, dtype_name)

    outs = [torch.empty_like(case.torch_fn(*inputs))]
    model_bytes = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outs)
    src = torch.empty(model_bytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    torch._dynamo.reset()  # one compile per case, dtype and size: no recompile limit, no dynamic shapes
    compiled = torch.compile(case.torch_fn, dynamic=False, mode=args.compile_mode)

    timings = {
        "ours": lambda: fd.execute(inputs, outputs=outs),
        "copy": lambda: dst.copy_(src),
        "eager": lambda: case.torch_fn(*inputs),
        "compile": lambda: compiled(*inputs),
    }
    rounds = [
        {name: median_ms(fn, args.repeat, args.warmup, flush, hold=not args.host_in_events, warmup_ms=args.warmup_ms) for name, fn in timings.items()}
        for _ in range(args.rounds)
    ]
    ms = {name: statistics.median(r[name] for r in rounds) for name in timings}
    row["model_bytes"] = model_bytes
    row["ms"] = ms
    if args.rounds > 1:
        row["rounds_ms"] = {name: [r[name] for r in rounds] for name in timings}
        row["vs_compile_range"] = speedup_range(rounds, "compile")
    row["GBps"] = {name: model_bytes / (t * 1e-3) / 1e9 for name, t in ms.items()}
    row["GBps"]["copy"] = 2 * src.nbytes / (ms["copy"] * 1e-3) / 1e9
    row["of_copy"] = row["GBps"]["ours"] / row["GBps"]["copy"]
    row["vs_eager"] = ms["eager"] / ms["ours"]
    row["vs_compile"] = ms["compile"] / ms["ours"]
    host = host_us_per_call(timings["ours"], args.host_calls, args.host_batches, sync=torch.cuda.synchronize)
    row["host_us"], row["host_wall_us"] = host["cpu_us"], host["wall_us"]
    return row


def speedup_range(rounds: list[dict], reference: str) -> list[float]:
    """[least, most] of ``reference``'s time over ours among the rounds
    (each round's times measured side by side): how far a speed-up moved
    from round to round, so a ratio near 1 reads as a tie or not."""
    ratios = [r[reference] / r["ours"] for r in rounds]
    return [min(ratios), max(ratios)]


def host_us_per_call(fn, calls: int, batches: int, *, sync=None, cpu_clock=time.thread_time_ns, wall_clock=time.perf_counter_ns) -> dict:
    """Host cost of ``fn``: ``batches`` batches of ``calls`` back-to-back
    calls, each batch timed with ``cpu_clock`` (CPU time of this thread) and
    ``wall_clock``; the median batch, in microseconds per call. ``sync`` (e.g.
    ``torch.cuda.synchronize``) runs before each batch and after the last, outside
    the CPU timing, so device work queued by one batch does not delay the next."""
    if calls < 1 or batches < 1:
        raise ValueError(f"host timing needs at least one call and one batch, got calls={calls}, batches={batches}")
    cpu, wall = [], []
    for _ in range(batches):
        if sync is not None:
            sync()
        c0, w0 = cpu_clock(), wall_clock()
        for _ in range(calls):
            fn()
        c1, w1 = cpu_clock(), wall_clock()
        cpu.append((c1 - c0) / calls / 1e3)
        wall.append((w1 - w0) / calls / 1e3)
    if sync is not None:
        sync()
    return {"cpu_us": statistics.median(cpu), "wall_us": statistics.median(wall)}


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*([KMG]?)B?", text.strip().upper())
    if match is None:
        raise argparse.ArgumentTypeError(f"a size like 64M or 1G, got {text!r}")
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]


def sizes(max_bytes: int, quick: bool, min_bytes: int = MB) -> list[int]:
    """The case sizes: 1 MB, 4 MB, ... up to ``max_bytes`` (``quick``: every
    other one, 1 MB, 16 MB, 256 MB), those below ``min_bytes`` left out."""
    result, size = [], MB
    while size <= max_bytes:
        result.append(size)
        size *= 4
    return [s for s in (result[::2] if quick else result) if s >= min_bytes]


def git_commit() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def format_size(nbytes: int) -> str:
    return f"{nbytes >> 30} GB" if nbytes >= 1 << 30 else f"{nbytes >> 20} MB"


def _host(row: dict) -> str:
    """Host us per call of a row; rows of older JSON files have none."""
    return f"{row['host_us']:.1f}" if row.get("host_us") is not None else "-"


def default_json_path(gpu: str, results: Path = Path(__file__).parent / "results") -> Path:
    """``results/h200.json`` for an H200 (any name containing H200), else
    ``results/<gpu name>.json`` with runs of other characters than letters,
    digits, dots and dashes replaced by ``_``."""
    if "H200" in gpu.upper():
        return results / "h200.json"
    return results / f"{re.sub(r'[^A-Za-z0-9.-]+', '_', gpu).strip('_') or 'gpu'}.json"


def case_label(row: dict) -> str:
    """A row's case, with its row length where that is not the default
    (``softmax, rows of 32768``)."""
    hidden = row.get("hidden", HIDDEN)
    return row["case"] if hidden == HIDDEN else f"{row['case']}, rows of {hidden}"


def _range(row: dict) -> str:
    """A row's x compile range over its rounds (``0.990-1.010``); rows of one round have none."""
    low_high = row.get("vs_compile_range")
    return f"{low_high[0]:.3f}-{low_high[1]:.3f}" if low_high else "-"


def print_table(rows: list[dict]) -> None:
    """The rows as a table; with a ``range`` column (:func:`speedup_range`) where any row was measured in rounds."""
    ranged = any(r.get("vs_compile_range") for r in rows)
    header = (
        f"{'case':<28} {'dtype':<9} {'size':>7} {'ours us':>9} {'ours GB/s':>10} {'copy GB/s':>10} {'eager GB/s':>11} {'compile GB/s':>13} {'/copy':>6} {'x eager':>8} {'x compile':>10}"
        + (f" {'range':>11}" if ranged else "")
        + f" {'host us':>8} {'max err':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        g = r["GBps"]
        print(
            f"{case_label(r):<28} {r['dtype']:<9} {format_size(r['size_bytes']):>7} {r['ms']['ours'] * 1e3:9.1f} {g['ours']:10.0f} {g['copy']:10.0f} "
            f"{g['eager']:11.0f} {g['compile']:13.0f} {r['of_copy']:6.2f} {r['vs_eager']:8.2f} {r['vs_compile']:10.2f}"
            + (f" {_range(r):>11}" if ranged else "")
            + f" {_host(r):>8} {r['max_abs_error']:9.2g}"
        )


def _summary(row: dict) -> str:
    """One measured row in a line (printed as the bench goes, so a run stopped early keeps what it measured)."""
    return f"{row['ms']['ours'] * 1e3:.1f} us, {row['of_copy']:.2f} of copy, {row['vs_compile']:.2f}x compile" + (f" ({_range(row)})" if row.get("vs_compile_range") else "")


def _terminated(signum, frame) -> None:
    """SIGTERM (``timeout``, a job's end) stops the bench as Ctrl-C does: the rows measured so far are printed."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--max-bytes", type=parse_bytes, default=1 << 30, help="largest tensor size (default 1G)")
    parser.add_argument("--min-bytes", type=parse_bytes, default=MB, help="smallest tensor size (default 1M): --min-bytes 256M times 256 MB and 1 GB only")
    parser.add_argument("--quick", action="store_true", help="sizes 1 MB, 16 MB, 256 MB (up to --max-bytes) and 10 timed calls")
    parser.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated subset of: %(default)s")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated subset of: %(default)s")
    parser.add_argument("--hidden", default=NORM_HIDDEN, help="row lengths of scale_bias, inner_sum, softmax, layer_norm and rms_norm, comma-separated (default %(default)s)")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per measurement (default 50, 10 with --quick)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5) ...")
    parser.add_argument("--warmup-ms", type=float, default=WARMUP_MS, help="... and more until they took this many milliseconds (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=1, help="measure ours, copy, eager and compile this many times in turn, keeping each one's median (default 1); more than 1 also records the x compile range")
    parser.add_argument("--compile-mode", default=None, help="torch.compile mode (default: torch's default)")
    parser.add_argument("--no-l2-flush", action="store_true", help="keep the L2 cache warm between timed calls")
    parser.add_argument("--host-in-events", action="store_true", help="no hold: the host's launch latency is inside the timed window")
    parser.add_argument("--host-calls", type=int, default=100, help="back-to-back calls per host-timing batch (default 100)")
    parser.add_argument("--host-batches", type=int, default=5, help="host-timing batches; the median is kept (default 5)")
    parser.add_argument("--json", default=None, help="output path (default bench/results/h200.json on an H200, else bench/results/<gpu name>.json)")
    parser.add_argument("--commit", default=None, help="git commit to record (default: git rev-parse HEAD, 'unknown' without git)")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (10 if args.quick else 50)
    if args.rounds < 1:
        parser.error(f"--rounds takes a count of 1 or more, got {args.rounds}")
    by_name = {c.name: c for c in CASES}
    unknown = [n for n in args.cases.split(",") if n not in by_name] + [d for d in args.dtypes.split(",") if d not in TOLERANCE]
    if unknown:
        parser.error(f"unknown case or dtype: {', '.join(unknown)}")
    try:
        hiddens = [int(h) for h in args.hidden.split(",")]
    except ValueError:
        hiddens = []
    if not hiddens or min(hiddens) < 1:
        parser.error(f"--hidden takes positive row lengths separated by commas, like 1024,32768; got {args.hidden!r}")

    import torch

    if not torch.cuda.is_available():
        print("bench/run.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0)
    flush = None if args.no_l2_flush else torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows, failures = [], []
    signal.signal(signal.SIGTERM, _terminated)
    try:
        for name in args.cases.split(","):
            case = by_name[name]
            for dtype_name in args.dtypes.split(","):
                fd = fusion_for(case, dtype_name)  # one definition across sizes: sizes are symbolic
                for hidden, nbytes in [(h, b) for h in (hiddens if case.long_rows else [HIDDEN]) for b in sizes(args.max_bytes, args.quick, args.min_bytes)]:
                    label = f"{case_label({'case': name, 'hidden': hidden})} {dtype_name} {format_size(nbytes)}"
                    started = time.perf_counter()
                    try:
                        row = measure(case, fd, dtype_name, nbytes, args, flush, hidden)
                    except Mismatch as err:
                        failures.append(f"{label}: {err}")
                        print(f"MISMATCH {label}: {err}", file=sys.stderr, flush=True)
                        continue
                    rows.append(row)
                    print(f"measured {label} in {time.perf_counter() - started:.1f} s: {_summary(row)}", file=sys.stderr, flush=True)
                    torch.cuda.empty_cache()
    except KeyboardInterrupt:
        print_table(rows)
        print(f"\nbench/run.py: stopped after {len(rows)} row(s); no JSON written", file=sys.stderr)
        return 130
    print_table(rows)
    if failures:
        print(f"\n{len(failures)} correctness mismatch(es); no JSON written:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    out = Path(args.json) if args.json else default_json_path(gpu)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "commit": args.commit or git_commit(),
        "gpu": gpu,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "argv": sys.argv[1:] if argv is None else argv,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "warmup_ms": args.warmup_ms,
        "rounds": args.rounds,
        "host_calls": args.host_calls,
        "host_batches": args.host_batches,
        "l2_flush": flush is not None,
        "timing": "host latency inside the events" if args.host_in_events else "device time (stream held while the host enqueues)",
        "hidden": HIDDEN,
        "norm_hidden": hiddens,
        "tolerance": TOLERANCE,
    }
    out.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
