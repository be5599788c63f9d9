"""Host overhead of a cache-hit ``fd.execute``: microseconds per call.

    python bench/host_overhead.py [--calls 10000] [--batches 7] [--json out.json] [--profile CASE]

Cases: a 1-op add (one kernel), a 3-segment and a 10-segment chain (three
and ten kernels, cut with ``segment_set``), on 8 float32 elements, so the
kernels themselves cost next to nothing and the number is the Python/ctypes
path around them (argument checks, cache key, launches). Each case runs on
the CPU with NumPy arrays and, where torch and a CUDA GPU are present, on the
GPU with torch tensors, twice: kernel by kernel (the generated replay of a
cache hit) and as a CUDA graph (``fd.execute(..., cuda_graph=True)``; the
``graph`` column). GPU rows: the launches are asynchronous, so CPU time is
the host cost; the stream is synchronised once per batch.

Per case: after a warm-up (the compile and a few hits), ``--batches``
batches of ``--calls`` back-to-back calls, each timed with
``time.process_time_ns`` (CPU time of this process) and
``time.perf_counter_ns`` (wall); the table shows the median batch per call.
``--profile CASE`` runs cProfile over one batch of that case instead and
prints the top functions.

Each row also times, side by side in the same run, what the case computes
written with the device's array library: NumPy on the float32 arrays on the
CPU, torch eager on the GPU (one torch kernel per op, each with its new
tensor), timed the same way; ``x ref`` is its CPU time per call over ours
(above 1: our call costs the host less). Host speed differs between machines
by up to 2x (bench/results/h200-sweeps.txt, "host time by instance"); the
reference shows how fast this one is.

The issue 9 targets: <= 10 us CPU time per call for the one-kernel case on
the GPU, <= 20 us for the 10-segment chain replayed as a CUDA graph.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuser_mlir import DataType, FusionDefinition  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import git_commit  # noqa: E402  (bench/run.py: the commit, -dirty with uncommitted changes)


def one_op():
    with FusionDefinition(name="add1") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x + y)
    return fd, 2


def three_segments():
    with FusionDefinition(name="seg3") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t = fd.ops.segment_set(x + y)
        t = fd.ops.segment_set(fd.ops.exp(t))
        fd.add_output(t * y)
    return fd, 2


def ten_segments(rank: int = 1):
    """x, y -> ten kernels (cut with segment_set), nine intermediates (also
    test_cuda_replay's chain, on rank-2 tensors)."""
    with FusionDefinition(name="seg10") as fd:
        x = fd.define_tensor(shape=[-1] * rank, dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1] * rank, dtype=DataType.Float)
        t = x + y
        for k in range(8):
            t = fd.ops.segment_set(t)
            t = fd.ops.tanh(t) * 1.5 if k % 2 == 0 else t - y * 0.5
        t = fd.ops.segment_set(t)
        fd.add_output(t * y)
    return fd, 2


def reference(name: str, x, y, xp=np):
    """What each case computes, with the array module ``xp``: NumPy (on
    float64 copies: the check's reference; on the float32 inputs: the CPU
    rows' side-by-side reference) or torch (eager on the CUDA inputs: the
    GPU rows' reference, one torch kernel per op)."""
    if name == "add1":
        return x + y
    if name == "seg3":
        return xp.exp(x + y) * y
    t = x + y
    for k in range(8):
        t = xp.tanh(t) * 1.5 if k % 2 == 0 else t - y * 0.5
    return t * y


CASES = {"1-op": one_op, "3-segment": three_segments, "10-segment": ten_segments}
N = 8


