"""Every fd.ops op, for every dtype it supports: the result dtype PyTorch
would give, IR that passes fuser-verify, and a reference evaluation."""

import numpy as np
import pytest
from frontend_helpers import op_names, verified_ir
from reference import compute_dtype, evaluate

from fuser_mlir.dialect import ops as dialect_ops
from fuser_mlir.errors import DefinitionError
from fuser_mlir.frontend import DataType, FusionDefinition
from fuser_mlir.frontend import ops as frontend_ops
from fuser_mlir.frontend.promotion import float_type, sum_type

RNG = np.random.default_rng(3)
ALL = list(DataType)
FLOATS = [d for d in ALL if d.is_float]
NON_FLOAT = [d for d in ALL if not d.is_float]


def random_array(dtype: DataType, shape=(3, 4)) -> np.ndarray:
    """Fresh values in a range every op is defined on (positive for log/sqrt, < 1 for asin)."""
    if dtype.is_bool:
        return RNG.random(shape) < 0.5
    if dtype.is_int:
        return RNG.integers(1, 6, shape).astype(dtype.numpy)
    return RNG.uniform(0.1, 0.9, shape).astype(dtype.numpy)


def expected_dtype(name: str, dtype: DataType) -> DataType:
    """The dtype PyTorch gives ``name`` applied to operands of ``dtype``."""
    if name in frontend_ops.UNARY_FLOAT or name in frontend_ops.BINARY_FLOAT or name in ("lerp", "mean", "var"):
        return float_type(dtype)
    if name in frontend_ops.UNARY_PREDICATE + frontend_ops.UNARY_LOGICAL + frontend_ops.BINARY_COMPARE + frontend_ops.BINARY_LOGICAL:
        return DataType.Bool
    if name in ("sum", "prod"):
        return sum_type(dtype)
    return dtype


def unsupported(name: str, dtype: DataType) -> bool:
    if name in frontend_ops.BINARY_BITWISE + frontend_ops.UNARY_BITWISE:
        return dtype.is_float
    return dtype.is_bool and name in ("sub", "neg")


def build(name: str, dtype: DataType) -> FusionDefinition:
    arity = 1 if name in frontend_ops.UNARY or name in ("sum", "prod", "max", "min", "mean", "var") else 2
    if name in frontend_ops.TERNARY:
        arity = 3
    with FusionDefinition() as fd:
        args = [fd.define_tensor([-1, -1], dtype=dtype) for _ in range(arity)]
        if name == "where":
            args[0] = fd.define_tensor([-1, -1], dtype=DataType.Bool)
        op = getattr(fd.ops, name)
        out = op(args[0], dims=[1]) if name in ("sum", "prod", "max", "min", "mean", "var") else op(*args)
        fd.add_output(out)
    return fd


OPS = frontend_ops.UNARY + frontend_ops.BINARY + frontend_ops.TERNARY + ["sum", "prod", "max", "min", "mean", "var"]
CASES = [(name, dtype) for name in OPS for dtype in ALL]


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_op_builds_verifies_and_evaluates(name, dtype):
    if unsupported(name, dtype):
        with pytest.raises(DefinitionError, match=f"fd.ops.{name}: "):
            build(name, dtype)
        return
    fd = build(name, dtype)
    out = fd.outputs[0]
    assert out.dtype is expected_dtype(name, dtype)
    text = verified_ir(fd)
    assert f'"fuser.{name}"' in text or name in ("mean", "var") or name in frontend_ops.UNARY_ROUNDING
    inputs = [random_array(DataType.Bool if (name == "where" and i == 0) else dtype) for i in range(len(fd.inputs))]
    (result,) = evaluate(fd, inputs)
    assert result.dtype == compute_dtype(out.dtype)
    assert result.shape == fd.output_shape(0, [x.shape for x in inputs])


