"""Move each segment into a private function; the host calls them in order.

Preconditions: ``fuser-segment`` ran (every computing op has
``fuser.segment``). When the fusion writes into an input, run
``fuser-resolve-alias-hazards`` before this pass: outlining keeps the segment
order and does not look for a segment that writes an input which a later
segment still reads.

Effect, for every public fusion function ``@f``:

* Segment ``K`` becomes ``func.func private @f_segK(%in..., %dest...) ->
  (tensors) attributes {fuser.num_inputs = k : i64}``. The inputs are the
  values it reads from outside: function arguments (by position), then
  results of earlier segments (in order of first use). Its ops are copied in
  program order, without ``fuser.segment``; the host scalar ops they use
  (constants, ``fuser.size`` of an argument, scalar arithmetic) are recomputed
  inside, so a segment's scalar inputs are always scalar function arguments. There is one destination per store of the segment
  (in program order), then one per other value a later segment or the host
  reads, in program order, each written by a ``fuser.store`` appended at the
  end. The function returns the store results, one per destination.
* The host keeps its scalar ops (``fuser.size`` of arguments, ``i64``
  arithmetic) and ``fuser.empty``s, gets one ``fuser.empty`` per
  intermediate (sizes computed from argument sizes), then one ``func.call``
  per segment in id order, and returns the call results that hold the
  original return values. A store's destination (a ``fuser.empty``, a
  destination argument, or an input for an in-place update) is passed
  straight to the call as its destination operand: no staging buffer and no
  host-level copy. A value that is both stored and read by a later segment
  is read back from the output buffer. Every ``fuser.size`` left in the host
  reads a function argument. Host scalar ops nothing uses any more are erased.

Each segment function passes ``fuser-verify``; ``analysis.segments.describe_host``
reads the host back as plain data.

    func.func @f(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
      %m = "fuser.max"(%x) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
      %d = "fuser.sub"(%x, %m) {fuser.segment = 1 : i64}
      %r = "fuser.store"(%d, %o) {fuser.segment = 1 : i64}
      return %r
    }
    ==>
    func.func @f(%x, %o) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
      %n = "fuser.size"(%x) {dim = 0 : i64}
      %e = "fuser.empty"(%n) : (i64) -> tensor<?x1xf32>
      %m = call @f_seg0(%x, %e)
      %r = call @f_seg1(%x, %m, %o)
      return %r
    }
    func.func private @f_seg0(%x, %e) -> tensor<?x1xf32> attributes {fuser.num_inputs = 1 : i64} {
      %m = "fuser.max"(%x) ...
      %s = "fuser.store"(%m, %e)
      return %s
    }
    func.func private @f_seg1(%x, %m, %o) -> ... attributes {fuser.num_inputs = 2 : i64}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fuser_mlir._mlir import func as func_d
from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import (
    NUM_INPUTS_ATTR,
    SEGMENT_ATTR,
    SegmentInfo,
    arg_number,
    body,
    collect_segments,
    defining_op,
    func_name,
    fusion_functions,
    is_host_op,
    segment_of,
    size_source,
)
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.dialect.ops import create
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label


def _i64_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _fail(op: ir.Operation, message: str) -> None:
    emit_error(op, f"{op_label(op)} {message}")
    raise PassFailure()


def forward_host_sizes(func: ir.Operation) -> None:
    """Make every host ``fuser.size`` read a function argument (or fold it to
    the scalar or constant that defines the size), so the host never needs a
    value that a segment computes."""
    args = list(body(func).arguments)
    for op in list(body(func).operations):
        op = op.operation
        if O.short_name(op.name) != "size" or arg_number(op.operands[0]) is not None:
            continue
        source = size_source(op.operands[0], ir.IntegerAttr(op.attributes["dim"]).value)
        if source is None:
            _fail(op, "reads a size that cannot be traced back to a function argument; the host computes every size from the arguments")
        if source[0] == "arg":
            op.operands[0] = args[source[1]]
            op.attributes["dim"] = _i64_attr(source[2])
            continue
        if source[0] == "static":
            replacement = create("constant", [], ir.IntegerType.get_signless(64), {"value": _i64_attr(source[1])}, loc=op.location, ip=ir.InsertionPoint(op))
        else:
            replacement = source[1]
        op.results[0].replace_all_uses_with(replacement)
        op.erase()


@dataclass
class _Layout:
    """The signature of one segment function and how its results map back."""

    info: SegmentInfo
    outputs: list[ir.Value] = field(default_factory=list)  # escaping values that get a new store
    result_of: dict[ir.Value, int] = field(default_factory=dict)  # original value -> result index
    dest_types: list[ir.Type] = field(default_factory=list)


def plan_layout(info: SegmentInfo) -> _Layout:
    """Destinations: the segment's own writes, then one per escaping value that
    no store of the segment already writes."""
    layout = _Layout(info=info)
    stored: dict[ir.Value, int] = {}
    for i, write in enumerate(info.writes):
        layout.result_of[write.results[0]] = i
        layout.dest_types.append(write.results[0].type)
        if O.short_name(write.name) == "store":
            stored.setdefault(write.operands[0], i)
    for value in info.escaping:
        if value in stored:
            layout.result_of[value] = stored[value]
            continue
        layout.result_of[value] = len(layout.dest_types)
        layout.outputs.append(value)
        layout.dest_types.append(value.type)
    return layout


def build_segment_function(layout: _Layout, name: str, after: ir.Operation) -> ir.Operation:
    """Create ``@name`` after ``after`` with copies of the segment's ops."""
    info = layout.info
    loc = info.ops[0].location
    arg_types = [v.type for v in info.inputs] + layout.dest_types
    ftype = ir.FunctionType.get(arg_types, layout.dest_types)
    with ir.InsertionPoint(after.parent.regions[0].blocks[0]), loc:
        new = func_d.FuncOp(name, ftype, visibility="private")
    new.operation.move_after(after)
    new.attributes[NUM_INPUTS_ATTR] = _i64_attr(len(info.inputs))
    entry = new.add_entry_block()
    params = list(entry.arguments)
    mapping: dict[ir.Value, ir.Value] = dict(zip(info.inputs, params))
    dests = iter(params[len(info.inputs) :])
    results: list[ir.Value] = []
    ordered = sorted([*info.scalar_ops, *info.ops], key=_position_key(info))
    with ir.InsertionPoint(entry):
        for op in ordered:
            clone = op.clone()
            is_write = O.short_name(op.name) in O.DESTINATION_WRITES
            for i, operand in enumerate(op.operands):
                clone.operands[i] = next(dests) if is_write and i == 1 else mapping[operand]
            if SEGMENT_ATTR in clone.attributes:
                del clone.attributes[SEGMENT_ATTR]
            for old, fresh in zip(op.results, clone.results):
                mapping[old] = fresh
            if is_write:
                results.append(clone.results[0])
        for value in layout.outputs:
            results.append(create("store", [mapping[value], next(dests)], value.type, loc=defining_op(value).location))
        func_d.ReturnOp(results, loc=loc)
    return new.operation


