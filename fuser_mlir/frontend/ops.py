"""``fd.ops``: the op set of nvFuser's Python frontend, recorded as fuser ops.

Each public method checks its arguments, applies PyTorch's type promotion
(:mod:`~fuser_mlir.frontend.promotion`) and NumPy-style implicit broadcasting,
and records *primitive* ops, each of which becomes exactly one fuser-dialect
op: ``fd.ops.mean`` records a cast, a sum, a size expression and a div.
Python numbers become ``constant`` records of the type the op computes in.

Rules the recorded ops follow (the lowerings rely on them):

- Arithmetic never runs on Half/BFloat16: operands are cast to Float, the op
  computes, and the result is cast back to the PyTorch result dtype. Only
  casts, copies, layout ops and stores see f16/bf16.
- Bool operands of numeric ops (add, maximum, clamp, ...) compute in Int32
  and the result is cast back to Bool (``x != 0``), so ``add`` of two Bools
  is a logical or, as in PyTorch; ``sub``/``neg`` of Bools are errors, as in
  PyTorch.
- Integer operands of float-only ops (div, exp, atan2, lerp, isnan, ...)
  are promoted to Float; ``floor``/``ceil``/``round``/``trunc`` of integers
  are a copy.
- Reductions accumulate Half/BFloat16 in Float; sum/prod of Bool and Int32
  give Int; ``mean``/``var_mean`` divide by the element count, built from
  ``fuser.size`` of the inputs for symbolic dims.

Pure Python; no MLIR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fuser_mlir.errors import DefinitionError, counted
from fuser_mlir.frontend import promotion as P
from fuser_mlir.frontend.datatype import DataType, is_python_number
from fuser_mlir.frontend.shapes import Product, format_shape
from fuser_mlir.frontend.values import Loc, Scalar, Tensor, Value, user_location

if TYPE_CHECKING:
    from fuser_mlir.frontend.definition import FusionDefinition

# -- op tables (a test checks them against fuser_mlir.dialect.ops) --------------

#: Float-only unary ops; integer operands are promoted to Float.
UNARY_FLOAT = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan tanh "
    "asin acos atan sinh cosh erf erfc sigmoid silu"
).split()
#: Rounding ops: a copy for integers, float ops otherwise.
UNARY_ROUNDING = "floor ceil round trunc".split()
UNARY_NUMERIC = "abs neg relu sign".split()
UNARY_PREDICATE = "isnan isinf isfinite".split()
UNARY_LOGICAL = ["logical_not"]
UNARY_BITWISE = ["bitwise_not"]

BINARY_NUMERIC = "add sub mul pow fmod remainder maximum minimum".split()
BINARY_FLOAT = "div atan2".split()
BINARY_COMPARE = "eq ne lt le gt ge".split()
BINARY_LOGICAL = "logical_and logical_or".split()
BINARY_BITWISE = "bitwise_and bitwise_or bitwise_xor".split()

TERNARY = "where clamp lerp".split()
REDUCTIONS = "sum prod max min".split()

UNARY = UNARY_FLOAT + UNARY_ROUNDING + UNARY_NUMERIC + UNARY_PREDICATE + UNARY_LOGICAL + UNARY_BITWISE
BINARY = BINARY_NUMERIC + BINARY_FLOAT + BINARY_COMPARE + BINARY_LOGICAL + BINARY_BITWISE

#: Ops PyTorch rejects on Bool operands.
_NO_BOOL = {"sub": "use fd.ops.bitwise_xor for Bools", "neg": "use fd.ops.logical_not for Bools"}
#: Ops whose own result is Bool whatever they compute in.
_BOOL_RESULT = frozenset(UNARY_PREDICATE + BINARY_COMPARE)


class _Literal:
    """A Python number given as an operand; it becomes a constant once the op's dtype is known."""

    __slots__ = ("value", "dtype")

    def __init__(self, value):
        self.value = value
        self.dtype = DataType.of_python(value)


def _tier(v) -> str:
    if isinstance(v, Tensor):
        return P.TENSOR if v.ndim > 0 else P.ZERO_DIM
    return P.SCALAR