@pytest.mark.parametrize("dtype", FLOATS)
def test_arithmetic_never_runs_on_half_or_bfloat16(dtype):
    """Half/BFloat16 compute in Float: only casts, copies, layout ops and stores see f16/bf16."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], dtype=dtype)
        b = fd.define_tensor([-1, -1], dtype=dtype)
        c = fd.ops.where(a > b, fd.ops.maximum(a, b) * 2, -fd.ops.exp(a))
        fd.add_output(fd.ops.sum(c, dims=[0]))
        fd.add_output(fd.ops.var_mean(fd.ops.permute(c, [1, 0]), dims=[1])[0])
    text = verified_ir(fd)
    assert fd.outputs[0].dtype is sum_type(dtype) and fd.outputs[1].dtype is float_type(dtype)
    if not dtype.is_low_precision:
        return
    movers = {"cast", "size", "store", "empty", "permute", "broadcast_in_dim", "reshape", "set", "segment_set"}
    for line in text.splitlines():
        if f"x{dtype.mlir}>" in line and '"fuser.' in line:
            assert op_names(line)[0] in movers, line


@pytest.mark.parametrize("source", ALL)
@pytest.mark.parametrize("target", ALL)
def test_cast_between_every_pair(source, target):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 3], dtype=source)
        fd.add_output(fd.ops.set(fd.ops.cast(t, target)))
    text = verified_ir(fd)
    assert fd.outputs[0].dtype is target
    assert op_names(text).count("cast") == (source is not target)
    x = random_array(source, (2, 3))
    (result,) = evaluate(fd, [x])
    np.testing.assert_array_equal(result, np.asarray(x.astype(np.float64) if source.is_float else x).astype(compute_dtype(target)) if not target.is_int or not source.is_float else np.trunc(x.astype(np.float64)).astype(target.numpy))


@pytest.mark.parametrize("dtype", ALL)
def test_layout_ops_and_copies_keep_the_dtype(dtype):
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 1, 4], dtype=dtype)
        a = fd.ops.broadcast_in_dim(t, shape=[2, -1, 3, 4], broadcast_dims=[1, 2, 3])
        b = fd.ops.permute(a, [3, 0, 2, 1])
        c = fd.ops.reshape(b, [-1, 6])
        d = fd.ops.segment_set(fd.ops.set(c))
        e = fd.ops.broadcast(d, [True, False, False])
        fd.add_output(e)
    text = verified_ir(fd)
    assert op_names(text)[:7] == ["broadcast_in_dim", "permute", "size", "constant", "mul", "reshape", "set"]
    assert fd.outputs[0].dtype is dtype and fd.outputs[0].shape == (1, -1, 6)
    x = random_array(dtype, (5, 1, 4))
    (result,) = evaluate(fd, [x])
    expected = np.broadcast_to(x.astype(compute_dtype(dtype))[None], (2, 5, 3, 4)).transpose(3, 0, 2, 1).reshape(1, -1, 6)
    np.testing.assert_array_equal(result, expected)
    assert fd.output_shape(0, [(5, 1, 4)]) == (1, 20, 6)


def test_frontend_op_tables_match_the_dialect():
    """Every pointwise/reduction op of the dialect is an fd.ops method, and vice versa."""
    frontend = set(frontend_ops.UNARY + frontend_ops.BINARY + frontend_ops.TERNARY + frontend_ops.REDUCTIONS)
    assert frontend == set(dialect_ops.POINTWISE | dialect_ops.REDUCTIONS)
    assert set(frontend_ops.UNARY_FLOAT + frontend_ops.UNARY_ROUNDING) == set(dialect_ops.UNARY_FLOAT)
    assert set(frontend_ops.UNARY_PREDICATE) == set(dialect_ops.UNARY_PREDICATE)
    assert set(frontend_ops.BINARY_COMPARE) == set(dialect_ops.BINARY_COMPARE)
    for name in frontend | {"cast", "broadcast_in_dim", "broadcast", "permute", "reshape", "set", "segment_set", "mean", "var_mean"}:
        assert callable(getattr(FusionDefinition().ops, name)), name


def test_mean_and_var_mean_of_half_accumulate_in_float():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 8], dtype=DataType.Half)
        var, mean = fd.ops.var_mean(t, dims=[0, 1], correction=0, keepdim=True)
        fd.add_output(var)
        fd.add_output(mean)
        fd.add_output(fd.ops.mean(t, dims=[1], dtype=DataType.Double))
    text = verified_ir(fd)
    assert [o.dtype for o in fd.outputs] == [DataType.Half, DataType.Half, DataType.Double]
    assert [o.shape for o in fd.outputs] == [(1, 1), (1, 1), (-1,)]
    assert "(tensor<?x8xf32>) -> tensor<1x1xf32>" in text  # the sum runs on f32
    x = random_array(DataType.Half, (5, 8))
    var_out, mean_out, mean64 = evaluate(fd, [x])
    wide = x.astype(np.float64)
    np.testing.assert_allclose(var_out, wide.var(keepdims=True))
    np.testing.assert_allclose(mean_out, wide.mean(keepdims=True))
    np.testing.assert_allclose(mean64, wide.mean(axis=1))
