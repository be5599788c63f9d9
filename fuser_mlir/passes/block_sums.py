"""Sum float32 reductions in blocks of elements, each block's sum added into a float64 total.

Preconditions: loops on memrefs (``fuser-cpu-pipeline`` right after
``convert-linalg-to-loops``). Loops that do not fit the rules below are left
alone.

Effect: an innermost ``scf.for`` whose body adds to one element of a buffer
(``out[idx] = out[idx] + v``: a float32 ``arith.addf`` marked ``reassoc``,
``idx`` defined outside the loop, the buffer used by nothing else in the
loop: a row sum, a full sum) sums in registers instead, and adds the
result into a float64 total, stored once (rounded to float32):

- a loop alone in its enclosing loop (a row sum): where it runs more than
  ``block`` iterations, block by block, each block from 0.0 into the
  total; where it runs ``block`` or fewer, as it was (a copy behind a test
  of the length: summing in registers cost rows of 4 elements 2x);
- a loop whose enclosing loops hold nothing else and leave ``idx`` alone
  (a full sum of a matrix or of any rank): the total runs through those
  loops, and each run of the innermost loop sums from 0.0 in registers,
  not in blocks (blocks there ran at two thirds of the memory bandwidth
  on the 2-CPU VM, for a reason not found).

Before, every element went into the float32 accumulator (LLVM keeps a
register per vector lane: 32 partial sums, each a sequential sum): a full
sum of 4e6 positive float32 values was 1.3e-7 off (relative), of 400000x10
3e-5 (the rows' sums went into one float32 value one after another), of
5e6x10 13%. Now every case is within float32 rounding of the exact sum,
as NumPy's pairwise sum is (``test/passes/test_block_sums.py``), at the
same speed (measured on one thread against the pipeline before the pass,
side by side: a full sum of 5e7 elements as a vector 11.4-12.2 against
10.9-11.6 ms, as a matrix 10.9-11.8 against 11.0-12.0; row sums of 4, 16
and 4096 columns and a row softmax and layer norm of 4096x4096 within the
VM's noise). Column sums (the reduced loop outside
the parallel one) are not taken: fuser-unroll-jam-reductions adds 8 rows
at a time there, and each column stays a float32 sum, as in NumPy.

    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %out[%i] ; %x = memref.load %in[%i, %k]
      %s = arith.addf %a, %x fastmath<reassoc> : f32
      memref.store %s, %out[%i] }
    ==>  (block = B; the else branch: the loop as it was)
    scf.if (%n - %c0 > %c1 * B) {
      %t0 = arith.extf (memref.load %out[%i]) : f32 to f64
      %t = scf.for %kb = %c0 to %n step %cB iter_args(%t1 = %t0) -> f64 {
        %hi = arith.minsi (%kb + %cB), %n
        %p = scf.for %k = %kb to %hi step %c1 iter_args(%q = 0.0) -> f32 {
          %x = memref.load %in[%i, %k] ; %s = arith.addf %q, %x fastmath<reassoc> : f32
          scf.yield %s }
        scf.yield %t1 + extf(%p) }
      memref.store (arith.truncf %t), %out[%i] } else { ... }
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import arith, ir, memref, scf
from fuser_mlir.lowering.linalg import index_constant
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error


@dataclass
class _Sum:
    """One ``out[idx] = out[idx] + v`` of a loop body."""

    load: ir.Operation
    add: ir.Operation
    store: ir.Operation
    buffer: ir.Value
    indices: list


def _body(loop: ir.Operation) -> ir.Block:
    return loop.regions[0].blocks[0]


def _nested(op: ir.Operation, loop: ir.Operation) -> bool:
    """Whether ``op`` is ``loop`` or nested in it."""
    while op is not None:
        if op == loop:
            return True
        op = op.parent.operation if op.parent is not None else None
    return False


def _inside(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether ``value`` is defined in ``loop`` (an argument of a block in it,
    or a result of an op nested in it)."""
    owner = value.owner
    op = owner.owner.operation if isinstance(owner, ir.Block) else owner.operation
    return _nested(op, loop)


def _reassociable_f32_add(op: ir.Operation) -> bool:
    return (
        op.name == "arith.addf"
        and str(op.results[0].type) == "f32"
        and "fastmath" in op.attributes
        and "reassoc" in str(op.attributes["fastmath"])
    )