def _ints(values, api: str, what: str) -> list[int]:
    """``values`` (an int or a sequence of ints) as a list, or a DefinitionError naming the argument."""
    if is_python_number(values):
        values = [values]
    if hasattr(values, "tolist") and not isinstance(values, Sequence):  # a NumPy array
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise DefinitionError(f"{api}: {what} must be a list of ints, got {values!r}")
    if not all(is_python_number(v) and not isinstance(v, bool) and int(v) == v for v in values):
        raise DefinitionError(f"{api}: {what} must be a list of ints, got {list(values)!r}")
    return [int(v) for v in values]


def _normalize_dims(dims, rank: int, api: str, what: str = "dims") -> list[int]:
    """Dims in ``[0, rank)`` (negative dims count from the end), unique, in given order."""
    out = []
    for d in _ints(dims, api, what):
        if not -rank <= d < rank:
            raise DefinitionError(f"{api}: {what} entry {d} is out of range for a tensor of rank {rank} (valid: {-rank} to {rank - 1})")
        d = d % rank
        if d in out:
            raise DefinitionError(f"{api}: {what} names dim {d} twice ({list(dims)})")
        out.append(d)
    return out


class Ops:
    """The ``fd.ops`` namespace of one FusionDefinition."""

    def __init__(self, fd: "FusionDefinition"):
        self._fd = fd

    # ======================================================================
    # plumbing
    # ======================================================================

    def _begin(self, name: str) -> tuple[str, Loc]:
        api = f"fd.ops.{name}"
        self._fd._check_active(api)
        return api, user_location()

    def _operand(self, value, api: str, index: int):
        """A handle of this fusion or a _Literal for a Python number."""
        if isinstance(value, Value):
            self._fd._check_own(value, api, f"operand {index}")
            return value
        if is_python_number(value):
            return _Literal(value.item() if hasattr(value, "item") else value)
        raise DefinitionError(
            f"{api}: operand {index} must be a Tensor or Scalar of this fusion or a Python number, "
            f"got {type(value).__name__}; define it with fd.define_tensor or fd.define_scalar"
        )

    def _tensor(self, value, api: str, what: str = "operand 0") -> Tensor:
        if not isinstance(value, Tensor):
            got = "a Scalar" if isinstance(value, Scalar) else type(value).__name__
            raise DefinitionError(f"{api}: {what} must be a Tensor of this fusion, got {got}")
        self._fd._check_own(value, api, what)
        return value

    def _constant(self, value, dtype: DataType, loc: Loc) -> Scalar:
        return self._fd._constant(value, dtype, loc)

    def _materialize(self, v, dtype: DataType, loc: Loc) -> Value:
        """``v`` as a value of ``dtype``: a constant for literals, a cast otherwise."""
        if isinstance(v, _Literal):
            return self._constant(v.value, dtype, loc)
        return self._cast(v, dtype, loc)

    def _cast(self, v: Value, dtype: DataType, loc: Loc) -> Value:
        if v.dtype is dtype:
            return v
        constant = self._fd._constant_value(v)
        if constant is not None:
            return self._fd._constant(constant, dtype, loc, cast=True)
        return self._fd._record_like("cast", [v], v, dtype, loc)

    # -- broadcasting -----------------------------------------------------------

    def _expand_rank(self, t: Tensor, rank: int, loc: Loc) -> Tensor:
        """``t`` with leading broadcast dims up to ``rank`` (NumPy's right
        alignment): the keepdim form of a reduction of those dims where ``t``
        is one (``x - sum(x, [0])`` as ``x - sum(x, [0], keepdim=True)``, see
        _keepdim_form), else a broadcast_in_dim."""
        if t.ndim == rank:
            return t
        new = rank - t.ndim
        kept = self._keepdim_form(t, tuple(range(new)))
        if kept is not None:
            return kept
        return self._fd._record_tensor(
            "broadcast_in_dim",
            [t],
            t.dtype,
            (1,) * new + t.shape,
            (None,) * new + t.dims,
            loc,
            attrs={"broadcast_dims": tuple(range(new, rank)), "shape": (1,) * new + t.shape},
        )

    def _broadcast(self, values: list[Value], api: str, loc: Loc):
        """Broadcast the tensors among ``values`` to one rank and shape.

        Returns the new operand list, the result shape and dims (or ``None, None``
        when every operand is a scalar), and the extent pairs the op unifies.
        """
        tensors = [(i, v) for i, v in enumerate(values) if isinstance(v, Tensor)]
        if not tensors:
            return values, None, None, []
        rank = max(t.ndim for _, t in tensors)
        shape, dims, unify = [], [], []
        with self._fd._sizes_undone_on_error():
            for d in range(rank):
                size, extent = self._broadcast_dim(tensors, rank, d, api, unify)
                shape.append(size)
                dims.append(extent)
        expanded = [self._expand_rank(v, rank, loc) if isinstance(v, Tensor) else v for v in values]
        return expanded, tuple(shape), tuple(dims), unify

    def _broadcast_dim(self, tensors, rank: int, d: int, api: str, unify: list):
        """The result size and extent of dim ``d`` (right-aligned), unifying the operands' extents."""
        entries = []  # (operand index, size, extent)
        for i, t in tensors:
            k = d - (rank - t.ndim)
            if k >= 0:
                entries.append((i, t.shape[k], t.dims[k]))
        statics = [(i, s) for i, s, _ in entries if s > 1]
        for i, s in statics[1:]:
            if s != statics[0][1]:
                self._cannot_broadcast(tensors, api, d - rank, f"operand {statics[0][0]} has size {statics[0][1]} there and operand {i} has {s}")
        extents = [(i, e) for i, _, e in entries if e is not None]
        for i, e in extents[1:]:
            conflict = self._fd._unify(extents[0][1], e)
            if conflict is not None:
                self._cannot_broadcast(tensors, api, d - rank, f"operand {extents[0][0]} is bound to size {conflict[0]} there and operand {i} to {conflict[1]}")
            unify.append((extents[0][1], e))
        if statics:
            size = statics[0][1]
        elif extents:
            size = -1
        else:
            size = 1
        return size, (extents[0][1] if extents else None)

    def _cannot_broadcast(self, tensors, api: str, dim_from_end: int, why: str):
        shapes = ", ".join(f"operand {i} {format_shape(t.shape)}" for i, t in tensors)
        raise DefinitionError(
            f"{api}: shapes cannot broadcast ({shapes}): at dim {dim_from_end} (counting from the end) {why}; "
            "sizes must match or be 1 (a broadcast dim)"
        )

    # -- recording pointwise ops ---------------------------------------------------

    def _pointwise(self, name: str, values: list[Value], dtype: DataType, api: str, loc: Loc) -> Value:
        """Record ``name`` on operands that already have their compute dtypes."""
        values, shape, dims, unify = self._broadcast(values, api, loc)
        if shape is None:
            return self._fd._record_scalar(name, values, dtype, loc)
        return self._fd._record_tensor(name, values, dtype, shape, dims, loc, unify=unify)

    def _elementwise(self, name: str, raw: Sequence, api: str, loc: Loc) -> Value:
        """Promote, compute and cast back, per the rules in the module docstring."""
        operands = [self._operand(v, api, i) for i, v in enumerate(raw)]
        common = P.result_type((v.dtype, _tier(v)) for v in operands)
        compute, result = self._types(name, common, api)
        if compute is None:  # floor/ceil/round/trunc of an integer
            value = self._materialize(operands[0], common, loc)
            return self._copy("set", value, loc) if isinstance(value, Tensor) else value
        values = [self._materialize(v, compute, loc) for v in operands]
        out = self._pointwise(name, values, DataType.Bool if name in _BOOL_RESULT else compute, api, loc)
        return self._cast(out, result, loc)

    def _types(self, name: str, common: DataType, api: str) -> tuple[DataType | None, DataType]:
        """(compute dtype, result dtype) of an elementwise op whose operands promote to ``common``."""
        if name in UNARY_ROUNDING and not common.is_float:
            return None, common
        if name in UNARY_FLOAT or name in UNARY_ROUNDING or name in BINARY_FLOAT or name == "lerp":
            result = P.float_type(common)
            return P.compute_type(result), result
        if name in UNARY_PREDICATE:
            return P.compute_type(P.float_type(common)), DataType.Bool
        if name in BINARY_COMPARE:
            return P.compute_type(common), DataType.Bool
        if name in BINARY_BITWISE or name in UNARY_BITWISE:
            if common.is_float:
                raise DefinitionError(f"{api}: needs integer or Bool operands, got {common.name}; cast them with fd.ops.cast(t, DataType.Int)")
            return common, common
        if common.is_bool:
            if name in _NO_BOOL:
                raise DefinitionError(f"{api}: is not defined on Bool operands (as in PyTorch); {_NO_BOOL[name]}")
            return DataType.Int32, DataType.Bool
        return P.compute_type(common), common

    def _copy(self, name: str, t: Tensor, loc: Loc) -> Tensor:
        return self._fd._record_like(name, [t], t, t.dtype, loc)

    def _logical(self, name: str, raw: Sequence, api: str, loc: Loc) -> Value:
        """logical_not/and/or: operands become Bool (``x != 0``)."""
        operands = [self._operand(v, api, i) for i, v in enumerate(raw)]
        values = [self._materialize(v, DataType.Bool, loc) for v in operands]
        return self._pointwise(name, values, DataType.Bool, api, loc)

    # ======================================================================
    # unary, binary, ternary
    # ======================================================================

    def where(self, condition, on_true, on_false) -> Value:
        """``condition ? on_true : on_false``; the values promote together, the condition becomes Bool."""
        api, loc = self._begin("where")
        cond = self._materialize(self._operand(condition, api, 0), DataType.Bool, loc)
        a, b = self._operand(on_true, api, 1), self._operand(on_false, api, 2)
        typed = [(v.dtype, _tier(v)) for v in (a, b)]
        if isinstance(cond, Tensor):  # a tensor result: Python floats are Float, torch's default dtype (where(c, 1.0, 0.0))
            typed = [(DataType.Float, tier) if isinstance(v, _Literal) and v.dtype.is_float else (dtype, tier) for v, (dtype, tier) in zip((a, b), typed)]
        result = P.result_type(typed)
        compute = P.compute_type(result)
        values = [cond, self._materialize(a, compute, loc), self._materialize(b, compute, loc)]
        return self._cast(self._pointwise("where", values, compute, api, loc), result, loc)

    def clamp(self, x, low, high) -> Value:
        """``min(max(x, low), high)``, promoting the three operands together."""
        api, loc = self._begin("clamp")
        return self._elementwise("clamp", [x, low, high], api, loc)

    def lerp(self, start, end, weight) -> Value:
        """``start + weight * (end - start)``; integer operands are promoted to Float."""
        api, loc = self._begin("lerp")
        return self._elementwise("lerp", [start, end, weight], api, loc)

    def cast(self, arg, dtype: DataType) -> Value:
        """``arg`` converted to ``dtype`` (float to int truncates; to Bool is ``x != 0``)."""
        api, loc = self._begin("cast")
        dtype = self._fd._as_datatype(dtype, api)
        value = self._operand(arg, api, 0)
        if isinstance(value, _Literal):  # a cast, not a literal of dtype: 2.7 truncates to 2
            return self._fd._constant(value.value, dtype, loc, cast=True)
        return self._materialize(value, dtype, loc)

    # ======================================================================
    # layout
    # ======================================================================

    def broadcast_in_dim(self, arg, shape: Sequence[int], broadcast_dims: Sequence[int]) -> Tensor:
        """Operand dim ``i`` becomes result dim ``broadcast_dims[i]``; other dims are new.

        ``shape`` is the result shape: ``-1`` keeps an operand dim's size, a
        static size expands a broadcast dim (or asserts a symbolic one), and new
        dims need a static size (``1`` for a broadcast dim).
        """
        api, loc = self._begin("broadcast_in_dim")
        value = self._operand(arg, api, 0)
        if isinstance(value, _Literal):
            value = self._constant(value.value, value.dtype, loc)
        return self._broadcast_in_dim(value, shape, broadcast_dims, api, loc)

    def _broadcast_in_dim(self, value: Value, shape, broadcast_dims, api: str, loc: Loc) -> Tensor:
        with self._fd._sizes_undone_on_error():
            return self._bind_broadcast_in_dim(value, shape, broadcast_dims, api, loc)

    def _bind_broadcast_in_dim(self, value: Value, shape, broadcast_dims, api: str, loc: Loc) -> Tensor:
        shape = _ints(shape, api, "shape")
        for d, s in enumerate(shape):
            if s == 0 or s < -1:
                raise DefinitionError(f"{api}: shape[{d}] is {s}; sizes are -1 (keep the operand's size) or positive")
        bdims = _ints(broadcast_dims, api, "broadcast_dims")
        if len(bdims) != value.ndim:
            raise DefinitionError(f"{api}: broadcast_dims has {counted(len(bdims), 'entry')}, but the operand has rank {value.ndim}; give one result dim per operand dim")
        if any(not 0 <= d < len(shape) for d in bdims) or sorted(set(bdims)) != bdims:
            raise DefinitionError(f"{api}: broadcast_dims {bdims} must be increasing and within the result rank {len(shape)} (shape {shape})")
        new_dims = tuple(d for d in range(len(shape)) if d not in bdims)
        if new_dims and isinstance(value, Tensor) and all(shape[d] == 1 for d in new_dims) and all(shape[d] == -1 for d in bdims):
            kept = self._keepdim_form(value, new_dims)
            if kept is not None:
                return kept
        out_shape, out_dims, unify = [], [], []
        mapped = {d: i for i, d in enumerate(bdims)}
        for d, want in enumerate(shape):
            if d in mapped:
                size, extent = self._mapped_dim(value, mapped[d], d, want, api, loc, unify)
            else:
                size, extent = self._new_dim(d, want, api, loc)
            out_shape.append(size)
            out_dims.append(extent)
        attrs = {"broadcast_dims": tuple(bdims), "shape": tuple(out_shape)}
        return self._fd._record_tensor("broadcast_in_dim", [value], value.dtype, tuple(out_shape), tuple(out_dims), loc, attrs=attrs, unify=unify)

    def _mapped_dim(self, value: Tensor, i: int, d: int, want: int, api: str, loc: Loc, unify: list):
        size, extent = value.shape[i], value.dims[i]
        if size == 1:
            if want in (-1, 1):
                return 1, None
            return want, self._fd._static_extent(want, f"result dim {d} of 'broadcast_in_dim' at {loc.short}")
        if want in (-1, size):
            return size, extent
        if want == 1:
            raise DefinitionError(f"{api}: shape[{d}] is 1, but operand dim {i} (size {size}) is not a broadcast dim; pass -1 to keep its size")
        if size > 1:
            raise DefinitionError(f"{api}: shape[{d}] is {want}, but operand dim {i} has the static size {size}")
        static = self._fd._static_extent(want, f"shape[{d}] of 'broadcast_in_dim' at {loc.short}")
        if self._fd._unify(extent, static) is not None:
            raise DefinitionError(f"{api}: shape[{d}] is {want}, but operand dim {i} is bound to size {self._fd._class_static(extent)}")
        unify.append((extent, static))
        return size, extent

    def _keepdim_form(self, value: Tensor, new_dims: tuple[int, ...]) -> Tensor | None:
        """``value`` with dims of size 1 inserted at ``new_dims``, as the same
        reductions with ``keepdim=True`` make it, and the pointwise ops and
        casts between them and ``value`` recorded again on their results
        (None where ``value`` is not made so: an input, a layout op, a
        reduction of other dims). ``broadcast_in_dim(sum(x, [1]), [-1, 1],
        [0])``, nvFuser's way to broadcast a row's sum back over the row, is
        then ``sum(x, [1], keepdim=True)``, which a softmax or a norm keeps in
        its reductions' segment (fuser-segment, rule 2b; a broadcast of a
        reduction's result cuts): one kernel, not three. The records replaced
        stay; where nothing else reads them they are dead and not emitted."""
        forms = self._fd._keepdim_forms
        key = (value.id, new_dims)
        if key not in forms:
            forms[key] = self._record_keepdim_form(value, new_dims)
        return forms[key]

    def _record_keepdim_form(self, value: Tensor, new_dims: tuple[int, ...]) -> Tensor | None:
        index = self._fd._producer.get(value.id)
        if index is None:
            return None  # an input
        record = self._fd._records[index]
        kept = None
        if record.op in REDUCTIONS and not record.attrs["keepdim"] and tuple(record.attrs["dims"]) == new_dims:
            operand = self._fd.value(record.operands[0])
            if operand.ndim == value.ndim + len(new_dims):
                kept = self._reduce(record.op, operand, list(new_dims), True, record.loc)
        elif record.op in (*UNARY, *BINARY, *TERNARY, "cast", "set"):
            operands = []
            for v in (self._fd.value(i) for i in record.operands):
                operands.append(v if not isinstance(v, Tensor) else self._keepdim_form(v, new_dims) if v.ndim == value.ndim else None)
            if None not in operands:
                shape, dims = list(value.shape), list(value.dims)
                for d in new_dims:
                    shape.insert(d, 1)
                    dims.insert(d, None)
                kept = self._fd._record_tensor(record.op, operands, value.dtype, shape, dims, record.loc, dict(record.attrs), record.unify)
        return kept

    def _new_dim(self, d: int, want: int, api: str, loc: Loc):
        if want == -1:
            raise DefinitionError(f"{api}: result dim {d} is new (not in broadcast_dims), so shape[{d}] must be a static size (1 for a broadcast dim), not -1")
        if want == 1:
            return 1, None
        return want, self._fd._static_extent(want, f"result dim {d} of 'broadcast_in_dim' at {loc.short}")

    def broadcast(self, arg, is_broadcast_dim: Sequence[bool]) -> Tensor:
        """Insert a broadcast dim (size 1) wherever ``is_broadcast_dim`` is True."""
        api, loc = self._begin("broadcast")
        t = self._tensor(arg, api)
        if isinstance(is_broadcast_dim, (str, bytes)) or not hasattr(is_broadcast_dim, "__iter__"):
            raise DefinitionError(f"{api}: is_broadcast_dim must be a list of bools, one per result dim, got {is_broadcast_dim!r}")
        flags = [bool(b) for b in is_broadcast_dim]
        kept = [d for d, b in enumerate(flags) if not b]
        if len(kept) != t.ndim:
            raise DefinitionError(f"{api}: is_broadcast_dim has {len(kept)} False entries, but the operand has rank {t.ndim}; mark each operand dim False")
        shape = [1 if b else -1 for b in flags]
        return self._broadcast_in_dim(t, shape, kept, api, loc)

    def permute(self, arg, dims: Sequence[int]) -> Tensor:
        """Result dim ``i`` is operand dim ``dims[i]`` (``torch.permute``)."""
        api, loc = self._begin("permute")
        t = self._tensor(arg, api)
        order = _normalize_dims(dims, t.ndim, api)
        if len(order) != t.ndim:
            raise DefinitionError(f"{api}: dims {list(dims)} is not a permutation of the operand's {t.ndim} dims")
        return self._fd._record_tensor(
            "permute", [t], t.dtype, tuple(t.shape[d] for d in order), tuple(t.dims[d] for d in order), loc, attrs={"dims": tuple(order)}
        )

    def reshape(self, arg, new_shape: Sequence[int]) -> Tensor:
        """Row-major reshape; ``new_shape`` holds positive ints and at most one -1 (inferred)."""
        api, loc = self._begin("reshape")
        t = self._tensor(arg, api)
        new_shape = _ints(new_shape, api, "new_shape")
        for d, s in enumerate(new_shape):
            if s == 0 or s < -1:
                raise DefinitionError(f"{api}: new_shape[{d}] is {s}; sizes are positive, or -1 once for an inferred size")
        if new_shape.count(-1) > 1:
            raise DefinitionError(f"{api}: new_shape {new_shape} has more than one -1; only one size can be inferred")
        scale, factors = _static_and_symbolic(t)
        known = 1
        for s in new_shape:
            known *= s if s != -1 else 1
        if not factors and (scale % known if -1 in new_shape else scale != known):
            raise DefinitionError(f"{api}: cannot reshape {format_shape(t.shape)} ({scale} elements) into {format_shape(new_shape)}")
        shape, dims = [], []
        for d, s in enumerate(new_shape):
            size, extent = self._reshape_dim(d, s, scale, known, factors, loc)
            shape.append(size)
            dims.append(extent)
        return self._fd._record_tensor("reshape", [t], t.dtype, tuple(shape), tuple(dims), loc, attrs={"new_shape": tuple(new_shape)})

    def _reshape_dim(self, d: int, s: int, scale: int, known: int, factors: tuple, loc: Loc):
        note = f"dim {d} of 'reshape' at {loc.short}"
        if s == 1:
            return 1, None
        if s > 1:
            return s, self._fd._static_extent(s, note)
        if not factors:  # inferred from a static operand
            size = scale // known
            return (1, None) if size == 1 else (size, self._fd._static_extent(size, note))
        if scale == known and len(factors) == 1:
            return -1, factors[0]  # the inferred dim is the operand's one symbolic dim
        product = Product(factors, scale // known, 1) if scale % known == 0 else Product(factors, scale, known)
        return -1, self._fd._derived_extent(product, note)

    def set(self, arg) -> Tensor:
        """A copy of ``arg`` (nvFuser's ``set``)."""
        api, loc = self._begin("set")
        return self._copy("set", self._tensor(arg, api), loc)

    def segment_set(self, arg) -> Tensor:
        """A copy of ``arg`` with a segment (kernel) boundary between producer and consumers."""
        api, loc = self._begin("segment_set")
        return self._copy("segment_set", self._tensor(arg, api), loc)

    # ======================================================================
    # reductions
    # ======================================================================

    def sum(self, arg, dims=None, keepdim: bool = False, dtype: DataType | None = None) -> Tensor:
        """Sum over ``dims`` (None: all). Bool/Int32 sum to Int; Half/BFloat16 accumulate in Float."""
        return self._reduction("sum", arg, dims, keepdim, dtype)

    def prod(self, arg, dims=None, keepdim: bool = False, dtype: DataType | None = None) -> Tensor:
        """Product over ``dims`` (None: all), with sum's dtype rules."""
        return self._reduction("prod", arg, dims, keepdim, dtype)

    def max(self, arg, dims=None, keepdim: bool = False, dtype: DataType | None = None) -> Tensor:
        """Maximum over ``dims`` (None: all); NaN propagates. ``dtype`` casts the result."""
        return self._reduction("max", arg, dims, keepdim, dtype)

    def min(self, arg, dims=None, keepdim: bool = False, dtype: DataType | None = None) -> Tensor:
        """Minimum over ``dims`` (None: all); NaN propagates. ``dtype`` casts the result."""
        return self._reduction("min", arg, dims, keepdim, dtype)

    def mean(self, arg, dims=None, keepdim: bool = False, dtype: DataType | None = None) -> Tensor:
        """Sum over ``dims`` divided by the number of elements reduced (symbolic sizes included)."""
        api, loc = self._begin("mean")
        t = self._tensor(arg, api)
        dims = self._reduction_dims(t, dims, api)
        result = self._mean_dtype(t, dtype, api)
        acc = P.compute_type(result)
        x = self._cast(t, acc, loc)
        if not dims:  # a 0-d operand: its mean is itself
            return self._cast(self._copy("set", x, loc), result, loc)
        total = self._reduce("sum", x, dims, keepdim, loc)
        mean = self._pointwise("div", [total, self._count(t, dims, acc, loc)], acc, api, loc)
        return self._cast(mean, result, loc)

    def var_mean(self, arg, dims=None, correction: float = 1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """``(var, mean)`` over ``dims``; var divides by ``max(N - correction, 0)``."""
        api, loc = self._begin("var_mean")
        return self._var_mean(arg, dims, correction, keepdim, api, loc)

    def var(self, arg, dims=None, correction: float = 1, keepdim: bool = False) -> Tensor:
        """The variance over ``dims`` (the first result of ``var_mean``)."""
        api, loc = self._begin("var")
        return self._var_mean(arg, dims, correction, keepdim, api, loc)[0]

    def _var_mean(self, arg, dims, correction, keepdim: bool, api: str, loc: Loc):
        t = self._tensor(arg, api)
        if not is_python_number(correction) or isinstance(correction, bool):
            raise DefinitionError(f"{api}: correction must be a number, got {correction!r}")
        dims = self._reduction_dims(t, dims, api)
        if not dims:
            raise DefinitionError(f"{api}: the operand is 0-d; there is no dim to compute a variance over")
        result = self._mean_dtype(t, None, api)
        acc = P.compute_type(result)
        x = self._cast(t, acc, loc)
        count = self._count(t, dims, acc, loc)
        # the mean kept as size-1 dims from the reduction itself: a reduction broadcast back by broadcast_in_dim
        # is cut into another segment, so a layer norm written with var_mean would take two kernels
        mean_kept = self._pointwise("div", [self._reduce("sum", x, dims, True, loc), count], acc, api, loc)
        diff = self._pointwise("sub", [x, mean_kept], acc, api, loc)
        squares = self._reduce("sum", self._pointwise("mul", [diff, diff], acc, api, loc), dims, keepdim, loc)
        var = self._pointwise("div", [squares, self._denominator(count, float(correction), acc, api, loc)], acc, api, loc)
        mean = mean_kept if keepdim else self._pointwise("div", [self._reduce("sum", x, dims, False, loc), count], acc, api, loc)
        return self._cast(var, result, loc), self._cast(mean, result, loc)

    def _mean_dtype(self, t: Tensor, dtype, api: str) -> DataType:
        if dtype is None:
            return P.float_type(t.dtype)
        dtype = self._fd._as_datatype(dtype, api)
        if not dtype.is_float:
            raise DefinitionError(f"{api}: dtype must be a floating-point DataType, got {dtype.name}")
        return dtype

    def _reduction(self, name: str, arg, dims, keepdim: bool, dtype) -> Tensor:
        api, loc = self._begin(name)
        t = self._tensor(arg, api)
        dims = self._reduction_dims(t, dims, api)
        if dtype is not None:
            dtype = self._fd._as_datatype(dtype, api)
        if name in ("sum", "prod"):
            result = dtype if dtype is not None else P.sum_type(t.dtype)
            acc = DataType.Int if result.is_bool else P.compute_type(result)
        else:
            result = dtype if dtype is not None else t.dtype
            acc = DataType.Int32 if t.dtype.is_bool else P.compute_type(t.dtype)
        x = self._cast(t, acc, loc)
        if not dims:  # a 0-d operand: nothing to reduce
            return self._cast(self._copy("set", x, loc), result, loc)
        return self._cast(self._reduce(name, x, dims, keepdim, loc), result, loc)

    def _reduction_dims(self, t: Tensor, dims, api: str) -> list[int]:
        if dims is None:
            return list(range(t.ndim))
        out = sorted(_normalize_dims(dims, t.ndim, api))
        if not out and t.ndim > 0:
            raise DefinitionError(f"{api}: dims is empty; pass dims=None to reduce every dim")
        return out

    def _reduce(self, name: str, x: Tensor, dims: list[int], keepdim: bool, loc: Loc) -> Tensor:
        if keepdim:
            shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape))
            out_dims = tuple(None if d in dims else e for d, e in enumerate(x.dims))
        else:
            shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
            out_dims = tuple(e for d, e in enumerate(x.dims) if d not in dims)
        attrs = {"dims": tuple(dims), "keepdim": bool(keepdim)}
        return self._fd._record_tensor(name, [x], x.dtype, shape, out_dims, loc, attrs=attrs)

    def _count_product(self, t: Tensor, dims: list[int]) -> Product:
        scale, factors = 1, []
        for d in dims:
            if t.dims[d] is None:
                continue
            if t.shape[d] > 1:
                scale *= t.shape[d]
            else:
                factors.append(t.dims[d])
        return Product(tuple(factors), scale, 1)

    def _count(self, t: Tensor, dims: list[int], dtype: DataType, loc: Loc) -> Scalar:
        """The number of elements ``dims`` of ``t`` hold, as a scalar of ``dtype``."""
        product = self._count_product(t, dims)
        if not product.factors:
            return self._constant(product.scale, dtype, loc)
        return self._cast(self._fd._size_expr(product, loc), dtype, loc)

    def _denominator(self, count: Scalar, correction: float, dtype: DataType, api: str, loc: Loc) -> Scalar:
        """``max(count - correction, 0)`` as a scalar of ``dtype``."""
        constant = self._fd._constant_value(count)
        if constant is not None:
            return self._constant(max(constant - correction, 0.0), dtype, loc)
        less = self._pointwise("sub", [count, self._constant(correction, dtype, loc)], dtype, api, loc)
        return self._pointwise("maximum", [less, self._constant(0.0, dtype, loc)], dtype, api, loc)


def _static_and_symbolic(t: Tensor) -> tuple[int, tuple[int, ...]]:
    """The product of ``t``'s static sizes and the extents of its symbolic dims."""
    scale, factors = 1, []
    for size, extent in zip(t.shape, t.dims):
        if size > 1:
            scale *= size
        elif size == -1:
            factors.append(extent)
    return scale, tuple(factors)


def _make_unary(name: str):
    def op(self, arg):
        api, loc = self._begin(name)
        if name in UNARY_LOGICAL:
            return self._logical(name, [arg], api, loc)
        return self._elementwise(name, [arg], api, loc)

    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` (PyTorch semantics)."
    return op


def _make_binary(name: str):
    def op(self, lhs, rhs):
        api, loc = self._begin(name)
        if name in BINARY_LOGICAL:
            return self._logical(name, [lhs, rhs], api, loc)
        return self._elementwise(name, [lhs, rhs], api, loc)

    op.__name__ = name
    op.__doc__ = f"Elementwise ``{name}`` with implicit broadcasting and PyTorch type promotion."
    return op


for _name in UNARY:
    setattr(Ops, _name, _make_unary(_name))
for _name in BINARY:
    setattr(Ops, _name, _make_binary(_name))
