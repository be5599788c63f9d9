"""Compile time of a fusion's GPU kernels: one LLVM module per kernel against all in one, side by side.

    python bench/compile_time.py [--rounds 3] [--cases softmax,layer_norm] [--json bench/results/compile-time.json]

Compiles each fusion of bench/run.py (float32 and bfloat16) for sm_90, as
for the bench's H200 (no GPU needed; ptxas assembles the PTX where it is on
PATH), its tensors dense and 16-byte aligned, as ``compile_fusion`` does on
a first call. Each round compiles every case twice, with
``SEPARATE_KERNEL_MODULES`` (fuser_mlir/lowering/gpu.py) on and off, in
turn; the table shows the median round's seconds of each and their ratio.
LLVM's code generation of separate modules runs on MLIR's threads, one per
CPU of the process (the ``cpus`` column), and ptxas on as many
(``--split-compile``) either way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import CASES, fusion_for, git_commit  # noqa: E402  (bench/run.py)

from fuser_mlir.compiler import compile_fusion  # noqa: E402
from fuser_mlir.lowering import gpu  # noqa: E402

DTYPES = ("float32", "bfloat16")


def compile_seconds(case, dtype: str, separate: bool) -> tuple[float, int]:
    """Seconds to compile ``case`` for sm_90 with SEPARATE_KERNEL_MODULES =
    ``separate``, and its number of kernels."""
    fd = fusion_for(case, dtype)
    inputs = len(case.shapes(1 << 20, 1024))
    layouts = {"input": [(True, 16)] * inputs, "given": {0: (True, 16)}}
    before = gpu.SEPARATE_KERNEL_MODULES
    gpu.SEPARATE_KERNEL_MODULES = separate
    try:
        start = time.perf_counter()
        compiled = compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts)
        seconds = time.perf_counter() - start
    finally:
        gpu.SEPARATE_KERNEL_MODULES = before
    return seconds, compiled.program.ptx.count(".entry ")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated bench/run.py case names")
    parser.add_argument("--json", default="bench/results/compile-time.json")
    args = parser.parse_args(argv)
    names = {c.name: c for c in CASES}
    unknown = [name for name in args.cases.split(",") if name not in names]
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}: the cases are {', '.join(names)}")
    compile_seconds(names[args.cases.split(",")[0]], "float32", True)  # imports, ptxas's --help probe
    rows = []
    for name in args.cases.split(","):
        for dtype in DTYPES:
            times = {True: [], False: []}
            for _ in range(args.rounds):
                for separate in (True, False):
                    seconds, kernels = compile_seconds(names[name], dtype, separate)
                    times[separate].append(seconds)
            separate, whole = statistics.median(times[True]), statistics.median(times[False])
            rows.append({"case": name, "dtype": dtype, "kernels": kernels, "one_module_s": whole, "module_per_kernel_s": separate, "speedup": whole / separate})
            row = rows[-1]
            print(f"{name:<14} {dtype:<9} {kernels:>3} kernels  one module {whole:6.2f} s  a module each {separate:6.2f} s  {row['speedup']:5.2f}x", flush=True)
    total_whole, total_separate = sum(r["one_module_s"] for r in rows), sum(r["module_per_kernel_s"] for r in rows)
    cpus = len(os.sched_getaffinity(0))  # the CPUs this process may use (MLIR's threads, ptxas's)
    print(f"all {len(rows)} fusions: one module {total_whole:.2f} s, a module each {total_separate:.2f} s ({total_whole / total_separate:.2f}x), {cpus} cpus")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"commit": git_commit(), "machine": platform.machine(), "cpus": cpus, "rounds": args.rounds, "rows": rows}
    out.write_text(json.dumps(record, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
