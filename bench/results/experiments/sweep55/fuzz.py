"""Random fusions on sizes and layouts the test suite's random programs never reach, against the reference.

    python3 bench/results/experiments/sweep55/fuzz.py DEVICE SEED SECONDS [OUT]

test/random_programs.py's programs (pointwise ops, reductions, permutes,
flattening reshapes, casts, selects over every dtype) and its row programs
(softmax's and the norms' shape), on sizes drawn from 1 to 20000 (up to 4M
elements a tensor, outputs included), so that the GPU's flat, row,
outer-reduction, cached and staged schedules and their scalar tails are all
reached. Each input is laid out row-major, with its dims in memory in a
random other order (column-major calls are relaid or run strided), every
other element of a wider buffer (strided), or one element past an aligned
start (no vector access); each visible output is new, or given row-major or
in a random other order, poisoned. Each fusion is called three times: on
its first sizes, on other sizes in other layouts, and on the first sizes in
the second call's layouts (a cache hit on other sizes).

Each result is compared with test/reference.py's value, every op's float
result rounded to its dtype (``rounded=True``; until abe61e6's runs it kept
float64 throughout, so a bfloat16 sum fed to sin or a half value cast to an
integer drifted from what the fusion computes), at the tolerance of the
suite's row-program test (2e-2 relative, 2e-2 of the largest magnitude
absolute; exact for integers and Booleans), elements the output's dtype
cannot hold left out; the inputs must be unchanged. A mismatch on the GPU
is run on the CPU too: the same count there points at the reference or the
tolerance rather than the GPU's kernels. Every mismatch or exception is
written to OUT (default stdout) with what reproduces it. A search, not a
test: it runs for SECONDS. With KINDS=wide in the environment (from sweep 65
on) the random fusions' steps are drawn from random_programs.WIDE_KIND_NAMES
(clamp, lerp, comparisons, prod, min, var, var_mean, a new leading dim and
reshapes besides the suite's kinds); with OFFSETS=mid, inputs and given
outputs may also start 2 or 3 elements past an aligned start (4- and 2-byte
vectors of 16-bit types, 8-byte ones of float32).
"""

import contextlib
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, "test")
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import UnsatisfiedAssumption  # noqa: E402
from random_programs import (  # noqa: E402
    ALL_DTYPES, KINDS, LARGE_SIZES, LAYOUTS, MID_OFFSETS, ROW_PROGRAMS, SHAPES, WIDE_KIND_NAMES, assert_matches_reference, large_shapes, placed, poison, random_fusion, random_input,
    row_inputs, row_program, step,
)
from reference import evaluate, visible_then_written  # noqa: E402
from devices import assert_unchanged, to_host  # noqa: E402

MAX_ELEMENTS = 1 << 22
DEVICE, SEED, SECONDS = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
OUT = open(sys.argv[4], "a") if len(sys.argv) > 4 else sys.stdout
END = time.monotonic() + SECONDS
DEADLINE = [END - SECONDS / 2]  # the random fusions' search, then the row programs' until END
STEP_KINDS = st.sampled_from(WIDE_KIND_NAMES) if os.environ.get("KINDS") == "wide" else KINDS
EXTRA_LAYOUTS = MID_OFFSETS if os.environ.get("OFFSETS") == "mid" else ()
INPUT_LAYOUTS = LAYOUTS + EXTRA_LAYOUTS
OUTPUT_LAYOUTS = ("new", "new", "row-major", "permuted") + EXTRA_LAYOUTS
counts = {"programs": 0, "calls": 0, "mismatches": 0, "on the CPU too": 0, "errors": 0}


def concrete_shapes(fd, rng) -> list[tuple[int, ...]]:
    shapes = large_shapes(fd, rng, MAX_ELEMENTS)
    if shapes is None:
        raise UnsatisfiedAssumption()
    return shapes


def call(fd, arrays, rng, device: str, expected=None, choices=None) -> tuple:
    """One call on ``device`` with layouts drawn from ``rng`` (or ``choices``): (choices, AssertionError or None)."""
    visible, written, written_at = expected
    dtypes = [np.dtype(o.dtype.numpy) for o in fd.outputs if o.visible]
    if choices is None:
        choices = (
            [(str(rng.choice(INPUT_LAYOUTS)), tuple(int(d) for d in rng.permutation(a.ndim))) for a in arrays],
            [(str(rng.choice(OUTPUT_LAYOUTS)), tuple(int(d) for d in rng.permutation(w.ndim))) for w in visible],
        )
    inputs = [placed(a, layout, device, order) for a, (layout, order) in zip(arrays, choices[0])]
    given = [None if how == "new" else placed(poison(w.shape, d), how, device, order) for w, d, (how, order) in zip(visible, dtypes, choices[1])]
    try:
        results = fd.execute(inputs, outputs=given if any(g is not None for g in given) else None)
        got = [to_host(g) for g in results] + [to_host(inputs[k]) for k in written_at]
        for k, (g, want) in enumerate(zip(got, visible + written)):
            assert_matches_reference(g, want, f"result {k}")
        for k, (a, original) in enumerate(zip(inputs, arrays)):
            if k not in written_at:
                assert_unchanged(a, original, f"input {k} changed")
    except AssertionError as err:
        return choices, err
    return choices, None


