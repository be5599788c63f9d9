"""Compute once a function call that two loop nests of a segment both compute.

Preconditions: linalg on memrefs (``fuser-cpu-pipeline`` after
``fuser-block-rows``), in segment functions (``fuser.num_inputs``) and in
the functions ``fuser-block-rows`` made (``fuser.row_block``: one block of
rows of a segment, whose buffers fit the cache); other functions are left
alone. Function calls in generic bodies are libm calls declared
``llvm.readnone`` (``fuser-lower-to-cpu``), as ``fuser-erase-dead-generics``
also assumes. Within a segment, no two buffers it writes alias, nor one it
writes and one it reads, except where an input is updated in place, which
``fuser-resolve-alias-hazards`` keeps apart from the reads it would
clobber (the executor rejects given outputs that overlap).

Effect: the CPU lowering recomputes a reduction's producers in the reduction
and in every later consumer, so that linalg fusion never writes them to a
full-size buffer: a row softmax computes ``exp(x - max)`` in the nest that
sums it and again in the nest that divides it by the sum; the middle
segment of a softmax over columns stores ``exp(x - max)`` and computes it
again to sum it. Take a generic ``B`` that computes a value with a function
call which an earlier generic ``A`` over as many loops computes from the
same inputs through the same indexing maps (which name every loop, so the
two run over the same iterations), where nothing between them writes those
inputs. Two rewrites:

- *Reread*: where ``A`` stores the value to an output through the identity
  map, nothing between the two writes that output and ``B`` does not write
  it, ``B`` reads the value from that output instead of computing it,
  where it then reads no more inputs that name every loop than before (the
  softmax over columns: its sum reads the stored ``exp`` values instead of
  the input).
- *Keep*, in a block of rows only, for an all-parallel ``B``: ``A`` also
  writes the value into a new buffer of the loops' sizes, one element an
  iteration, and ``B`` reads it from there (the row softmax). The buffer
  holds one block's rows, so ``B`` reads it from the cache; a block holds
  at least one row, so an ``scf.if`` runs ``A`` and ``B`` as they were
  where the buffer would take more than :data:`KEEP_BYTES`. ``A`` and
  every op between ``A`` and ``B`` may write only buffers the function
  allocates, the ops between define no values, and ``A`` is not one that
  ``fuser-unroll-jam-reductions`` would jam (its new output would stop the
  jam). The pass does not look into the ``scf.if`` again.

Each element is computed by the same operations as before, but the call now
runs in ``A``'s loop: LLVM vectorises the two loops apart, and a libm
function may take its vector or its scalar variant for a given element
depending on the loop (README, "How a fusion runs on the CPU"), so a result
may differ from the unshared one in the last place. A softmax's sum and
quotients now see the same ``exp`` values.

    // Keep. A: the row sum of exp(x - max); B: exp(x - max) / sum
    linalg.generic {iterators = [parallel, reduction]} ins(%x, %max) outs(%sum) {
      %e = func.call @expf(%x - %max); yield %acc + %e }
    linalg.generic {iterators = [parallel, parallel]} ins(%x, %max, %sum) outs(%out) {
      %e = func.call @expf(%x - %max); yield %e / %sum }
    ==>
    scf.if (4 * %rows * %cols <= KEEP_BYTES) {
      %t = memref.alloc(%rows, %cols) : memref<?x?xf32>
      linalg.generic {...} ins(%x, %max) outs(%sum, %t) {   // %t: (d0, d1) -> (d0, d1)
        %e = func.call @expf(%x - %max); yield %acc + %e, %e }
      linalg.generic {...} ins(%sum, %t) outs(%out) { yield %t_elem / %sum }
      memref.dealloc %t
    } else { the two generics as they were }

    // Reread. A stores exp(x - max) to %e; B sums it over the columns
    linalg.generic {iterators = [parallel, parallel]} ins(%x, %max) outs(%e) {
      yield func.call @expf(%x - %max) }
    linalg.generic {iterators = [reduction, parallel]} ins(%x, %max) outs(%sum) {
      %v = func.call @expf(%x - %max); yield %acc + %v }
    ==>
    (A as it was)
    linalg.generic {iterators = [reduction, parallel]} ins(%e) outs(%sum) { yield %acc + %e_elem }
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import arith, ir, linalg, memref, scf
from fuser_mlir.analysis.segments import NUM_INPUTS_ATTR
from fuser_mlir.lowering.gpu_schedule import Generic, element_bytes
from fuser_mlir.lowering.linalg import buffer_generic, clone_ops, index_constant, memref_dim_size
from fuser_mlir.passes.base import FuserPass
from fuser_mlir.passes.block_rows import ROW_BLOCK_ATTR
from fuser_mlir.passes.unroll_jam_reductions import reduced_loop

#: The most bytes of new buffers a keep fills in one call of a block of rows.
#: A block holds at least one row, however long: past about this much the
#: buffer is not read from cache, and its allocation costs more than the
#: calls it saves (a softmax of one row of 16M float32 took 42.6 ms with
#: its exp values kept, 11.0 without).
KEEP_BYTES = 4 * 1024 * 1024

#: Top-level ops between the two generics that write no buffer.
_NO_WRITES = ("memref.alloc", "memref.dim")


@dataclass(frozen=True)
class _Leaf:
    """An input of a generic as a shared value reads it: the buffer (or
    scalar) and its indexing map."""

    operand: ir.Value
    amap: ir.AffineMap


def _attributes(op: ir.Operation) -> tuple:
    return tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))


def _keys(g: Generic, interned: dict) -> tuple[dict, dict]:
    """For each value of ``g``'s body computed from its inputs only (not from
    its outputs' elements), a key that is equal for values computed by the
    same ops from the same inputs through the same maps; and each key's
    leaves (:class:`_Leaf`). A key is a number: ``interned`` numbers each
    (op, attributes, result type, operand keys) the first time it is seen,
    across the generics of a function, so that keys compare and hash as
    numbers. The result type counts: ``arith.extui`` of one ``i1`` to ``i8``
    and to ``i64`` are two values. A key's leaves are distinct, in the order
    its operands first reach them: a body where each value reads the one
    before twice (``%v1 = %v0 * %v0``, a recomputed row program) would
    otherwise list its input 2^n times (a row program of three stages ran
    out of memory)."""
    count = len(g.inputs)
    keys, leaves = {}, {}
    for arg, operand, amap in zip(list(g.body.arguments)[:count], g.inputs, g.maps):
        keys[arg] = interned.setdefault(("input", operand, str(amap)), len(interned))
        leaves[keys[arg]] = [_Leaf(operand, amap)]
    inside = {r for op in g.body.operations for r in op.results} | set(g.body.arguments)
    for op in list(g.body.operations)[:-1]:
        if len(op.results) != 1 or op.regions:
            continue
        operand_keys, found = [], {}
        for v in op.operands:
            if v in keys:
                operand_keys.append(keys[v])
                found.update(dict.fromkeys(leaves[keys[v]]))
            elif v not in inside:
                operand_keys.append(("outside", v))
            else:
                break  # reads an output's element, or a value with no key
        else:
            key = interned.setdefault((op.name, _attributes(op), str(op.results[0].type), tuple(operand_keys)), len(interned))
            keys[op.results[0]] = key
            leaves[key] = list(found)
    return keys, leaves


@dataclass
class _Nest:
    """A generic with what the rewrites look up in it, read once (each read
    through the bindings makes new Python objects)."""

    g: Generic
    keys: dict  # value -> key (:func:`_keys`)
    leaves: dict  # key -> its leaves
    computed: dict  # key -> a value of the body with that key
    stored: dict  # key -> the output the value is written to through the identity map
    with_call: set  # the values of the body computed with a function call (:func:`_with_call`)

    @classmethod
    def of(cls, op: ir.Operation, interned: dict) -> "_Nest":
        g = Generic.of(op)
        keys, leaves = _keys(g, interned)
        identity = ir.AffineMap.get_identity(len(g.iterators))
        yielded = list(list(g.body.operations)[-1].operands)
        stored = {keys[v]: o for o, amap, v in zip(g.outputs, g.maps[len(g.inputs) :], yielded) if amap == identity and v in keys}
        return cls(g, keys, leaves, {key: value for value, key in keys.items()}, stored, _with_call(g))


def _with_call(g: Generic) -> set[ir.Value]:
    """The values of ``g``'s body computed with a function call: by one, or
    from a value that is, in one pass over the body (a walk up from each
    value took time exponential in the depth of a body whose values read
    the one before twice)."""
    found: set[ir.Value] = set()
    for op in g.body.operations:
        if op.operation.name == "func.call" or any(v in found for v in op.operands):
            found.update(op.results)
    return found


def _shared(available: dict, leaves: dict, b: _Nest) -> list[tuple]:
    """What ``b`` may take instead of computing it: (what ``available``
    holds for the value's key, the value in ``b``, its leaves) for each value
    of ``b`` computed with a call whose key ``available`` has, whose maps
    name every loop, and that some op of ``b`` uses whose key ``available``
    lacks (the yield, say): the largest such values, not the ones inside
    them. ``leaves``: each key's leaves (:func:`_keys`)."""

    common = available.keys() & b.computed.keys()
    if not common:
        return []  # most pairs of generics: no set lookup a value

    def taken(value: ir.Value) -> bool:
        return value in b.keys and b.keys[value] in common

    pairs = []
    for value, key in b.keys.items():
        if key not in common or value not in b.with_call:
            continue
        if all(len(use.owner.results) == 1 and taken(use.owner.results[0]) for use in value.uses):
            continue  # only used inside a larger shared value
        if _names_every_loop([leaf.amap for leaf in leaves[key]], len(b.g.iterators)):
            pairs.append((available[key], value, leaves[key]))
    return pairs


def _names_every_loop(maps: list[ir.AffineMap], loops: int) -> bool:
    """Whether ``maps`` together name every one of ``loops`` loops (so that
    they fix the loops' sizes: two generics run over the same iterations)."""
    named = {ir.AffineDimExpr(e).position for amap in maps for e in amap.results if isinstance(e, ir.AffineDimExpr)}
    return named == set(range(loops))


def _allocated(value: ir.Value) -> bool:
    """Whether ``value`` is a buffer the function allocates."""
    return not isinstance(value.owner, ir.Block) and value.owner.name == "memref.alloc"


def _writes(op: ir.Operation) -> list[ir.Value] | None:
    """The buffers a top-level op writes (or frees); None for an op this
    pass does not know."""
    if op.name == "linalg.generic":
        return Generic.of(op).outputs
    if op.name in ("linalg.fill", "linalg.copy"):
        return [op.operands[-1]]
    if op.name == "memref.copy":
        return [op.operands[1]]
    if op.name == "memref.dealloc":
        return [op.operands[0]]  # a buffer freed is no longer there to read
    if op.name in _NO_WRITES or op.name.startswith("arith."):
        return []
    return None


def _unwritten(between: list[ir.Operation], read: set) -> bool:
    """Whether ``between`` write only allocated buffers, none in ``read``."""
    for op in between:
        written = _writes(op)
        if written is None or any(not _allocated(w) or w in read for w in written):
            return False
    return True


def _buffer_type(element: ir.Type, leaves: list[_Leaf], loops: int) -> tuple[ir.MemRefType, list[ir.Value]]:
    """The type of a buffer of ``element``s with one dim a loop, each sized
    as the first of ``leaves`` whose map names the loop, and the size of
    each dim as an index (a constant where the type has one)."""
    shape, sizes = [], []
    for loop in range(loops):
        leaf, position = next((leaf, p) for leaf in leaves for p, e in enumerate(leaf.amap.results) if isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == loop)
        shape.append(ir.MemRefType(leaf.operand.type).shape[position])
        sizes.append(memref_dim_size(leaf.operand, position))
    return ir.MemRefType.get(shape, element), sizes


def _read_instead(b: Generic, pairs: list, buffers: list[ir.Value]) -> ir.Operation:
    """``b`` rebuilt at the insertion point to read the value ``vb`` of each
    of ``pairs`` from the buffer at the same place in ``buffers`` (through
    the identity map) instead of computing it; inputs it no longer reads are
    dropped."""
    identity = ir.AffineMap.get_identity(len(b.iterators))
    ops = list(b.body.operations)
    live = _live(ops, {vb for _, vb, _ in pairs})
    args = list(b.body.arguments)
    count = len(b.inputs)
    kept = _still_read(b, pairs)
    types = [args[k].type for k in kept] + [vb.type for _, vb, _ in pairs] + [a.type for a in args[count:]]
    maps = [b.maps[k] for k in kept] + [identity] * len(buffers) + b.maps[count:]
    new_b, block = buffer_generic([b.inputs[k] for k in kept] + buffers, b.outputs, maps, b.op.attributes["iterator_types"], types)
    with ir.InsertionPoint(block):
        new_args = list(block.arguments)
        local = {args[k]: new_args[n] for n, k in enumerate(kept)}
        local.update((vb, new_args[len(kept) + n]) for n, (_, vb, _) in enumerate(pairs))
        local.update(zip(args[count:], new_args[len(kept) + len(buffers) :]))
        clone_ops(live, local)
        linalg.YieldOp([local.get(v, v) for v in ops[-1].operands])
    return new_b


def _writing_also(a: Generic, pairs: list, buffers: list[ir.Value]) -> None:
    """``a`` rebuilt at the insertion point to also write the value ``va``
    of each of ``pairs`` to the buffer at the same place in ``buffers``,
    through the identity map."""
    identity = ir.AffineMap.get_identity(len(a.iterators))
    types = [arg.type for arg in a.body.arguments] + [va.type for va, _, _ in pairs]
    _, block = buffer_generic(a.inputs, a.outputs + buffers, a.maps + [identity] * len(buffers), a.op.attributes["iterator_types"], types)
    with ir.InsertionPoint(block):
        local = dict(zip(a.body.arguments, block.arguments))
        ops = list(a.body.operations)
        clone_ops(ops[:-1], local)
        linalg.YieldOp([local.get(v, v) for v in ops[-1].operands] + [local[va] for va, _, _ in pairs])


def keep(a: Generic, b: Generic, pairs: list, between: list[ir.Operation]) -> ir.Operation:
    """Rewrite ``a``, the ops ``between`` (which have no results) and ``b``
    as the module docstring says (first rewrite): where the new buffers hold
    at most :data:`KEEP_BYTES`, ``a`` also writes each shared value to one
    and ``b`` reads it; else the three run as they were. The ``scf.if``
    that chooses."""
    loops = len(a.iterators)
    with ir.InsertionPoint(a.op), a.op.location:
        shapes = [_buffer_type(va.type, leaves, loops) for va, _, leaves in pairs]
        total = None
        for type_, sizes in shapes:
            size = index_constant(element_bytes(type_.element_type))
            for n in sizes:
                size = arith.MulIOp(size, n).result
            total = size if total is None else arith.AddIOp(total, size).result
        small = arith.CmpIOp(arith.CmpIPredicate.ule, total, index_constant(KEEP_BYTES)).result
        branch = scf.IfOp(small, has_else=True)
    with ir.InsertionPoint(branch.else_block), a.op.location:
        otherwise = scf.YieldOp([])
    for op in [a.op, *between, b.op]:
        op.move_before(otherwise)
    with ir.InsertionPoint(branch.then_block), a.op.location:
        buffers = [memref.AllocOp(type_, [n for n, d in zip(sizes, type_.shape) if ir.ShapedType.is_dynamic_size(d)], []).result for type_, sizes in shapes]
        _writing_also(a, pairs, buffers)
        clone_ops(between, {})
        _read_instead(b, pairs, buffers)
        for buffer in buffers:
            memref.DeallocOp(buffer)
        scf.YieldOp([])
    return branch.operation


def reread(b: Generic, pairs: list) -> ir.Operation:
    """Rewrite ``b`` to read each shared value from the output an earlier
    generic stored it to (module docstring, second rewrite): ``pairs`` holds
    (that output, the value in ``b``, leaves); the new ``b``."""
    with ir.InsertionPoint(b.op), b.op.location:
        new_b = _read_instead(b, pairs, [stored for stored, _, _ in pairs])
    b.op.erase()
    return new_b


def _live(ops: list[ir.Operation], replaced: set) -> list[ir.Operation]:
    """The ops of a body (``ops``, its yield last) that its yield still needs
    once the values ``replaced`` come from elsewhere, in order."""
    needed = set(ops[-1].operands)
    live = []
    for op in reversed(ops[:-1]):
        if any(r in needed and r not in replaced for r in op.results):
            live.append(op)
            needed.update(op.operands)
    return live[::-1]


def _still_read(b: Generic, pairs: list) -> list[int]:
    """The inputs of ``b`` it still reads once the values of ``pairs`` come
    from elsewhere."""
    ops = list(b.body.operations)
    used = {v for op in _live(ops, {vb for _, vb, _ in pairs}) + ops[-1:] for v in op.operands}
    return [k for k, arg in enumerate(list(b.body.arguments)[: len(b.inputs)]) if arg in used]


def _kept_candidate(ops: list[ir.Operation], j: int, nests: _Nests) -> tuple | None:
    """An earlier generic that may keep what ``ops[j]`` (all parallel)
    computes with a call in a new buffer (first rewrite), and the pairs;
    None where there is none."""
    b = nests[ops[j]]
    if b.g.reduction:
        return None
    for i in range(j - 1, -1, -1):
        if ops[i].name != "linalg.generic":
            continue
        a = nests[ops[i]]
        if len(a.g.iterators) != len(b.g.iterators) or not a.g.outputs or not all(_allocated(o) for o in a.g.outputs) or reduced_loop(a.g) is not None:
            continue
        pairs = _shared(a.computed, a.leaves, b)
        read = {leaf.operand for _, _, value_leaves in pairs for leaf in value_leaves}
        between = ops[i + 1 : j]
        if pairs and read.isdisjoint(a.g.outputs) and _unwritten(between, read) and not any(op.results for op in between):
            return a.g, b.g, pairs, between
    return None


def _stored_candidate(ops: list[ir.Operation], j: int, nests: _Nests) -> tuple | None:
    """The pairs by which ``ops[j]`` may read what it computes with a call
    from the output an earlier generic stored it to (second rewrite): where
    no op between the two writes that output or the value's inputs, and it
    then reads no more inputs over every loop than before; None where there
    are none."""
    b = nests[ops[j]]
    for i in range(j - 1, -1, -1):
        if ops[i].name != "linalg.generic":
            continue
        a = nests[ops[i]]
        if len(a.g.iterators) != len(b.g.iterators) or not a.stored:
            continue
        pairs = [p for p in _shared(a.stored, a.leaves, b) if p[0] not in b.g.outputs]
        if not pairs:
            continue
        read = {leaf.operand for _, _, value_leaves in pairs for leaf in value_leaves}
        written = {stored for stored, _, _ in pairs} | read
        if not read.isdisjoint(a.g.outputs) or not all(_writes(op) is not None and written.isdisjoint(_writes(op)) for op in ops[i + 1 : j]):
            continue
        loops = len(b.g.iterators)
        full = sum(_names_every_loop([b.g.maps[k]], loops) for k in _still_read(b.g, pairs)) + len(pairs)
        if full <= sum(_names_every_loop([m], loops) for m in b.g.maps[: len(b.g.inputs)]):
            return b.g, pairs
    return None


class _Nests:
    """The :class:`_Nest` of each generic of a function, made once and
    cached by op; a rewrite drops the ops it erases first (a new op may take
    an erased one's address). The keys of all of them share one numbering."""

    def __init__(self) -> None:
        self.cache: dict = {}
        self.interned: dict = {}

    def __getitem__(self, op: ir.Operation) -> _Nest:
        if op not in self.cache:
            self.cache[op] = _Nest.of(op, self.interned)
        return self.cache[op]

    def drop(self, op: ir.Operation) -> None:
        del self.cache[op]


def share_call_results(function: ir.Operation, keep_in_new_buffers: bool) -> int:
    """Rewrite ``function`` as the module docstring says, each generic in
    turn, until nothing fits: an earlier generic that stores a value a later
    one computes gives it to that one (second rewrite), and with
    ``keep_in_new_buffers`` (a block of rows) an earlier generic keeps such
    a value in a new buffer (first rewrite); how many generics were
    rewritten."""
    block = function.regions[0].blocks[0]
    nests = _Nests()
    rewritten, j = 0, 0
    while True:
        ops = [op.operation for op in block.operations]
        if j >= len(ops):
            return rewritten
        if ops[j].name != "linalg.generic" or not nests[ops[j]].g.outputs:
            j += 1
            continue
        stored = _stored_candidate(ops, j, nests)
        kept = None if stored is not None or not keep_in_new_buffers else _kept_candidate(ops, j, nests)
        if stored is None and kept is None:
            j += 1
            continue
        for g in kept[:2] if kept is not None else stored[:1]:
            nests.drop(g.op)
        new = reread(*stored) if stored is not None else keep(*kept)
        rewritten += 1
        j = [op.operation for op in block.operations].index(new)  # a reread generic may take more


@dataclass
class ShareCallResultsPass(FuserPass):
    NAME = "fuser-share-call-results"
    SUMMARY = "Compute once a function call that two loop nests of a segment both compute."

    def run(self, module: ir.Operation) -> None:
        for function in module.regions[0].blocks[0].operations:
            function = function.operation
            if function.name != "func.func" or not function.regions[0].blocks:
                continue
            row_block = ROW_BLOCK_ATTR in function.attributes
            if row_block or NUM_INPUTS_ATTR in function.attributes:
                share_call_results(function, keep_in_new_buffers=row_block)
