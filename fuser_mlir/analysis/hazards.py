"""In-place alias hazards: where a write into an input can overtake a read.

A ``fuser.store`` into an input argument ``%x`` (an in-place update) in
segment ``W`` is hazard-free when no read of ``%x``'s entry value can run
after the write:

* **cross-segment**: an op of a segment that runs after ``W`` (a higher
  segment id: the host calls segments in id order) reads ``%x``;
* **intra-kernel**: inside ``W``, ``%x`` is read through an op that is not a
  same-index pointwise op of ``%x``'s type (a broadcast, reduction, permute,
  reshape), or a value computed from ``%x`` in ``W`` is also stored into
  another buffer by ``W`` (a second loop of the kernel could read ``%x``
  after the first wrote it), or is read by a later segment: outlining
  stores it into a buffer of its own, another loop of ``W`` that may run
  after the write (the CPU's did: ``t = x * 0.5`` read by a later segment
  and ``t * t`` stored into ``x`` gave that segment ``(t * t) * 0.5``).
  The stored value itself may be read later: it is read back from ``%x``.

:func:`movable_reason` says whether the store's *exclusive cone* (the ops of
``W`` that only feed this store) can move to a segment of its own after every
other segment, which resolves any hazard without an extra buffer: the moved
ops read ``%x`` same-index, in the kernel that writes it.

These functions hold ``ir`` handles: use them inside one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import arg_number, segment_of
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.pipeline import format_location

#: Ops that read element i of their tensor operands to produce element i.
SAME_INDEX = frozenset(O.POINTWISE | {"cast", "set"})


@dataclass
class Hazard:
    """One way the in-place ``store`` can overtake a read of its input."""

    kind: str  # "cross-segment" | "intra-kernel"
    store: ir.Operation
    read: ir.Operation
    detail: str

    @property
    def input_index(self) -> int:
        return arg_number(self.store.operands[1])

    def describe(self) -> str:
        """In words a user can act on, with the read's location."""
        return f"{self.kind}: '{self.read.name}' at {format_location(self.read.location)} {self.detail}"


def writes_input(store: ir.Operation, num_inputs: int) -> bool:
    """Whether ``store`` (a ``fuser.store``) writes into an input argument."""
    position = arg_number(store.operands[1])
    return position is not None and position < num_inputs


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner for use in value.uses]


def _is_store(op: ir.Operation) -> bool:
    return O.short_name(op.name) == "store"


def _same_index(op: ir.Operation, x: ir.Value) -> bool:
    """Whether ``op`` computes element i of its result from element i of ``x``
    (a pointwise op, cast or copy over ``x``'s iteration space; the dtype may
    change)."""
    return O.short_name(op.name) in SAME_INDEX and T.shape(op.results[0].type) == T.shape(x.type)


def find_hazards(store: ir.Operation) -> list[Hazard]:
    """Every hazard of the in-place ``store``; empty when it is safe as it stands."""
    x = store.operands[1]
    writer = segment_of(store)
    hazards: list[Hazard] = []
    for op in _users(x):
        if op == store or op.name == "func.return":
            continue
        reader = segment_of(op)
        if reader is not None and writer is not None and reader > writer:
            hazards.append(Hazard("cross-segment", store, op, f"in segment {reader} reads the entry value after segment {writer} writes it"))
    seen: list[ir.Operation] = []
    work = [op for op in _users(x) if op != store and segment_of(op) == writer]
    while work:
        op = work.pop()
        if op in seen or op.name == "func.return":
            continue
        seen.append(op)
        if not _same_index(op, x):
            hazards.append(Hazard("intra-kernel", store, op, f"reads it at other indices in segment {writer}, which writes it"))
            continue
        readers = {segment_of(u) for u in _users(op.results[0]) if u.name != "func.return"} - {None, writer}
        if readers and op.results[0] != store.operands[0]:
            hazards.append(Hazard("intra-kernel", store, op, f"computes a value from it in segment {writer}, which writes it, and segment {min(readers)} reads that value"))
        for user in _users(op.results[0]):
            if user == store or segment_of(user) != writer:
                continue
            if _is_store(user):
                hazards.append(Hazard("intra-kernel", store, user, f"stores another value computed from it in segment {writer}, which writes it"))
            else:
                work.append(user)
    return hazards


def exclusive_cone(store: ir.Operation) -> list[ir.Operation]:
    """The ops of the store's segment whose results feed only this store
    (directly or through each other), in program order; empty when the stored
    value is an argument or also used elsewhere."""
    writer = segment_of(store)
    cone: list[ir.Operation] = []
    work = [store.operands[0]]
    while work:
        value = work.pop()
        op = value.owner
        if isinstance(op, ir.Block) or op in cone or segment_of(op) != writer:
            continue
        if any(user != store and user not in cone for r in op.results for user in _users(r)):
            continue
        cone.append(op)
        work.extend(op.operands)
    block = store.block
    order = {op.operation: i for i, op in enumerate(block.operations)}
    return sorted(cone, key=lambda op: order[op])


def movable_reason(store: ir.Operation, cone: list[ir.Operation], aliased: set[int]) -> str | None:
    """Why the store with its exclusive ``cone`` cannot move to a trailing
    segment of its own, or None when it can. ``aliased`` holds every input
    index some store writes."""
    if not cone:
        return "the stored value is not computed by ops that feed only this store"
    x = store.operands[1]
    target = arg_number(x)
    derived: list[ir.Value] = [x]  # x and what the cone computes from it
    for op in cone:
        for operand in op.operands:
            index = arg_number(operand)
            if index is not None and index != target and index in aliased:
                return f"'{op.name}' at {format_location(op.location)} reads input {index}, which is also updated in place"
        if not any(operand in derived for operand in op.operands):
            continue
        if not _same_index(op, x):
            return f"'{op.name}' at {format_location(op.location)} reads the input at other indices"
        derived.extend(op.results)
    return None
