"""Op categories of the fuser dialect and a generic op builder.

The IRDL file names the ops; these tables say what kind each one is, which
the verifier, the frontend and the lowerings all read. ``test_dialect.py``
checks that :data:`CATEGORY` covers exactly the ops of the IRDL file.
"""

from __future__ import annotations

from collections.abc import Sequence

from fuser_mlir._mlir import ir

# -- pointwise ----------------------------------------------------------------

#: Unary ops defined on floating-point values only (the frontend promotes ints).
UNARY_FLOAT = frozenset(
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan tanh "
    "asin acos atan sinh cosh erf erfc sigmoid silu floor ceil round trunc".split()
)
#: Unary ops on any number (float or integer, not i1).
UNARY_NUMERIC = frozenset("abs neg relu sign".split())
#: Unary predicates on floats; the result is i1.
UNARY_PREDICATE = frozenset("isnan isinf isfinite".split())
UNARY_LOGICAL = frozenset({"logical_not"})  # i1 -> i1
UNARY_BITWISE = frozenset({"bitwise_not"})  # integers and i1

BINARY_NUMERIC = frozenset("add sub mul pow fmod remainder maximum minimum".split())
BINARY_FLOAT = frozenset("div atan2".split())
BINARY_COMPARE = frozenset("eq ne lt le gt ge".split())  # result i1
BINARY_LOGICAL = frozenset("logical_and logical_or".split())  # i1, i1 -> i1
BINARY_BITWISE = frozenset("bitwise_and bitwise_or bitwise_xor".split())

TERNARY = frozenset("where clamp lerp".split())

UNARY = UNARY_FLOAT | UNARY_NUMERIC | UNARY_PREDICATE | UNARY_LOGICAL | UNARY_BITWISE
BINARY = BINARY_NUMERIC | BINARY_FLOAT | BINARY_COMPARE | BINARY_LOGICAL | BINARY_BITWISE
POINTWISE = UNARY | BINARY | TERNARY

#: Ops whose result element type is i1 whatever the operand type.
BOOL_RESULT = UNARY_PREDICATE | UNARY_LOGICAL | BINARY_COMPARE | BINARY_LOGICAL

REDUCTIONS = frozenset("sum prod max min".split())
#: Ops that copy their operand unchanged (value semantics).
COPIES = frozenset({"set", "segment_set"})
#: Ops that write into a destination buffer.
DESTINATION_WRITES = frozenset({"store", "copy"})

CATEGORY: dict[str, str] = {}
for _names, _cat in (
    (UNARY, "unary"),
    (BINARY, "binary"),
    (TERNARY, "ternary"),
    (REDUCTIONS, "reduction"),
    (COPIES, "copy"),
    (DESTINATION_WRITES, "destination"),
    ({"cast"}, "cast"),
    ({"broadcast_in_dim", "permute", "reshape"}, "layout"),
    ({"constant", "size"}, "scalar"),
    ({"empty"}, "empty"),
):
    for _n in _names:
        CATEGORY[_n] = _cat


def short_name(op_name: str) -> str | None:
    """``"fuser.add"`` -> ``"add"``; ``None`` for ops of other dialects."""
    prefix, _, rest = op_name.partition(".")
    return rest if prefix == "fuser" else None


def create(
    name: str,
    operands: Sequence[ir.Value],
    result_type: ir.Type,
    attributes: dict[str, ir.Attribute] | None = None,
    *,
    loc: ir.Location | None = None,
    ip: ir.InsertionPoint | None = None,
) -> ir.Value:
    """Build ``fuser.<name>`` with one result and return that result."""
    op = ir.Operation.create(
        f"fuser.{name}",
        results=[result_type],
        operands=list(operands),
        attributes=attributes or {},
        loc=loc,
        ip=ip,
    )
    return op.result
