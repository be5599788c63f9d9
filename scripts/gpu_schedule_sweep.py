"""Try scheduler settings on the GPU.

    FUSER_CACHE=0 python3 scripts/gpu_schedule_sweep.py SETTINGS CASES [MB] [--compile]

SETTINGS is a Python list of strings, or a file holding one (named *.py): each string is
code run in the namespace of fuser_mlir.lowering.gpu_schedule before fresh
fusions are compiled ("" is the code as it is; "BLOCK_CACHED = ((256, 4),)"
sets a constant; a property of _RowGroup may be replaced too; "import
fuser_mlir.lowering.gpu as g; g.CONTRACT_FMA = False" sets one of the kernel
lowering). Everything both modules held is restored between settings. Read constants at call time only:
a constant bound as a default argument or dataclass default at import does
not follow a setting. CASES is a comma-separated list of case:dtype:hidden
(bench/run.py's cases, e.g. layer_norm:bfloat16:8192).

For each setting and case, prints the time of one call within 20 back-to-back
calls (host time hidden behind the device: the kernels' own time) and of one
call alone after an L2 flush (bench/run.py's method: device time, the stream
held while the host enqueues), each
against a copy of the same bytes timed the same way, after checking the
result against PyTorch in float64.
With --compile, torch.compile of each case is timed the same ways once (before
the settings), so a setting can be read against it as bench/run.py's
"x compile" column.
FUSER_CACHE=0 keeps kernels compiled under one setting out of the next. A
development tool for choosing the constants (bench/results/h200-sweeps.txt
has what each sweep found); bench/run.py is the benchmark.
"""

import ast
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, "bench")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402
from fuser_mlir.lowering import gpu_schedule  # noqa: E402
from scheduler_settings import restore, snapshot  # noqa: E402

def timed(fn, batch, flush, repeat=10):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        flush.zero_()
        torch.cuda.synchronize()
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / batch)
    return statistics.median(times)


def time_compiled(cases: list, megabytes: int, flush) -> None:
    """Print torch.compile's time for each case, back to back and one call alone, as main() prints ours."""
    by_name = {c.name: c for c in bench.CASES}
    for case_name, dtype, hidden in cases:
        case = by_name[case_name]
        inputs = bench.random_inputs(case, getattr(torch, dtype), megabytes << 20, seed=1, hidden=int(hidden))
        torch._dynamo.reset()
        compiled = torch.compile(case.torch_fn, dynamic=False)
        run = lambda: compiled(*inputs)  # noqa: E731
        back, alone = timed(run, 20, flush), 1e3 * bench.median_ms(run, 20, 3, flush)
        label = f"{'torch.compile':<42} {case_name:<10} {dtype:<8} h={hidden:<6}"
        print(f"{label} back-to-back {back:7.1f} us, one call {alone:7.1f} us", flush=True)


def main(settings_arg: str, cases_arg: str, megabytes: int = 256, compiled: bool = False) -> None:
    text = open(settings_arg).read() if settings_arg.endswith(".py") else settings_arg
    settings = ast.literal_eval(text)
    cases = [tuple(c.split(":")) for c in cases_arg.split(",")]
    flush = torch.empty(bench.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    if compiled:
        time_compiled(cases, megabytes, flush)
    saved = snapshot()
    by_name = {c.name: c for c in bench.CASES}
    copies = {}
    for setting in settings:
        restore(saved)
        exec(setting, vars(gpu_schedule))
        label = " ".join(setting.split())[:40]
        for case_name, dtype, hidden in cases:
            case = by_name[case_name]
            fd = bench.fusion_for(case, dtype)
            inputs = bench.random_inputs(case, getattr(torch, dtype), megabytes << 20, seed=1, hidden=int(hidden))
            outs = [torch.empty_like(case.torch_fn(*inputs))]
            try:
                error = bench.check_correct(fd, case, inputs, dtype)
            except Exception as err:  # a setting that breaks a kernel is a result too
                print(f"{label:<42} {case_name} {dtype} {hidden}: FAILED {type(err).__name__}: {str(err)[:300]}", flush=True)
                continue
            model = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outs)
            if model not in copies:
                src = torch.empty(model // 2, dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                copy = lambda: dst.copy_(src)  # noqa: E731
                copies[model] = timed(copy, 20, flush), 1e3 * bench.median_ms(copy, 20, 3, flush)
            run = lambda: fd.execute(inputs, outputs=outs)  # noqa: E731
            ours, alone = timed(run, 20, flush), 1e3 * bench.median_ms(run, 20, 3, flush)
            print(
                f"{label:<42} {case_name:<10} {dtype:<8} h={hidden:<6} back-to-back {ours:7.1f} us "
                f"({copies[model][0] / ours:.2f} of copy), one call {alone:7.1f} us ({copies[model][1] / alone:.2f}) err {error:.2g}",
                flush=True,
            )
    restore(saved)


def parse_args(argv: list[str]) -> tuple[str, str, int, bool]:
    """(SETTINGS, CASES, MB, --compile) from the command line; SystemExit with
    the usage on anything else."""
    flags = [a for a in argv if a.startswith("--")]
    positional = [a for a in argv if not a.startswith("--")]
    unknown = sorted(set(flags) - {"--compile"})
    if unknown or not 2 <= len(positional) <= 3:
        problem = f"unknown option {unknown[0]}" if unknown else "SETTINGS and CASES are required, MB optional"
        raise SystemExit(f"{problem}; usage: gpu_schedule_sweep.py SETTINGS CASES [MB] [--compile]")
    if len(positional) == 3 and not positional[2].isdigit():
        raise SystemExit(f"MB is the input size in whole megabytes (256, 1024), not {positional[2]!r}")
    return positional[0], positional[1], int(positional[2]) if len(positional) == 3 else 256, "--compile" in flags


if __name__ == "__main__":
    main(*parse_args(sys.argv[1:]))
