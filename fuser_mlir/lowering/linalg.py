"""Fuser tensor ops as linalg on tensors.

Each helper builds the linalg/tensor ops for one fuser op from already
lowered operands (builtin tensors and scalars) and returns the result value.
The element computations come from :mod:`fuser_mlir.lowering.scalar`.

- Pointwise ops and casts become one ``linalg.generic`` with all-parallel
  iterators. An operand dim that is a static 1 where the result's is not
  maps to the constant 0 (broadcast); scalar operands are captured by the
  body. ``linalg-fuse-elementwise-ops`` later fuses chains of them.
- ``broadcast_in_dim`` and ``permute`` are generics whose input map drops or
  permutes dims; they fuse like pointwise ops.
- Reductions are generics with ``reduction`` iterators over the reduced dims,
  whose init is a ``linalg.fill`` of the identity. Float ``max``/``min``
  reduce integer order keys and a NaN flag (LLVM vectorises those, not a
  chain of ``maximumf``).
- ``reshape`` is ``tensor.reshape`` with a shape tensor, which works for
  symbolic sizes; its source is first copied by a generic into a fresh tensor
  (contiguous after bufferization), so that bufferization never needs a
  ``memref.copy`` of a strided buffer (which would call ``memrefCopy`` from
  MLIR's runner-utils library, absent from the JIT).

Result sizes that are dynamic are taken with ``tensor.dim`` from an operand
that has the same size in that dim.

:func:`view_along` cuts a strided view out of a memref along one dim,
:func:`buffer_generic` makes a generic on buffers to fill and
:func:`clone_ops` copies a generic's body ops, for the passes that rewrite
linalg on memrefs (``fuser-unroll-jam-reductions``, ``fuser-block-rows``,
``fuser-share-call-results``).

Booleans are stored as ``i8`` (0 or 1, like NumPy's ``bool``): every lowered
tensor of ``i1`` values has the *storage type* ``tensor<...xi8>``, and generic
bodies convert to ``i1`` on entry (``!= 0``) and back on exit (``extui``).
MLIR's ``finalize-memref-to-llvm`` cannot store ``i1`` elements (it asserts on
sub-byte types), and this keeps every buffer byte-addressed. Scalars stay ``i1``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fuser_mlir._mlir import arith, ir, linalg, memref, tensor
from fuser_mlir.dialect import types as T
from fuser_mlir.lowering import scalar as S
from fuser_mlir.lowering.scalar import building

BodyFn = Callable[[list[ir.Value]], ir.Value]


# -- storage types ------------------------------------------------------------


def storage_element(elem: ir.Type) -> ir.Type:
    """The element type a tensor holds in memory: ``i8`` for ``i1``."""
    return ir.IntegerType.get_signless(8) if T.is_bool(elem) else elem


def storage_type(type_: ir.Type) -> ir.Type:
    """A tensor type with its storage element type; scalars unchanged."""
    if not T.is_tensor(type_):
        return type_
    return T.tensor_type(T.shape(type_), storage_element(T.element_type(type_)))


def _to_logical(element: ir.Value) -> ir.Value:
    """A stored ``i8`` boolean -> ``i1`` (any non-zero byte is true)."""
    if str(element.type) != "i8":
        return element
    zero = arith.ConstantOp(element.type, ir.IntegerAttr.get(element.type, 0)).result
    return arith.CmpIOp(arith.CmpIPredicate.ne, element, zero).result


def _to_storage(element: ir.Value) -> ir.Value:
    """An ``i1`` -> its stored ``i8`` (0 or 1)."""
    if not T.is_bool(element.type):
        return element
    return arith.ExtUIOp(ir.IntegerType.get_signless(8), element).result


# -- small builders -----------------------------------------------------------


def index_constant(value: int, *, loc=None, ip=None) -> ir.Value:
    with building(loc, ip):
        return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result


def dim_size(value: ir.Value, dim: int, *, loc=None, ip=None) -> ir.Value:
    """The size of ``dim`` of a tensor value, as an ``index``."""
    with building(loc, ip):
        static = T.shape(value.type)[dim]
        if static is not None:
            return index_constant(static)
        return tensor.DimOp(value, index_constant(dim)).result


def memref_dim_size(buffer: ir.Value, dim: int, *, loc=None, ip=None) -> ir.Value:
    """The size of ``dim`` of a memref value, as an ``index`` (a constant
    where its type has one)."""
    with building(loc, ip):
        static = ir.MemRefType(buffer.type).shape[dim]
        if not ir.ShapedType.is_dynamic_size(static):
            return index_constant(static)
        return memref.DimOp(buffer, index_constant(dim)).result


def view_along(
    source: ir.Value, sizes: Sequence[ir.Value], position: int, offset: ir.Value, size: ir.Value, stride: ir.Value, *, loc=None, ip=None
) -> ir.Value:
    """The view of ``source`` (of ``sizes``) that keeps ``size`` of its
    indices along ``position`` from ``offset`` by ``stride``, and all of
    every other dim. Every offset, size and stride is an SSA value, so the
    view's type is fully dynamic whatever the source's."""
    source_type = ir.MemRefType(source.type)
    rank = source_type.rank
    with building(loc, ip):
        zero, one = index_constant(0), index_constant(1)
        offsets = [offset if d == position else zero for d in range(rank)]
        strides = [stride if d == position else one for d in range(rank)]
        sizes = [size if d == position else sizes[d] for d in range(rank)]
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        layout = ir.StridedLayoutAttr.get(dynamic, [dynamic] * rank)
        view_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * rank, source_type.element_type, layout, source_type.memory_space)
        return memref.subview(source, offsets, sizes, strides, result_type=view_type)


def buffer_generic(
    inputs: Sequence[ir.Value], outputs: Sequence[ir.Value], maps: Sequence[ir.AffineMap], iterators: ir.Attribute, types: Sequence[ir.Type],
    *, loc=None, ip=None,
) -> tuple[ir.Operation, ir.Block]:
    """A ``linalg.generic`` on buffers (no results) with an empty body block
    of argument ``types``, for the caller to fill; the op and the block."""
    with building(loc, ip):
        maps_attr = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
        op = linalg.GenericOp([], list(inputs), list(outputs), maps_attr, iterators)
        return op.operation, op.regions[0].blocks.append(*types)


def clone_ops(ops: Sequence[ir.Operation], local: dict) -> None:
    """Clone ``ops`` at the insertion point, their operands mapped through
    ``local`` (value -> value), which learns their results (for the passes
    that rebuild generic bodies)."""
    for op in ops:
        clone = op.clone()
        for i, v in enumerate(op.operands):
            if v in local:
                clone.operands[i] = local[v]
        local.update(zip(op.results, clone.results))


def empty(result_type: ir.RankedTensorType, sizes: Sequence[ir.Value], *, loc=None, ip=None) -> ir.Value:
    """``tensor.empty`` of ``result_type`` (its storage type); ``sizes`` has one
    index per ``?``."""
    with building(loc, ip):
        mixed: list[int | ir.Value] = []
        dynamic = iter(sizes)
        for size in T.shape(result_type):
            mixed.append(next(dynamic) if size is None else size)
        return tensor.EmptyOp(mixed, storage_element(T.as_tensor(result_type).element_type)).result


def _iterator(kind: str) -> ir.Attribute:
    return ir.Attribute.parse(f"#linalg.iterator_type<{kind}>")


def _map(rank: int, exprs: Sequence[int | None]) -> ir.AffineMap:
    """``(d0, ..., d{rank-1}) -> (...)``: an int names a dim, ``None`` is 0."""
    results = [ir.AffineConstantExpr.get(0) if e is None else ir.AffineDimExpr.get(e) for e in exprs]
    return ir.AffineMap.get(rank, 0, results)


def generic(
    inputs: Sequence[ir.Value],
    input_maps: Sequence[ir.AffineMap],
    init: ir.Value,
    output_map: ir.AffineMap,
    iterators: Sequence[str],
    body: Callable[[list[ir.Value], ir.Value], ir.Value],
    *,
    loc=None,
    ip=None,
) -> ir.Value:
    """A one-result ``linalg.generic``; ``body(input_elements, out_element)``
    builds the yielded element inside the region. The body sees booleans as
    ``i1`` whatever their storage."""
    return generic_multi(inputs, input_maps, [init], [output_map], iterators, lambda xs, outs: [body(xs, outs[0])], loc=loc, ip=ip)[0]


def generic_multi(
    inputs: Sequence[ir.Value],
    input_maps: Sequence[ir.AffineMap],
    inits: Sequence[ir.Value],
    output_maps: Sequence[ir.AffineMap],
    iterators: Sequence[str],
    body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
    *,
    loc=None,
    ip=None,
) -> list[ir.Value]:
    """A ``linalg.generic`` with one result per init; ``body(input_elements,
    out_elements)`` returns the yielded elements."""
    with building(loc, ip):
        maps = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in [*input_maps, *output_maps]])
        kinds = ir.ArrayAttr.get([_iterator(k) for k in iterators])
        op = linalg.GenericOp([v.type for v in inits], list(inputs), list(inits), maps, kinds)
        element_types = [T.element_type(v.type) for v in [*inputs, *inits]]
        block = op.regions[0].blocks.append(*element_types)
        with ir.InsertionPoint(block):
            args = [_to_logical(a) for a in block.arguments]
            results = body(args[: len(inputs)], args[len(inputs) :])
            linalg.YieldOp([_to_storage(v) for v in results])
        return list(op.results)


# -- pointwise ----------------------------------------------------------------


def broadcast_map(operand_type: ir.Type, result_type: ir.Type) -> ir.AffineMap:
    """Identity map, with 0 for each static-1 dim that the result expands."""
    rank = T.rank(result_type)
    result_shape = T.shape(result_type)
    exprs = [None if size == 1 and result_shape[d] != 1 else d for d, size in enumerate(T.shape(operand_type))]
    return _map(rank, exprs)


def broadcast_sizes(operands: Sequence[ir.Value], result_type: ir.Type, *, loc=None, ip=None) -> list[ir.Value]:
    """One index per dynamic result dim, from the first tensor operand that
    is not broadcast in that dim."""
    sizes = []
    for d, size in enumerate(T.shape(result_type)):
        if size is not None:
            continue
        source = next(v for v in operands if T.is_tensor(v.type) and T.shape(v.type)[d] != 1)
        sizes.append(dim_size(source, d, loc=loc, ip=ip))
    return sizes


def elementwise(operands: Sequence[ir.Value], result_type: ir.Type, element: BodyFn, *, loc=None, ip=None) -> ir.Value:
    """Apply ``element`` (scalar values in operand order -> value) to every
    element of the broadcast of ``operands``; scalar operands are captured.
    With no tensor operand, ``element`` runs once on the scalars."""
    with building(loc, ip):
        if not T.is_tensor(result_type):
            return element(list(operands))
        tensors = [v for v in operands if T.is_tensor(v.type)]
        init = empty(result_type, broadcast_sizes(operands, result_type))
        rank = T.rank(result_type)

        def body(elements: list[ir.Value], _out: ir.Value) -> ir.Value:
            it = iter(elements)
            return element([next(it) if T.is_tensor(v.type) else v for v in operands])

        maps = [broadcast_map(v.type, result_type) for v in tensors]
        return generic(tensors, maps, init, _map(rank, range(rank)), ["parallel"] * rank, body)


def pointwise(name: str, operands: Sequence[ir.Value], result_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """``fuser.<name>`` (unary, binary or ternary) on tensors and scalars."""
    element_type = T.element_type(result_type)
    return elementwise(operands, result_type, lambda xs: S.pointwise(name, xs, element_type), loc=loc, ip=ip)


def cast(value: ir.Value, result_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    """``fuser.cast``: convert every element to the result's element type."""
    element_type = T.element_type(result_type)
    return elementwise([value], result_type, lambda xs: S.cast(xs[0], element_type), loc=loc, ip=ip)


