"""Which CPU segments may run on several threads, and how their arguments split.

A CPU kernel is one call of a segment function over whole arrays, on one
thread. A segment whose every loop nest is parallel in a loop that indexes
one dim of each buffer it touches (the same dim of a buffer in every nest)
computes the same thing as calls of the same code on blocks of that loop:
each call gets views of its arguments cut to a block along their split dims
(a pointer moved by ``start * stride``, the size set to the block's length)
and writes only its block of each output. The runtime
(:class:`fuser_mlir.runtime.cpu.CpuKernel`) makes those calls side by side
on a thread pool. :func:`split_dims` decides, per segment, from the segment
function as ``compile_cpu`` has it right before ``fuser-block-rows``
(linalg on memrefs, after bufferization and the deallocation pipeline)::

    func.func @f_seg0(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
      %n = memref.dim %x, %c0          // only sizes the allocation below
      %max = memref.alloc(%n) : memref<?x1xf32>
      linalg.fill ... outs(%max)
      linalg.generic {maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0)],
                      iterators = [parallel, reduction]} ins(%x) outs(%max)
      linalg.generic {maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0), (d0, d1) -> (d0, d1)],
                      iterators = [parallel, parallel]} ins(%x, %max) outs(%out)
      ...
    // split_dims: (0, 0): %x and %out split along dim 0

The rules, checked for every op at the top of the function:

- ``linalg.generic``: its split loop is a ``parallel`` loop that indexes
  an operand at the dim an earlier nest split it along, else its first
  ``parallel`` loop that no operand maps to a static dim, else its first
  ``parallel`` loop (a sum over dim 0 of a matrix splits its columns). When
  the nests, taken in order, do not agree, they are taken once more from
  the last (a nest making ``exp(x)`` then follows the column sum of it).
  The loop appears at most once in each operand's map (whose results are
  all dims or constants); where it appears is the operand's split dim, and
  an operand it does not appear in is read whole (a broadcast). Every
  output has a split dim. The body reads no loop index (``linalg.index``),
  which would count from the block's start, and no buffer that is not an
  operand.
- A buffer (argument or allocation) has one split dim in every nest that
  touches it, or none in all of them.
- ``linalg.copy`` and ``memref.copy`` split both buffers along the dim
  one of them is split along already, else their first dim that is
  dynamic in both.
- ``linalg.fill`` fills a buffer that has a split dim (a fill of a block is
  the block of a fill).
- ``memref.alloc``: a buffer allocated in the function belongs to the call,
  so each block has its own. One with a split dim takes that size from a
  ``memref.dim`` of a split argument or allocation at its split dim; a
  ``memref.dim`` of a split dim sizes such allocations and nothing else
  (a value computed from it would see the block's length, not the array's).
- A split dim is dynamic in the buffer's type (a static size would keep the
  whole array's length in every block).
- ``memref.dealloc``, ``arith`` ops on scalars and ``func.return`` are
  fine; any other op (a reshaped view, a constant global, control flow)
  makes the segment run whole.

The runtime also checks, per call, that the split arguments agree on the
length of their split dims (independent loop nests may take arrays of
different lengths) and runs the call whole when they do not.

:func:`inner_split_dims` finds a second way to cut the same arguments: the
nests' split loop chosen as the second candidate of the first nest, not its
first (the rows of a ``[batch, rows, columns]`` layer norm, where the first
is the batch; the columns of an elementwise op on a matrix). The runtime
takes it where the split dims are shorter than the threads, and
``fuser-block-rows`` where one index of the split dim holds more than a
block.

:func:`why_not_elementwise` says whether a segment computes each element
from the elements at the same index alone; the runtime then merges the
dims of a call of short rows and cuts it along any dim.
"""

from __future__ import annotations

from fuser_mlir._mlir import ir
from fuser_mlir.lowering.gpu_schedule import Generic

#: Top-level ops that neither touch buffers nor stop a split.
_NEUTRAL = ("memref.dealloc", "func.return")


class _NotSplittable(Exception):
    """The segment runs whole (the message says why, for tests and debugging)."""


def split_dims(function: ir.Operation) -> tuple[int | None, ...] | None:
    """Per argument of the segment ``function`` (memref level), the dim its
    blocks are cut along (None: passed whole; scalars are None), or None
    when the segment does not split (see the module docstring)."""
    try:
        return _split_dims(function)
    except _NotSplittable:
        return None


