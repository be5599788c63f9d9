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
"""

import numpy as np
from devices import assert_unchanged, to_host
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from random_programs import (
    ALL_DTYPES, LAYOUTS, SHAPES, assert_matches_reference, derandomized, large_shapes, placed, poison, random_fusion, random_input, step,
)
from reference import evaluate, visible_then_written

MAX_ELEMENTS = 1 << 20


@settings(
    derandomized(60), phases=[Phase.explicit, Phase.generate],  # a shrink costs minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7),
    data=st.integers(0, 2**31),
)
def test_random_fusions_on_large_sizes_and_layouts(device, shapes, dtypes, steps, data):
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(data)
    sizes = [large_shapes(fd, rng, MAX_ELEMENTS) for _ in range(2)]
    assume(None not in sizes)
    first, second = ([random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, s)] for s in sizes)
    for call, arrays in enumerate([first, second, first]):
        visible, written, written_at = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
        if call != 2:  # the third call keeps the second's layouts: a hit on the first's sizes
            layouts = [(str(rng.choice(LAYOUTS)), tuple(rng.permutation(a.ndim))) for a in arrays]
            given_as = [(str(rng.choice(["new", "row-major", "permuted"])), tuple(rng.permutation(w.ndim))) for w in visible]
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