# -- layout -------------------------------------------------------------------


def copy(value: ir.Value, *, loc=None, ip=None) -> ir.Value:
    """An identity generic into a fresh ``tensor.empty``: the value in a
    buffer of its own, which bufferization can place in a destination (or
    allocate contiguously) and which lowers to loops, not to ``memref.copy``."""
    with building(loc, ip):
        if not T.is_tensor(value.type):
            raise ValueError("copy() needs a tensor value")
        sizes = [dim_size(value, d) for d, size in enumerate(T.shape(value.type)) if size is None]
        return linalg.copy(value, outs=[empty(value.type, sizes)])


def broadcast_in_dim(value: ir.Value, result_type: ir.Type, broadcast_dims: Sequence[int], *, loc=None, ip=None) -> ir.Value:
    """Operand dim ``i`` becomes result dim ``broadcast_dims[i]``; other result
    dims are new (static) dims; a size-1 operand dim may expand."""
    with building(loc, ip):
        in_shape, out_shape = T.shape(value.type), T.shape(result_type)
        rank = len(out_shape)
        exprs = [None if in_shape[i] == 1 and out_shape[d] != 1 else d for i, d in enumerate(broadcast_dims)]
        sizes = [dim_size(value, broadcast_dims.index(d)) for d, size in enumerate(out_shape) if size is None]
        init = empty(result_type, sizes)
        return generic([value], [_map(rank, exprs)], init, _map(rank, range(rank)), ["parallel"] * rank, lambda xs, _: xs[0])


