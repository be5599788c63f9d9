"""DataType and PyTorch's type promotion, through the promotion module and fd.ops."""

import ml_dtypes
import numpy as np
import pytest
from frontend_helpers import verified_ir

from fuser_mlir.frontend import DataType, FusionDefinition
from fuser_mlir.frontend.promotion import SCALAR, TENSOR, ZERO_DIM, promote_types, result_type

F, D, H, B, I, I32, BOOL = (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16, DataType.Int, DataType.Int32, DataType.Bool)


def test_datatype_properties():
    assert [d.mlir for d in DataType] == ["f32", "f64", "f16", "bf16", "i64", "i32", "i1"]
    assert B.numpy == np.dtype(ml_dtypes.bfloat16) and BOOL.numpy == np.dtype(bool)
    assert [d.itemsize for d in DataType] == [4, 8, 2, 2, 8, 4, 1]
    assert [d for d in DataType if d.is_float] == [F, D, H, B]
    assert DataType.from_numpy(np.float16) is H and DataType.from_numpy("int32") is I32
    assert DataType.from_numpy(ml_dtypes.bfloat16) is B
    assert DataType.from_mlir("bf16") is B and DataType.from_mlir("i1") is BOOL
    assert [DataType.of_python(v) for v in (1.5, 3, True, np.float16(1))] == [D, I, BOOL, H]


def test_datatype_errors_name_the_supported_types():
    with pytest.raises(ValueError, match="NumPy dtype complex64 has no fuser DataType; supported: float32"):
        DataType.from_numpy(np.complex64)
    with pytest.raises(ValueError, match="MLIR type 'f8' has no fuser DataType"):
        DataType.from_mlir("f8")
    with pytest.raises(TypeError, match="'x' .str. is not a Python number"):
        DataType.of_python("x")


# torch.promote_types for the fuser dtypes
PROMOTE = [
    (F, D, D), (F, H, F), (H, B, F), (B, F, F), (H, D, D), (I, F, F), (I32, H, H), (I32, I, I),
    (BOOL, I32, I32), (BOOL, F, F), (BOOL, BOOL, BOOL), (I, B, B),
]


@pytest.mark.parametrize("a, b, expected", PROMOTE)
def test_promote_types_matches_torch(a, b, expected):
    assert promote_types(a, b) is expected
    assert promote_types(b, a) is expected


# torch.result_type with tensors, 0-d tensors and Python scalars
RESULT = [
    ([(F, TENSOR), (D, SCALAR)], F),  # tensor f32 * 2.0 stays f32
    ([(H, TENSOR), (D, SCALAR)], H),
    ([(I, TENSOR), (D, SCALAR)], F),  # int tensor * 2.5 is the default float
    ([(I32, TENSOR), (I, SCALAR)], I32),
    ([(BOOL, TENSOR), (I, SCALAR)], I),
    ([(BOOL, TENSOR), (BOOL, SCALAR)], BOOL),
    ([(H, TENSOR), (F, ZERO_DIM)], H),  # a 0-d tensor does not upcast within a category
    ([(I32, TENSOR), (D, ZERO_DIM)], D),  # but does across categories
    ([(F, ZERO_DIM), (D, SCALAR)], F),
    ([(I, SCALAR), (D, SCALAR)], D),  # scalars alone: Python's rules
    ([(I32, SCALAR), (I, SCALAR)], I),
    ([(H, TENSOR), (B, TENSOR)], F),
]


@pytest.mark.parametrize("operands, expected", RESULT)
def test_result_type_matches_torch(operands, expected):
    assert result_type(operands) is expected


def _dtype_of(build, *dtypes, shapes=None):
    with FusionDefinition() as fd:
        args = [fd.define_tensor(s, dtype=d) for d, s in zip(dtypes, shapes or [[-1, -1]] * len(dtypes))]
        out = build(fd, *args)
        fd.add_output(out)
    verified_ir(fd)
    return fd.outputs[0].dtype


