"""Assign every computing fuser op to a segment (a future kernel).

Preconditions: the module passes ``fuser-verify``. Runs on every public
``func.func`` with ``fuser.num_inputs`` (segment functions are private).

Effect: every fuser op that computes a tensor gets ``fuser.segment = K : i64``;
nothing else changes, but for the pointwise ops that rule 6 computes again
in a later segment (each a clone of its op, placed before its first user
there). *Host ops* get no attribute: ``fuser.empty`` and every
op whose results are all scalars (``fuser.size``, ``fuser.constant``, scalar
arithmetic). ``fuser-outline-segments`` leaves them in the host function and
recomputes them inside the segments that use them. A ``fuser.store`` gets
the segment of the value it stores (except after a ``fuser.segment_set``,
rule 1). Ids are dense, start at 0 and are a topological order: a segment
only reads values of segments with smaller ids. The cut depends on the IR alone, so CPU and GPU
get the same segments.

Cutting rules (an op's result is *post* when it is a reduction of its
segment or computed inside the segment from such a result):

1. ``fuser.segment_set(t)`` stays with the producer of ``t`` (a copy at the
   end of that segment); every consumer of its result is in a later segment,
   a store included: a segment_set right before an output gives a segment
   that only copies, so a chain of N segment_sets is N + 1 segments.
2. A post value may be used in its own segment only by pointwise ops, casts,
   ``fuser.set``/``fuser.segment_set`` and stores whose result has the post value's exact shape
   (other operands may be scalars or tensors that broadcast into it, e.g. a
   bias read at the reduced iteration space), and by the normalization
   pattern (2b). Anything else cuts: a reduction of a reduction, a layout
   op on a reduced value, a broadcast back over outer reduced dims.
   2b. *Normalization*: when the segment's reductions reduce the innermost
   dims (rows), a keepdim row value may be broadcast back over the row by a
   pointwise op whose result has the reduced tensor's sizes
   (``x - max(x, keepdim=True)``), and a reduction of the same domain may
   reduce such values (``sum(exp(x - max))``). A softmax, layer norm or RMS
   norm is then one segment, which the GPU runs as one kernel per row
   block (a persistent normalization) and the CPU as one loop nest per op.
3. A segment has at most one reduction iteration domain: reductions share a
   segment only when they reduce the same dims of inputs of the same shape,
   where a dynamic size counts as the same only if it comes from the same
   dim of the same function argument.
4. ``fuser.copy`` (a snapshot written by the alias-hazard pass) is a segment
   of its own.
5. Layout ops (broadcast_in_dim, permute, reshape) on values that are not
   post stay in the segment of their operands: both the CPU lowering
   (linalg on tensors) and the schedulers take them.

6. *Recomputation*: a full-size value computed by pointwise ops, casts and
   broadcasts that later segments read (several, or one besides its own
   segment, so that it did not move there) is computed again in each later
   segment from what its ops read (function arguments not written in place, host
   values, values of earlier segments), where that reads fewer bytes than
   writing the value and reading it back: a softmax over outer dims
   (``e = exp(x - max(x, [0]))`` summed in one segment and divided in the
   next) reads ``x`` twice and writes nothing but its output, where it wrote
   ``e`` and read it back. Ops that nothing reads any more are erased.

Not modelled yet: ops a target scheduler cannot take. Such constraints belong in ``_Assigner.can_join``,
and must stay target-independent unless a scheduler difference requires
otherwise.

Placement: ops are visited in program order and each goes to the lowest
segment its operands and the rules allow (a new segment when none does), so
the number of segments is what the rules force on that order. Then ops that
are not post, and whose only consumers sit in one later segment, move there
together with their single-use producers from the same segment (e.g. a
``broadcast_in_dim`` of a weight written at the top of a layer norm); a move
is made only when it makes no other value cross a segment boundary.

Hazards between in-place writes and reads are not considered here:
``fuser-resolve-alias-hazards`` runs after this pass and before
``fuser-outline-segments``.

    %m = "fuser.max"(%x) {dims = array<i64: 0>, keepdim = true}     (a column max)
    %d = "fuser.sub"(%x, %m)
    %e = "fuser.exp"(%d)
    ==>
    %m = "fuser.max"(%x) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
    %d = "fuser.sub"(%x, %m) {fuser.segment = 1 : i64}
    %e = "fuser.exp"(%d) {fuser.segment = 1 : i64}

(with ``dims = [1]``, a row max, rule 2b keeps all three in segment 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import (
    SEGMENT_ATTR,
    body,
    defining_op,
    fusion_functions,
    is_host_op,
    size_source,
)
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label

#: Ops that may consume a post value inside its own segment (rule 2).
_POST_CONSUMERS = frozenset(O.POINTWISE | {"cast", "set", "segment_set"})
#: Ops that never move to a later segment after placement.
_PINNED = frozenset(O.REDUCTIONS | O.DESTINATION_WRITES | {"segment_set"})
#: Ops a later segment may compute again from what they read (rule 6).
_RECOMPUTABLE = frozenset(O.POINTWISE | {"cast", "broadcast_in_dim"})


@dataclass
class _Segment:
    """What placement has to know about one segment."""

    domain: tuple | None = None  # the reduction iteration domain (rule 3)
    exclusive: bool = False  # a fuser.copy step (rule 4)


def _sizes(value: ir.Value) -> tuple:
    """Where each dim's size of a tensor value comes from."""
    return tuple(size_source(value, d) for d in range(T.rank(value.type))) if T.is_tensor(value.type) else ()


