"""Random fusions on large sizes and memory layouts, against the reference.

test/random_programs.py's random fusions over inputs of every dtype on
sizes of up to 20000 (:data:`LARGE_SIZES`, 1M elements at most a tensor):
the GPU's scalar tails, whole-vector and outer-tile variants and cached and
staged rows. Each input is laid out row-major, with its dims in memory in
another order, strided or one element past an aligned start
(:func:`random_programs.placed`); each visible output is new or given,
poisoned, row-major or permuted. Each fusion is called on its first sizes,
on other sizes in other layouts, and on the first sizes in the second call's
layouts (a hit on other sizes), and each result is checked
against the reference with every op's float result rounded to its dtype
(``evaluate(..., rounded=True)``: a bfloat16 sum fed to sin is compared with
the sine of the rounded sum, not of the exact one), the inputs unchanged.
A second test draws fewer fusions whose inputs and given outputs start 2 or
3 elements past an aligned start (``offset by 2`` / ``by 3``): the 4- and
8-byte vector classes of bfloat16, half and float32, which one element past
an aligned start never reaches.
"""

import numpy as np
from devices import assert_unchanged, to_host
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from random_programs import (
    ALL_DTYPES, LAYOUTS, MID_OFFSETS, SHAPES, assert_matches_reference, derandomized, large_shapes, placed, poison, random_fusion, random_input, step,
)
from reference import evaluate, visible_then_written

MAX_ELEMENTS = 1 << 20


#: How the inputs and the given outputs of each test are laid out (:func:`placed`; "new": not given).
INPUT_LAYOUTS, OUTPUT_LAYOUTS = LAYOUTS, ("new", "row-major", "permuted")
MID_INPUT_LAYOUTS, MID_OUTPUT_LAYOUTS = ("row-major", *MID_OFFSETS), ("new", *MID_OFFSETS)

FUSIONS = given(
    shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7),
    data=st.integers(0, 2**31),
)
NO_SHRINK = dict(
    phases=[Phase.explicit, Phase.generate],  # a shrink costs minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@settings(derandomized(60), **NO_SHRINK)
@FUSIONS
def test_random_fusions_on_large_sizes_and_layouts(device, shapes, dtypes, steps, data):
    check_in_layouts(device, random_fusion(shapes, dtypes, steps), np.random.default_rng(data), INPUT_LAYOUTS, OUTPUT_LAYOUTS)


@settings(derandomized(20), **NO_SHRINK)
@FUSIONS
def test_random_fusions_on_mid_offsets(device, shapes, dtypes, steps, data):
    check_in_layouts(device, random_fusion(shapes, dtypes, steps), np.random.default_rng(data), MID_INPUT_LAYOUTS, MID_OUTPUT_LAYOUTS)


def check_in_layouts(device, fd, rng, input_layouts, output_layouts):
    """Call ``fd`` on its first sizes, on other sizes, and on the first sizes
    again in the second call's layouts, each input laid out as one of
    ``input_layouts`` and each visible output as one of ``output_layouts``,
    and check every result and written input against the reference and the
    other inputs unchanged."""
    sizes = [large_shapes(fd, rng, MAX_ELEMENTS) for _ in range(2)]
    assume(None not in sizes)
    first, second = ([random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, s)] for s in sizes)
    for call, arrays in enumerate([first, second, first]):
        visible, written, written_at = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
        if call != 2:  # the third call keeps the second's layouts: a hit on the first's sizes
            layouts = [(str(rng.choice(input_layouts)), tuple(rng.permutation(a.ndim))) for a in arrays]
            given_as = [(str(rng.choice(output_layouts)), tuple(rng.permutation(w.ndim))) for w in visible]
        inputs = [placed(a, layout, device, order) for a, (layout, order) in zip(arrays, layouts)]
        dtypes_out = [o.dtype.numpy for o in fd.outputs if o.visible]
        given_outputs = [None if how == "new" else placed(poison(w.shape, d), how, device, order) for w, d, (how, order) in zip(visible, dtypes_out, given_as)]
        results = fd.execute(inputs, outputs=given_outputs)
        label = f"call {call}, shapes {[a.shape for a in arrays]}, inputs {layouts}, outputs {given_as}"
        for k, (got, want) in enumerate(zip([to_host(r) for r in results] + [to_host(inputs[i]) for i in written_at], visible + written)):
            assert_matches_reference(got, want, f"{label}: result {k}")
        for k, (a, original) in enumerate(zip(inputs, arrays)):
            if k not in written_at:
                assert_unchanged(a, original, f"{label}: input {k} changed")