def _sum_of(store: ir.Operation, loop: ir.Operation) -> _Sum | None:
    """The sum ``store`` ends, or None: it stores a reassociable f32 add of a
    load of the same buffer and indices, defined outside ``loop``, whose
    only use is that add; and nothing else in ``loop`` uses the buffer."""
    value, buffer, indices = store.operands[0], store.operands[1], list(store.operands[2:])
    add = value.owner
    if isinstance(add, ir.Block) or not _reassociable_f32_add(add.operation) or _inside(buffer, loop) or any(_inside(i, loop) for i in indices):
        return None
    add = add.operation
    for operand in add.operands:
        load = operand.owner
        if isinstance(load, ir.Block) or load.name != "memref.load":
            continue
        load = load.operation
        if load.operands[0] == buffer and list(load.operands[1:]) == indices and len(list(load.results[0].uses)) == 1:
            users = [use.owner.operation for use in buffer.uses if _nested(use.owner.operation, loop)]
            return _Sum(load, add, store, buffer, indices) if len(users) == 2 and load in users and store in users else None
    return None


def _sums(loop: ir.Operation) -> list[_Sum]:
    """The sums in ``loop``'s body (its own ops, not nested loops')."""
    found = []
    for op in _body(loop).operations:
        if op.operation.name == "memref.store":
            total = _sum_of(op.operation, loop)
            if total is not None:
                found.append(total)
    return found


def _loops_in(op: ir.Operation) -> list[ir.Operation]:
    """The ``scf.for`` ops nested in ``op`` (``op`` itself included)."""
    found = []

    def visit(nested: ir.Operation) -> ir.WalkResult:
        if nested.name == "scf.for":
            found.append(nested)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def _innermost_loops(function: ir.Operation) -> list[ir.Operation]:
    """The ``scf.for`` ops of ``function`` with no ``scf.for`` inside and no
    results (the loops ``convert-linalg-to-loops`` makes)."""
    return [loop for loop in _loops_in(function) if not loop.results and len(_loops_in(loop)) == 1]


def _perfect_nest(loop: ir.Operation, sums: list[_Sum]) -> list[ir.Operation]:
    """``loop`` and the loops around it that hold nothing else and whose
    induction variables the sums' indices do not use, outermost first."""
    nest = [loop]
    while True:
        parent = nest[0].parent.operation
        if parent.name != "scf.for" or parent.results:
            break
        ops = [op.operation for op in _body(parent).operations]
        if len(ops) != 2 or ops[0] != nest[0] or ops[1].name != "scf.yield":
            break
        if any(_inside(i, parent) for s in sums for i in s.indices):
            break
        nest.insert(0, parent)
    return nest


def _bounds(loop: ir.Operation) -> tuple[ir.Value, ir.Value, ir.Value]:
    return loop.operands[0], loop.operands[1], loop.operands[2]


def _in_registers(loop: ir.Operation, sums: list[_Sum], start: ir.Value, end: ir.Value) -> list[ir.Value]:
    """A loop from ``start`` to ``end`` (``loop``'s step) that runs ``loop``'s
    body, moved into it, with each sum in a register from 0.0 instead of in
    its buffer: the sums' partial results."""
    f32 = ir.F32Type.get()
    zero = arith.ConstantOp(f32, ir.FloatAttr.get(f32, 0.0)).result
    inner = scf.ForOp(start, end, _bounds(loop)[2], [zero] * len(sums))
    with ir.InsertionPoint(inner.body):
        done = scf.YieldOp([s.add.results[0] for s in sums])
    old = _body(loop)
    old.arguments[0].replace_all_uses_with(inner.induction_variable)
    for op in list(old.operations)[:-1]:  # all but its scf.yield
        op.operation.move_before(done)
    for s, partial in zip(sums, inner.inner_iter_args):
        s.load.results[0].replace_all_uses_with(partial)
        s.store.erase()
        s.load.erase()
    return list(inner.results)


def _plus(totals, partials) -> list[ir.Value]:
    """``total + extf(partial)`` (f64) for each pair."""
    f64 = ir.F64Type.get()
    return [arith.AddFOp(t, arith.ExtFOp(f64, p).result).result for t, p in zip(totals, partials)]


