"""The per-element semantics of fuser ops, as arith/math/scf on scalars.

Every lowering of a pointwise op, a cast or a reduction ends here: the
functions take scalar SSA values (function-level scalars, or the block
arguments of a ``linalg.generic`` body) and emit the ops that compute one
element, with PyTorch's semantics (``dialect/README.md``):

- ``f16``/``bf16`` values are loaded and stored in their own type, but every
  arithmetic op computes in ``f32`` (``arith.extf`` before, ``arith.truncf``
  after), as PyTorch's CPU kernels do; the CPU pipeline expands the ``bf16``
  conversions in IR (``arith-expand{include-bf16=true}``).
- Conversions from ``f64`` to ``f16``/``bf16`` go through ``f32`` (as c10's
  ``Half(float)``/``BFloat16(float)`` do); this also avoids the
  ``__truncdfhf2`` libcall that the JIT cannot resolve.
- ``maximum``/``minimum``/``max``/``min``/``relu``/``clamp`` propagate NaN
  (``arith.maximumf``/``minimumf``); ``ne`` is unordered (``NaN != x``).
- Integer ``fmod``/``remainder`` by zero give 0 instead of trapping, and
  ``INT_MIN % -1`` is 0; integer ``pow`` follows PyTorch (wrapping, and for a
  negative exponent ``1``, ``+-1`` or ``0``).
- ``sign(NaN)`` is 0, as PyTorch's ``(0 < x) - (x < 0)`` kernel gives.
- Transcendental functions call libm (``expf``/``exp``, ...; :data:`LIBM_CALLS`)
  instead of using ``math`` ops: ``convert-math-to-llvm`` expands
  ``math.expm1`` as ``exp(x) - 1`` (all precision lost near 0), and explicit
  calls are what LLVM's loop vectoriser can map to libmvec's SIMD variants
  (:mod:`fuser_mlir.lowering.vector_library`). Whoever lowers a function
  declares the callees (``fuser-lower-to-cpu`` does). ``sqrt``, ``floor``,
  ``round`` and friends stay ``math`` ops: they are single instructions.

All public helpers take IR values first and end with keyword-only
``loc``/``ip``; without them they use the current Location and InsertionPoint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from fuser_mlir._mlir import arith, func, ir, math, scf
from fuser_mlir.dialect import types as T

_HALF = ("f16", "bf16")


@contextlib.contextmanager
def building(loc: ir.Location | None, ip: ir.InsertionPoint | None):
    """Enter ``loc`` and ``ip`` (each when given) for the ops built inside."""
    with contextlib.ExitStack() as stack:
        if loc is not None:
            stack.enter_context(loc)
        if ip is not None:
            stack.enter_context(ip)
        yield


# -- constants and types ------------------------------------------------------


def f32() -> ir.Type:
    return ir.F32Type.get()


def constant(value: float | int | bool, type_: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """An ``arith.constant`` of a float, integer or ``i1`` scalar type."""
    with building(loc, ip):
        if T.is_float(type_):
            attr = ir.FloatAttr.get(type_, float(value))
        else:
            attr = ir.IntegerAttr.get(type_, int(value))
        return arith.ConstantOp(type_, attr).result


def _int_limits(type_: ir.Type) -> tuple[int, int]:
    width = ir.IntegerType(type_).width
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def _is_half(value: ir.Value) -> bool:
    return str(value.type) in _HALF


def _widen(value: ir.Value) -> ir.Value:
    """``f16``/``bf16`` -> ``f32``; other values unchanged."""
    return arith.ExtFOp(f32(), value).result if _is_half(value) else value


def _narrow(value: ir.Value, type_: ir.Type) -> ir.Value:
    """``f32`` -> ``type_`` when ``type_`` is ``f16``/``bf16``; else unchanged."""
    if str(type_) in _HALF and value.type != type_:
        return arith.TruncFOp(type_, value).result
    return value


# -- unary --------------------------------------------------------------------

#: Ops lowered to a libm call: op -> {element type: function name} (same
#: names as C: ``expf`` for f32, ``exp`` for f64).
LIBM_CALLS: dict[str, dict[str, str]] = {
    name: {"f32": name + "f", "f64": name}
    for name in "exp exp2 expm1 log log2 log10 log1p sin cos tan tanh asin acos atan sinh cosh erf erfc pow atan2".split()
}

_MATH_UNARY: dict[str, type] = {
    "sqrt": math.SqrtOp,
    "rsqrt": math.RsqrtOp,
    "floor": math.FloorOp,
    "ceil": math.CeilOp,
    "round": math.RoundEvenOp,
    "trunc": math.TruncOp,
}


def _sigmoid(x: ir.Value) -> ir.Value:
    one = constant(1.0, x.type)
    denominator = arith.AddFOp(one, _libm_call("exp", arith.NegFOp(x).result)).result
    return arith.DivFOp(one, denominator).result


def _libm_call(name: str, *args: ir.Value) -> ir.Value:
    callee = LIBM_CALLS[name][str(args[0].type)]
    return func.CallOp([args[0].type], ir.FlatSymbolRefAttr.get(callee), list(args)).result


def _float_unary(name: str, x: ir.Value) -> ir.Value:
    if name in LIBM_CALLS:
        return _libm_call(name, x)
    if name in _MATH_UNARY:
        return _MATH_UNARY[name](x).result
    if name == "reciprocal":
        return arith.DivFOp(constant(1.0, x.type), x).result
    if name == "sigmoid":
        return _sigmoid(x)
    if name == "silu":
        return arith.MulFOp(x, _sigmoid(x)).result
    if name == "abs":
        return math.AbsFOp(x).result
    if name == "neg":
        return arith.NegFOp(x).result
    if name == "relu":
        return arith.MaximumFOp(x, constant(0.0, x.type)).result
    if name == "sign":
        return _sign(x, float_=True)
    if name == "isnan":
        return arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result
    if name == "isinf":
        return arith.CmpFOp(arith.CmpFPredicate.OEQ, math.AbsFOp(x).result, constant(float("inf"), x.type)).result
    if name == "isfinite":
        return arith.CmpFOp(arith.CmpFPredicate.OLT, math.AbsFOp(x).result, constant(float("inf"), x.type)).result
    raise NotImplementedError(f"no float lowering for unary 'fuser.{name}'")


def _sign(x: ir.Value, *, float_: bool) -> ir.Value:
    """``(0 < x) - (x < 0)`` in x's type (0 for NaN, as in PyTorch)."""
    zero = constant(0, x.type)
    if float_:
        positive = arith.CmpFOp(arith.CmpFPredicate.OGT, x, zero).result
        negative = arith.CmpFOp(arith.CmpFPredicate.OLT, x, zero).result
    else:
        positive = arith.CmpIOp(arith.CmpIPredicate.sgt, x, zero).result
        negative = arith.CmpIOp(arith.CmpIPredicate.slt, x, zero).result
    plus = arith.SelectOp(positive, constant(1, x.type), zero).result
    return arith.SelectOp(negative, constant(-1, x.type), plus).result