def _inner(domain: tuple) -> bool:
    """Whether a reduction domain reduces the innermost dims (a suffix)."""
    sizes, dims = domain
    return bool(dims) and sorted(dims) == list(range(len(sizes) - len(dims), len(sizes)))


def reduction_domain(op: ir.Operation) -> tuple:
    """The iteration domain of a reduction: its operand's sizes (static, or
    where each dynamic size comes from) and the reduced dims."""
    return (_sizes(op.operands[0]), tuple(ir.DenseI64ArrayAttr(op.attributes["dims"])))


@dataclass
class _Assigner:
    """Places the segment ops of one function (see the module docstring)."""

    ops: list[ir.Operation]
    seg: dict[ir.Operation, int] = field(default_factory=dict)
    post: set[ir.Value] = field(default_factory=set)
    segments: list[_Segment] = field(default_factory=list)

    def producer(self, value: ir.Value) -> ir.Operation | None:
        """The segment op that defines ``value`` (``None``: argument or host op)."""
        op = defining_op(value)
        return op if op is not None and op in self.seg else None

    def state(self, k: int) -> _Segment:
        while len(self.segments) <= k:
            self.segments.append(_Segment())
        return self.segments[k]

    def earliest(self, op: ir.Operation, reads: list[ir.Value]) -> int:
        """The lowest segment the dependencies of ``op`` allow (rule 1 included)."""
        lowest = 0
        for value in reads:
            p = self.producer(value)
            if p is None:
                continue
            cut = 1 if O.short_name(p.name) == "segment_set" else 0
            lowest = max(lowest, self.seg[p] + cut)
        return lowest

    def post_operands(self, reads: list[ir.Value], k: int) -> list[ir.Value]:
        return [v for v in reads if v in self.post and self.seg[self.producer(v)] == k]

    def can_join(self, op: ir.Operation, name: str, reads: list[ir.Value], k: int) -> bool:
        """Whether ``op`` may go into segment ``k`` (rules 2-4)."""
        state = self.state(k)
        if state.exclusive:
            return False
        for value in self.post_operands(reads, k):
            if self.normalization(op, name, value, state):
                continue
            if name not in _POST_CONSUMERS or T.shape(op.results[0].type) != T.shape(value.type):
                return False
        if name in O.REDUCTIONS and state.domain is not None:
            return state.domain == reduction_domain(op)
        return True

    def normalization(self, op: ir.Operation, name: str, value: ir.Value, state: _Segment) -> bool:
        """Rule 2b: in a segment whose reductions reduce the innermost dims,
        a post value may come back to the full iteration space: a pointwise
        op or cast with a result of the reduced tensor's sizes may read it
        (a keepdim row value broadcasts over the row), and a reduction of the
        segment's domain may read such full-size post values."""
        if state.domain is None or not _inner(state.domain):
            return False
        sizes, dims = state.domain
        if name in O.REDUCTIONS:
            return reduction_domain(op) == state.domain and _sizes(value) == sizes
        if name not in _POST_CONSUMERS or _sizes(op.results[0]) != sizes:
            return False
        row = tuple(("static", 1) if d in dims else size for d, size in enumerate(sizes))
        return _sizes(value) in (sizes, row)

    def assign(self, op: ir.Operation, k: int, reads: list[ir.Value]) -> None:
        self.seg[op] = k
        name = O.short_name(op.name)
        if name in O.REDUCTIONS:
            self.state(k).domain = reduction_domain(op)
        if name in O.REDUCTIONS or self.post_operands(reads, k):
            self.post.update(op.results)

    def place(self, op: ir.Operation) -> None:
        name = O.short_name(op.name)
        reads = list(op.operands)[:1] if name in O.DESTINATION_WRITES else list(op.operands)
        if name == "store" and self.stored_with(reads[0]) is not None:
            self.assign(op, self.seg[self.stored_with(reads[0])], reads)
            return
        k = self.earliest(op, reads)
        if name == "copy":
            k = max(k, len(self.segments))
            self.state(k).exclusive = True
            self.assign(op, k, reads)
            return
        while not self.can_join(op, name, reads, k):
            k += 1
        self.assign(op, k, reads)

    # -- moving ops next to their consumers ----------------------------------

    def users(self, op: ir.Operation) -> list[ir.Operation]:
        """The segment ops that use a result of ``op``, stores excluded."""
        out = []
        for result in op.results:
            for use in result.uses:
                user = use.owner.operation
                if user in self.seg and O.short_name(user.name) != "store":
                    out.append(user)
        return out

    def movable(self, op: ir.Operation) -> bool:
        return O.short_name(op.name) not in _PINNED and not any(r in self.post for r in op.results)

    def group(self, op: ir.Operation, target: int) -> list[ir.Operation] | None:
        """``op`` and the producers in its segment that must move with it to
        ``target`` so that no new value crosses a boundary; ``None`` if some
        producer cannot move (it has consumers elsewhere, or is pinned)."""
        home = self.seg[op]
        members: dict[ir.Operation, None] = {op: None}
        stack = [op]
        while stack:
            current = stack.pop()
            for value in current.operands:
                p = self.producer(value)
                if p is None or self.seg[p] != home or p in members:
                    continue
                if not self.movable(p):
                    return None
                members[p] = None
                stack.append(p)
        for member in members:
            for user in self.users(member):
                if user not in members and self.seg[user] != target:
                    return None
        return list(members)

    def sink(self) -> None:
        """Move ops to the one later segment that consumes them (see module doc)."""
        for op in reversed(self.ops):
            if op not in self.seg or not self.movable(op):
                continue
            users = self.users(op)
            targets = {self.seg[u] for u in users}
            if len(targets) != 1:
                continue
            target = targets.pop()
            if target <= self.seg[op] or self.segments[target].exclusive:
                continue
            members = self.group(op, target)
            for member in members or ():
                self.seg[member] = target

    # -- computing values again in later segments (rule 6) ----------------------

    def recompute(self) -> None:
        """Rule 6: clone the pointwise producers of values that later
        segments read into those segments, where that moves fewer bytes."""
        written = _written_arguments(self.ops)
        for op in list(self.ops):
            if op not in self.seg or O.short_name(op.name) not in _RECOMPUTABLE or not self.movable(op) or len(op.results) != 1:
                continue
            value, home = op.results[0], self.seg[op]
            later: dict[int, list] = {}  # segment -> (user, operand index) of each later use
            stays = False  # a use that keeps the value written: a store, an op outside the segments
            for use in value.uses:
                user = use.owner.operation
                if user not in self.seg or O.short_name(user.name) == "store":
                    stays = True
                elif self.seg[user] > home:
                    later.setdefault(self.seg[user], []).append((user, use.operand_number))
            if not later:
                continue
            members = self.recomputable_slice(op, home, written)
            if members is None:
                continue
            leaves = {v for m in members for v in m.operands if defining_op(v) not in members}
            if not self.recompute_pays(value, leaves, later, stays):
                continue
            ordered = [m for m in self.ops if m in members]
            for k, uses in later.items():
                self.clone_into(k, ordered, uses)
            self.erase_unused(ordered)

    def recomputable_slice(self, op: ir.Operation, home: int, written: set) -> set | None:
        """``op`` and its producers in segment ``home`` through recomputable
        ops; None where one reads a value that only that segment has (a
        reduction's, a post value) or a function argument written in place."""
        members, stack = set(), [op]
        while stack:
            current = stack.pop()
            if current in members:
                continue
            members.add(current)
            for value in current.operands:
                p = self.producer(value)
                if p is None:
                    if not isinstance(value.owner, ir.Block) or ir.BlockArgument(value).arg_number not in written:
                        continue  # a host value or an argument read as it is
                    return None
                if self.seg[p] != home:
                    continue  # written by an earlier segment anyway
                if O.short_name(p.name) not in _RECOMPUTABLE or not self.movable(p) or len(p.results) != 1:
                    return None
                stack.append(p)
        return members

    def recompute_pays(self, value: ir.Value, leaves: set, later: dict, stays: bool) -> bool:
        """Whether the later segments read fewer bytes computing ``value``
        from ``leaves`` than ``value``'s own write and reads: per segment,
        the full-size leaves it does not read yet against one read of the
        value, and the write once nothing else needs it."""
        cost = 0
        for k in later:
            read = {v for v in leaves if any(use.owner.operation in self.seg and self.seg[use.owner.operation] == k for use in v.uses)}
            cost += sum(_bits(v) for v in leaves - read if not _smaller(v, value))
        saving = _bits(value) * len(later) + (0 if stays else _bits(value))
        return cost < saving

    def clone_into(self, k: int, members: list, uses: list) -> None:
        """Clones of ``members`` (program order) in segment ``k``, before its
        first user of their value, which ``uses`` then read."""
        first = min((user for user, _ in uses), key=self.ops.index)
        copies: dict = {}
        at = self.ops.index(first)
        for member in members:
            clone = member.clone(ip=ir.InsertionPoint(first))
            for i, operand in enumerate(member.operands):
                if operand in copies:
                    clone.operands[i] = copies[operand]
            copies[member.results[0]] = clone.results[0]
            self.seg[clone] = k
            self.ops.insert(at, clone)
            at += 1
        for user, index in uses:
            self.set_operand(user, index, copies[members[-1].results[0]])

    def set_operand(self, op: ir.Operation, index: int, value: ir.Value) -> None:
        """``op``'s operand ``index`` set to ``value``, ``op`` keyed again in
        ``seg``: the bindings hash an operation by its operands and attributes
        (equality stays identity), so a key changed in place is lost to lookups."""
        k = self.seg.pop(op)
        op.operands[index] = value
        self.seg[op] = k

    def erase_unused(self, members: list) -> None:
        """Erase those of ``members`` (program order) that nothing reads any
        more: a value whose own segment did not read it lives on in its
        clones alone."""
        for member in reversed(members):
            if all(not list(result.uses) for result in member.results):
                del self.seg[member]
                self.ops.remove(member)
                member.erase()

    def stored_with(self, value: ir.Value) -> ir.Operation | None:
        """The op whose segment a store of ``value`` joins: the producer,
        unless it is a segment_set (rule 1 cuts before every consumer)."""
        p = self.producer(value)
        if p is None or O.short_name(p.name) == "segment_set":
            return None
        return p

    def follow_values(self) -> None:
        """Stores go where the value they store is computed."""
        for op in self.ops:
            if O.short_name(op.name) != "store":
                continue
            p = self.stored_with(op.operands[0])
            if p is not None:
                self.seg[op] = self.seg[p]

    def dense_ids(self) -> dict[ir.Operation, int]:
        """The assignment with ids renumbered 0, 1, ... in order."""
        used = sorted(set(self.seg.values()))
        renumber = {k: i for i, k in enumerate(used)}
        return {op: renumber[k] for op, k in self.seg.items()}


