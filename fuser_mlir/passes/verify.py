"""Check the fuser-dialect invariants that IRDL cannot express.

Preconditions: none; run it first on any fuser IR (the compiler does).
Effect: changes nothing; emits one error per broken invariant at the op's
location and fails. The rules are listed in ``dialect/README.md``: every
operand and result is a ranked tensor or a scalar of the seven element
types, and so is every argument and result of a function that holds fuser
ops (reported on the ``func.func``); pointwise operands agree in rank,
sizes (a static 1 broadcasts) and element type; reductions name each dim
once and in range; layout ops have consistent attributes; each
``fuser.store`` writes a value of the destination's exact type into a
function argument or a ``fuser.empty``, at most once per buffer.

    "fuser.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
    ==> error: 'fuser.add' op operand 1 has shape [5], which does not
        broadcast with dim 0 of size 4

Every message is listed in dialect/README.md and has a case in
lit_tests/passes/verify.mlir; test/test_verify.py checks both against the
string and f-string literals of this module, so write new messages as literals.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.errors import counted
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label


class _Invalid(Exception):
    """One broken invariant; the message is the diagnostic text."""


def _dense_i64(op: ir.Operation, name: str) -> list[int]:
    if name not in op.attributes:
        raise _Invalid(f"requires attribute '{name}'")
    attr = op.attributes[name]
    try:
        return list(ir.DenseI64ArrayAttr(attr))
    except (ValueError, TypeError):
        raise _Invalid(f"attribute '{name}' must be an array<i64: ...>, got {attr}") from None


def _int_attr(op: ir.Operation, name: str) -> int:
    if name not in op.attributes:
        raise _Invalid(f"requires attribute '{name}'")
    return ir.IntegerAttr(op.attributes[name]).value


def _broadcast_shapes(op: ir.Operation, tensors: list[tuple[int, ir.Type]], result_rank: int) -> T.Shape:
    """The shape pointwise operands broadcast to (static 1 dims broadcast)."""
    out: list[int | None] = [1] * result_rank
    for index, t in tensors:
        s = T.shape(t)
        if len(s) != result_rank:
            raise _Invalid(f"operand {index} has rank {len(s)}, but the result has rank {result_rank}")
        for d, size in enumerate(s):
            if size == 1:
                continue
            if out[d] == 1:
                out[d] = size
            elif size is not None and out[d] is not None and size != out[d]:
                raise _Invalid(f"operand {index} has shape {T.format_shape(s)}, which does not broadcast with dim {d} of size {out[d]}")
            elif out[d] is None:
                out[d] = size
    return tuple(out)


def _check_result_shape(expected: T.Shape, result: ir.Type) -> None:
    got = T.shape(result)
    if len(got) != len(expected) or any(e is not None and g != e for e, g in zip(expected, got)):
        raise _Invalid(f"result shape {T.format_shape(got)} does not match the expected {T.format_shape(expected)}")


def _check_elem_kind(name: str, t: ir.Type, what: str) -> None:
    if name in O.UNARY_FLOAT | O.UNARY_PREDICATE | O.BINARY_FLOAT and not T.is_float(t):
        raise _Invalid(f"{what} has element type {T.element_name(t)}, but '{name}' needs a floating-point type")
    if name in O.UNARY_NUMERIC | O.BINARY_NUMERIC and T.is_bool(t):
        raise _Invalid(f"{what} has element type i1, but '{name}' needs a number")
    if name in O.UNARY_LOGICAL | O.BINARY_LOGICAL and not T.is_bool(t):
        raise _Invalid(f"{what} has element type {T.element_name(t)}, but '{name}' needs i1")
    if name in O.UNARY_BITWISE | O.BINARY_BITWISE and T.is_float(t):
        raise _Invalid(f"{what} has element type {T.element_name(t)}, but '{name}' needs an integer or i1")


def verify_pointwise(op: ir.Operation, name: str) -> None:
    operands = [v.type for v in op.operands]
    result = op.results[0].type
    tensors = [(i, t) for i, t in enumerate(operands) if T.is_tensor(t)]
    if not tensors and T.is_tensor(result):
        raise _Invalid("has only scalar operands, so its result must be a scalar")
    if tensors and not T.is_tensor(result):
        raise _Invalid("has a tensor operand, so its result must be a tensor")
    if tensors:
        _check_result_shape(_broadcast_shapes(op, tensors, T.rank(result)), result)
    values = operands[1:] if name == "where" else operands
    if name == "where" and not T.is_bool(operands[0]):
        raise _Invalid(f"condition has element type {T.element_name(operands[0])}, but must be i1")
    first = T.element_name(values[0])
    for index, t in enumerate(values, start=len(operands) - len(values)):
        if T.element_name(t) != first:
            raise _Invalid(f"operand {index} has element type {T.element_name(t)}, but operand {len(operands) - len(values)} has {first}; insert a fuser.cast")
        _check_elem_kind(name, t, f"operand {index}")
    expected = "i1" if name in O.BOOL_RESULT else first
    if T.element_name(result) != expected:
        raise _Invalid(f"result element type {T.element_name(result)} should be {expected}")


def verify_reduction(op: ir.Operation) -> None:
    src, result = op.operands[0].type, op.results[0].type
    if not T.is_tensor(src) or not T.is_tensor(result):
        raise _Invalid("operand and result must be tensors (a full reduction gives a 0-d tensor)")
    dims = _dense_i64(op, "dims")
    keepdim = bool(_int_attr(op, "keepdim"))
    in_shape = T.shape(src)
    if not dims:
        raise _Invalid("reduces no dims; 'dims' must name at least one")
    for d in dims:
        if not 0 <= d < len(in_shape):
            raise _Invalid(f"reduction dim {d} is out of range for rank {len(in_shape)} (dims must be non-negative)")
    if sorted(set(dims)) != dims:
        raise _Invalid(f"reduction dims {dims} must be sorted and unique")
    expected = tuple(1 if d in dims else s for d, s in enumerate(in_shape)) if keepdim else tuple(s for d, s in enumerate(in_shape) if d not in dims)
    _check_result_shape(expected, result)
    if T.element_name(src) != T.element_name(result):
        raise _Invalid(f"result element type {T.element_name(result)} differs from the operand's {T.element_name(src)}; cast before reducing")


def verify_broadcast_in_dim(op: ir.Operation) -> None:
    src, result = op.operands[0].type, op.results[0].type
    if not T.is_tensor(result):
        raise _Invalid("result must be a tensor")
    dims = _dense_i64(op, "broadcast_dims")
    in_shape, out_shape = T.shape(src), T.shape(result)
    if len(dims) != len(in_shape):
        raise _Invalid(f"broadcast_dims has {counted(len(dims), 'entry')}, but the operand has rank {len(in_shape)}")
    if sorted(set(dims)) != dims or any(not 0 <= d < len(out_shape) for d in dims):
        raise _Invalid(f"broadcast_dims {dims} must be increasing and within the result rank {len(out_shape)}")
    for i, d in enumerate(dims):
        if in_shape[i] != 1 and out_shape[d] != in_shape[i]:
            raise _Invalid(f"operand dim {i} of size {T.format_shape(in_shape[i:i + 1])[1:-1]} cannot become result dim {d} of size {T.format_shape(out_shape[d:d + 1])[1:-1]}")
        if in_shape[i] == 1 and out_shape[d] is None:
            raise _Invalid(f"operand dim {i} has size 1 and can only be expanded to a static size, not '?'")
    for d, size in enumerate(out_shape):
        if d not in dims and size is None:
            raise _Invalid(f"new result dim {d} must have a static size (1 for a broadcast dim)")
    if T.element_name(src) != T.element_name(result):
        raise _Invalid("result element type differs from the operand's")


def verify_permute(op: ir.Operation) -> None:
    src, result = op.operands[0].type, op.results[0].type
    dims = _dense_i64(op, "dims")
    in_shape = T.shape(src)
    if sorted(dims) != list(range(len(in_shape))):
        raise _Invalid(f"dims {dims} is not a permutation of 0..{len(in_shape) - 1}")
    _check_result_shape(tuple(in_shape[d] for d in dims), result)
    if T.element_name(src) != T.element_name(result):
        raise _Invalid("result element type differs from the operand's")


def verify_reshape(op: ir.Operation) -> None:
    src, result = op.operands[0].type, op.results[0].type
    sizes = list(op.operands)[1:]
    out_shape = T.shape(result)
    dynamic = sum(1 for s in out_shape if s is None)
    if len(sizes) != dynamic:
        raise _Invalid(f"has {len(sizes)} size operands, but the result has {dynamic} dynamic dims")
    in_shape = T.shape(src)
    if None not in in_shape and None not in out_shape:
        if _product(in_shape) != _product(out_shape):
            raise _Invalid(f"cannot reshape {T.format_shape(in_shape)} into {T.format_shape(out_shape)}: element counts differ")
    if T.element_name(src) != T.element_name(result):
        raise _Invalid("result element type differs from the operand's")
    _check_i64_operands(sizes, "size")


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _check_i64_operands(values, what: str) -> None:
    for v in values:
        if str(v.type) != "i64":
            raise _Invalid(f"{what} operands must be i64, got {v.type}")


def verify_same_type(op: ir.Operation) -> None:
    if op.operands[0].type != op.results[0].type:
        raise _Invalid(f"result type {op.results[0].type} differs from the operand type {op.operands[0].type}")


def verify_cast(op: ir.Operation) -> None:
    src, result = op.operands[0].type, op.results[0].type
    if T.is_tensor(src) != T.is_tensor(result) or T.shape(src) != T.shape(result):
        raise _Invalid(f"changes the shape from {T.format_shape(T.shape(src))} to {T.format_shape(T.shape(result))}; a cast only changes the element type")


def verify_constant(op: ir.Operation) -> None:
    value = op.attributes["value"]
    result = op.results[0].type
    if T.is_tensor(result):
        raise _Invalid("result must be a scalar")
    if not hasattr(value, "type") or value.type != result:
        raise _Invalid(f"value {value} does not have the result type {result}")


def verify_size(op: ir.Operation) -> None:
    src = op.operands[0].type
    dim = _int_attr(op, "dim")
    if not T.is_tensor(src) or not 0 <= dim < T.rank(src):
        raise _Invalid(f"dim {dim} is out of range for operand type {src}")
    if str(op.results[0].type) != "i64":
        raise _Invalid("result must be i64")


def verify_empty(op: ir.Operation) -> None:
    result = op.results[0].type
    if not T.is_tensor(result):
        raise _Invalid("result must be a tensor")
    dynamic = sum(1 for s in T.shape(result) if s is None)
    if len(op.operands) != dynamic:
        raise _Invalid(f"has {len(op.operands)} size operands, but the result has {dynamic} dynamic dims")
    _check_i64_operands(op.operands, "size")


def verify_destination_write(op: ir.Operation) -> None:
    value, dest = op.operands[0], op.operands[1]
    if not T.is_tensor(dest.type):
        raise _Invalid("destination must be a tensor")
    if value.type != dest.type:
        raise _Invalid(f"destination type {dest.type} does not match value type {value.type}")
    if op.results[0].type != dest.type:
        raise _Invalid("result type must be the destination type")
    owner = dest.owner
    is_arg = isinstance(owner, ir.Block)
    if not is_arg and owner.name != "fuser.empty":
        raise _Invalid(f"destination must be a function argument or a 'fuser.empty', not the result of '{owner.name}'")


_VERIFIERS = {
    "reduction": lambda op, name: verify_reduction(op),
    "copy": lambda op, name: verify_same_type(op),
    "cast": lambda op, name: verify_cast(op),
    "empty": lambda op, name: verify_empty(op),
    "destination": lambda op, name: verify_destination_write(op),
}
_BY_NAME = {
    "broadcast_in_dim": verify_broadcast_in_dim,
    "permute": verify_permute,
    "reshape": verify_reshape,
    "constant": verify_constant,
    "size": verify_size,
}


def _check_value_types(groups) -> None:
    """Each type of ``groups`` (pairs of a word and the types it names:
    ``("operand", [...])``) is a ranked tensor or a scalar of the fuser
    element types."""
    for what, types in groups:
        for index, t in enumerate(types):
            if T.is_tensor(t) and T.element_name(t) not in T.ELEMENT_TYPES:
                raise _Invalid(f"{what} {index} has element type {T.element_name(t)}, which is not one of {', '.join(T.ELEMENT_TYPES)}")
            if not T.is_tensor(t) and str(t) not in T.ELEMENT_TYPES:
                raise _Invalid(f"{what} {index} has type {t}, which is neither a ranked tensor nor a scalar of {', '.join(T.ELEMENT_TYPES)}")


def verify_value_types(op: ir.Operation) -> None:
    """Every operand and result is a ranked tensor or a scalar of the fuser element types."""
    _check_value_types([("operand", [v.type for v in op.operands]), ("result", [v.type for v in op.results])])


def verify_signature(func: ir.Operation) -> None:
    """So is every argument and result of a function that holds fuser ops:
    an argument no op reads still has a buffer the lowerings bind."""
    signature = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    _check_value_types([("argument", signature.inputs), ("result", signature.results)])


def verify_op(op: ir.Operation) -> None:
    """Raise _Invalid for the first broken invariant of one fuser op."""
    name = O.short_name(op.name)
    verify_value_types(op)
    category = O.CATEGORY[name]
    if category in ("unary", "binary", "ternary"):
        verify_pointwise(op, name)
    elif name in _BY_NAME:
        _BY_NAME[name](op)
    else:
        _VERIFIERS[category](op, name)


def verify_function(func: ir.Operation, errors: list[tuple[ir.Operation, str]]) -> None:
    """Check every fuser op in one function, that buffers are written once,
    and, where it holds fuser ops, the function's signature."""
    written: dict[ir.Value, ir.Operation] = {}
    holds_fuser_ops = False
    for block in func.regions[0].blocks:
        for op in block.operations:
            op = op.operation
            if O.short_name(op.name) is None:
                continue
            holds_fuser_ops = True
            try:
                verify_op(op)
            except _Invalid as err:
                errors.append((op, str(err)))
                continue
            if O.short_name(op.name) != "store":
                continue
            dest = op.operands[1]
            if dest in written:
                errors.append((op, f"destination {dest.get_name()} is already written by an earlier 'fuser.store'; each buffer holds one output"))
            written[dest] = op
    if not holds_fuser_ops:
        return
    try:
        verify_signature(func)
    except _Invalid as err:
        errors.append((func, str(err)))


@dataclass
class VerifyPass(FuserPass):
    NAME = "fuser-verify"
    SUMMARY = "Check the fuser-dialect invariants that IRDL cannot express."

    def run(self, module: ir.Operation) -> None:
        errors: list[tuple[ir.Operation, str]] = []
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "func.func":
                verify_function(op, errors)
            elif O.short_name(op.name) is not None:
                errors.append((op, "must be inside a func.func"))
        for op, message in errors:
            emit_error(op, f"{op_label(op)} {message}")
        if errors:
            raise PassFailure()
