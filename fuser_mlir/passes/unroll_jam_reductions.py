"""Unroll and jam the reduction loop of linalg generics whose inner loops are parallel.

Preconditions: linalg on memrefs (``fuser-cpu-pipeline`` right before
``convert-linalg-to-loops``: after bufferization). Ops other than
``linalg.generic`` are left alone, and so is a generic that does not fit the
rules below.

Effect: a ``linalg.generic`` on memrefs whose last ``reduction`` iterator
is not its last iterator (a sum over dim 0 of a matrix) lowers to loops
that load and store each output element once per element they read
(``out[j] = out[j] + x[i, j]`` in the inner loop). It becomes two generics:
the first reads ``factor`` rows of that reduced dim an iteration, through
``factor`` strided views of each input that the reduced loop indexes (row
``k``, ``k + factor``, ...), with ``factor`` copies of the body, so the
inner loop loads and stores each output element once per ``factor`` rows;
the second takes the rows left over (fewer than ``factor``) with the body
as it was. Where the body is ``yield combine(acc, value)`` for every output,
with a combine that reductions may reassociate (a sum or product marked
``reassoc``, as the CPU lowering marks them; an integer sum or product, a
max, min, and, or, xor: :meth:`~fuser_mlir.lowering.gpu_schedule.Generic.combiners`),
the copies' values are combined pairwise
as a tree and then with the accumulator, so the accumulator's chain has one
combine a jammed iteration (a float sum's rounding then differs from row by
row, as its order is unspecified; an integer, max or min result is the
same); other bodies are chained, each copy's outputs the next one's
accumulators, in row order. A generic of several reduced dims (a sum over
dims 0 and 1 of a 3-D array) is taken only with such a combine: its rows
left over come after the outer reduced loops' other iterations. Taken only
where every output is a memref,
each input map's results are dims or constants that name the reduced dim at
most once, no output map names it, and the body has no ``linalg.index`` and
no op with regions.

    linalg.generic {maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1)],
                    iterators = [reduction, parallel]} ins(%x) outs(%sum) {
      ^bb0(%a: f32, %acc: f32): %s = arith.addf %acc, %a; linalg.yield %s }
    ==>  (factor=2; %main = rows - rows % 2)
    %x0 = memref.subview %x[0, 0] [%main / 2, %cols] [2, 1]
    %x1 = memref.subview %x[1, 0] [%main / 2, %cols] [2, 1]
    linalg.generic {... same iterators} ins(%x0, %x1) outs(%sum) {
      ^bb0(%a0: f32, %a1: f32, %acc: f32):
        %t = arith.addf %a0, %a1; %s = arith.addf %acc, %t; linalg.yield %s }
    %rest = memref.subview %x[%main, 0] [%rows - %main, %cols] [1, 1]
    linalg.generic {...} ins(%rest) outs(%sum) { the body as it was }

On a 2-CPU x86-64 VM (AVX-512; ``python bench/cpu.py``, sums of 16M
elements, factor 8 against 1, one thread / two): float32 over dim 0 of 256
to 16384 columns 1.6-1.9 / 1.2-2.0 ms against 2.7-3.5 / 1.8-3.8; bfloat16
0.6-0.8 against 1.0-1.9 on two threads, but 1.0-1.1 against 0.84-0.99 on
one thread up to 4096 columns, where the row-by-row loop reads its one row
at a time faster (README, "How a fusion runs on the CPU").
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import arith, ir, linalg, memref
from fuser_mlir.lowering.gpu_schedule import Generic
from fuser_mlir.lowering.linalg import buffer_generic, clone_ops, index_constant, view_along
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error


def _position(amap: ir.AffineMap, dim: int) -> int | None:
    """Where ``amap`` names loop ``dim`` (None: nowhere); raises ValueError
    where a result is not a dim or a constant, or names it twice."""
    found = None
    for position, expr in enumerate(amap.results):
        if isinstance(expr, ir.AffineConstantExpr):
            continue
        if not isinstance(expr, ir.AffineDimExpr):
            raise ValueError("an indexing map result that is not a dim or a constant")
        if ir.AffineDimExpr(expr).position == dim:
            if found is not None:
                raise ValueError("an indexing map that names the reduced loop twice")
            found = position
    return found


def _combines(g: Generic) -> list[ir.Operation]:
    """The ops whose results ``g``'s body yields, one per output."""
    return [v.owner.operation for v in list(g.body.operations)[-1].operands]


def _reassociable(g: Generic) -> bool:
    """Whether ``g``'s body is ``yield combine(acc, value)`` for every output
    (:meth:`Generic.combiners`), each float combine marked ``reassoc``."""
    if g.combiners() is None:
        return False
    floats = [c for c in _combines(g) if c.name in ("arith.addf", "arith.mulf")]
    return all("fastmath" in c.attributes and "reassoc" in str(c.attributes["fastmath"]) for c in floats)


def reduced_loop(g: Generic) -> list[int | None] | None:
    """Where each input of a generic this pass jams is indexed by the loop
    it jams (its last reduced one); None for a generic it leaves alone."""
    if len(g.op.results) or not g.reduction or g.reduction[-1] == len(g.iterators) - 1:
        return None
    if not all(isinstance(v.type, ir.MemRefType) for v in g.outputs):
        return None
    if any(op.operation.name == "linalg.index" or len(op.operation.regions) for op in g.body.operations):
        return None
    if len(g.reduction) > 1 and not _reassociable(g):
        return None  # the rows left over would come after the outer reduced loops' next iterations
    loop = g.reduction[-1]
    try:
        positions = [_position(m, loop) for m in g.maps[: len(g.inputs)]]
        if any(_position(m, loop) is not None for m in g.maps[len(g.inputs) :]):
            return None
    except ValueError:
        return None
    if all(p is None for p in positions):
        return None
    return positions