def _written_arguments(ops: list[ir.Operation]) -> set[int]:
    """The function arguments a store or copy writes (in place)."""
    written = set()
    for op in ops:
        if O.short_name(op.name) in O.DESTINATION_WRITES:
            for value in list(op.operands)[1:]:
                if isinstance(value.owner, ir.Block):
                    written.add(ir.BlockArgument(value).arg_number)
    return written


def _bits(value: ir.Value) -> int:
    """The bits of one element of a tensor value."""
    element = T.element_type(value.type)
    return ir.FloatType(element).width if isinstance(element, ir.FloatType) else ir.IntegerType(element).width


def _smaller(leaf: ir.Value, value: ir.Value) -> bool:
    """Whether ``leaf`` has fewer elements than ``value`` by its type: a
    scalar, a lower rank, or a dim of one where ``value``'s is not."""
    if not T.is_tensor(leaf.type):
        return True
    small, full = T.shape(leaf.type), T.shape(value.type)
    return len(small) < len(full) or any(a == 1 and b != 1 for a, b in zip(small, full))


def segment_ops(func: ir.Operation) -> list[ir.Operation]:
    """The fuser ops of ``func`` that belong to a segment, in program order."""
    ops = []
    for op in body(func).operations:
        op = op.operation
        if O.short_name(op.name) is not None and not is_host_op(op):
            ops.append(op)
    return ops


