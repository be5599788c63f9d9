"""Segments of a fusion: the dependency graph before outlining, the host after.

Two views, one per stage of ``fuser-segment`` → ``fuser-outline-segments``:

* On IR annotated by ``fuser-segment`` (ops carry ``fuser.segment = K : i64``),
  :func:`collect_segments` returns one :class:`SegmentInfo` per segment: its
  ops, the host scalar ops it recomputes (constants, sizes, scalar arithmetic), the values it reads from outside,
  its destination writes, and the values that escape it. ``fuser-outline-segments``
  builds the segment functions from exactly this; the alias-hazard pass can
  ask which segment reads or writes a buffer. These hold ``ir`` handles: use
  them inside one pass, never across ``PassManager.run``.

* On IR outlined by ``fuser-outline-segments``, :func:`describe_host` returns a
  :class:`HostPlan`: plain Python data (no ``ir`` objects) that lists the host
  scalars (size formulas), the buffers the executor allocates, the calls in
  order with their operands, and what the host returns. The launch plan is
  built from it.

The host function after outlining has this shape (and nothing else)::

    func.func @f(%in..., %dest...) -> (...) attributes {fuser.num_inputs = N} {
      %s = "fuser.size"(%in0) {dim = 0 : i64}      // scalars: HostPlan.scalars
      %e = "fuser.empty"(%s)                       // buffers: HostPlan.buffers
      %r:2 = call @f_seg0(%in0, %e, %dest0)       // steps:   HostPlan.steps
      %q = call @f_seg1(%r#0, %in0, ...)
      return %r#1, %q                              // returns: HostPlan.returns
    }

Result ``k`` of a call is destination operand ``k`` of that call after the
segment wrote it: a call never allocates, it fills the buffers it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from fuser_mlir._mlir import ir
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.errors import VerificationError

#: The attribute ``fuser-segment`` puts on every op that a segment computes.
SEGMENT_ATTR = "fuser.segment"
#: The attribute that marks a fusion (or segment) function: its input count.
NUM_INPUTS_ATTR = "fuser.num_inputs"

# -- vocabulary shared by the segmentation passes ----------------------------------


def func_name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value


def num_inputs(func: ir.Operation) -> int:
    return ir.IntegerAttr(func.attributes[NUM_INPUTS_ATTR]).value


def is_private(func: ir.Operation) -> bool:
    if "sym_visibility" not in func.attributes:
        return False
    return ir.StringAttr(func.attributes["sym_visibility"]).value == "private"


def fusion_functions(module: ir.Operation) -> list[ir.Operation]:
    """The public ``func.func``s with ``fuser.num_inputs`` in ``module``.

    Segment functions are private, so the segmentation passes never touch
    the functions they created.
    """
    funcs = []
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "func.func" and NUM_INPUTS_ATTR in op.attributes and not is_private(op):
            funcs.append(op)
    return funcs


def body(func: ir.Operation) -> ir.Block:
    return func.regions[0].blocks[0]


def segment_of(op: ir.Operation) -> int | None:
    """The ``fuser.segment`` of ``op``, or ``None`` for host and non-fuser ops."""
    if SEGMENT_ATTR not in op.attributes:
        return None
    return ir.IntegerAttr(op.attributes[SEGMENT_ATTR]).value


def is_host_op(op: ir.Operation) -> bool:
    """A fuser op that stays in the host function: ``fuser.empty`` and every op
    whose results are all scalars (``fuser.size``, ``fuser.constant``, scalar
    pointwise ops and casts). Every other fuser op belongs to a segment."""
    name = O.short_name(op.name)
    if name is None:
        return False
    if name == "empty":
        return True
    return all(not T.is_tensor(r.type) for r in op.results)


def is_rematerialized(op: ir.Operation) -> bool:
    """A host scalar op that a segment recomputes instead of reading as an
    input: constants, ``fuser.size`` (of a function argument, which becomes a
    segment input) and scalar arithmetic. So a segment's scalar inputs are
    always scalar function arguments. ``fuser.empty`` is never recomputed."""
    return is_host_op(op) and O.short_name(op.name) != "empty"


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op that defines ``value``; ``None`` for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


def arg_number(value: ir.Value) -> int | None:
    """The argument position of ``value``, or ``None`` if an op defines it."""
    if not isinstance(value.owner, ir.Block):
        return None
    return ir.BlockArgument(value).arg_number


# -- where a dynamic size comes from ---------------------------------------------

#: ``("static", n)`` | ``("arg", arg_number, dim)`` | ``("scalar", ir.Value)``.
SizeSource = tuple


def _dense(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _reduction_source_dim(op: ir.Operation, dim: int) -> int:
    """The operand dim that result dim ``dim`` of a reduction comes from."""
    if ir.IntegerAttr(op.attributes["keepdim"]).value:
        return dim
    reduced = set(_dense(op, "dims"))
    kept = [d for d in range(T.rank(op.operands[0].type)) if d not in reduced]
    return kept[dim]


def _dynamic_index(t: ir.Type, dim: int) -> int:
    """How many dynamic dims of ``t`` come before ``dim``."""
    return sum(1 for s in T.shape(t)[:dim] if s is None)


def size_source(value: ir.Value, dim: int) -> SizeSource | None:
    """Where the runtime size of dim ``dim`` of ``value`` comes from.

    Follows the value back through pointwise, layout, reduction and
    destination ops to a static size, a dim of a function argument, or an
    ``i64`` scalar (a ``fuser.reshape`` / ``fuser.empty`` size operand).
    ``None`` when it cannot tell.
    """
    static = T.shape(value.type)[dim]
    if static is not None:
        return ("static", static)
    op = defining_op(value)
    if op is None:
        return ("arg", arg_number(value), dim)
    name = O.short_name(op.name)
    category = O.CATEGORY.get(name) if name is not None else None
    if category in ("unary", "binary", "ternary", "cast", "copy"):
        for operand in op.operands:
            if T.is_tensor(operand.type) and T.shape(operand.type)[dim] is None:
                return size_source(operand, dim)
        return None
    if category == "destination":
        return size_source(op.operands[0], dim)
    if category == "reduction":
        return size_source(op.operands[0], _reduction_source_dim(op, dim))
    if name == "broadcast_in_dim":
        dims = _dense(op, "broadcast_dims")
        return size_source(op.operands[0], dims.index(dim)) if dim in dims else None
    if name == "permute":
        return size_source(op.operands[0], _dense(op, "dims")[dim])
    if name == "reshape":
        return ("scalar", op.operands[1 + _dynamic_index(value.type, dim)])
    if name == "empty":
        return ("scalar", op.operands[_dynamic_index(value.type, dim)])
    return None


# -- the segment graph of an annotated function -------------------------------------


@dataclass
class SegmentInfo:
    """One segment of a function annotated by ``fuser-segment``.

    Holds ``ir`` handles: use it within one pass, never across a
    ``PassManager.run``.
    """

    id: int
    #: the ops with ``fuser.segment = id``, in program order (stores included)
    ops: list[ir.Operation] = field(default_factory=list)
    #: host scalar ops (constants, sizes, scalar arithmetic) the segment recomputes
    scalar_ops: list[ir.Operation] = field(default_factory=list)
    #: values read from outside: function arguments first (by position), then
    #: other segments' values (and host fuser.empty buffers), in order of first use
    inputs: list[ir.Value] = field(default_factory=list)
    #: the segment's ``fuser.store`` / ``fuser.copy`` ops, in program order
    writes: list[ir.Operation] = field(default_factory=list)
    #: results of the segment's other ops that something outside it uses
    escaping: list[ir.Value] = field(default_factory=list)


def _positions(block: ir.Block) -> dict[ir.Operation, int]:
    return {op.operation: i for i, op in enumerate(block.operations)}


def _scalar_cone(roots: list[ir.Value], positions: dict[ir.Operation, int]) -> list[ir.Operation]:
    """The rematerialized host ops that ``roots`` depend on, in program order."""
    found: dict[ir.Operation, None] = {}
    stack = list(roots)
    while stack:
        op = defining_op(stack.pop())
        if op is None or op in found or not is_rematerialized(op):
            continue
        found[op] = None
        stack.extend(op.operands)
    return sorted(found, key=positions.__getitem__)


def _reads(op: ir.Operation) -> list[ir.Value]:
    """The operands ``op`` reads; a destination write does not read its destination."""
    operands = list(op.operands)
    if O.short_name(op.name) in O.DESTINATION_WRITES:
        return operands[:1]
    return operands


def _external_inputs(seg: SegmentInfo, positions: dict[ir.Operation, int]) -> list[ir.Value]:
    inside = set(seg.ops) | set(seg.scalar_ops)
    seen: dict[ir.Value, int] = {}
    for op in sorted(inside, key=positions.__getitem__):
        for value in _reads(op):
            owner = defining_op(value)
            if (owner is None or owner not in inside) and value not in seen:
                seen[value] = len(seen)

    def key(value: ir.Value) -> tuple[int, int]:
        number = arg_number(value)
        return (0, number) if number is not None else (1, seen[value])

    return sorted(seen, key=key)


def _escaping(seg: SegmentInfo) -> list[ir.Value]:
    out = []
    for op in seg.ops:
        if O.short_name(op.name) in O.DESTINATION_WRITES:
            continue
        for result in op.results:
            if any(segment_of(use.owner.operation) != seg.id for use in result.uses):
                out.append(result)
    return out


def collect_segments(func: ir.Operation) -> list[SegmentInfo]:
    """The segments of an annotated fusion function, ordered by id."""
    block = body(func)
    positions = _positions(block)
    by_id: dict[int, SegmentInfo] = {}
    for op in block.operations:
        op = op.operation
        k = segment_of(op)
        if k is None:
            continue
        by_id.setdefault(k, SegmentInfo(id=k)).ops.append(op)
    segments = [by_id[k] for k in sorted(by_id)]
    for seg in segments:
        seg.writes = [op for op in seg.ops if O.short_name(op.name) in O.DESTINATION_WRITES]
        seg.scalar_ops = _scalar_cone([v for op in seg.ops for v in op.operands], positions)
        seg.inputs = _external_inputs(seg, positions)
        seg.escaping = _escaping(seg)
    return segments


# -- the outlined host function as plain data -----------------------------------------


@dataclass(frozen=True)
class InputRef:
    """Fusion input ``index`` (host argument ``index``): a tensor or a scalar."""

    index: int
    kind = "input"

    def as_tuple(self) -> tuple:
        return ("input", self.index)


@dataclass(frozen=True)
class DestRef:
    """Destination argument ``index`` (host argument ``num_inputs + index``):
    an output buffer the caller gave."""

    index: int
    kind = "dest"

    def as_tuple(self) -> tuple:
        return ("dest", self.index)


@dataclass(frozen=True)
class ScalarRef:
    """``HostPlan.scalars[index]``: an ``i64`` (or other scalar) the host computes."""

    index: int
    kind = "scalar"

    def as_tuple(self) -> tuple:
        return ("scalar", self.index)


@dataclass(frozen=True)
class EmptyRef:
    """``HostPlan.buffers[index]``: a buffer the executor allocates."""

    index: int
    kind = "empty"

    def as_tuple(self) -> tuple:
        return ("empty", self.index)


@dataclass(frozen=True)
class ResultRef:
    """Result ``index`` of ``HostPlan.steps[step]``: the buffer of that step's
    ``dests[index]`` after the call wrote it."""

    step: int
    index: int
    kind = "result"

    def as_tuple(self) -> tuple:
        return ("result", self.step, self.index)


Ref = Union[InputRef, DestRef, ScalarRef, EmptyRef, ResultRef]
#: The refs that name storage itself (what a ResultRef resolves to).
StorageRef = Union[InputRef, DestRef, EmptyRef]


@dataclass(frozen=True)
class HostScalar:
    """A scalar op of the host: ``size`` (``dim`` of ``operands[0]``),
    ``constant`` (``value``), or arithmetic (``add``, ``mul``, ...) on other scalars."""

    op: str  # the fuser op without prefix: "size", "constant", "mul", ...
    type: str  # "i64", "f32", ...
    operands: tuple[Ref, ...] = ()
    dim: int | None = None  # for "size"
    value: int | float | None = None  # for "constant"


@dataclass(frozen=True)
class EmptyBuffer:
    """A ``fuser.empty``: a buffer the executor allocates (an intermediate, or
    an output the caller did not give)."""

    type: str  # "tensor<?x4xf32>"
    dtype: str  # element type: "f32", "bf16", "i1", ...
    shape: tuple[int | None, ...]  # static sizes, None where dynamic
    sizes: tuple[Ref, ...]  # one per dynamic dim, in order (ScalarRef or a scalar InputRef)

    @property
    def dims(self) -> tuple[int | Ref, ...]:
        """Every dim: an int where static, the Ref of its size where dynamic."""
        sizes = iter(self.sizes)
        return tuple(next(sizes) if s is None else s for s in self.shape)


@dataclass(frozen=True)
class Step:
    """One ``func.call`` of a segment function, in execution order."""

    callee: str  # "fusion_seg0"
    num_inputs: int  # the callee's fuser.num_inputs
    operands: tuple[Ref, ...]  # inputs, then destinations
    result_types: tuple[str, ...]  # one per destination
    ops: tuple[str, ...]  # the callee's fuser ops (stores excluded), program order

    @property
    def inputs(self) -> tuple[Ref, ...]:
        return self.operands[: self.num_inputs]

    @property
    def dests(self) -> tuple[Ref, ...]:
        """The buffers the call writes; result k is dests[k] after the call."""
        return self.operands[self.num_inputs :]


@dataclass(frozen=True)
class HostPlan:
    """An outlined fusion's host function, as plain data (see the module doc)."""

    name: str
    num_inputs: int
    arg_types: tuple[str, ...]  # inputs, then destination arguments
    scalars: tuple[HostScalar, ...]
    buffers: tuple[EmptyBuffer, ...]
    steps: tuple[Step, ...]
    returns: tuple[Ref, ...]  # the visible outputs, in order

    def storage(self, ref: Ref) -> Ref:
        """The buffer behind ``ref``: a ResultRef resolves to the destination
        its step wrote (repeatedly); every other ref is returned unchanged."""
        while isinstance(ref, ResultRef):
            ref = self.steps[ref.step].dests[ref.index]
        return ref

    def reads(self, step: int) -> list[Ref]:
        """The tensor buffers step ``step`` reads (storage refs, no duplicates)."""
        return _unique(self.storage(r) for r in self.steps[step].inputs if not isinstance(r, ScalarRef) and self._is_tensor(r))

    def writes(self, step: int) -> list[Ref]:
        """The buffers step ``step`` writes (storage refs)."""
        return _unique(self.storage(r) for r in self.steps[step].dests)

    def last_use(self, ref: Ref) -> int | None:
        """The last step that reads or writes the buffer behind ``ref``."""
        target = self.storage(ref)
        last = None
        for i in range(len(self.steps)):
            if target in self.reads(i) or target in self.writes(i):
                last = i
        return last

    def _is_tensor(self, ref: Ref) -> bool:
        if isinstance(ref, InputRef):
            return self.arg_types[ref.index].startswith("tensor<")
        return True


