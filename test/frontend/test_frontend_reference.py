"""The NumPy reference interpreter on hand-checked cases."""

import math

import ml_dtypes
import numpy as np
from reference import evaluate

from fuser_mlir.frontend import DataType, FusionDefinition

RNG = np.random.default_rng(11)


def test_issue_example_in_float64():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([-1, -1])
        t1 = fd.define_tensor([-1, 1, -1], dtype=DataType.Half)
        s = fd.define_scalar(dtype=DataType.Double)
        t2 = fd.ops.exp(t0) * s
        fd.add_output(fd.ops.sum(t2, dims=[1]))
        fd.add_output(t1 + t2)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = RNG.standard_normal((2, 1, 4)).astype(np.float16)
    total, added = evaluate(fd, [x, y, 0.5])
    wide = np.exp(x.astype(np.float64)) * 0.5
    assert total.dtype == np.float64 and added.shape == (2, 3, 4)
    np.testing.assert_allclose(total, wide.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(added, y.astype(np.float64) + wide, rtol=1e-12)


def test_ssa_semantics_for_in_place_updates():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        fd.add_output(x + 1.0, alias_input=x)  # hidden
        fd.add_output(x * 10.0)  # reads x's entry value
    x = np.array([1.0, 2.0], np.float32)
    updated, scaled = evaluate(fd, [x])
    np.testing.assert_array_equal(updated, [2.0, 3.0])
    np.testing.assert_array_equal(scaled, [10.0, 20.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])  # never written


def test_pytorch_semantics_of_pointwise_ops():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1], dtype=DataType.Double)
        b = fd.define_tensor([-1], dtype=DataType.Double)
        for out in (
            fd.ops.fmod(a, b),
            fd.ops.remainder(a, b),
            fd.ops.round(a),
            fd.ops.sign(a),
            fd.ops.relu(a),
            fd.ops.cast(a, DataType.Int32),
            fd.ops.clamp(a, -1.0, 1.0),
            fd.ops.lerp(a, b, 0.25),
            fd.ops.silu(a),
            fd.ops.erf(a),
            fd.ops.maximum(a, fd.ops.sqrt(a)),  # NaN propagates
        ):
            fd.add_output(out)
    a = np.array([-2.5, -0.5, 0.0, 0.5, 1.5, 2.5])
    b = np.array([2.0, -2.0, 3.0, -3.0, 1.0, 2.0])
    fmod, rem, rnd, sign, relu, cast, clamp, lerp, silu, erf, nanmax = evaluate(fd, [a, b])
    np.testing.assert_array_equal(fmod, [-0.5, -0.5, 0.0, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(rem, [1.5, -0.5, 0.0, -2.5, 0.5, 0.5])
    np.testing.assert_array_equal(rnd, [-2.0, -0.0, 0.0, 0.0, 2.0, 2.0])
    np.testing.assert_array_equal(sign, [-1.0, -1.0, 0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(relu, [0, 0, 0, 0.5, 1.5, 2.5])
    assert cast.dtype == np.int32
    np.testing.assert_array_equal(cast, [-2, 0, 0, 0, 1, 2])
    np.testing.assert_array_equal(clamp, [-1.0, -0.5, 0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(lerp, a + 0.25 * (b - a))
    np.testing.assert_allclose(silu, a / (1 + np.exp(-a)))
    np.testing.assert_allclose(erf, [math.erf(v) for v in a])
    assert np.isnan(nanmax[:2]).all() and nanmax[3] == math.sqrt(0.5)


def test_integers_and_bools_are_exact():
    with FusionDefinition() as fd:
        i = fd.define_tensor([-1], dtype=DataType.Int32)
        b = fd.define_tensor([-1], dtype=DataType.Bool)
        fd.add_output(i * 2**30)  # wraps in int32
        fd.add_output(b + b)  # logical or
        fd.add_output(fd.ops.sum(b, dims=[0]))  # counts, as Int
        fd.add_output(i / 2)  # true division gives Float
        fd.add_output(i % -3)
        fd.add_output(~b)
    i = np.array([1, 2, 3, -7], np.int32)
    b = np.array([True, False, True, True])
    wrapped, ored, count, half, rem, inverted = evaluate(fd, [i, b])
    np.testing.assert_array_equal(wrapped, (i.astype(np.int64) * 2**30).astype(np.int32))
    assert ored.dtype == bool and ored.tolist() == [True, False, True, True]
    assert count.dtype == np.int64 and count == 3
    np.testing.assert_array_equal(half, [0.5, 1.0, 1.5, -3.5])
    np.testing.assert_array_equal(rem, [-2, -1, 0, -1])
    assert inverted.tolist() == [False, True, False, False]


def test_reductions_and_normalization():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.BFloat16)
        var, mean = fd.ops.var_mean(x, dims=[1])
        fd.add_output(var)
        fd.add_output(mean)
        fd.add_output(fd.ops.var(x, dims=[0, 1], correction=0, keepdim=True))
        fd.add_output(fd.ops.mean(x, dims=[0]))
        fd.add_output(fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(fd.ops.prod(x, dims=[0]))
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))  # softmax
    x = RNG.standard_normal((5, 7)).astype(ml_dtypes.bfloat16)
    w = x.astype(np.float64)
    var, mean, var_all, mean0, mx, prod, softmax = evaluate(fd, [x])
    np.testing.assert_allclose(var, w.var(axis=1, ddof=1))
    np.testing.assert_allclose(mean, w.mean(axis=1))
    np.testing.assert_allclose(var_all, w.var(keepdims=True))
    np.testing.assert_allclose(mean0, w.mean(axis=0))
    np.testing.assert_array_equal(mx, w.max(axis=1, keepdims=True))
    np.testing.assert_allclose(prod, w.prod(axis=0))
    expected = np.exp(w - w.max(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax, expected / expected.sum(axis=1, keepdims=True))
    assert [o.dtype for o in fd.outputs[:2]] == [DataType.BFloat16, DataType.BFloat16]


def test_all_outputs_are_returned_in_add_output_order():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = fd.define_tensor([-1])
        fd.add_output(x + y, alias_input=y)
        fd.add_output(fd.ops.neg(x))
    outs = evaluate(fd, [np.ones(2, np.float32), np.full(2, 2.0, np.float32)])
    assert [o.tolist() for o in outs] == [[3.0, 3.0], [-1.0, -1.0]]
    assert [o.visible for o in fd.outputs] == [False, True]


def test_rounded_rounds_every_float_result_to_its_dtype():
    """evaluate(..., rounded=True) rounds each op's float result to its dtype:
    a bfloat16 row sum fed to sin is the sine of the bfloat16 sum, rounded
    to bfloat16; a half sin cast to an integer truncates the half value. By
    default both stay float64 throughout."""
    bf16 = np.dtype(ml_dtypes.bfloat16)
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.BFloat16)
        h = fd.define_tensor([-1], dtype=DataType.Half)
        fd.add_output(fd.ops.sin(fd.ops.sum(x, dims=[1])))
        fd.add_output(fd.ops.cast(fd.ops.abs(fd.ops.sin(h)), DataType.Int32))
    x = RNG.standard_normal((64, 127)).astype(bf16)
    h = np.array([1.5707964, 1.5705, 4.71238898, 0.3], np.float16)  # |sin| within half's rounding of 1, then not
    rounded_sines, rounded_ints = evaluate(fd, [x, h], rounded=True)
    exact_sines, exact_ints = evaluate(fd, [x, h])
    sums = x.astype(np.float64).sum(axis=1)
    stepwise = np.sin(sums.astype(np.float32).astype(bf16).astype(np.float32).astype(np.float64)).astype(np.float32).astype(bf16)
    np.testing.assert_array_equal(rounded_sines, stepwise.astype(np.float64))
    np.testing.assert_array_equal(exact_sines, np.sin(sums))
    assert not np.array_equal(rounded_sines, exact_sines)
    halves = np.abs(np.sin(h.astype(np.float32).astype(np.float64)).astype(np.float32).astype(np.float16))
    np.testing.assert_array_equal(rounded_ints, np.trunc(halves).astype(np.int32))
    np.testing.assert_array_equal(exact_ints, np.trunc(np.abs(np.sin(h.astype(np.float64)))).astype(np.int32))
    assert rounded_ints.tolist() == [1, 1, 1, 0] and exact_ints.tolist() == [0, 0, 0, 0]