def gpu_available() -> tuple[bool, str]:
    """Whether the GPU rows can run here, and why not."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA GPU"
    from fuser_mlir.runtime import cuda

    if not cuda.available():
        return False, "cuda-bindings is not usable"
    return True, torch.cuda.get_device_name()


def make_inputs(count: int, device: str) -> list:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(N).astype(np.float32) for _ in range(count)]
    if device == "cpu":
        return arrays
    import torch

    return [torch.as_tensor(a, device="cuda") for a in arrays]


def synchronize(device: str) -> None:
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def time_batches(call, args: tuple, device: str, calls: int, batches: int, **options) -> dict:
    """CPU and wall time per ``call(*args, **options)``: the median (and the
    least) of ``batches`` batches of ``calls`` back-to-back calls, after a
    warm-up, the device synchronised after each batch."""
    for _ in range(100):
        call(*args, **options)
    synchronize(device)
    cpu, wall = [], []
    for _ in range(batches):
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        if options:
            for _ in range(calls):
                call(*args, **options)
        else:  # no keywords: no dictionary unpacked per call
            for _ in range(calls):
                call(*args)
        synchronize(device)
        c1, w1 = time.process_time_ns(), time.perf_counter_ns()
        cpu.append((c1 - c0) / calls / 1000)
        wall.append((w1 - w0) / calls / 1000)
    return {"cpu_us": statistics.median(cpu), "wall_us": statistics.median(wall), "cpu_us_min": min(cpu), "wall_us_min": min(wall)}


def reference_module(device: str):
    """The side-by-side reference of a device's rows: NumPy on the CPU, torch eager on the GPU."""
    if device == "cpu":
        return np
    import torch

    return torch


def check_once(fd, inputs, device: str, graph: bool = False) -> None:
    """A wrong result makes a timing meaningless: compare calls with NumPy
    (the first call compiles; the second is a cache hit, and with ``graph``
    builds and replays the CUDA graph)."""
    host = [np.asarray(x.cpu()) if device != "cpu" else x for x in inputs]
    x, y = (h.astype(np.float64) for h in host)
    for _ in range(3):
        (out,) = fd.execute(inputs, cuda_graph=graph)
        got = np.asarray(out.cpu()) if device != "cpu" else out
        np.testing.assert_allclose(got, reference(fd.name, x, y), rtol=1e-5, atol=1e-6)


def profile(case: str, device: str, calls: int, graph: bool = False) -> None:
    fd, count = CASES[case]()
    inputs = make_inputs(count, device)
    for _ in range(100):
        fd.execute(inputs, cuda_graph=graph)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fd.execute(inputs, cuda_graph=graph)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10000, help="calls per batch (default 10000)")
    parser.add_argument("--batches", type=int, default=7, help="batches; the median is reported (default 7)")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    parser.add_argument("--commit", default=None, help="git commit to record (default: git rev-parse HEAD, 'unknown' without git)")
    parser.add_argument("--profile", choices=sorted(CASES), help="cProfile one batch of this case (CPU) instead")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="device for --profile")
    parser.add_argument("--graph", action="store_true", help="--profile the CUDA graph replay (cuda_graph=True)")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile, args.device, args.calls, args.graph)
        return 0
    gpu, why = gpu_available()
    devices = ["cpu"] + (["cuda"] if gpu else [])
    rows = []
    print(f"cache-hit fd.execute, {N} float32 elements, median of {args.batches} batches x {args.calls} calls")
    print(f"{'case':<12} {'device':<6} {'graph':<6} {'cpu us/call':>12} {'wall us/call':>13} {'reference':<12} {'ref cpu us':>10} {'x ref':>6}")
    for device in devices:
        xp = reference_module(device)
        name = "numpy" if xp is np else "torch eager"
        measured = {}  # case -> the reference's timing, measured once per device
        for graph in (False, True) if device == "cuda" else (False,):
            for case, build in CASES.items():
                fd, count = build()
                inputs = make_inputs(count, device)
                check_once(fd, inputs, device, graph)
                ours = time_batches(fd.execute, (inputs,), device, args.calls, args.batches, **({"cuda_graph": True} if graph else {}))
                if case not in measured:
                    measured[case] = time_batches(reference, (fd.name, *inputs, xp), device, args.calls, args.batches)
                ref = measured[case]
                row = {
                    "case": case, "device": device, "cuda_graph": graph, **ours,
                    "reference": name, "reference_cpu_us": ref["cpu_us"], "reference_wall_us": ref["wall_us"],
                }
                rows.append(row)
                print(
                    f"{case:<12} {device:<6} {'yes' if graph else 'no':<6} {row['cpu_us']:>12.2f} {row['wall_us']:>13.2f} "
                    f"{name:<12} {ref['cpu_us']:>10.2f} {ref['cpu_us'] / row['cpu_us']:>6.2f}"
                )
    if not gpu:
        print(f"GPU rows skipped: {why}")
    if args.json is not None:
        result = {
            "commit": args.commit or git_commit(),
            "python": platform.python_version(),
            "machine": platform.processor() or platform.machine(),
            "gpu": why if gpu else None,
            "calls": args.calls,
            "batches": args.batches,
            "rows": rows,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
