"""Type promotion as PyTorch does it, for the subset of dtypes fusions have.

An operand is a tensor of rank > 0, a 0-d tensor (a full reduction), or a
scalar (a Python number or a fusion Scalar). PyTorch promotes in three
tiers: the dtypes of ranked tensors decide, unless a lower tier has a higher
*category* (bool < integer < float); scalars never upcast a tensor within its
category. A float scalar counts as Float (PyTorch's default dtype), so
``int_tensor * 2.5`` is Float and ``float16_tensor * 2.5`` stays Half.
When every operand is a scalar, their own dtypes promote (Int + Double is
Double, as in Python).

    result_type([(Float, "tensor"), (Double, "scalar")])  -> Float
    result_type([(Int, "tensor"), (Double, "scalar")])    -> Float
    result_type([(Half, "tensor"), (BFloat16, "tensor")]) -> Float
"""

from __future__ import annotations

from collections.abc import Iterable

from fuser_mlir.frontend.datatype import DataType

TENSOR = "tensor"  # rank > 0
ZERO_DIM = "zero_dim"  # a 0-d tensor
SCALAR = "scalar"

_INT_ORDER = (DataType.Int32, DataType.Int)
_FLOAT_ORDER = (DataType.Float, DataType.Double)


def category(dtype: DataType) -> int:
    """0 for Bool, 1 for integers, 2 for floats."""
    if dtype.is_bool:
        return 0
    return 1 if dtype.is_int else 2


def promote_types(a: DataType | None, b: DataType | None) -> DataType | None:
    """The smallest dtype both ``a`` and ``b`` convert to (``torch.promote_types``)."""
    if a is None or b is None:
        return a if b is None else b
    if a is b:
        return a
    if category(a) != category(b):
        return a if category(a) > category(b) else b
    if a.is_int:
        return max(a, b, key=_INT_ORDER.index)
    if a.is_low_precision and b.is_low_precision:
        return DataType.Float  # Half + BFloat16
    if a.is_low_precision or b.is_low_precision:
        full = b if a.is_low_precision else a
        return full
    return max(a, b, key=_FLOAT_ORDER.index)


def _combine(higher: DataType | None, lower: DataType | None) -> DataType | None:
    """PyTorch's ``combine_categories``: a lower tier wins only with a higher category."""
    if higher is None:
        return lower
    if higher.is_float:
        return higher
    if higher.is_bool or (lower is not None and category(lower) > category(higher)):
        return promote_types(higher, lower)
    return higher


def _as_wrapped(dtype: DataType) -> DataType:
    """How PyTorch types a wrapped Python number: floats are the default Float."""
    return DataType.Float if dtype.is_float else dtype


def result_type(operands: Iterable[tuple[DataType, str]]) -> DataType:
    """The common dtype of ``(dtype, tier)`` operands, tier one of TENSOR, ZERO_DIM, SCALAR."""
    operands = list(operands)
    if not operands:
        raise ValueError("result_type needs at least one operand")
    tiers: dict[str, DataType | None] = {TENSOR: None, ZERO_DIM: None, SCALAR: None}
    for dtype, tier in operands:
        tiers[tier] = promote_types(tiers[tier], dtype)
    if tiers[TENSOR] is None and tiers[ZERO_DIM] is None:
        return tiers[SCALAR]
    wrapped = None
    for dtype, tier in operands:
        if tier == SCALAR:
            wrapped = promote_types(wrapped, _as_wrapped(dtype))
    return _combine(tiers[TENSOR], _combine(tiers[ZERO_DIM], wrapped))


def compute_type(dtype: DataType) -> DataType:
    """The dtype arithmetic runs in: Half and BFloat16 compute in Float."""
    return DataType.Float if dtype.is_low_precision else dtype


def float_type(dtype: DataType) -> DataType:
    """``dtype`` for floats, Float for integers and Bool (true division, exp, ...)."""
    return dtype if dtype.is_float else DataType.Float


def sum_type(dtype: DataType) -> DataType:
    """The result dtype of ``sum``/``prod`` as PyTorch picks it: Bool and Int32 sum to Int."""
    return dtype if dtype.is_float else DataType.Int