def _blocked(loop: ir.Operation, sums: list[_Sum], totals: list[ir.Value], stride: ir.Value) -> list[ir.Value]:
    """``loop`` (innermost) as blocks of ``stride`` (its step times the
    block), each summing in registers and adding into ``totals``: the new
    totals. Moves ``loop``'s body."""
    lower, upper, _ = _bounds(loop)
    outer = scf.ForOp(lower, upper, stride, totals)
    with ir.InsertionPoint(outer.body):
        start = outer.induction_variable
        end = arith.MinSIOp(arith.AddIOp(start, stride).result, upper).result
        scf.YieldOp(_plus(outer.inner_iter_args, _in_registers(loop, sums, start, end)))
    return list(outer.results)


def _longer_than(loop: ir.Operation, stride: ir.Value) -> ir.Value:
    """Whether ``loop`` runs more than one block."""
    lower, upper, _ = _bounds(loop)
    return arith.CmpIOp(arith.CmpIPredicate.sgt, arith.SubIOp(upper, lower).result, stride).result


def _innermost(loop: ir.Operation, sums: list[_Sum], totals: list[ir.Value]) -> list[ir.Value]:
    """The innermost loop of a nest that carries ``totals``, in registers in
    one go, added into the totals. (Blocks there ran at two thirds of the
    memory bandwidth on the 2-CPU VM, for a reason not found; rows are
    shorter than whole arrays, and each row's sum still lands in float64.)"""
    lower, upper, _ = _bounds(loop)
    return _plus(totals, _in_registers(loop, sums, lower, upper))


def _rebuilt(nest: list[ir.Operation], sums: list[_Sum], totals: list[ir.Value]) -> list[ir.Value]:
    """``nest`` (outermost first) rebuilt with ``totals`` carried through
    every loop (:func:`_innermost` at the bottom): the final totals."""
    if len(nest) == 1:
        return _innermost(nest[0], sums, totals)
    lower, upper, step = _bounds(nest[0])
    loop = scf.ForOp(lower, upper, step, totals)
    _body(nest[0]).arguments[0].replace_all_uses_with(loop.induction_variable)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(_rebuilt(nest[1:], sums, list(loop.inner_iter_args)))
    return list(loop.results)


def _loaded(sums: list[_Sum]) -> list[ir.Value]:
    """Each sum's buffer element, as f64: the totals' start."""
    return [arith.ExtFOp(ir.F64Type.get(), memref.LoadOp(s.buffer, s.indices).result).result for s in sums]


def _stored(sums: list[_Sum], totals: list[ir.Value]) -> None:
    for s, total in zip(sums, totals):
        memref.StoreOp(arith.TruncFOp(ir.F32Type.get(), total).result, s.buffer, s.indices)


def block_sums(loop: ir.Operation, block: int) -> bool:
    """Rewrite the sums of innermost ``loop`` as the module docstring says;
    False where it has none. A loop alone that runs one block or less stays
    as it was (a copy of it, behind a test of its length): summing in
    registers costs a short row more than it gains."""
    sums = _sums(loop)
    if not sums:
        return False
    nest = _perfect_nest(loop, sums)
    top = nest[0]
    with ir.InsertionPoint(top), top.location:
        if len(nest) > 1:
            _stored(sums, _rebuilt(nest, sums, _loaded(sums)))
        else:
            stride = arith.MulIOp(_bounds(loop)[2], index_constant(block)).result
            branch = scf.IfOp(_longer_than(loop, stride), [], has_else=True)
            with ir.InsertionPoint(branch.else_block):
                loop.clone()
                scf.YieldOp([])
            with ir.InsertionPoint(branch.then_block):
                _stored(sums, _blocked(loop, sums, _loaded(sums), stride))
                scf.YieldOp([])
    top.erase()
    return True


@dataclass
class BlockSumsPass(FuserPass):
    NAME = "fuser-block-sums"
    SUMMARY = "Sum float32 reductions in blocks of elements, each block's sum added into a float64 total."

    #: iterations a block sums in registers before adding into the total
    block: int = 2048

    def run(self, module: ir.Operation) -> None:
        if self.block < 1:
            emit_error(module, f"fuser-block-sums: block must be 1 or more, got {self.block}")
            raise PassFailure()
        for function in module.regions[0].blocks[0].operations:
            function = function.operation
            if function.name == "func.func" and function.regions[0].blocks:
                for loop in _innermost_loops(function):
                    block_sums(loop, self.block)