def _unique(refs) -> list:
    out: list = []
    for r in refs:
        if r not in out:
            out.append(r)
    return out


class _HostReader:
    """Turns the ops of an outlined host function into HostPlan fields."""

    def __init__(self, module: ir.Operation, host: ir.Operation):
        self.host = host
        self.num_inputs = num_inputs(host)
        self.callees = {func_name(op.operation): op.operation for op in module.regions[0].blocks[0].operations if op.operation.name == "func.func"}
        self.refs: dict[ir.Value, Ref] = {}
        self.scalars: list[HostScalar] = []
        self.buffers: list[EmptyBuffer] = []
        self.steps: list[Step] = []
        self.returns: tuple[Ref, ...] = ()
        for i, arg in enumerate(body(host).arguments):
            self.refs[arg] = InputRef(i) if i < self.num_inputs else DestRef(i - self.num_inputs)

    def ref(self, value: ir.Value, op: ir.Operation) -> Ref:
        if value not in self.refs:
            raise VerificationError(f"describe_host: '{op.name}' in @{func_name(self.host)} reads a value the host does not define; run fuser-outline-segments first")
        return self.refs[value]

    def scalar(self, op: ir.Operation, name: str) -> None:
        dim = value = None
        if name == "size":
            dim = ir.IntegerAttr(op.attributes["dim"]).value
        if name == "constant":
            attr = op.attributes["value"]
            value = ir.FloatAttr(attr).value if T.is_float(attr.type) else ir.IntegerAttr(attr).value
        operands = tuple(self.ref(v, op) for v in op.operands)
        self.refs[op.results[0]] = ScalarRef(len(self.scalars))
        self.scalars.append(HostScalar(op=name, type=str(op.results[0].type), operands=operands, dim=dim, value=value))

    def empty(self, op: ir.Operation) -> None:
        t = op.results[0].type
        sizes = tuple(self.ref(v, op) for v in op.operands)
        self.refs[op.results[0]] = EmptyRef(len(self.buffers))
        self.buffers.append(EmptyBuffer(type=str(t), dtype=T.element_name(t), shape=T.shape(t), sizes=sizes))

    def call(self, op: ir.Operation) -> None:
        callee_name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        callee = self.callees[callee_name]
        ops = tuple(o.operation.name for o in body(callee).operations if O.short_name(o.operation.name) not in (None, "store"))
        step = len(self.steps)
        for k, result in enumerate(op.results):
            self.refs[result] = ResultRef(step, k)
        self.steps.append(
            Step(
                callee=callee_name,
                num_inputs=num_inputs(callee),
                operands=tuple(self.ref(v, op) for v in op.operands),
                result_types=tuple(str(r.type) for r in op.results),
                ops=ops,
            )
        )

    def read(self) -> HostPlan:
        for op in body(self.host).operations:
            op = op.operation
            name = O.short_name(op.name)
            if name == "empty":
                self.empty(op)
            elif name is not None and is_host_op(op):
                self.scalar(op, name)
            elif op.name == "func.call":
                self.call(op)
            elif op.name == "func.return":
                self.returns = tuple(self.ref(v, op) for v in op.operands)
            else:
                raise VerificationError(
                    f"describe_host: @{func_name(self.host)} holds '{op.name}', which an outlined host function "
                    "does not have; run fuser-segment,fuser-outline-segments first"
                )
        return HostPlan(
            name=func_name(self.host),
            num_inputs=self.num_inputs,
            arg_types=tuple(str(a.type) for a in body(self.host).arguments),
            scalars=tuple(self.scalars),
            buffers=tuple(self.buffers),
            steps=tuple(self.steps),
            returns=self.returns,
        )


def describe_host(module: ir.Module | ir.Operation, name: str | None = None) -> HostPlan:
    """The host function ``@name`` of an outlined module as a :class:`HostPlan`.

    ``name`` may be omitted when the module has one public fusion function.
    Raises :class:`~fuser_mlir.errors.VerificationError` when the function is
    not in outlined form (the message says which op is in the way).
    """
    op = module.operation if isinstance(module, ir.Module) else module
    hosts = fusion_functions(op)
    if name is not None:
        hosts = [f for f in hosts if func_name(f) == name]
    if len(hosts) != 1:
        names = ", ".join("@" + func_name(f) for f in fusion_functions(op)) or "none"
        raise VerificationError(f"describe_host: expected one public fusion function{f' named @{name}' if name else ''}, found: {names}")
    return _HostReader(op, hosts[0]).read()