def inner_split_dims(function: ir.Operation, outer: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    """A second way to cut the calls of ``function``: per argument, the dim
    its blocks are cut along when a nest with no split operand yet takes
    its second candidate loop, not its first (the rows of a ``[batch, rows,
    columns]`` layer norm, where :func:`split_dims` takes the batch); None
    where that does not split, or does not cut the same arguments as
    ``outer`` (what :func:`split_dims` gave) along other dims."""
    if outer is None:
        return None
    try:
        inner = _split_dims(function, skip=1)
    except _NotSplittable:
        return None
    if [d is None for d in outer] != [d is None for d in inner]:
        return None
    if any(o == i for o, i in zip(outer, inner) if o is not None):
        return None
    return inner


def why_not_split(function: ir.Operation) -> str | None:
    """Why ``function`` does not split, or None when it does."""
    try:
        _split_dims(function)
    except _NotSplittable as err:
        return str(err)
    return None


def why_not_elementwise(function: ir.Operation) -> str | None:
    """Why the segment ``function`` (memref level, as :func:`split_dims`
    reads it) is not *elementwise*, or None when it is.

    An elementwise segment computes each element of every buffer it writes
    from the elements at the same index of the buffers it reads, and of
    nothing else: every loop nest is a ``linalg.generic`` of parallel loops
    only, whose every buffer operand has the identity map, whose body reads
    no loop index and no buffer, or a copy or fill of whole buffers; every
    buffer has the nests' rank and only dynamic sizes; an allocation takes
    its size at each dim from a ``memref.dim`` of a buffer at that dim, and
    a ``memref.dim`` sizes allocations and nothing else. Its calls then give
    the same elements on any views of their buffers that are one view
    reshaped the same way for all of them, so the runtime may merge dims
    that lie back to back in memory in every argument (rows of 3 of a
    contiguous ``[n, 3]`` array, one row of ``3 n``) and cut the call into
    blocks along any dim (:class:`fuser_mlir.runtime.cpu.CpuKernel`)."""
    block = function.regions[0].blocks[0]
    buffers = [arg for arg in block.arguments if isinstance(arg.type, ir.MemRefType)]
    if not buffers:
        return "it has no buffer argument"
    rank = ir.MemRefType(buffers[0].type).rank
    sizing: list[tuple[ir.Value, int]] = []  # (memref.dim result, the dim an allocation takes it for)
    extents: dict = {}  # memref.dim result -> the dim it reads
    for op in block.operations:
        op = op.operation
        name = op.name
        if name == "linalg.generic":
            reason = _not_elementwise_generic(Generic.of(op), rank)
            if reason:
                return reason
        elif name in ("linalg.copy", "memref.copy", "linalg.fill"):
            pass  # (every buffer's rank is checked below: a copy or fill of rank-``rank`` buffers is whole)
        elif name == "memref.alloc":
            buffers.append(op.result)
            sizing += [(size, dim) for size, dim in zip(op.operands, _dynamic_dims(op.result.type))]
        elif name == "memref.dim":
            dim = _dim_read(op)
            if dim is None:
                return "a memref.dim reads a dim that is not a constant"
            extents[op.result] = dim
        elif name not in _NEUTRAL and not name.startswith("arith."):
            return f"'{name}' is not one of the ops an elementwise segment may have"
    for buffer in buffers:
        memref = ir.MemRefType(buffer.type)
        if memref.rank != rank or len(_dynamic_dims(buffer.type)) != rank:
            return f"a {buffer.type} is not of rank {rank} with dynamic sizes only"
    for size, dim in sizing:
        if extents.get(size) != dim:
            return f"an allocation's size at dim {dim} is not a memref.dim at that dim"
    for result in extents:
        for use in result.uses:
            if use.owner.operation.name != "memref.alloc":
                return "a memref.dim is used for more than the size of an allocation"
    return None


def _not_elementwise_generic(g: Generic, rank: int) -> str | None:
    if g.reduction or len(g.iterators) != rank:
        return f"a linalg.generic's loops are not {rank} parallel ones"
    for operand, amap in zip(g.inputs + g.outputs, g.maps):
        if isinstance(operand.type, ir.MemRefType) and amap != ir.AffineMap.get_identity(rank):
            return f"a linalg.generic indexes an operand with {amap}"
    return _body_reads_more(g)


def _body_reads_more(g: Generic) -> str | None:
    """Why ``g``'s body reads more than its operands' elements at the loop
    index (a loop index, a buffer of its own), or None."""
    for op in g.body.operations:
        if op.name == "linalg.index":
            return "a linalg.generic reads a loop index"
        if any(isinstance(v.type, ir.MemRefType) for v in op.operands):
            return f"a linalg.generic's body reads a buffer of its own ('{op.name}')"
    return None


def _split_dims(function: ir.Operation, skip: int = 0) -> tuple[int | None, ...]:
    block = function.regions[0].blocks[0]
    nests: list[ir.Operation] = []  # generics and copies
    filled: list[ir.Value] = []
    extents: list[ir.Operation] = []  # memref.dim ops
    allocations: list[ir.Operation] = []
    for op in block.operations:
        op = op.operation
        name = op.name
        if name in ("linalg.generic", "linalg.copy", "memref.copy"):
            nests.append(op)
        elif name == "linalg.fill":
            filled.append(op.operands[1])
        elif name == "memref.dim":
            extents.append(op)
        elif name == "memref.alloc":
            allocations.append(op)
        elif name not in _NEUTRAL and not name.startswith("arith."):
            raise _NotSplittable(f"'{name}' is not one of the ops a split segment may have")
    try:
        dims = _assign(nests, skip)
    except _NotSplittable as err:
        try:  # a nest that makes what a later nest reduces along another dim may follow that dim
            dims = _assign(nests[::-1], skip)
        except _NotSplittable:
            raise err from None
    for buffer in filled:
        if dims.get(buffer) is None:
            raise _NotSplittable("a linalg.fill fills a buffer that has no split dim")
    for buffer, dim in dims.items():
        if dim is not None and dim not in _dynamic_dims(buffer.type):
            raise _NotSplittable(f"split dim {dim} of a {buffer.type} is static")
    block_sizes = _block_sizes(extents, dims)
    sizing = _split_sizes(allocations, dims)  # (allocation, operand) that sizes each split allocation's split dim
    for op, operand in sizing:
        if op.operands[operand] not in block_sizes:
            raise _NotSplittable(f"split dim {dims[op.result]} of an allocation is not sized by the length of a split dim")
    for size in block_sizes:
        for use in size.uses:
            if (use.owner.operation, use.operand_number) not in sizing:
                raise _NotSplittable("the length of a split dim is used for more than the size of a split allocation")
    result = tuple(dims.get(arg) if isinstance(arg.type, ir.MemRefType) else None for arg in block.arguments)
    if all(dim is None for dim in result):
        raise _NotSplittable("no argument has a split dim")
    return result


def _assign(nests: list[ir.Operation], skip: int = 0) -> dict:
    """The split dim of every buffer ``nests`` touch, the nests taken in
    this order: each picks its split loop to agree with the buffers the
    nests before it split (:func:`_split_loop`; ``skip``: how many of its
    candidate loops a nest with no split operand passes over)."""
    split: dict[ir.Value, set] = {}  # buffer -> the split dims it is accessed with
    for op in nests:
        if op.name == "linalg.generic":
            _record_generic(Generic.of(op), split, skip)
        else:
            _record_copy(op, split)
    return {buffer: _one_dim(buffer, seen) for buffer, seen in split.items()}


def _decided(split: dict, buffer: ir.Value) -> int | None:
    """The split dim ``buffer`` has so far, if one."""
    seen = split.get(buffer, ())
    return next(iter(seen)) if len(seen) == 1 else None


def _record_generic(g: Generic, split: dict, skip: int = 0) -> None:
    """Add the split dim of each operand of ``g`` to ``split``."""
    if not g.parallel:
        raise _NotSplittable("a linalg.generic has no parallel loop")
    reason = _body_reads_more(g)
    if reason:
        raise _NotSplittable(reason)
    loop = _split_loop(g, split, skip)
    for k, (operand, amap) in enumerate(zip(g.inputs + g.outputs, g.maps)):
        if not isinstance(operand.type, ir.MemRefType):
            continue  # a scalar captured by the body
        dims = []
        for at, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr):
                if ir.AffineDimExpr(expr).position == loop:
                    dims.append(at)
            elif not isinstance(expr, ir.AffineConstantExpr):
                raise _NotSplittable(f"a linalg.generic indexes an operand with {expr}")
        if len(dims) > 1:
            raise _NotSplittable("a linalg.generic indexes one operand with its split loop twice")
        dim = dims[0] if dims else None
        if dim is None and k >= len(g.inputs):
            raise _NotSplittable("a linalg.generic writes an output that its split loop does not index")
        split.setdefault(operand, set()).add(dim)


