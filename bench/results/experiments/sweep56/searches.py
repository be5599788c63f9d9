"""The two searches misuse.py and artifact_fuzz.py run: random fusions and
row programs, each handed to ``check(fd, make_arrays, rng, label)``, where
``make_arrays(rng)`` draws a set of inputs (None where one would be over
MAX_ELEMENTS: draw again; :func:`arrays_it_takes` draws those the fusion
takes). Each stops past sweep55/fuzz.py's DEADLINE; KINDS=wide in the
environment draws the random fusions' steps from its STEP_KINDS too."""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, "test")
sys.path.insert(0, str(Path(__file__).parents[1] / "sweep55"))
from hypothesis import given, seed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from random_programs import ALL_DTYPES, ROW_PROGRAMS, SHAPES, input_shapes, random_fusion, random_input, row_inputs, row_program, step  # noqa: E402

import fuzz as fuz_cli  # noqa: E402  (sweep55/fuzz.py: the command line, OUT, SETTINGS and run)
from fuser_mlir.errors import InputError  # noqa: E402

MAX_ELEMENTS = 1 << 20  # three dims of 1000 would be 4 GB an array


def arrays_it_takes(fd, make_arrays, rng, count: int, tries: int = 40) -> list[tuple[list, list]] | None:
    """``count`` sets of inputs that ``fd`` takes, each with its visible
    outputs' shapes, none over MAX_ELEMENTS; None where ``tries`` draws find
    too few (a flattened dim bound to another size)."""
    visible = [o for o in fd.outputs if o.visible]
    sets = []
    for _ in range(tries):
        arrays = make_arrays(rng)
        if arrays is None:
            continue
        try:
            shapes = [fd.output_shape(o.position, [a.shape for a in arrays]) for o in visible]
        except InputError:
            continue
        if max([np.prod(s, dtype=np.int64) for s in shapes], default=0) <= MAX_ELEMENTS:
            sets.append((arrays, shapes))
        if len(sets) == count:
            return sets
    return None


def program_search(check, sizes=None):
    """test/random_programs.py's programs of every dtype, their symbolic
    dims of 2-5 or of ``sizes``."""

    @seed(fuz_cli.SEED)
    @fuz_cli.SETTINGS
    @given(shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES, fuz_cli.STEP_KINDS), min_size=1, max_size=7), data=st.integers(0, 2**31))
    def programs(shapes, dtypes, steps, data):
        if time.monotonic() > fuz_cli.DEADLINE[0]:
            raise KeyboardInterrupt
        fd = random_fusion(shapes, dtypes, steps)

        def make_arrays(rng):
            drawn = input_shapes(fd, rng, sizes)
            if max([np.prod(s, dtype=np.int64) for s in drawn], default=0) > MAX_ELEMENTS:
                return None
            return [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, drawn)]

        check(fd, make_arrays, np.random.default_rng(data), f"random_fusion({shapes!r}, {[d.name for d in dtypes]}, {steps!r}) data {data}")

    return programs


def row_search(check, rows, columns):
    """test/random_programs.py's row programs, their rows drawn from
    ``rows`` (one or two dims), each set of inputs its columns from ``columns``."""

    @seed(fuz_cli.SEED)
    @fuz_cli.SETTINGS
    @given(**ROW_PROGRAMS, rows=st.lists(st.sampled_from(rows), min_size=1, max_size=2), data=st.integers(0, 2**31))
    def row_programs(dtype, stages, weight, outputs, rows, data):
        if time.monotonic() > fuz_cli.DEADLINE[0]:
            raise KeyboardInterrupt
        fd = row_program(dtype, len(rows) + 1, stages, weight, outputs)

        def make_arrays(rng):
            return row_inputs(dtype, (*rows, int(rng.choice(columns))), weight, rng)

        check(fd, make_arrays, np.random.default_rng(data), f"row_program({dtype.name}, {len(rows) + 1}, {stages!r}, {weight}, {outputs!r}) rows {rows} data {data}")

    return row_programs


def run(check, counts: dict, sizes=None, rows=(1, 2, 5), columns=(1, 3, 8, 33, 128)) -> None:
    """Both searches, half of SECONDS each, then ``counts``."""
    fuz_cli.run([(program_search(check, sizes), fuz_cli.DEADLINE[0]), (row_search(check, rows, columns), fuz_cli.END)], counts)
