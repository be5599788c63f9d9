"""Run the loop nests of a segment block by block of rows, so that nests sharing data find it in cache.

Preconditions: linalg on memrefs (``fuser-cpu-pipeline`` right after
bufferization, where :func:`~fuser_mlir.lowering.cpu.compile_cpu` reads the
splits). Functions that are not segments (no ``fuser.num_inputs``), and
segments that do not fit the rules below, are left alone.

Effect: a segment runs its loop nests one after the other over whole arrays.
Where two nests read the same buffer (a row softmax reads its input for the
max, for the sum and for the result; a layer norm for the mean, the variance
and the result), each nest streams it from memory again once the array is
larger than the cache. A segment that splits
(:func:`~fuser_mlir.lowering.cpu_split.split_dims`: calls on blocks of its
split dims compute what one call on the whole arrays does) along dim 0 of
every argument it splits, and in which some buffer is touched by two nests,
becomes a loop over blocks of rows: its body moves into a private function
``<name>_rows`` (marked ``fuser.row_block``), and the segment calls it once
per block of at most ``block_bytes`` of its split arguments (at least one
row), with views of those arguments cut to the block; other arguments are
passed whole. Where one row holds more than ``block_bytes`` and the segment
may also be cut along dim 1 of the same arguments
(:func:`~fuser_mlir.lowering.cpu_split.inner_split_dims`: the rows of a
``[batch, rows, columns]`` layer norm), each row is cut into blocks along
dim 1 instead, two views deep, where the arguments agree on dim 1. Where
the split arguments do not agree on their number of rows, the segment calls
its body once, on the whole arrays, as the runtime does. Every element is
computed by the same arithmetic as before, so results are bit-for-bit the
same. ``block_bytes=0`` leaves every segment as it is.

    func.func @f_seg0(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: ...)
        attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
      linalg.generic ... ins(%x) outs(%max)          // reads %x
      linalg.generic ... ins(%x, %max) outs(%out)    // reads %x again
    }
    ==>
    func.func private @f_seg0_rows(%x: ..., %out: ...) { the body as it was }
    func.func @f_seg0(%x: ..., %out: ...) attributes {...} {
      %rows = memref.dim %x, %c0
      %step = max(1, block_bytes / (bytes of a row of %x + of %out))
      scf.if (%rows == memref.dim %out, %c0) {
        scf.for %r = %c0 to %rows step %step {
          %n = min(%step, %rows - %r)
          %xb = memref.subview %x[%r, 0] [%n, %cols] [1, 1]
          %ob = memref.subview %out[%r, 0] [%n, %cols] [1, 1]
          func.call @f_seg0_rows(%xb, %ob)
        }
      } else {
        func.call @f_seg0_rows(%x, %out)
      }
    }

Blocks of rows only: blocks of columns of a row-major array would read short
pieces of many rows. On a 2-CPU x86-64 VM (AVX-512, 1 MB L2 a core;
``python bench/cpu.py``, 4096x4096 float32): see the README, "How a fusion
runs on the CPU".
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import arith, func, ir, memref, scf
from fuser_mlir.lowering.cpu_split import inner_split_dims, split_dims
from fuser_mlir.analysis.segments import NUM_INPUTS_ATTR, func_name
from fuser_mlir.lowering.gpu_schedule import element_bytes
from fuser_mlir.lowering.linalg import index_constant, memref_dim_size, view_along
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error

#: Marks the function that runs one block of rows (``fuser-share-call-results`` works in those).
ROW_BLOCK_ATTR = "fuser.row_block"

#: Ops that touch buffers as a loop nest does (a fill writes its buffer once and is not counted).
_NESTS = ("linalg.generic", "linalg.copy", "memref.copy")


def _shares_a_buffer(function: ir.Operation) -> bool:
    """Whether two loop nests at the top of ``function`` touch one buffer."""
    touched: set = set()
    for op in function.regions[0].blocks[0].operations:
        op = op.operation
        if op.name not in _NESTS:
            continue
        buffers = {v for v in op.operands if isinstance(v.type, ir.MemRefType)}
        if buffers & touched:
            return True
        touched |= buffers
    return False


def rows_split(function: ir.Operation) -> tuple[list[bool], bool] | None:
    """Per argument of the segment ``function``, whether its blocks of rows
    are cut from it (True) or it is passed whole, and whether a row may be
    cut along dim 1 in turn (its inner split cuts dim 1 of those
    arguments); None where the pass leaves ``function`` alone (see the
    module docstring)."""
    if function.name != "func.func" or NUM_INPUTS_ATTR not in function.attributes or not function.regions[0].blocks:
        return None
    split = split_dims(function)
    if split is None or any(dim not in (None, 0) for dim in split) or not _shares_a_buffer(function):
        return None
    inner = inner_split_dims(function, split)
    return [dim == 0 for dim in split], inner is not None and all(dim in (None, 1) for dim in inner)


def _row_bytes(buffers: list[ir.Value], sizes: dict, dim: int = 0) -> ir.Value:
    """Bytes of one row (an index of ``dim``, with all of the dims after it)
    of all ``buffers`` together; ``sizes`` holds each buffer's dim sizes
    (:func:`~fuser_mlir.lowering.linalg.memref_dim_size`)."""
    total = None
    for buffer in buffers:
        type_ = ir.MemRefType(buffer.type)
        static = element_bytes(type_.element_type)
        for n in type_.shape[dim + 1 :]:
            static *= 1 if ir.ShapedType.is_dynamic_size(n) else n
        row = index_constant(static)
        for d in range(dim + 1, type_.rank):
            if ir.ShapedType.is_dynamic_size(type_.shape[d]):
                row = arith.MulIOp(row, sizes[buffer][d]).result
        total = row if total is None else arith.AddIOp(total, row).result
    return total


def _same_rows(buffers: list[ir.Value], sizes: dict, dim: int = 0) -> ir.Value | None:
    """An ``i1``: every one of ``buffers`` is as long along ``dim`` as the
    first; None where there is only one."""
    agree = None
    for buffer in buffers[1:]:
        same = arith.CmpIOp(arith.CmpIPredicate.eq, sizes[buffer][dim], sizes[buffers[0]][dim]).result
        agree = same if agree is None else arith.AndIOp(agree, same).result
    return agree


def _rows_per_block(block_bytes: int, row_bytes: ir.Value) -> ir.Value:
    """``max(1, block_bytes / row_bytes)``, as an index (``row_bytes`` of 0
    counts as 1)."""
    one = index_constant(1)
    return arith.MaxUIOp(one, arith.DivUIOp(index_constant(block_bytes), arith.MaxUIOp(one, row_bytes).result).result).result


def _rows_of(buffer: ir.Value, sizes: list[ir.Value], start: ir.Value, count: ir.Value, row: ir.Value | None = None) -> ir.Value:
    """Rows ``start`` to ``start + count`` of ``buffer`` (of ``sizes``), as a
    value of ``buffer``'s own type (a cast where that type has static
    sizes); with ``row``, those rows along dim 1 of its row ``row`` (along
    dim 0)."""
    one = index_constant(1)
    if row is None:
        view = view_along(buffer, sizes, 0, start, count, one)
    else:
        view = view_along(view_along(buffer, sizes, 0, row, one, one), [one, *sizes[1:]], 1, start, count, one)
    return view if view.type == buffer.type else memref.cast(buffer.type, view)


def _blocks(name: str, args: list[ir.Value], cut: list[bool], sizes: dict, step: ir.Value, row: ir.Value | None = None) -> None:
    """Calls of ``name`` on blocks of ``step`` rows of the arguments ``cut``
    says, the others whole, at the insertion point; with ``row``, blocks of
    ``step`` indices of dim 1 of that row (an index of dim 0)."""
    rows = sizes[next(a for a, c in zip(args, cut) if c)][0 if row is None else 1]
    loop = scf.ForOp(index_constant(0), rows, step)
    with ir.InsertionPoint(loop.body):
        start = loop.induction_variable
        count = arith.MinUIOp(step, arith.SubIOp(rows, start).result).result
        func.CallOp([], name, [_rows_of(a, sizes[a], start, count, row) if c else a for a, c in zip(args, cut)])
        scf.YieldOp([])


def _blocks_of_each_row(name: str, args: list[ir.Value], cut: list[bool], sizes: dict, step: ir.Value) -> None:
    """Calls of ``name`` on blocks of ``step`` indices of dim 1 of each row
    (index of dim 0) of the arguments ``cut`` says, at the insertion point."""
    rows = sizes[next(a for a, c in zip(args, cut) if c)][0]
    loop = scf.ForOp(index_constant(0), rows, index_constant(1))
    with ir.InsertionPoint(loop.body):
        _blocks(name, args, cut, sizes, step, row=loop.induction_variable)
        scf.YieldOp([])


def _if_else(condition: ir.Value | None, then, otherwise) -> None:
    """``then()`` where ``condition`` holds, else ``otherwise()``, at the
    insertion point (``then()`` alone where ``condition`` is None)."""
    if condition is None:
        then()
        return
    branch = scf.IfOp(condition, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        then()
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        otherwise()
        scf.YieldOp([])


def _body_function(function: ir.Operation, name: str) -> None:
    """A private copy of ``function`` named ``name``, right before it."""
    with ir.InsertionPoint(function):
        body = function.clone()
    body.attributes["sym_name"] = ir.StringAttr.get(name)
    body.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for attribute in (NUM_INPUTS_ATTR, "llvm.emit_c_interface"):
        if attribute in body.attributes:
            del body.attributes[attribute]
    body.attributes[ROW_BLOCK_ATTR] = ir.UnitAttr.get()


def _unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with a number, that is not in ``taken`` (the
    module's symbols), which learns it."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}{k}", k + 1
    taken.add(name)
    return name


def block_rows(function: ir.Operation, block_bytes: int, taken: set[str]) -> bool:
    """Rewrite ``function`` as the module docstring says; False where it does
    not fit. ``taken``: the module's symbol names (:func:`_unique_name`)."""
    found = rows_split(function)
    if found is None:
        return False
    cut, rows_cut_too = found
    name = _unique_name(func_name(function) + "_rows", taken)
    _body_function(function, name)
    entry = function.regions[0].blocks[0]
    for op in reversed(list(entry.operations)):
        op.operation.erase()
    args = list(entry.arguments)
    split = [a for a, c in zip(args, cut) if c]
    with ir.InsertionPoint(entry), function.location:
        sizes = {a: [memref_dim_size(a, d) for d in range(ir.MemRefType(a.type).rank)] for a in split}
        row_bytes = _row_bytes(split, sizes)
        step = _rows_per_block(block_bytes, row_bytes)

        def blocked() -> None:
            if not rows_cut_too:
                _blocks(name, args, cut, sizes, step)
                return
            # a row larger than a block: blocks of dim 1 of each row, where the arguments agree on dim 1
            long = arith.CmpIOp(arith.CmpIPredicate.ugt, row_bytes, index_constant(block_bytes)).result
            agree = _same_rows(split, sizes, 1)
            inner_step = _rows_per_block(block_bytes, _row_bytes(split, sizes, 1))
            condition = long if agree is None else arith.AndIOp(long, agree).result
            _if_else(condition, lambda: _blocks_of_each_row(name, args, cut, sizes, inner_step), lambda: _blocks(name, args, cut, sizes, step))

        _if_else(_same_rows(split, sizes), blocked, lambda: func.CallOp([], name, args))
        func.ReturnOp([])
    return True


@dataclass
class BlockRowsPass(FuserPass):
    NAME = "fuser-block-rows"
    SUMMARY = "Run the loop nests of a segment block by block of rows, so that nests sharing data find it in cache."

    block_bytes: int = 512 * 1024  # bytes of the split arguments a block takes at most (at least one row; 0: leave every segment alone)

    def run(self, module: ir.Operation) -> None:
        if self.block_bytes < 0:
            emit_error(module, f"fuser-block-rows: block-bytes must be 0 (leave every segment as it is) or more, got {self.block_bytes}")
            raise PassFailure()
        if self.block_bytes == 0:
            return
        functions = [op.operation for op in module.regions[0].blocks[0].operations]
        taken = {func_name(op) for op in functions if "sym_name" in op.attributes}
        for function in functions:
            block_rows(function, self.block_bytes, taken)