def mismatches(err: AssertionError) -> str:
    return next((line for line in str(err).splitlines() if line.startswith("Mismatched elements")), str(err).splitlines()[0] if str(err) else "")


def check(fd, make_arrays, rng, label: str) -> None:
    """Three calls: sizes A, sizes B in other layouts, sizes A in B's layouts (a hit)."""
    counts["programs"] += 1
    first = make_arrays(rng)
    runs = [first, make_arrays(rng), first]
    choices = None
    for n, arrays in enumerate(runs):
        counts["calls"] += 1
        layouts = "?"
        try:
            expected = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
            choices, err = call(fd, arrays, rng, DEVICE, expected, choices if n == 2 else None)
            layouts = f"inputs {choices[0]} outputs {choices[1]}"
            if err is None:
                continue
            counts["mismatches"] += 1
            tag = ""
            if DEVICE != "cpu":
                _, cpu_err = call(fd, arrays, rng, "cpu", expected, choices)
                if cpu_err is not None and mismatches(cpu_err) == mismatches(err):
                    counts["on the CPU too"] += 1
                    tag = " (the CPU's too)"
            print(f"== MISMATCH{tag} call {n} {label}\n   shapes {[a.shape for a in arrays]} dtypes {[str(a.dtype) for a in arrays]} {layouts}\n"
                  f"{str(err)[:1500]}", file=OUT, flush=True)
        except UnsatisfiedAssumption:
            raise
        except Exception:
            counts["errors"] += 1
            print(f"== ERROR call {n} {label}\n   shapes {[a.shape for a in arrays]} {layouts}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


SETTINGS = settings(max_examples=10**6, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))


@seed(SEED)
@SETTINGS
@given(shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES, STEP_KINDS), min_size=1, max_size=7), data=st.integers(0, 2**31))
def programs(shapes, dtypes, steps, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(data)
    concrete_shapes(fd, rng)  # rejects draws no sizes fit

    def make_arrays(rng):
        return [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, concrete_shapes(fd, rng))]

    check(fd, make_arrays, rng, f"random_fusion({shapes!r}, {[d.name for d in dtypes]}, {steps!r}) data {data}")


@seed(SEED)
@SETTINGS
@given(**ROW_PROGRAMS, rows=st.lists(st.sampled_from([1, 2, 5, 23, 130, 1000]), min_size=1, max_size=2), cols=st.sampled_from(LARGE_SIZES), data=st.integers(0, 2**31))
def rows(dtype, stages, weight, outputs, rows, cols, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    if np.prod(rows) * cols > MAX_ELEMENTS:
        raise UnsatisfiedAssumption()
    fd = row_program(dtype, len(rows) + 1, stages, weight, outputs)

    def make_arrays(rng):  # the drawn rows, or as many other row dims that fit
        other = [int(rng.choice([1, 2, 5, 23, 130, 1000])) for _ in rows]
        return row_inputs(dtype, (*(other if np.prod(other) * cols <= MAX_ELEMENTS and rng.random() < 0.5 else rows), cols), weight, rng)

    check(fd, make_arrays, np.random.default_rng(data), f"row_program({dtype.name}, {len(rows) + 1}, {stages!r}, {weight}, {outputs!r}) rows {rows} cols {cols} data {data}")


def run(searches, tally: dict) -> None:
    """Each (search, until) in turn, each stopping at its time (a search
    raises KeyboardInterrupt past DEADLINE); then ``tally`` to OUT and stdout."""
    for search, until in searches:
        DEADLINE[0] = until
        with contextlib.suppress(KeyboardInterrupt):  # how a search stops at its time
            search()
    for stream in {OUT, sys.stdout}:
        print(f"{DEVICE} seed {SEED}: {tally}", file=stream, flush=True)


if __name__ == "__main__":
    run([(programs, DEADLINE[0]), (rows, END)], counts)