def _split_loop(g: Generic, split: dict, skip: int = 0) -> int:
    """The parallel loop of ``g`` that indexes an operand at the dim it is
    split along already, if one does; else its first parallel loop that no
    operand maps to a static dim (the first parallel loop when each does),
    passing over ``skip`` of those candidates."""
    for operand, amap in zip(g.inputs + g.outputs, g.maps):
        dim = _decided(split, operand)
        if dim is None:
            continue
        expr = amap.results[dim]
        if isinstance(expr, ir.AffineDimExpr) and ir.AffineDimExpr(expr).position in g.parallel:
            return ir.AffineDimExpr(expr).position
    dynamic = []
    for loop in g.parallel:
        static = False
        for operand, amap in zip(g.inputs + g.outputs, g.maps):
            if not isinstance(operand.type, ir.MemRefType):
                continue
            dims = _dynamic_dims(operand.type)
            static |= any(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == loop and at not in dims for at, e in enumerate(amap.results))
        if not static:
            dynamic.append(loop)
    candidates = dynamic or g.parallel[:1]
    if skip >= len(candidates):
        raise _NotSplittable(f"a linalg.generic has no parallel loop after its first {skip} candidates")
    return candidates[skip]


def _record_copy(op: ir.Operation, split: dict) -> None:
    """A copy reads and writes every element at the same index: its split
    loop is the dim either buffer is split along already, else its first
    dim that is dynamic in both buffers."""
    source, target = op.operands[0], op.operands[1]
    both = set(_dynamic_dims(source.type)) & set(_dynamic_dims(target.type))
    if not both:
        raise _NotSplittable(f"a copy of a {source.type} has no dynamic dim to split")
    decided = [d for d in (_decided(split, source), _decided(split, target)) if d is not None]
    dim = decided[0] if decided else min(both)
    for buffer in (source, target):
        split.setdefault(buffer, set()).add(dim)