OPS = [
    (lambda fd, a: a * 2.0, [F], F),
    (lambda fd, a: 2.0 * a, [H], H),
    (lambda fd, a: a + 1, [I32], I32),
    (lambda fd, a: a + 1.5, [I32], F),
    (lambda fd, a: a / 2, [I], F),
    (lambda fd, a: a / a, [H], H),
    (lambda fd, a: a ** 2, [I], I),
    (lambda fd, a: a ** 0.5, [I], F),
    (lambda fd, a: fd.ops.exp(a), [I32], F),
    (lambda fd, a: fd.ops.floor(a), [I32], I32),
    (lambda fd, a: a % 3, [I], I),
    (lambda fd, a: a < 1.5, [I], BOOL),
    (lambda fd, a: a * fd.define_scalar(dtype=D), [B], B),
    (lambda fd, a: a * fd.define_scalar(dtype=D), [I], F),
    (lambda fd, a: a + fd.define_scalar(2, dtype=I), [I32], I32),
    (lambda fd, a, b: a + b, [H, F], F),
    (lambda fd, a, b: a + b, [I32, BOOL], I32),
    (lambda fd, a, b: a & b, [BOOL, BOOL], BOOL),
    (lambda fd, a, b: a + b, [BOOL, BOOL], BOOL),
    (lambda fd, a, b: fd.ops.atan2(a, b), [I, I32], F),
    (lambda fd, a, b: fd.ops.where(a, b, 0), [BOOL, H], H),
    (lambda fd, a, b: fd.ops.where(a, b, 1.5), [BOOL, I32], F),
    (lambda fd, a: fd.ops.where(a, 1.0, 0.0), [BOOL], F),  # two Python floats: torch's default dtype
    (lambda fd, a: fd.ops.where(a, 1, 2.5), [BOOL], F),
    (lambda fd, a: fd.ops.where(a, 1, 2), [BOOL], I),
    (lambda fd, a: fd.ops.where(a, 1.0, fd.define_scalar(dtype=D)), [BOOL], D),  # a Double scalar input stays Double
    (lambda fd, a, b: fd.ops.lerp(a, b, 0.25), [H, H], H),
    (lambda fd, a: fd.ops.clamp(a, 0, 3), [I32], I32),
    (lambda fd, a: fd.ops.clamp(a, 0.5, 3), [I32], F),
    (lambda fd, a: fd.ops.logical_not(a), [F], BOOL),
    (lambda fd, a: fd.ops.sum(a, [0]), [BOOL], I),
    (lambda fd, a: fd.ops.sum(a, [0]), [I32], I),
    (lambda fd, a: fd.ops.sum(a, [0], dtype=F), [I32], F),
    (lambda fd, a: fd.ops.sum(a, [0]), [B], B),
    (lambda fd, a: fd.ops.max(a, [0]), [BOOL], BOOL),
    (lambda fd, a: fd.ops.prod(a, [0]), [I32], I),
    (lambda fd, a: fd.ops.mean(a, [0]), [I32], F),
    (lambda fd, a, b: a + fd.ops.sum(b, [0, 1]), [H, F], H),  # a 0-d tensor operand
]


@pytest.mark.parametrize("build, dtypes, expected", OPS, ids=range(len(OPS)))
def test_ops_promote_like_torch(build, dtypes, expected):
    assert _dtype_of(build, *dtypes) is expected


def test_python_scalars_become_constants_of_the_compute_type():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], dtype=H)
        fd.add_output(t * 2.0 + 1)
    text = verified_ir(fd)
    assert '"fuser.constant"() {value = 2.000000e+00 : f32}' in text
    assert '"fuser.constant"() {value = 1.000000e+00 : f32}' in text
    assert "f64" not in text


def test_a_defined_constant_is_folded_into_the_compute_type():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], dtype=F)
        two = fd.define_scalar(2)
        fd.add_output(t * two)
    assert len(fd.inputs) == 1  # a constant is not an input
    text = verified_ir(fd)
    assert "() -> i64" not in text  # the Int constant is folded, and dead
    assert '{value = 2.000000e+00 : f32} : () -> f32' in text
    assert '"fuser.cast"' not in text