def check_supported(func: ir.Operation) -> None:
    """Fail at the first op of another dialect. Only ``func.return`` and the
    ``func.call``s of a host that was already outlined (nothing to place) may
    appear."""
    for op in body(func).operations:
        op = op.operation
        if O.short_name(op.name) is None and op.name not in ("func.return", "func.call"):
            emit_error(op, f"{op_label(op)} is not a fuser op; fuser-segment only places fuser ops into segments (lower it after outlining, or express it with fuser ops)")
            raise PassFailure()


def assign_segments(func: ir.Operation) -> dict[ir.Operation, int]:
    """The segment of every segment op of ``func``."""
    assigner = _Assigner(ops=segment_ops(func))
    for op in assigner.ops:
        assigner.place(op)
    assigner.sink()
    assigner.recompute()
    assigner.follow_values()
    return assigner.dense_ids()


def annotate(assignment: dict[ir.Operation, int]) -> None:
    i64 = ir.IntegerType.get_signless(64)
    for op, k in assignment.items():
        op.attributes[SEGMENT_ATTR] = ir.IntegerAttr.get(i64, k)


@dataclass
class SegmentPass(FuserPass):
    NAME = "fuser-segment"
    SUMMARY = "Assign every computing fuser op to a segment (a future kernel)."

    def run(self, module: ir.Operation) -> None:
        for func in fusion_functions(module):
            check_supported(func)
            annotate(assign_segments(func))