def permute(value: ir.Value, result_type: ir.Type, dims: Sequence[int], *, loc=None, ip=None) -> ir.Value:
    """Result dim ``i`` is operand dim ``dims[i]``."""
    with building(loc, ip):
        rank = len(dims)
        exprs = [dims.index(j) for j in range(rank)]
        sizes = [dim_size(value, dims[i]) for i, size in enumerate(T.shape(result_type)) if size is None]
        init = empty(result_type, sizes)
        return generic([value], [_map(rank, exprs)], init, _map(rank, range(rank)), ["parallel"] * rank, lambda xs, _: xs[0])


def reshape(value: ir.Value, result_type: ir.Type, sizes: Sequence[ir.Value], *, loc=None, ip=None) -> ir.Value:
    """Row-major reshape; ``sizes`` are ``i64`` values, one per dynamic result dim."""
    with building(loc, ip):
        if T.rank(value.type) == 0 or T.rank(result_type) == 0:
            return _reshape_single(value, result_type)
        value = copy(value)
        index = ir.IndexType.get()
        dynamic = iter(sizes)
        extents = [
            index_constant(size) if size is not None else arith.IndexCastOp(index, next(dynamic)).result
            for size in T.shape(result_type)
        ]
        shape_type = ir.RankedTensorType.get([len(extents)], index)
        shape = tensor.FromElementsOp(shape_type, extents).result
        return tensor.ReshapeOp(storage_type(result_type), value, shape).result