def _combined(combine: ir.Operation, accumulator: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
    """A clone of ``combine`` (``acc op value``, either way round) applied to
    ``x`` in the accumulator's place and ``y`` in the value's."""
    clone = combine.clone()
    for i, v in enumerate(combine.operands):
        clone.operands[i] = x if v == accumulator else y
    return clone.results[0]


def _chained_body(g: Generic, block: ir.Block, copies: int) -> None:
    """Fill ``block`` with ``copies`` copies of ``g``'s body: copy ``k``
    reads the ``k``-th group of ``block``'s input arguments and takes as its
    outputs what the copy before it yields (the first: ``block``'s output
    arguments); the last copy's yield ends the block."""
    body, count = g.body, len(g.inputs)
    ops = [op.operation for op in body.operations]
    accumulators = list(block.arguments[copies * count :])
    for k in range(copies):
        local = dict(zip(body.arguments, [*block.arguments[k * count : (k + 1) * count], *accumulators]))
        clone_ops(ops[:-1], local)
        accumulators = [local.get(v, v) for v in ops[-1].operands]
    linalg.YieldOp(accumulators)


def _tree_body(g: Generic, block: ir.Block, copies: int) -> None:
    """Fill ``block`` with the values of ``copies`` copies of ``g``'s body
    (``yield combine(acc, value)`` for each output, with an associative
    ``combine``: :meth:`Generic.combiners`), combined pairwise as a tree and
    then with the accumulator: one combine on the accumulator's chain a
    jammed iteration, not ``copies`` in a row."""
    body, count = g.body, len(g.inputs)
    ops = [op.operation for op in body.operations]
    combines = _combines(g)
    outputs = list(body.arguments[count:])
    values = []  # each copy's values, one per output
    for k in range(copies):
        local = dict(zip(body.arguments[:count], block.arguments[k * count : (k + 1) * count]))
        clone_ops([op for op in ops[:-1] if op not in combines], local)
        values.append([local.get(v, v) for c, acc in zip(combines, outputs) for v in c.operands if v != acc])
    while len(values) > 1:
        pairs = [[_combined(c, acc, x, y) for c, acc, x, y in zip(combines, outputs, values[i], values[i + 1])] for i in range(0, len(values) - 1, 2)]
        values = pairs + values[len(pairs) * 2 :]
    accumulators = block.arguments[copies * count :]
    linalg.YieldOp([_combined(c, acc, a, t) for c, acc, a, t in zip(combines, outputs, accumulators, values[0])])


def _generic_like(g: Generic, inputs: list[ir.Value], maps: list[ir.AffineMap], copies: int) -> None:
    """A generic with ``g``'s outputs and iterators over ``inputs``, whose
    body is ``copies`` copies of ``g``'s: combined as a tree where ``g``'s
    body allows it (:func:`_reassociable`, :func:`_tree_body`), else chained
    (:func:`_chained_body`)."""
    count = len(g.inputs)
    types = [a.type for a in g.body.arguments]
    _, block = buffer_generic(inputs, g.outputs, maps, g.op.attributes["iterator_types"], types[:count] * copies + types[count:])
    with ir.InsertionPoint(block):
        if copies > 1 and _reassociable(g):
            _tree_body(g, block, copies)
        else:
            _chained_body(g, block, copies)


def unroll_jam(generic: ir.Operation, factor: int) -> bool:
    """Rewrite ``generic`` as the module docstring says; False where it does not fit."""
    g = Generic.of(generic)
    positions = reduced_loop(g)
    if positions is None:
        return False
    inputs, count = g.inputs, len(g.inputs)
    with ir.InsertionPoint(generic), generic.location:
        sizes = {i: [memref.DimOp(v, index_constant(d)).result for d in range(ir.MemRefType(v.type).rank)] for i, (v, p) in enumerate(zip(inputs, positions)) if p is not None}
        extent = next(sizes[i][p] for i, p in enumerate(positions) if p is not None)
        step = index_constant(factor)
        blocks = arith.DivUIOp(extent, step).result
        main = arith.MulIOp(blocks, step).result
        rest = arith.SubIOp(extent, main).result

        def views(offset, size, stride) -> list[ir.Value]:
            return [v if p is None else view_along(v, sizes[i], p, offset, size, stride) for i, (v, p) in enumerate(zip(inputs, positions))]

        _generic_like(g, [v for k in range(factor) for v in views(index_constant(k), blocks, step)], g.maps[:count] * factor + g.maps[count:], factor)
        _generic_like(g, views(main, rest, index_constant(1)), g.maps, 1)
    generic.erase()
    return True


@dataclass
class UnrollJamReductionsPass(FuserPass):
    NAME = "fuser-unroll-jam-reductions"
    SUMMARY = "Unroll and jam the reduction loop of linalg generics whose inner loops are parallel."

    factor: int = 8  # rows of the reduced dim an iteration of the jammed loop takes (1: leave every generic alone)

    def run(self, module: ir.Operation) -> None:
        if self.factor < 1:
            emit_error(module, f"fuser-unroll-jam-reductions: factor must be 1 or more (1 leaves every generic as it is), got {self.factor}")
            raise PassFailure()
        if self.factor == 1:
            return
        generics = [
            op.operation
            for function in module.regions[0].blocks[0].operations
            if function.operation.name == "func.func" and function.operation.regions[0].blocks
            for op in function.operation.regions[0].blocks[0].operations
            if op.operation.name == "linalg.generic"
        ]
        for generic in generics:
            unroll_jam(generic, self.factor)
