"""Random programs: IR types, shape inference and the reference interpreter agree.

Hypothesis builds a random chain of pointwise ops (with implicit
broadcasting), reductions, permutes, flattening reshapes and casts. For each,
the IR must pass fuser-verify, and the reference run on inputs whose sizes
respect the size classes must produce arrays of exactly the shapes
``fd.output_shape`` predicts, matching the IR's static sizes.
"""

import numpy as np
import pytest
from frontend_helpers import verified_ir
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from random_programs import DTYPES, SHAPES, STEP, input_shapes, random_fusion, random_input
from reference import evaluate

from fuser_mlir.errors import InputError
from fuser_mlir.frontend import DataType, FusionDefinition


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=SHAPES, dtypes=st.lists(DTYPES, min_size=3, max_size=3), steps=st.lists(STEP, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_random_programs_agree(shapes, dtypes, steps, seed):
    fd = random_fusion(shapes, dtypes, steps)
    text = verified_ir(fd)
    rng = np.random.default_rng(seed)
    concrete = input_shapes(fd, rng)
    try:
        fd.check_input_shapes(concrete)
    except InputError:
        assume(False)  # a flattened dim bound to another size: not satisfiable by this simple choice
    arrays = [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, concrete)]
    results = evaluate(fd, arrays)
    for spec, result in zip(fd.outputs, results):
        assert result.shape == fd.output_shape(spec.position, concrete)
        assert all(s == -1 or s == r for s, r in zip(spec.shape, result.shape)), (spec.shape, result.shape)
    assert "fuser.store" in text


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Int])
def test_rank_0_tensors_broadcast_against_any_rank(dtype):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 1, 3], dtype=dtype)
        total = fd.ops.sum(t)  # 0-d
        fd.add_output(t - total)
        fd.add_output(total * 2)
        fd.add_output(fd.ops.sum(t, dims=[1]))  # reducing a broadcast dim
        fd.add_output(fd.ops.mean(t, dims=[1, 2]))
    text = verified_ir(fd)
    assert "tensor<" + ("i64" if dtype.is_int else "f32") + ">" in text
    x = np.arange(6).reshape(2, 1, 3).astype(dtype.numpy)
    diff, doubled, summed, mean = evaluate(fd, [x])
    np.testing.assert_array_equal(diff, x - x.sum())
    assert doubled.shape == () and doubled == 2 * x.sum()
    np.testing.assert_array_equal(summed, x.sum(axis=1))
    np.testing.assert_allclose(mean, x.mean(axis=(1, 2)))
