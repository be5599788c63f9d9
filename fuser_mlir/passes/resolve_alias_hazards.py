"""Resolve in-place alias hazards: every read of an input sees its entry value.

Preconditions: ``fuser-segment`` has run (ops carry ``fuser.segment``);
``fuser-outline-segments`` has not. Run it between the two.

Effect: each hazardous in-place store is rewritten (policy ``copy``/``auto``)
or reported (``reject``); safe stores are left as they are.

A ``fuser.store`` into an input argument ``%x`` (an in-place update) is safe
as it stands only when the write cannot overtake a read of ``%x``: every op
that reads ``%x``, directly or through other ops, is a same-shape pointwise op
(or cast/set) in the writer's segment whose results flow only into that store.
Then each element is read by the thread (loop iteration) that writes it, before
it writes it, and no other kernel reads ``%x``. Anything else is a hazard:

* cross-segment: another segment reads ``%x`` (it may run after the writer);
* intra-kernel: ``%x`` is read through a broadcast, reduction, permute or
  reshape, or feeds another result of the writer's kernel.

Policies (``policy=auto|copy|reject``, default ``auto``):

* ``copy`` (and ``auto``): the value is computed into a temporary instead, and
  a trailing segment of its own copies it into ``%x`` after every other kernel
  ran. The result is the SSA semantics, whatever the segmentation.
* ``reject``: fail with a diagnostic at the store that names the write, the
  read, and the op defining the stored value, with their locations.

No hazard, nothing added: a same-index pointwise update stays one kernel.
(``reorder``, which would order reader segments before the writer instead of
copying, is not implemented yet; ``auto`` copies.)

    %r = "fuser.permute"(%x) {dims = array<i64: 1, 0>, fuser.segment = 0}
    %s = "fuser.store"(%r, %x) {fuser.segment = 0}
    ==>
    %r = "fuser.permute"(%x) {dims = array<i64: 1, 0>, fuser.segment = 0}
    %c = "fuser.set"(%r) {fuser.segment = 1}
    %s = "fuser.store"(%c, %x) {fuser.segment = 1}
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import SEGMENT_ATTR, arg_number, body, fusion_functions, num_inputs, segment_of
from fuser_mlir.dialect import ops as O
from fuser_mlir.pipeline import format_location
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label

POLICIES = ("auto", "copy", "reject")
_SAME_INDEX = frozenset(O.POINTWISE | {"cast", "set"})


@dataclass
class Hazard:
    """Why an in-place store into an input is unsafe as it stands."""

    store: ir.Operation
    read: ir.Operation
    reason: str


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner for use in value.uses]


def _cone(x: ir.Value, store: ir.Operation) -> list[ir.Operation]:
    """Every op that reads ``x`` directly or through other ops, but the store."""
    seen: list[ir.Operation] = []
    work = [op for op in _users(x) if op != store]
    while work:
        op = work.pop()
        if op in seen:
            continue
        seen.append(op)
        for result in op.results:
            work.extend(u for u in _users(result) if u != store)
    return seen


def find_hazard(store: ir.Operation) -> Hazard | None:
    """The first reason the in-place ``store`` (into an input) is unsafe, or None."""
    x = store.operands[1]
    segment = segment_of(store)
    for op in _cone(x, store):
        name = O.short_name(op.name)
        if op.name == "func.return":
            continue
        if segment_of(op) != segment:
            return Hazard(store, op, f"segment {segment_of(op)} reads it, and segment {segment} writes it")
        if name not in _SAME_INDEX or op.results[0].type != x.type:
            return Hazard(store, op, "the writing kernel reads it at other indices")
        escapes = [u for r in op.results for u in _users(r) if u != store and O.short_name(u.name) not in _SAME_INDEX]
        if escapes:
            return Hazard(store, op, "the writing kernel also uses it for another result")
    return None


def _reject(hazard: Hazard) -> str:
    store, read = hazard.store, hazard.read
    value = store.operands[0].owner
    defined = f"{op_label(value)} at {format_location(value.location)}" if not isinstance(value, ir.Block) else "a function argument"
    x = arg_number(store.operands[1])
    return (
        f"{op_label(store)} writes input {x} in place, but {op_label(read)} at {format_location(read.location)} reads input {x}'s "
        f"entry value and {hazard.reason}; the stored value is defined by {defined}. "
        "Use policy=copy (or auto) to compute into a temporary and copy afterwards"
    )


def _copy_after_everything(store: ir.Operation, segment: int) -> None:
    """Replace ``store(v, x)`` by ``set(v)`` + ``store(.., x)`` in a trailing segment."""
    terminator = list(store.block.operations)[-1]
    seg_attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), segment)
    value, x = store.operands[0], store.operands[1]
    with ir.InsertionPoint(terminator), store.location:
        copied = O.create("set", [value], value.type, {SEGMENT_ATTR: seg_attr})
        new_store = O.create("store", [copied, x], x.type, {SEGMENT_ATTR: seg_attr})
    store.results[0].replace_all_uses_with(new_store)
    store.erase()


def _writes_input(store: ir.Operation, num_inputs_: int) -> bool:
    position = arg_number(store.operands[1])
    return position is not None and position < num_inputs_


@dataclass
class ResolveAliasHazardsPass(FuserPass):
    NAME = "fuser-resolve-alias-hazards"
    SUMMARY = "Resolve in-place alias hazards: every read of an input sees its entry value."

    policy: str = "auto"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"pass '{self.NAME}' option 'policy' must be one of {', '.join(POLICIES)}, got '{self.policy}'")

    def run(self, module: ir.Operation) -> None:
        failed = False
        for func in fusion_functions(module):
            failed |= self.resolve(func)
        if failed:
            raise PassFailure()

    def resolve(self, func: ir.Operation) -> bool:
        n = num_inputs(func)
        stores = [op.operation for op in body(func).operations if O.short_name(op.operation.name) == "store" and _writes_input(op.operation, n)]
        hazards = [h for h in (find_hazard(s) for s in stores) if h is not None]
        if not hazards:
            return False
        if self.policy == "reject":
            for hazard in hazards:
                emit_error(hazard.store, _reject(hazard))
            return True
        last = max((segment_of(op.operation) for op in body(func).operations if segment_of(op.operation) is not None), default=-1)
        for hazard in hazards:
            _copy_after_everything(hazard.store, last + 1)
        return False
