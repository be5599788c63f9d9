"""Random fusions compiled for the GPU on a machine without one: does every one lower and assemble?

    FUSER_CACHE=0 python3 bench/results/experiments/sweep64/gpu_compile_fuzz.py SEED SECONDS [OUT]

``compile_fusion(fd, device="cuda:0", layouts=...)`` runs the whole GPU path
but the load (MLIR's gpu and nvvm lowering, PTX, ptxas for sm_90), so the
CPU machine can search far more programs than a GPU lease runs. The
programs are test/random_programs.py's: random fusions over every dtype
(some outputs given) and row programs (softmax's and the norms' shape,
some writing into their input). The layouts are what the executor's cache
key can hold: each input and given output dense or strided, aligned to 16,
8, 4, 2 or 1 bytes, or unknown. A finding is any exception but the
frontend's refusal of a draw. Without ptxas on the PATH the PTX is not
assembled ("assembled by ptxas" counts the fusions whose kernels were). A
search, not a test: it runs for SECONDS and writes every finding, with what reproduces it, to OUT.
Each fusion is written to OUT.current before it compiles, so a crash of
the whole process (an abort inside LLVM) leaves what reproduces it there.
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "test"))
warnings.filterwarnings("ignore", "Using `assume` outside")

from random_programs import KIND_NAMES, ROW_BINARY, ROW_REDUCE, ROW_UNARY, WIDE_KIND_NAMES, random_fusion, row_program  # noqa: E402

from fuser_mlir import DataType  # noqa: E402
from fuser_mlir.compiler import compile_fusion  # noqa: E402
from fuser_mlir.errors import DefinitionError  # noqa: E402

DTYPES = [DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32, DataType.Bool]
#: The suite's step kinds (session 64's seeds, up to 660); from sweep 65 on, with KINDS=wide in the environment, the
#: wider list (clamp, lerp, comparisons, prod, min, var, var_mean, a new leading dim, reshapes).
KINDS = WIDE_KIND_NAMES if os.environ.get("KINDS") == "wide" else KIND_NAMES
ROW_DTYPES = [DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double]


def draw_fusion(rng: random.Random):
    """A fusion and the text that builds it again."""
    if rng.random() < 0.5:
        shapes = [[rng.choice([-1, -1, 1, 3]) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(1, 3))]
        dtypes = [rng.choice(DTYPES) for _ in shapes]
        steps = [(rng.choice(KINDS), rng.randint(0, 99), rng.randint(0, 99), rng.choice(DTYPES)) for _ in range(rng.randint(1, 7))]
        return random_fusion(shapes, dtypes, steps), f"random_fusion({shapes}, {dtypes}, {steps})"
    stages = [
        ([rng.choice(sorted(ROW_UNARY)) for _ in range(rng.randint(0, 2))], rng.choice(ROW_REDUCE), rng.random() < 0.5,
         rng.choice(sorted(ROW_BINARY)), rng.random() < 0.5)
        for _ in range(rng.randint(1, 3))
    ]
    args = (rng.choice(ROW_DTYPES), rng.randint(1, 3), stages, rng.random() < 0.5,
            rng.choice(["the last value", "and the reductions", "into the input"]))
    return row_program(*args), f"row_program{args}"


def draw_layout(rng: random.Random):
    return None if rng.random() < 0.15 else (rng.random() < 0.7, rng.choice([16, 16, 8, 4, 2, 1]))


def search(seed: int, seconds: float, out) -> Counter:
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    counts: Counter = Counter()
    while time.monotonic() < end:
        try:
            fd, built = draw_fusion(rng)
        except Exception:  # a draw the frontend refuses (the strategies' assume)
            counts["draws refused"] += 1
            continue
        given = tuple(rng.random() < 0.4 for o in fd.outputs if o.visible)
        layouts = {
            "input": [draw_layout(rng) for _ in fd.inputs],
            "given": {i: layout for i, g in enumerate(given) if g and (layout := draw_layout(rng))},
        }
        counts["fusions"] += 1
        CURRENT.write_text(f"{built}\ngiven_outputs={given}, layouts={layouts}\n")  # what a crash of the process leaves
        try:
            compiled = compile_fusion(fd, given_outputs=given, device="cuda:0", layouts=layouts)
        except DefinitionError:
            counts["refused by the frontend"] += 1
            continue
        except Exception:
            counts["failures"] += 1
            print(f"== {built}\ngiven_outputs={given}, layouts={layouts}\n{traceback.format_exc()}", file=out, flush=True)
            continue
        counts["segments"] += len(compiled.plan.steps)
        counts["assembled by ptxas"] += compiled.program.cubin is not None
    return counts


if __name__ == "__main__":
    SEED, SECONDS = int(sys.argv[1]), float(sys.argv[2])
    OUT = open(sys.argv[3], "a") if len(sys.argv) > 3 else sys.stdout
    CURRENT = Path(f"{sys.argv[3] if len(sys.argv) > 3 else f'/tmp/gpu_compile_fuzz_{SEED}'}.current")
    counts = search(SEED, SECONDS, OUT)
    line = f"gpu_compile_fuzz seed {SEED}, {SECONDS:.0f} s: {dict(counts)}"
    print(line, file=OUT, flush=True)
    print(line)
