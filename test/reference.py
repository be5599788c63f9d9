"""A NumPy interpreter of a FusionDefinition: the reference every test compares against.

``evaluate(fd, inputs)`` runs the definition's recorded ops (the ones that
reach an output) on NumPy arrays and returns every output in ``fd.outputs``
order, hidden in-place aliases included. Float values are computed in
float64 whatever their declared dtype (Half, BFloat16 and Float inputs are
widened; casts between float types keep float64), integers and Bools exactly
in their own dtype. Semantics are PyTorch's, as ``dialect/README.md`` states
them: true division, ``fmod`` truncates, ``remainder`` takes the divisor's
sign, ``round`` is half to even, ``sign(0) = sign(NaN) = 0``, ``lerp`` is
two-sided (exact at both ends), NaN propagates through
``maximum``/``minimum``/``max``/``min``, float to int truncates toward zero.

SSA semantics: inputs are copied on entry and never written, so an aliased
input's readers see its entry value.

    outs = evaluate(fd, [x, y, 2.0])
    np.testing.assert_allclose(fused_outs[0], outs[0], rtol=1e-5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fuser_mlir.frontend.datatype import DataType

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def compute_dtype(dtype: DataType) -> np.dtype:
    """The NumPy dtype the reference holds ``dtype`` values in."""
    if dtype.is_float:
        return np.dtype(np.float64)
    return dtype.numpy


def _convert(x, dtype: DataType) -> np.ndarray:
    """PyTorch's cast: to Bool is ``x != 0``, float to int truncates toward zero."""
    x = np.asarray(x)
    if dtype.is_bool:
        return x != 0
    if dtype.is_float:
        return x.astype(np.float64)
    if x.dtype.kind == "f":
        x = np.trunc(x)
    return x.astype(dtype.numpy)


def _int_pow(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Integer power; a negative exponent gives C's integer result (0 unless |base| is 1)."""
    base, exponent = np.broadcast_arrays(base, exponent)
    result = np.power(base, np.maximum(exponent, 0))
    negative = exponent < 0
    odd = (exponent % 2) != 0
    special = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
    return np.where(negative, special, result).astype(base.dtype)


def _pow(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return _int_pow(a, b)
    return np.power(a, b)


def _sign(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return np.nan_to_num(np.sign(x), nan=0.0)  # PyTorch's sign(NaN) is 0 (pytorch/pytorch#41245)
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


POINTWISE = {
    "abs": np.abs,
    "neg": np.negative,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "erf": _erf,
    "erfc": _erfc,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, np.zeros((), np.asarray(x).dtype)),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,  # half to even
    "trunc": np.trunc,
    "sign": _sign,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logical_not": np.logical_not,
    "bitwise_not": np.invert,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": _pow,
    "fmod": np.fmod,
    "remainder": np.remainder,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "atan2": np.arctan2,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "where": np.where,
    "clamp": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "lerp": lambda a, b, w: np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w)),  # PyTorch's, exact at both ends
}

REDUCTIONS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _input(spec, value) -> np.ndarray:
    if spec.kind == "scalar":
        return np.asarray(value, dtype=compute_dtype(spec.dtype))
    array = np.asarray(value)
    if spec.dtype.is_float:
        return array.astype(np.float64)  # always a copy
    return np.array(array, dtype=spec.dtype.numpy)


def _broadcast_in_dim(x: np.ndarray, result, attrs) -> np.ndarray:
    bdims = attrs["broadcast_dims"]
    rank = len(result.shape)
    expanded = np.reshape(x, [x.shape[bdims.index(d)] if d in bdims else 1 for d in range(rank)])
    shape = []
    for d, declared in enumerate(result.shape):
        mapped = expanded.shape[d]
        shape.append(declared if declared != -1 and mapped == 1 else mapped)
    return np.broadcast_to(expanded, shape)


def _evaluate_record(fd, record, env: dict, sizes) -> np.ndarray:
    result = fd.value(record.result)
    args = [env[v] for v in record.operands]
    op, attrs = record.op, record.attrs
    if op == "constant":
        return np.asarray(attrs["value"], dtype=compute_dtype(result.dtype))
    if op == "size_expr":
        return np.asarray(sizes.product(attrs["product"]), dtype=np.int64)
    if op == "cast":
        return _convert(args[0], result.dtype)
    if op in ("set", "segment_set"):
        return np.array(args[0])
    if op == "broadcast_in_dim":
        return _broadcast_in_dim(args[0], result, attrs)
    if op == "permute":
        return np.transpose(args[0], attrs["dims"])
    if op == "reshape":
        return args[0] if attrs["new_shape"] is None else np.reshape(args[0], attrs["new_shape"])
    if op in REDUCTIONS:
        return REDUCTIONS[op](args[0], axis=tuple(attrs["dims"]), keepdims=attrs["keepdim"])
    if op in POINTWISE:
        return POINTWISE[op](*args)
    raise NotImplementedError(f"the reference interpreter has no rule for '{op}'")


def evaluate(fd, inputs: Sequence[object], rounded: bool = False) -> list[np.ndarray]:
    """Every output of ``fd`` (``fd.outputs`` order, hidden aliases included) for ``inputs``.

    ``rounded``: each op's float result is rounded to its dtype (then held in
    float64 again), as the fusion rounds it, so that a program whose 16-bit
    or float32 values feed ops that magnify a rounding (a bfloat16 sum fed to
    sin, a half value cast to an integer) is compared with what it computes,
    not with the float64 value it approximates; what is left is each op's
    own error (libm against libdevice, the order of a sum's terms)."""
    specs = fd.inputs
    if len(inputs) != len(specs):
        raise ValueError(f"evaluate: the fusion takes {len(specs)} inputs, got {len(inputs)}")
    env = {spec.value_id: _input(spec, value) for spec, value in zip(specs, inputs)}
    shapes = [np.shape(env[spec.value_id]) for spec in specs]
    fd.check_input_shapes(shapes)
    sizes = fd.shape_analysis().evaluator(shapes)
    with np.errstate(all="ignore"):
        for record in fd.live_records():
            value = _evaluate_record(fd, record, env, sizes)
            dtype = fd.value(record.result).dtype
            value = np.asarray(value, dtype=compute_dtype(dtype))
            if rounded and dtype.is_float and dtype.numpy != np.float64:
                value = value.astype(dtype.numpy).astype(np.float64)
            env[record.result] = value
    return [np.array(env[o.tensor]) for o in fd.outputs]


def visible_then_written(fd, expected: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """``expected`` (:func:`evaluate`'s outputs of ``fd``) as a call returns
    and writes them: the visible outputs; then the value of each input an
    output is written into, in input order; and those inputs' indices."""
    visible = [e for o, e in zip(fd.outputs, expected) if o.visible]
    written = sorted((o.alias_input, e) for o, e in zip(fd.outputs, expected) if o.alias_input is not None)
    return visible, [e for _, e in written], [k for k, _ in written]