def _int_unary(name: str, x: ir.Value) -> ir.Value:
    if name == "abs":
        return math.AbsIOp(x).result
    if name == "neg":
        return arith.SubIOp(constant(0, x.type), x).result
    if name == "relu":
        return arith.MaxSIOp(x, constant(0, x.type)).result
    if name == "sign":
        return _sign(x, float_=False)
    if name in ("bitwise_not", "logical_not"):
        return arith.XOrIOp(x, constant(-1, x.type)).result
    raise NotImplementedError(f"no integer lowering for unary 'fuser.{name}'")


# -- binary -------------------------------------------------------------------

_FLOAT_COMPARE = {
    "eq": arith.CmpFPredicate.OEQ,
    "ne": arith.CmpFPredicate.UNE,
    "lt": arith.CmpFPredicate.OLT,
    "le": arith.CmpFPredicate.OLE,
    "gt": arith.CmpFPredicate.OGT,
    "ge": arith.CmpFPredicate.OGE,
}
_SIGNED_COMPARE = {
    "eq": arith.CmpIPredicate.eq,
    "ne": arith.CmpIPredicate.ne,
    "lt": arith.CmpIPredicate.slt,
    "le": arith.CmpIPredicate.sle,
    "gt": arith.CmpIPredicate.sgt,
    "ge": arith.CmpIPredicate.sge,
}
_UNSIGNED_COMPARE = {  # i1: false < true
    "eq": arith.CmpIPredicate.eq,
    "ne": arith.CmpIPredicate.ne,
    "lt": arith.CmpIPredicate.ult,
    "le": arith.CmpIPredicate.ule,
    "gt": arith.CmpIPredicate.ugt,
    "ge": arith.CmpIPredicate.uge,
}