def _position_key(info: SegmentInfo):
    block = info.ops[0].block
    positions = {op.operation: i for i, op in enumerate(block.operations)}
    return positions.__getitem__


class _Host:
    """Rewrites one fusion function into the host: sizes, empties, calls."""

    def __init__(self, func: ir.Operation):
        self.func = func
        self.block = body(func)
        self.ret = [op.operation for op in self.block.operations][-1]
        self.args = list(self.block.arguments)
        self.sizes: dict[tuple[int, int], ir.Value] = {}
        self.values: dict[ir.Value, ir.Value] = {}  # original segment value -> host value
        for op in self.block.operations:
            op = op.operation
            if O.short_name(op.name) == "size" and segment_of(op) is None:
                key = (arg_number(op.operands[0]), ir.IntegerAttr(op.attributes["dim"]).value)
                self.sizes.setdefault(key, op.results[0])

    def size(self, value: ir.Value, dim: int) -> ir.Value:
        """A host ``i64`` holding dim ``dim`` of ``value`` at run time."""
        source = size_source(value, dim)
        if source is None:
            _fail(defining_op(value), f"result has a dynamic dim {dim} whose size cannot be traced back to a function argument; the host cannot allocate it")
        if source[0] == "scalar":
            return source[1]
        key = (source[1], source[2])
        if key not in self.sizes:
            attrs = {"dim": _i64_attr(source[2])}
            self.sizes[key] = create("size", [self.args[source[1]]], ir.IntegerType.get_signless(64), attrs, loc=self.func.location, ip=ir.InsertionPoint(self.ret))
        return self.sizes[key]

    def empty(self, value: ir.Value) -> ir.Value:
        """A new host ``fuser.empty`` shaped like ``value``."""
        sizes = [self.size(value, d) for d, s in enumerate(T.shape(value.type)) if s is None]
        return create("empty", sizes, value.type, loc=defining_op(value).location, ip=ir.InsertionPoint(self.ret))

    def host_value(self, value: ir.Value, reader: SegmentInfo) -> ir.Value:
        """What the host passes for an original value a segment reads."""
        if value in self.values:
            return self.values[value]
        producer = defining_op(value)
        if producer is not None and segment_of(producer) is not None:
            _fail(producer, f"is in segment {segment_of(producer)} but segment {reader.id} reads its result; segment ids must be a topological order (run fuser-segment)")
        return value

    def call(self, layout: _Layout, callee: str, new_dests: list[ir.Value]) -> None:
        info = layout.info
        operands = [self.host_value(v, info) for v in info.inputs]
        operands += [self.host_value(w.operands[1], info) for w in info.writes] + new_dests
        call = func_d.CallOp(layout.dest_types, callee, operands, loc=info.ops[0].location, ip=ir.InsertionPoint(self.ret))
        for value, index in layout.result_of.items():
            self.values[value] = call.results[index]

    def finish(self) -> None:
        """Point host uses at call results, erase the segment ops and dead host scalars."""
        for old, new in self.values.items():
            old.replace_all_uses_with(new)
        ops = [op.operation for op in self.block.operations]
        for op in reversed(ops):
            if segment_of(op) is not None:
                op.erase()
        for op in reversed([op.operation for op in self.block.operations]):
            if is_host_op(op) and all(not list(r.uses) for r in op.results):
                op.erase()


