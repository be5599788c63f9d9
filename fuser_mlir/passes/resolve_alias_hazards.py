"""Resolve in-place alias hazards: every read of an input sees its entry value.

Preconditions: ``fuser-segment`` has run (ops carry ``fuser.segment``);
``fuser-outline-segments`` has not. Run it between the two.

Effect: every in-place store that :func:`~fuser_mlir.analysis.hazards.find_hazards`
flags (a later segment reads the input, or the writing kernel reads it at
other indices) is resolved per ``policy`` and annotated with
``fuser.alias_resolution`` (``"reorder"`` or ``"copy"``) and
``fuser.alias_report`` (the hazard and its fix in words). Safe stores stay as
they are: a same-index pointwise update is one kernel with no copy.

Policies (``policy=auto|reorder|copy|reject``, default ``auto``):

* ``reorder``: the ops that compute only this update move, with the store, to
  a segment of their own after every other segment; they read the input
  same-index in the kernel that writes it. No extra buffer, no copy. Fails
  with a diagnostic when the update cannot move (it reads the input at other
  indices, or reads another input updated in place).
* ``copy``: the update is computed into a temporary where it was, and a
  trailing segment copies it into the input after every other kernel.
* ``auto``: reorder where the update can move, else copy.
* ``reject``: fail with a diagnostic at the store naming the write, the read
  and the op defining the stored value, with locations.

    %r = "fuser.relu"(%x) {fuser.segment = 0}
    %s = "fuser.store"(%r, %x) {fuser.segment = 0}
    %b = "fuser.broadcast_in_dim"(%x) {..., fuser.segment = 0}
    ==> (auto: reorder)
    %r = "fuser.relu"(%x) {fuser.segment = 1}
    %s = "fuser.store"(%r, %x) {fuser.alias_resolution = "reorder", fuser.segment = 1, ...}
    %b = "fuser.broadcast_in_dim"(%x) {..., fuser.segment = 0}
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.hazards import Hazard, exclusive_cone, find_hazards, movable_reason, writes_input
from fuser_mlir.analysis.segments import SEGMENT_ATTR, arg_number, body, fusion_functions, num_inputs, segment_of
from fuser_mlir.dialect import ops as O
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label
from fuser_mlir.pipeline import format_location

POLICIES = ("auto", "reorder", "copy", "reject")
#: How each policy that may refuse ends its diagnostics: the fix, in the pass's option. ``compile_fusion``
#: knows a refusal by it, takes it off and names ``hazard_policy`` instead.
FIXES = {"reject": ". Use policy=auto to reorder or copy", "reorder": "; use policy=copy or auto"}
RESOLUTION_ATTR = "fuser.alias_resolution"
REPORT_ATTR = "fuser.alias_report"


def in_place_stores(func: ir.Operation) -> list[ir.Operation]:
    """The stores of ``func`` that write into one of its inputs."""
    n = num_inputs(func)
    return [op.operation for op in body(func).operations if O.short_name(op.operation.name) == "store" and writes_input(op.operation, n)]


def _segment_attr(segment: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), segment)


def _reject_message(hazard: Hazard) -> str:
    store, read = hazard.store, hazard.read
    value = store.operands[0].owner
    defined = "a function argument" if isinstance(value, ir.Block) else f"{op_label(value)} at {format_location(value.location)}"
    x = hazard.input_index
    return (
        f"{op_label(store)} writes input {x} in place, but {op_label(read)} at {format_location(read.location)} "
        f"reads input {x}'s entry value ({hazard.kind}: it {hazard.detail}); the stored value is defined by {defined}{FIXES['reject']}"
    )


def _report(hazards: list[Hazard], fix: str) -> str:
    store = hazards[0].store
    found = "; ".join(h.describe() for h in hazards)
    return f"input {hazards[0].input_index} is updated in place by the store at {format_location(store.location)}; {found}; {fix}"


def _annotate(store: ir.Operation, resolution: str, report: str) -> None:
    store.attributes[RESOLUTION_ATTR] = ir.StringAttr.get(resolution)
    store.attributes[REPORT_ATTR] = ir.StringAttr.get(report)


def move_to_segment(store: ir.Operation, cone: list[ir.Operation], segment: int) -> None:
    """Put ``store`` and its exclusive ``cone`` into ``segment``."""
    for op in [*cone, store]:
        op.attributes[SEGMENT_ATTR] = _segment_attr(segment)


def copy_in_segment(store: ir.Operation, segment: int) -> ir.Operation:
    """Replace ``store(v, x)`` by ``store(set(v), x)`` in ``segment`` (placed
    before the terminator); ``v`` becomes an intermediate. Returns the new store."""
    terminator = list(store.block.operations)[-1]
    value, x = store.operands[0], store.operands[1]
    attrs = {SEGMENT_ATTR: _segment_attr(segment)}
    with ir.InsertionPoint(terminator), store.location:
        copied = O.create("set", [value], value.type, attrs)
        new_store = O.create("store", [copied, x], x.type, attrs).owner
    store.results[0].replace_all_uses_with(new_store.results[0])
    store.erase()
    return new_store


def resolutions(module: ir.Operation) -> list[tuple[int, str, str]]:
    """``(input index, "reorder"|"copy", report)`` for every store this pass
    resolved, read back from its annotations (in program order)."""
    found = []
    for func in fusion_functions(module):
        for store in in_place_stores(func):
            if RESOLUTION_ATTR not in store.attributes:
                continue
            resolution = ir.StringAttr(store.attributes[RESOLUTION_ATTR]).value
            found.append((arg_number(store.operands[1]), resolution, ir.StringAttr(store.attributes[REPORT_ATTR]).value))
    return found


def _snapshot_arguments(func: ir.Operation, stores: list[ir.Operation]) -> int:
    """For copies of an argument (``store(%y, %x)``), snapshot ``%y`` in a new
    first segment, before any kernel can write it in place, and store the
    snapshot instead. Returns how far the other segments moved (1 or 0)."""
    arguments = [s for s in stores if isinstance(s.operands[0].owner, ir.Block)]
    if not arguments:
        return 0
    ops = [op.operation for op in body(func).operations]
    for op in ops:
        segment = segment_of(op)
        if segment is not None:
            op.attributes[SEGMENT_ATTR] = _segment_attr(segment + 1)
    with ir.InsertionPoint(ops[0]):
        for store in arguments:
            value = store.operands[0]
            with store.location:
                snapshot = O.create("set", [value], value.type, {SEGMENT_ATTR: _segment_attr(0)})
            store.operands[0] = snapshot
    return 1


@dataclass
class ResolveAliasHazardsPass(FuserPass):
    NAME = "fuser-resolve-alias-hazards"
    SUMMARY = "Resolve in-place alias hazards: every read of an input sees its entry value."

    policy: str = "auto"  # one of POLICIES

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
        """Resolve the hazards of one function; True when it reported errors."""
        stores = in_place_stores(func)
        found = [(store, find_hazards(store)) for store in stores]
        found = [(store, hazards) for store, hazards in found if hazards]
        if not found:
            return False
        if self.policy == "reject":
            for _, hazards in found:
                emit_error(hazards[0].store, _reject_message(hazards[0]))
            return True
        aliased = {arg_number(s.operands[1]) for s in stores}
        segments = [segment_of(op.operation) for op in body(func).operations]
        next_segment = max((s for s in segments if s is not None), default=-1) + 1
        to_copy: list[tuple[ir.Operation, list[Hazard]]] = []
        failed = False
        for store, hazards in found:
            cone = exclusive_cone(store)
            reason = "policy=copy" if self.policy == "copy" else movable_reason(store, cone, aliased)
            if reason is None:
                move_to_segment(store, cone, next_segment)
                _annotate(store, "reorder", _report(hazards, f"resolved by moving the update into segment {next_segment}, after every reader"))
                next_segment += 1
            elif self.policy == "reorder":
                emit_error(store, f"{op_label(store)} cannot be reordered after the reads of input {hazards[0].input_index}: {reason}{FIXES['reorder']}")
                failed = True
            else:
                to_copy.append((store, hazards))
        if any(isinstance(store.operands[0].owner, ir.Block) for store, _ in to_copy):
            next_segment += _snapshot_arguments(func, [store for store, _ in to_copy])
        # Every report before the first copy: copy_in_segment erases its store,
        # which another store's hazards may name (the store of a value computed
        # from its input), and describing an erased op reads freed memory.
        reports = [
            _report(hazards, f"resolved by computing the update into a temporary and copying it into input {hazards[0].input_index} in segment {next_segment}")
            for _, hazards in to_copy
        ]
        for (store, _), report in zip(to_copy, reports):
            _annotate(copy_in_segment(store, next_segment), "copy", report)
        return failed