_FLOAT_BINARY: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "add": lambda a, b: arith.AddFOp(a, b).result,
    "sub": lambda a, b: arith.SubFOp(a, b).result,
    "mul": lambda a, b: arith.MulFOp(a, b).result,
    "div": lambda a, b: arith.DivFOp(a, b).result,
    "fmod": lambda a, b: arith.RemFOp(a, b).result,
    "maximum": lambda a, b: arith.MaximumFOp(a, b).result,
    "minimum": lambda a, b: arith.MinimumFOp(a, b).result,
}
_INT_BINARY: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "add": lambda a, b: arith.AddIOp(a, b).result,
    "sub": lambda a, b: arith.SubIOp(a, b).result,
    "mul": lambda a, b: arith.MulIOp(a, b).result,
    "maximum": lambda a, b: arith.MaxSIOp(a, b).result,
    "minimum": lambda a, b: arith.MinSIOp(a, b).result,
    "bitwise_and": lambda a, b: arith.AndIOp(a, b).result,
    "bitwise_or": lambda a, b: arith.OrIOp(a, b).result,
    "bitwise_xor": lambda a, b: arith.XOrIOp(a, b).result,
    "logical_and": lambda a, b: arith.AndIOp(a, b).result,
    "logical_or": lambda a, b: arith.OrIOp(a, b).result,
}


def _float_remainder(a: ir.Value, b: ir.Value) -> ir.Value:
    """Python's ``%``: ``fmod``, then add ``b`` when the signs differ."""
    mod = arith.RemFOp(a, b).result
    zero = constant(0.0, a.type)
    nonzero = arith.CmpFOp(arith.CmpFPredicate.ONE, mod, zero).result
    b_negative = arith.CmpFOp(arith.CmpFPredicate.OLT, b, zero).result
    mod_negative = arith.CmpFOp(arith.CmpFPredicate.OLT, mod, zero).result
    differ = arith.XOrIOp(b_negative, mod_negative).result
    fix = arith.AndIOp(nonzero, differ).result
    return arith.SelectOp(fix, arith.AddFOp(mod, b).result, mod).result


def _safe_divisor(b: ir.Value) -> ir.Value:
    """``b``, or 1 where ``b`` is 0 or -1 (no trap; the remainder is 0 there)."""
    zero = arith.CmpIOp(arith.CmpIPredicate.eq, b, constant(0, b.type)).result
    minus_one = arith.CmpIOp(arith.CmpIPredicate.eq, b, constant(-1, b.type)).result
    bad = arith.OrIOp(zero, minus_one).result
    return arith.SelectOp(bad, constant(1, b.type), b).result


