"""Helpers on the builtin types that fuser values carry.

Tensor values are ``RankedTensorType`` (``tensor<?x1x4xf32>``: ``?`` is a
symbolic size, a static ``1`` is a broadcast dim); scalar values are builtin
float/integer types. Shapes come back as tuples with ``None`` for ``?``.
"""

from __future__ import annotations

from fuser_mlir._mlir import ir

Shape = tuple  # tuple[int | None, ...]

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
INT_TYPES = ("i32", "i64")
ELEMENT_TYPES = (*FLOAT_TYPES, *INT_TYPES, "i1")


def is_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def as_tensor(t: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType(t)


def element_type(t: ir.Type) -> ir.Type:
    """The element type of a tensor type, or the type itself for a scalar."""
    return as_tensor(t).element_type if is_tensor(t) else t


def element_name(t: ir.Type) -> str:
    """``"f32"``, ``"bf16"``, ``"i1"``, ... for a tensor or scalar type."""
    return str(element_type(t))


def is_float(t: ir.Type) -> bool:
    return element_name(t) in FLOAT_TYPES


def is_int(t: ir.Type) -> bool:
    """Integers other than i1."""
    return element_name(t) in INT_TYPES


def is_bool(t: ir.Type) -> bool:
    return element_name(t) == "i1"


def shape(t: ir.Type) -> Shape:
    """Static sizes with ``None`` for dynamic dims; ``()`` for scalars."""
    if not is_tensor(t):
        return ()
    tensor = as_tensor(t)
    return tuple(None if tensor.is_dynamic_dim(i) else tensor.get_dim_size(i) for i in range(tensor.rank))


def rank(t: ir.Type) -> int:
    return as_tensor(t).rank if is_tensor(t) else 0


def format_shape(s: Shape) -> str:
    """``[?, 4]`` as diagnostics print shapes."""
    return "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"


def tensor_type(shape_: Shape, elem: ir.Type) -> ir.RankedTensorType:
    dims = [ir.ShapedType.get_dynamic_size() if d is None else d for d in shape_]
    return ir.RankedTensorType.get(dims, elem)