def _one_dim(buffer: ir.Value, seen: set) -> int | None:
    if len(seen) != 1:
        raise _NotSplittable(f"a {buffer.type} is split along different dims ({sorted(seen, key=str)}) in different loop nests")
    return next(iter(seen))


def _block_sizes(extents: list[ir.Operation], dims: dict) -> list[ir.Value]:
    """The results of the ``memref.dim`` ops that read a split dim."""
    sizes = []
    for op in extents:
        dim = _dim_read(op)
        if dim is None:
            raise _NotSplittable("a memref.dim reads a dim that is not a constant")
        if dims.get(op.operands[0]) == dim:
            sizes.append(op.result)
    return sizes


def _dim_read(op: ir.Operation) -> int | None:
    """The dim a ``memref.dim`` reads, or None where it is not a constant."""
    constant = op.operands[1].owner
    if isinstance(constant, ir.Block) or constant.name != "arith.constant":
        return None
    return ir.IntegerAttr(constant.attributes["value"]).value


def _split_sizes(allocations: list[ir.Operation], dims: dict) -> list[tuple[ir.Operation, int]]:
    """``(allocation, operand)`` for each allocation with a split dim: the
    size operand of that dim (split dims are dynamic, checked before)."""
    return [(op, _dynamic_dims(op.result.type).index(dims[op.result])) for op in allocations if dims.get(op.result) is not None]


def _dynamic_dims(type_: ir.Type) -> list[int]:
    """The dims of a memref type whose size is dynamic, in order (an
    allocation's size operands are theirs)."""
    memref = ir.MemRefType(type_)
    return [d for d in range(memref.rank) if memref.is_dynamic_dim(d)]