def _int_fmod(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.RemSIOp(a, _safe_divisor(b)).result


def _int_remainder(a: ir.Value, b: ir.Value) -> ir.Value:
    mod = _int_fmod(a, b)
    zero = constant(0, a.type)
    nonzero = arith.CmpIOp(arith.CmpIPredicate.ne, mod, zero).result
    b_negative = arith.CmpIOp(arith.CmpIPredicate.slt, b, zero).result
    mod_negative = arith.CmpIOp(arith.CmpIPredicate.slt, mod, zero).result
    fix = arith.AndIOp(nonzero, arith.XOrIOp(b_negative, mod_negative).result).result
    return arith.SelectOp(fix, arith.AddIOp(mod, b).result, mod).result


def _int_pow(a: ir.Value, b: ir.Value) -> ir.Value:
    """PyTorch's integer ``pow``: square-and-multiply over every exponent bit
    (wrapping like C), and for ``b < 0``: 1 if ``a == 1``, +-1 if ``a == -1``
    (by the parity of ``b``), else 0."""
    type_ = a.type
    one = constant(1, type_)
    width = ir.IntegerType(type_).width
    index = ir.IndexType.get()
    loop = scf.ForOp(constant(0, index), constant(width, index), constant(1, index), [one, a, b])
    with ir.InsertionPoint(loop.body):
        _, acc, base, exp = loop.body.arguments
        odd = arith.TruncIOp(ir.IntegerType.get_signless(1), exp).result
        acc = arith.SelectOp(odd, arith.MulIOp(acc, base).result, acc).result
        base = arith.MulIOp(base, base).result
        exp = arith.ShRUIOp(exp, one).result
        scf.YieldOp([acc, base, exp])
    power = loop.results[0]
    zero = constant(0, type_)
    minus_one = constant(-1, type_)
    odd = arith.TruncIOp(ir.IntegerType.get_signless(1), b).result
    sign = arith.SelectOp(odd, minus_one, one).result
    is_one = arith.CmpIOp(arith.CmpIPredicate.eq, a, one).result
    is_minus_one = arith.CmpIOp(arith.CmpIPredicate.eq, a, minus_one).result
    negative_result = arith.SelectOp(is_one, one, arith.SelectOp(is_minus_one, sign, zero).result).result
    negative = arith.CmpIOp(arith.CmpIPredicate.slt, b, zero).result
    return arith.SelectOp(negative, negative_result, power).result


def _float_binary(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if name in _FLOAT_COMPARE:
        return arith.CmpFOp(_FLOAT_COMPARE[name], a, b).result
    if name == "remainder":
        return _float_remainder(a, b)
    if name in LIBM_CALLS:
        return _libm_call(name, a, b)
    if name in _FLOAT_BINARY:
        return _FLOAT_BINARY[name](a, b)
    raise NotImplementedError(f"no float lowering for binary 'fuser.{name}'")


def _int_binary(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if name in _SIGNED_COMPARE:
        table = _UNSIGNED_COMPARE if T.is_bool(a.type) else _SIGNED_COMPARE
        return arith.CmpIOp(table[name], a, b).result
    if name == "fmod":
        return _int_fmod(a, b)
    if name == "remainder":
        return _int_remainder(a, b)
    if name == "pow":
        return _int_pow(a, b)
    if name in _INT_BINARY:
        return _INT_BINARY[name](a, b)
    raise NotImplementedError(f"no integer lowering for binary 'fuser.{name}'")


# -- ternary ------------------------------------------------------------------


def _clamp(x: ir.Value, low: ir.Value, high: ir.Value) -> ir.Value:
    if T.is_float(x.type):
        return arith.MinimumFOp(arith.MaximumFOp(x, low).result, high).result
    return arith.MinSIOp(arith.MaxSIOp(x, low).result, high).result


def _lerp(start: ir.Value, end: ir.Value, weight: ir.Value) -> ir.Value:
    """PyTorch's ``lerp``: ``start + w*(end-start)`` for ``|w| < 0.5``, else
    ``end - (end-start)*(1-w)`` (exact at both ends)."""
    if not T.is_float(start.type):
        diff = arith.SubIOp(end, start).result
        return arith.AddIOp(start, arith.MulIOp(weight, diff).result).result
    diff = arith.SubFOp(end, start).result
    one = constant(1.0, start.type)
    small = arith.CmpFOp(arith.CmpFPredicate.OLT, math.AbsFOp(weight).result, constant(0.5, start.type)).result
    low = arith.AddFOp(start, arith.MulFOp(weight, diff).result).result
    high = arith.SubFOp(end, arith.MulFOp(diff, arith.SubFOp(one, weight).result).result).result
    return arith.SelectOp(small, low, high).result


# -- entry points -------------------------------------------------------------


def pointwise(name: str, operands: Sequence[ir.Value], result_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """One element of ``fuser.<name>`` on scalar ``operands``.

    ``result_type`` is the scalar result type (``i1`` for predicates).
    """
    with building(loc, ip):
        if name == "where":
            return arith.SelectOp(*operands).result
        half = any(_is_half(v) for v in operands)
        values = [_widen(v) for v in operands]
        if len(values) == 1:
            x = values[0]
            result = _float_unary(name, x) if T.is_float(x.type) else _int_unary(name, x)
        elif len(values) == 2:
            a, b = values
            result = _float_binary(name, a, b) if T.is_float(a.type) else _int_binary(name, a, b)
        elif name == "clamp":
            result = _clamp(*values)
        elif name == "lerp":
            result = _lerp(*values)
        else:
            raise NotImplementedError(f"no lowering for 'fuser.{name}'")
        return _narrow(result, result_type) if half else result


def cast(value: ir.Value, to_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """``fuser.cast`` of one scalar: float->int truncates toward zero, to ``i1``
    is ``!= 0`` (NaN is true), ``i1`` converts as 0/1; half types go through f32."""
    with building(loc, ip):
        source = value.type
        if source == to_type:
            return value
        if T.is_bool(to_type):
            return _to_bool(value)
        if T.is_float(source):
            return _from_float(value, to_type)
        return _from_int(value, to_type)


def _to_bool(value: ir.Value) -> ir.Value:
    if T.is_float(value.type):
        x = _widen(value)
        return arith.CmpFOp(arith.CmpFPredicate.UNE, x, constant(0.0, x.type)).result
    return arith.CmpIOp(arith.CmpIPredicate.ne, value, constant(0, value.type)).result


def _from_float(value: ir.Value, to_type: ir.Type) -> ir.Value:
    x = _widen(value)
    if T.is_int(to_type):
        return arith.FPToSIOp(to_type, x).result
    if str(to_type) in _HALF and str(x.type) == "f64":
        x = arith.TruncFOp(f32(), x).result
    if x.type == to_type:
        return x
    width = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
    if width[str(to_type)] > width[str(x.type)]:
        return arith.ExtFOp(to_type, x).result
    return arith.TruncFOp(to_type, x).result


def _from_int(value: ir.Value, to_type: ir.Type) -> ir.Value:
    signed = not T.is_bool(value.type)
    if T.is_float(to_type):
        wide = to_type if str(to_type) not in _HALF else f32()
        op = arith.SIToFPOp if signed else arith.UIToFPOp
        return _narrow(op(wide, value).result, to_type)
    source_width = ir.IntegerType(value.type).width
    target_width = ir.IntegerType(to_type).width
    if target_width < source_width:
        return arith.TruncIOp(to_type, value).result
    op = arith.ExtSIOp if signed else arith.ExtUIOp
    return op(to_type, value).result


# -- reductions ---------------------------------------------------------------
#
# Float max/min reductions run on integer *order keys* plus a NaN flag: LLVM
# does not vectorise a chain of NaN-propagating ``maximumf``, but it
# vectorises integer max/min and ``or``. The key of a float is its bit pattern
# as a signed integer with the magnitude bits flipped when the sign is set, so
# integer order is float order (-0 < +0, as ``maximumf`` has it). The key is
# branch-free on purpose: a ``select`` for NaN would be sunk past the
# ``smax`` by LLVM, which then no longer sees a reduction.


def key_type(float_type: ir.Type) -> ir.Type:
    """``i64`` for ``f64``, else ``i32`` (half types key through ``f32``)."""
    return ir.IntegerType.get_signless(64 if str(float_type) == "f64" else 32)


def order_key(value: ir.Value, *, loc=None, ip=None) -> ir.Value:
    """The integer order key of a float: ``bits ^ ((bits >>s (w-1)) >>u 1)``."""
    with building(loc, ip):
        x = _widen(value)
        int_type = key_type(x.type)
        width = ir.IntegerType(int_type).width
        bits = arith.BitcastOp(int_type, x).result
        sign = arith.ShRSIOp(bits, constant(width - 1, int_type)).result
        return arith.XOrIOp(bits, arith.ShRUIOp(sign, constant(1, int_type)).result).result


def nan_flag(value: ir.Value, int_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """1 if the float is NaN, else 0, as ``int_type``."""
    with building(loc, ip):
        x = _widen(value)
        return arith.ExtUIOp(int_type, arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result).result


def from_order_key(key: ir.Value, nan: ir.Value, float_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """The float of an order key (inverse of :func:`order_key`), or NaN
    where the flag ``nan`` is set."""
    with building(loc, ip):
        width = ir.IntegerType(key.type).width
        sign = arith.ShRSIOp(key, constant(width - 1, key.type)).result
        bits = arith.XOrIOp(key, arith.ShRUIOp(sign, constant(1, key.type)).result).result
        wide = ir.F64Type.get() if width == 64 else f32()
        value = arith.BitcastOp(wide, bits).result
        is_nan = arith.CmpIOp(arith.CmpIPredicate.ne, nan, constant(0, nan.type)).result
        value = arith.SelectOp(is_nan, constant(float("nan"), wide), value).result
        return _narrow(value, float_type)


#: The pointwise op that combines two partial results of each reduction.
COMBINER = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def reduction_identity(kind: str, type_: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """The identity of reduction ``kind`` as a constant of ``type_``:
    0, 1, -inf/int min, +inf/int max."""
    if kind == "sum":
        value: float | int = 0
    elif kind == "prod":
        value = 1
    elif T.is_float(type_):
        value = float("-inf") if kind == "max" else float("inf")
    else:
        low, high = _int_limits(type_)
        value = low if kind == "max" else high
    return constant(value, type_, loc=loc, ip=ip)


def combine(kind: str, accumulator: ir.Value, value: ir.Value, *, loc=None, ip=None) -> ir.Value:
    """One step of reduction ``kind``: ``accumulator (+|*|max|min) value``.

    Float sums and products carry ``fastmath<reassoc>``: the order of a
    reduction is unspecified (NumPy sums pairwise, PyTorch in blocks), and the
    flag lets LLVM vectorise the loop with partial accumulators.
    """
    if kind not in ("sum", "prod") or not T.is_float(accumulator.type):
        return pointwise(COMBINER[kind], [accumulator, value], accumulator.type, loc=loc, ip=ip)
    with building(loc, ip):
        reassoc = ir.Attribute.parse("#arith.fastmath<reassoc>")
        op = arith.AddFOp if kind == "sum" else arith.MulFOp
        result = op(_widen(accumulator), _widen(value), fastmath=reassoc).result
        return _narrow(result, accumulator.type)
