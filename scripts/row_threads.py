"""Elements per launched thread of the row kernels a bench case picks, by
row length, on a machine without a GPU.

    python3 scripts/row_threads.py [CASE:DTYPE ...] [--hidden 10,77,128] [--setting CODE] [MB]

Compiles bench/run.py's row cases (default: the inner sum, the
normalizations and the scale and bias, in float32 and bfloat16) for sm_90
(PTX needs no GPU), evaluates each segment's launch program for the
bench's inputs of MB megabytes (default 256) at each row length of
``--hidden`` (default: short rows, rows around a vector and the bench's
lengths) on an H200 (132 SMs), and prints, per case, the elements of the
input per thread of the launch that runs the most threads, flagging
those under one 16-byte vector a thread: a
scheme that leaves most of a warp's lanes idle (a warp a row of 10 columns)
shows here before any GPU time is spent. A persistent grid's threads take
many rows each, so its count is high. ``--setting`` runs CODE in the
namespace of fuser_mlir.lowering.gpu_schedule first, as
scripts/gpu_schedule_sweep.py's settings do (``--setting "SCALAR_SHORT_ROWS =
256"``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402
from fuser_mlir.compiler import compile_fusion  # noqa: E402
from fuser_mlir.runtime.launch import evaluate  # noqa: E402
from kernel_sass import H200_SMS, ITEMSIZE, chosen_launches  # noqa: E402
from scheduler_settings import applied, pop_option  # noqa: E402

CASES = [f"{case}:{dtype}" for case in ("inner_sum", "softmax", "layer_norm", "rms_norm", "scale_bias") for dtype in ITEMSIZE]
HIDDEN = [4, 10, 16, 32, 64, 77, 100, 128, 200, 250, 256, 500, 512, 1000, 1023, 1024, 2048, 4096, 8192, 32768, 50257]


def elements_per_thread(compiled, input_shapes: list) -> float:
    """The elements of the first input per thread of the launch with the most threads."""
    elements, most = 1, 1
    for size in input_shapes[0]:
        elements *= size
    for launch, shapes in chosen_launches(compiled, input_shapes):
        grid = [evaluate(g, shapes, [], H200_SMS) for g in launch.grid]
        most = max(most, grid[0] * grid[1] * grid[2] * launch.block[0] * launch.block[1] * launch.block[2])
    return elements / most


def main(specs: list[str], hidden: list[int], megabytes: int = 256, setting: str = "") -> None:
    cases = {c.name: c for c in bench.CASES}
    for spec in specs:
        name, _, dtype = spec.partition(":")
        if name not in cases or dtype not in ITEMSIZE:
            raise SystemExit(f"CASE:DTYPE is one of {', '.join(cases)} : float32 or bfloat16, not {spec!r}")
        case = cases[name]
        fd = bench.fusion_for(case, dtype)
        count = len(case.shapes(1 << 20, 1024))
        layouts = {"input": [(True, 16)] * count, "given": {0: (True, 16)}}  # the bench's dense, aligned tensors
        with applied(setting):
            compiled = compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts)
        vector = 16 // ITEMSIZE[dtype]
        cells = []
        for cols in hidden:
            per_thread = elements_per_thread(compiled, case.shapes((megabytes << 20) // ITEMSIZE[dtype], cols))
            cells.append(f"{cols}:{per_thread:.1f}{'!' if per_thread < vector else ''}")
        print(f"{spec:<20} {' '.join(cells)}", flush=True)
    print("(columns:elements a thread; ! under one 16-byte vector a thread)")


def parse_args(argv: list[str]) -> tuple[list[str], list[int], int, str]:
    """(CASE:DTYPE specs, row lengths, MB, --setting's code) from the command line."""
    args = list(argv)
    setting = pop_option(args, "--setting", "--setting needs the code to run, e.g. --setting 'SCALAR_SHORT_ROWS = 256'") or ""
    lengths = pop_option(args, "--hidden", "--hidden needs row lengths, e.g. --hidden 10,77,128")
    if lengths is not None and not all(h.isdigit() and int(h) > 0 for h in lengths.split(",")):
        raise SystemExit(f"--hidden takes positive row lengths separated by commas, like 10,77,128; got {lengths!r}")
    hidden = HIDDEN if lengths is None else [int(h) for h in lengths.split(",")]
    megabytes = [a for a in args if a.isdigit()]
    specs = [a for a in args if not a.isdigit()]
    if len(megabytes) > 1 or any(s.startswith("--") for s in specs):
        raise SystemExit(__doc__)
    return specs or CASES, hidden, int(megabytes[0]) if megabytes else 256, setting


if __name__ == "__main__":
    main(*parse_args(sys.argv[1:]))