def segment_function_name(func: ir.Operation, info: SegmentInfo) -> str:
    return f"{func_name(func)}_seg{info.id}"


def check_names(func: ir.Operation, segments: list[SegmentInfo], taken: set[str]) -> None:
    for info in segments:
        name = segment_function_name(func, info)
        if name in taken:
            _fail(func, f"cannot outline segment {info.id}: the module already has a symbol @{name}")


def outline_function(func: ir.Operation, taken: set[str]) -> None:
    """Outline every segment of one fusion function."""
    segments = collect_segments(func)
    if not segments:
        return
    check_names(func, segments, taken)
    forward_host_sizes(func)
    segments = collect_segments(func)
    layouts = [plan_layout(info) for info in segments]
    host = _Host(func)
    new_dests = [[host.empty(v) for v in layout.outputs] for layout in layouts]
    after = func
    for layout, dests in zip(layouts, new_dests):
        callee = segment_function_name(func, layout.info)
        after = build_segment_function(layout, callee, after)
        host.call(layout, callee, dests)
    host.finish()


@dataclass
class OutlineSegmentsPass(FuserPass):
    NAME = "fuser-outline-segments"
    SUMMARY = "Move each segment into a private function; the host calls them in order."

    def run(self, module: ir.Operation) -> None:
        taken = {func_name(op.operation) for op in module.regions[0].blocks[0].operations if "sym_name" in op.operation.attributes}
        for func in fusion_functions(module):
            outline_function(func, taken)