def _reshape_single(value: ir.Value, result_type: ir.Type) -> ir.Value:
    """A reshape from or to a 0-d tensor: both hold exactly one element."""
    zero = index_constant(0)
    element = tensor.ExtractOp(value, [zero] * T.rank(value.type)).result
    return tensor.FromElementsOp(storage_type(result_type), [element]).result


# -- reductions ---------------------------------------------------------------


def reduction(
    kind: str, value: ir.Value, result_type: ir.Type, dims: Sequence[int], keepdim: bool, *, order_keys: bool = True, loc=None, ip=None
) -> ir.Value:
    """``fuser.sum|prod|max|min`` over ``dims``; ``keepdim`` keeps them as 1.
    A float max/min reduces order keys when ``order_keys`` (vectorised on the
    CPU), else NaN-propagating ``maximumf``/``minimumf`` (one instruction
    on a GPU); both give NaN where any element is NaN, and -0 < +0."""
    with building(loc, ip):
        element_type = T.element_type(result_type)
        if kind in ("max", "min") and T.is_float(element_type) and order_keys:
            return _float_extremum(kind, value, result_type, dims, keepdim)
        identity = S.reduction_identity(kind, element_type)
        init = _filled(result_type, value, dims, keepdim, identity)
        step = lambda xs, accs: [S.combine(kind, accs[0], xs[0])]  # noqa: E731
        return _reduce(value, [init], dims, keepdim, step)[0]


def _float_extremum(kind: str, value: ir.Value, result_type: ir.Type, dims: Sequence[int], keepdim: bool) -> ir.Value:
    """Float ``max``/``min`` as two reductions in one loop, both of which LLVM
    vectorises: an integer max/min of order keys, and an ``or`` of
    ``isnan``; the result is NaN where any element was (see
    :mod:`fuser_mlir.lowering.scalar`, "order keys")."""
    element_type = T.element_type(result_type)
    key_type = S.key_type(element_type)
    keys_type = T.tensor_type(T.shape(result_type), key_type)
    key_identity = S.order_key(S.reduction_identity(kind, element_type))
    inits = [
        _filled(keys_type, value, dims, keepdim, key_identity),
        _filled(keys_type, value, dims, keepdim, S.constant(0, key_type)),
    ]

    def step(xs: list[ir.Value], accs: list[ir.Value]) -> list[ir.Value]:
        key_acc, nan_acc = accs
        extremum = S.pointwise("maximum" if kind == "max" else "minimum", [key_acc, S.order_key(xs[0])], key_type)
        return [extremum, arith.OrIOp(nan_acc, S.nan_flag(xs[0], key_type)).result]

    keys, nans = _reduce(value, inits, dims, keepdim, step)
    return elementwise([keys, nans], result_type, lambda ks: S.from_order_key(ks[0], ks[1], element_type))


def _filled(result_type: ir.Type, value: ir.Value, dims: Sequence[int], keepdim: bool, identity: ir.Value) -> ir.Value:
    """The init of a reduction of ``value``: ``result_type`` filled with ``identity``."""
    kept = [d for d in range(T.rank(value.type)) if d not in dims or keepdim]
    sizes = [dim_size(value, d) for d, size in zip(kept, T.shape(result_type)) if size is None]
    return linalg.fill(identity, outs=[empty(result_type, sizes)])


def _reduce(
    value: ir.Value,
    inits: Sequence[ir.Value],
    dims: Sequence[int],
    keepdim: bool,
    step: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """A reduction generic over ``dims`` of ``value``: ``accs = step([element], accs)``."""
    rank = T.rank(value.type)
    kept = [d for d in range(rank) if d not in dims or keepdim]
    output_map = _map(rank, [None if d in dims else d for d in kept])
    iterators = ["reduction" if d in dims else "parallel" for d in range(rank)]
    return generic_multi([value], [_map(rank, range(rank))], inits, [output_map] * len(inits), iterators, step)
