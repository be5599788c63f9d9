"""Launch plans: the host function of a compiled fusion as plain data.

A plan is what the runtime needs to run a fusion without MLIR: the buffers
(inputs, given outputs, outputs it allocates, intermediates), each with a
size formula in terms of the input sizes, and the steps (one kernel call per
segment) with their argument bindings. It is JSON-able (``to_json`` /
``from_json``), so an artifact can carry it.

Size formulas are small expression trees: ``["dim", i, d]`` (size of dim
``d`` of input ``i``), ``["const", n]``, ``["add"|"sub"|"mul"|"div", a, b]``
(``div`` is floor division on sizes).

:func:`execute` runs a plan: it allocates each buffer just before the step that
first writes it, and drops intermediates after their last use, so peak memory
is the largest live set, not the sum (:class:`MemoryStats` counts it).
"""

from __future__ import annotations

import dataclasses
import json
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fuser_mlir.errors import ArtifactError
from fuser_mlir.runtime import cpu
from fuser_mlir.runtime.cpu import DTYPE_OF_ELEMENT, numpy_dtype
from fuser_mlir.runtime.launch import compile_formula, describe, evaluate

SizeExpr = list  # see the module docstring

#: What a buffer of a plan is (see :class:`Buffer`).
BUFFER_KINDS = ("input", "given", "output", "intermediate")
#: The element types of plan buffers and kernel arguments (NumPy's names, and ml_dtypes' bfloat16).
DTYPES = tuple(sorted(set(DTYPE_OF_ELEMENT.values())))
#: The operators of size formulas.
SIZE_OPERATORS = ("add", "sub", "mul", "div")


def eval_size(expr: SizeExpr, input_shapes: Sequence[Sequence[int]]) -> int:
    """Evaluate one size formula for the given input shapes."""
    return evaluate(expr, input_shapes, ())


def format_size(expr: SizeExpr) -> str:
    """``(in0.d1 * 4)``: a size formula in words."""
    return describe(expr, "in")


@dataclass
class Buffer:
    """One tensor buffer the plan reads or writes.

    ``kind`` is ``input`` (a fusion input; ``index`` is the input index),
    ``given`` (an output buffer the caller provides; ``index`` is the visible
    output index), ``output`` (an output the runtime allocates) or
    ``intermediate`` (allocated and freed by the runtime).
    """

    id: int
    kind: str
    dtype: str
    shape: list[SizeExpr]
    index: int | None = None
    last_use: int = -1  # index of the last step that reads or writes it

    def shape_for(self, input_shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
        return tuple(eval_size(e, input_shapes) for e in self.shape)

    def nbytes_for(self, input_shapes: Sequence[Sequence[int]]) -> int:
        return int(np.prod(self.shape_for(input_shapes), dtype=np.int64)) * numpy_dtype(self.dtype).itemsize


@dataclass
class Step:
    """One kernel call: ``args`` are ``["buffer", id]`` or ``["scalar", input_index]``."""

    kernel: str
    args: list[list]
    writes: list[int]  # buffer ids this step writes (its destinations)


@dataclass
class LaunchPlan:
    num_inputs: int
    buffers: list[Buffer]
    steps: list[Step]
    outputs: list[int]  # buffer id of each visible output, in add_output order
    aliases: dict[int, int] = field(default_factory=dict)  # input index -> output position (hidden aliases included)

    def buffer(self, buffer_id: int) -> Buffer:
        return self.buffers[buffer_id]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "LaunchPlan":
        """The plan ``to_json`` wrote, checked as it is read (it comes from an
        artifact's manifest): an ArtifactError names the first field that is
        not what a plan holds, or a part that does not fit the others
        (:func:`check_plan`), so that a malformed plan fails at load and not
        on every call."""
        raw = check_record(json.loads(text), "plan", ("num_inputs", "buffers", "steps", "outputs"), ("aliases",))
        num_inputs = check_count(raw["num_inputs"], "plan.num_inputs")
        buffers = [_buffer_from_json(b, i, num_inputs) for i, b in enumerate(check_type(raw["buffers"], list, "plan.buffers"))]
        steps = [_step_from_json(s, i, len(buffers), num_inputs) for i, s in enumerate(check_type(raw["steps"], list, "plan.steps"))]
        raw_outputs = check_type(raw["outputs"], list, "plan.outputs")
        outputs = [check_index(b, len(buffers), f"plan.outputs[{i}]", "a buffer id") for i, b in enumerate(raw_outputs)]
        plan = cls(num_inputs, buffers, steps, outputs, _aliases_from_json(raw.get("aliases", {})))
        check_plan(plan)
        return plan

    def peak_live_bytes(self, input_shapes: Sequence[Sequence[int]]) -> int:
        """The largest total size of buffers alive at any step, inputs included."""
        live_inputs = sum(b.nbytes_for(input_shapes) for b in self.buffers if b.kind in ("input", "given"))
        peak = live_inputs
        for step_index in range(len(self.steps)):
            live = live_inputs + sum(
                b.nbytes_for(input_shapes)
                for b in self.buffers
                if b.kind in ("output", "intermediate") and self._first_write(b.id) <= step_index <= self._live_until(b)
            )
            peak = max(peak, live)
        return peak

    def _first_write(self, buffer_id: int) -> int:
        return next(i for i, s in enumerate(self.steps) if buffer_id in s.writes)

    def _live_until(self, buf: Buffer) -> int:
        return len(self.steps) if buf.kind == "output" else buf.last_use

    def describe(self) -> str:
        """The plan in words, one line per buffer and step."""
        lines = ["buffers:"]
        for b in self.buffers:
            shape = ", ".join(format_size(e) for e in b.shape)
            where = f" #{b.index}" if b.index is not None else ""
            lines.append(f"  b{b.id}: {b.kind}{where} {b.dtype}[{shape}] last use: step {b.last_use}")
        lines.append("steps:")
        for i, s in enumerate(self.steps):
            args = ", ".join(f"b{a[1]}" if a[0] == "buffer" else f"scalar in{a[1]}" for a in s.args)
            lines.append(f"  {i}: {s.kernel}({args}) writes {', '.join(f'b{w}' for w in s.writes)}")
        lines.append("outputs: " + ", ".join(f"b{o}" for o in self.outputs))
        return "\n".join(lines)


# -- checking what a manifest holds -------------------------------------------------------
#
# An artifact's manifest is JSON that a person or a broken disk may have
# changed (the manifest's digest catches most such edits, see
# runtime/artifact.py; older artifacts have none). Its readers check each
# field as they turn it into runtime objects and raise an ArtifactError that
# names the field (``plan.buffers[3].dtype``); the loader adds the artifact's path.

_KIND_NAMES = {list: "a list", dict: "an object", str: "a string", int: "an integer", bool: "true or false"}


def malformed(field: str, value: object, expected: str) -> ArtifactError:
    """The error for a manifest field that is not what its reader expects."""
    shown = json.dumps(value, default=repr)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ArtifactError(f"manifest check failed: {field} is {shown}, {expected}; export the fusion again")


def check_type(value, kind: type, field: str):
    """``value`` where it is of the JSON ``kind`` (list, dict, str, int or
    bool; a bool is no int here)."""
    if type(value) is kind or (kind in (list, dict, str) and isinstance(value, kind)):
        return value
    raise malformed(field, value, f"not {_KIND_NAMES[kind]}")


def check_count(value, field: str, low: int = 0) -> int:
    """``value`` where it is an integer of at least ``low``."""
    if type(value) is int and value >= low:
        return value
    raise malformed(field, value, f"not an integer of at least {low}")


def check_index(value, count: int, field: str, what: str) -> int:
    """``value`` where it is an index below ``count`` (``what``: what it indexes, for the message)."""
    if type(value) is int and 0 <= value < count:
        return value
    raise malformed(field, value, f"not {what} ({f'0 to {count - 1}' if count else 'there are none'})")


def check_choice(value, choices: Sequence[str], field: str) -> str:
    """``value`` where it is one of ``choices``."""
    if isinstance(value, str) and value in choices:
        return value
    raise malformed(field, value, f"not one of {', '.join(choices)}")


def check_record(value, field: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict:
    """``value`` where it is an object with the ``required`` keys, and no
    keys but those and the ``optional`` ones."""
    check_type(value, dict, field)
    missing = [key for key in required if key not in value]
    if missing:
        raise ArtifactError(f"manifest check failed: {field} has no {missing[0]!r}; export the fusion again")
    unknown = sorted(set(value) - set(required) - set(optional))
    if unknown:
        raise ArtifactError(f"manifest check failed: {field} has the unknown field {unknown[0]!r}; export the fusion again")
    return value


def _buffer_from_json(raw, position: int, num_inputs: int) -> Buffer:
    field = f"plan.buffers[{position}]"
    check_record(raw, field, ("id", "kind", "dtype", "shape"), ("index", "last_use"))
    if raw["id"] != position or type(raw["id"]) is not int:
        raise malformed(f"{field}.id", raw["id"], f"not {position}, its position in the list")
    kind = check_choice(raw["kind"], BUFFER_KINDS, f"{field}.kind")
    index = raw.get("index")
    if kind == "input":
        check_index(index, num_inputs, f"{field}.index", "an input index")
    elif index is not None:
        check_count(index, f"{field}.index")
    return Buffer(
        position, kind, check_choice(raw["dtype"], DTYPES, f"{field}.dtype"), check_type(raw["shape"], list, f"{field}.shape"),
        index, check_count(raw.get("last_use", -1), f"{field}.last_use", -1),
    )


def _step_from_json(raw, position: int, num_buffers: int, num_inputs: int) -> Step:
    field = f"plan.steps[{position}]"
    check_record(raw, field, ("kernel", "args", "writes"))
    args = check_type(raw["args"], list, f"{field}.args")
    for j, arg in enumerate(args):
        if not (isinstance(arg, list) and len(arg) == 2 and arg[0] in ("buffer", "scalar")):
            raise malformed(f"{field}.args[{j}]", arg, 'not ["buffer", id] or ["scalar", input index]')
        if arg[0] == "buffer":
            check_index(arg[1], num_buffers, f"{field}.args[{j}][1]", "a buffer id")
        else:
            check_index(arg[1], num_inputs, f"{field}.args[{j}][1]", "an input index")
    raw_writes = check_type(raw["writes"], list, f"{field}.writes")
    writes = [check_index(b, num_buffers, f"{field}.writes[{j}]", "a buffer id") for j, b in enumerate(raw_writes)]
    return Step(check_type(raw["kernel"], str, f"{field}.kernel"), args, writes)


def _aliases_from_json(raw) -> dict[int, int]:
    aliases = {}
    for key, position in check_type(raw, dict, "plan.aliases").items():
        if not key.isdecimal():
            raise malformed("a key of plan.aliases", key, "not an input index")
        aliases[int(key)] = check_count(position, f"plan.aliases[{key!r}]")
    return aliases


def check_size(expr, field: str, ranks: dict[int, int]) -> None:
    """Check a size formula whose ``dim`` leaves read inputs of ``ranks``
    (input index -> rank of the tensor input)."""
    if not isinstance(expr, list) or not expr:
        raise malformed(field, expr, "not a size formula")
    kind = expr[0]
    if kind == "const" and len(expr) == 2 and type(expr[1]) is int:
        return
    if kind in SIZE_OPERATORS and len(expr) == 3:
        check_size(expr[1], f"{field}[1]", ranks)
        check_size(expr[2], f"{field}[2]", ranks)
        return
    if kind != "dim" or len(expr) != 3:
        operators = ", ".join(SIZE_OPERATORS)
        raise malformed(field, expr, f'not a size formula (["const", n], ["dim", input, dim] or [op, a, b] with op one of {operators})')
    if type(expr[1]) is not int or expr[1] not in ranks:
        raise malformed(f"{field}[1]", expr[1], f"not a tensor input of the plan ({', '.join(map(str, sorted(ranks))) or 'it has none'})")
    check_index(expr[2], ranks[expr[1]], f"{field}[2]", f"a dim of input {expr[1]}")


def check_plan(plan: LaunchPlan) -> None:
    """Check what running ``plan`` relies on across its parts: size formulas
    read dims the inputs have, every buffer a step passes or the plan
    returns is written by that step or an earlier one (an input is there
    from the start), and no intermediate is freed before a step passes it."""
    ranks = {b.index: len(b.shape) for b in plan.buffers if b.kind == "input"}
    for b in plan.buffers:
        for d, expr in enumerate(b.shape):
            check_size(expr, f"plan.buffers[{b.id}].shape[{d}]", ranks)
    written = {b.id for b in plan.buffers if b.kind == "input"}
    last_passed: dict[int, int] = {}
    for i, step in enumerate(plan.steps):
        written.update(step.writes)
        for j, (what, value) in enumerate(step.args):
            if what != "buffer":
                continue
            if value not in written:
                raise ArtifactError(
                    f"manifest check failed: plan.steps[{i}].args[{j}] passes buffer {value}, which neither this step nor an earlier one "
                    "writes; export the fusion again"
                )
            last_passed[value] = i
    for i, buffer_id in enumerate(plan.outputs):
        if buffer_id not in written:
            raise ArtifactError(f"manifest check failed: plan.outputs[{i}] is buffer {buffer_id}, which no step writes; export the fusion again")
    for b in plan.buffers:
        if b.kind == "intermediate" and -1 < b.last_use < last_passed.get(b.id, -1):
            raise malformed(f"plan.buffers[{b.id}].last_use", b.last_use, f"but step {last_passed[b.id]} passes that buffer")


@dataclass
class Segment:
    """One kernel of a compiled fusion, for introspection."""

    name: str
    ops: list[str]  # op names in program order
    inputs: list[int]  # plan buffer ids (tensors) it reads
    outputs: list[int]  # plan buffer ids it writes


@dataclass(frozen=True)
class HazardResolution:
    """One in-place update that needed care, and what the compiler did."""

    input: int  # the input updated in place
    resolution: str  # "reorder" (moved after its readers) or "copy" (temporary + copy)
    message: str  # the hazard and its fix, with locations

    def __str__(self) -> str:
        return self.message


@dataclass
class MemoryStats:
    """Allocation counters of the runtime (per executor, cumulative)."""

    allocations: int = 0
    allocated_bytes: int = 0
    live_bytes: int = 0
    peak_live_bytes: int = 0

    def allocate(self, nbytes: int) -> None:
        self.allocations += 1
        self.allocated_bytes += nbytes
        self.live_bytes += nbytes
        self.peak_live_bytes = max(self.peak_live_bytes, self.live_bytes)

    def free(self, nbytes: int) -> None:
        self.live_bytes -= nbytes


Allocator = Callable[[tuple[int, ...], str], object]


def execute_on_cpu(plan: LaunchPlan, kernels: dict[str, Callable], inputs: Sequence[object], given: dict[int, object],
                   stats: MemoryStats | None) -> list[object]:
    """:func:`execute` on the CPU: new buffers from NumPy, intermediates kept
    (``reuse``); a bad ``FUSER_CPU_THREADS`` that a kernel met is warned of
    once the call has run (see :func:`fuser_mlir.runtime.cpu.cpu_threads`)."""
    results = execute(plan, kernels, inputs, given, _numpy_buffer, stats, reuse=True)
    if cpu._UNSAID is not None:
        cpu.say_unsaid()
    return results


def _numpy_buffer(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.empty(shape, numpy_dtype(dtype))


def execute(
    plan: LaunchPlan,
    kernels: dict[str, Callable],
    inputs: Sequence[object],
    given: dict[int, object],
    allocate: Allocator,
    stats: MemoryStats | None = None,
    *,
    reuse: bool = False,
) -> list[object]:
    """Run ``plan``; return the visible outputs in order.

    ``inputs`` are arrays or scalars in definition order, ``given`` maps a
    visible output index to the caller's buffer, ``allocate(shape, dtype)``
    makes a new buffer. ``stats`` (if given) counts the inputs as live from the
    start, then every allocation and free. With ``reuse`` (NumPy buffers
    only) the intermediates come from the plan's :class:`Intermediates`,
    which keeps large ones from call to call.

    The plan is flattened once (:func:`prepare`, kept on the plan) and the
    flat form runs every later call: a plan must not change after its first
    execution.
    """
    prepared = plan.__dict__.get("_prepared")
    if prepared is None:
        prepared = plan.__dict__["_prepared"] = prepare(plan)
    kept = prepared.intermediates if reuse else None
    return prepared.run(kernels, inputs, given, allocate, stats if stats is not None else MemoryStats(), kept)


class Intermediates:
    """The NumPy intermediates of a plan's calls, kept for its next calls.

    A new buffer of :data:`KEEP_BYTES` or more costs its first touch of
    every page (about a quarter of a 3-segment softmax over dim 0 of
    4096x4096 float32 on a 2-CPU VM: 18.6-20.9 ms a call against 14.3-15.2
    with kept buffers).
    ``take`` hands out a kept buffer of the same shape and dtype where there
    is one, ``give`` takes back one whose last reader ran. Only
    intermediates freed by a later step pass through here, so a kept buffer
    never reaches the caller, and every producer writes its whole buffer
    before any step reads it. At most :data:`KEPT_SHAPES` times as many
    (shape, dtype) kinds as the plan has such intermediates are kept, the
    least recently used dropped first: calls on arrays of other sizes do
    not pile buffers up. All plans together keep at most
    :data:`KEEP_TOTAL_BYTES`; a buffer past that is dropped, not kept (many
    fusions in one process do not pile buffers up either). Safe for calls
    from several threads (each takes buffers of its own)."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self._kept: OrderedDict[tuple, list] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = [0]  # this pool's share of the process's kept bytes (a cell the finalizer reads)
        weakref.finalize(self, _count_kept, self._bytes, None)

    def take(self, shape: tuple[int, ...], dtype: str):
        key = (tuple(shape), dtype)
        with self._lock:
            buffers = self._kept.get(key)
            if buffers:
                self._kept.move_to_end(key)
                array = buffers.pop()
                _count_kept(self._bytes, -array.nbytes)
                return array
        return np.empty(shape, numpy_dtype(dtype))

    def give(self, array) -> None:
        if array.nbytes < KEEP_BYTES:
            return
        key = (array.shape, str(array.dtype))  # the runtime's dtype names are NumPy's (and ml_dtypes' bfloat16)
        with self._lock:
            if not _count_kept(self._bytes, array.nbytes):
                return  # past KEEP_TOTAL_BYTES: dropped
            self._kept.setdefault(key, []).append(array)
            self._kept.move_to_end(key)
            while len(self._kept) > self.limit:
                _, dropped = self._kept.popitem(last=False)
                _count_kept(self._bytes, -sum(a.nbytes for a in dropped))

    @property
    def nbytes(self) -> int:
        """Bytes kept now."""
        return self._bytes[0]


#: Intermediates smaller than this are not kept (malloc reuses their memory anyway).
KEEP_BYTES = 1 << 20
#: What all plans of the process keep at most, together.
KEEP_TOTAL_BYTES = 1 << 30
#: How many (shape, dtype) kinds of intermediates a plan keeps, per intermediate it frees.
KEPT_SHAPES = 2
_KEPT = [0]  # bytes all plans of the process keep now
_KEPT_LOCK = threading.Lock()


def _count_kept(share: list, change: int | None) -> bool:
    """Add ``change`` bytes to a pool's ``share`` and to the process's count
    (None: the pool is gone, take its whole share away). False, changing
    nothing, where keeping ``change`` more would pass KEEP_TOTAL_BYTES."""
    with _KEPT_LOCK:
        if change is None:
            change = -share[0]
        if change > 0 and _KEPT[0] + change > KEEP_TOTAL_BYTES:
            return False
        _KEPT[0] += change
        share[0] += change
        return True


def kept_bytes() -> int:
    """The bytes of intermediates all plans of the process keep now."""
    return _KEPT[0]


def size_getter(expr: SizeExpr) -> Callable[[Sequence[object]], int]:
    """``eval_size`` of ``expr`` as a function of the input arrays (closures
    built once, so a call does not re-walk the expression tree)."""
    kind = expr[0]
    if kind == "const":
        value = int(expr[1])
        return lambda inputs: value
    if kind == "dim":
        index, dim = expr[1], expr[2]
        return lambda inputs: int(inputs[index].shape[dim])
    formula = compile_formula(expr)
    return lambda inputs: formula([getattr(x, "shape", ()) for x in inputs], inputs)


def shape_getter(plan: LaunchPlan, shape: list[SizeExpr]) -> Callable[[Sequence[object]], tuple[int, ...]]:
    """``Buffer.shape_for`` as a function of the input arrays. The common
    case, a buffer shaped like one whole input, returns that input's shape."""
    index = shape[0][1] if shape and shape[0][0] == "dim" else None
    if index is not None and shape == [["dim", index, d] for d in range(len(shape))]:
        source = next((b for b in plan.buffers if b.kind == "input" and b.index == index), None)
        if source is not None and len(source.shape) == len(shape):
            return lambda inputs: inputs[index].shape
    getters = tuple(size_getter(e) for e in shape)
    return lambda inputs: tuple([g(inputs) for g in getters])


@dataclass(frozen=True)
class PreparedStep:
    """One step of a prepared plan. Slots ``0 .. num_inputs-1`` hold the
    inputs (tensors and scalars), slot ``num_inputs + id`` buffer ``id``."""

    kernel: str
    allocations: tuple[tuple[int, Callable, str], ...]  # (slot, shape getter, dtype) made before the call
    args: Callable[[list], tuple]  # slots -> the call's arguments
    frees: tuple[int, ...]  # slots of intermediates dropped after the call


def _slot_getter(slots: Sequence[int]) -> Callable[[list], tuple]:
    if len(slots) == 1:
        (only,) = slots
        return lambda values: (values[only],)
    return operator.itemgetter(*slots)


def _list_getter(slots: Sequence[int]) -> Callable[[list], list]:
    if len(slots) == 1:
        (only,) = slots
        return lambda values: [values[only]]
    if not slots:
        return lambda values: []
    getter = operator.itemgetter(*slots)
    return lambda values: list(getter(values))


@dataclass(frozen=True)
class PreparedPlan:
    """A launch plan flattened for repeated execution (see :func:`prepare`)."""

    num_inputs: int
    buffer_slots: tuple[None, ...]  # one None per buffer: the slots after the inputs
    given: tuple[tuple[int, int], ...]  # (slot, visible output index) of each given buffer
    steps: tuple[PreparedStep, ...]
    outputs: Callable[[list], list]  # slots -> the visible outputs
    freed: frozenset[int]  # slots of the intermediates some step frees (Intermediates may keep them)
    intermediates: Intermediates

    def run(self, kernels, inputs: Sequence[object], given: dict[int, object], allocate: Allocator, stats: MemoryStats,
            kept: Intermediates | None = None) -> list:
        """What :func:`execute` does, step by step, with no per-call analysis."""
        if len(inputs) != self.num_inputs:
            raise ValueError(f"the launch plan takes {self.num_inputs} inputs, got {len(inputs)}")
        values = [*inputs, *self.buffer_slots]
        for slot, index in self.given:
            values[slot] = given[index]
        base_live = stats.live_bytes
        stats.live_bytes += sum([getattr(x, "nbytes", 0) for x in inputs]) + sum([getattr(x, "nbytes", 0) for x in given.values()])
        if stats.live_bytes > stats.peak_live_bytes:
            stats.peak_live_bytes = stats.live_bytes
        for step in self.steps:
            for slot, shape_of, dtype in step.allocations:
                if kept is not None and slot in self.freed:
                    value = values[slot] = kept.take(shape_of(inputs), dtype)
                else:
                    value = values[slot] = allocate(shape_of(inputs), dtype)
                stats.allocate(value.nbytes)
            kernels[step.kernel](*step.args(values))
            for slot in step.frees:
                stats.free(values[slot].nbytes)
                if kept is not None:
                    kept.give(values[slot])
                values[slot] = None
        outputs = self.outputs(values)
        stats.live_bytes = base_live
        return outputs


def prepare(plan: LaunchPlan) -> PreparedPlan:
    """Flatten ``plan``: which buffers each step allocates (before its call)
    and frees (after it), its arguments as slot indices, every size formula
    as a closure. Same order of allocations, calls and frees as a walk of the
    plan, decided once instead of on every call."""
    base = plan.num_inputs

    def slot(buffer_id: int) -> int:
        buf = plan.buffers[buffer_id]
        return buf.index if buf.kind == "input" else base + buffer_id

    present = {b.id for b in plan.buffers if b.kind in ("input", "given")}
    steps = []
    for step_index, step in enumerate(plan.steps):
        allocations = []
        for buffer_id in step.writes:
            if buffer_id in present:
                continue
            buf = plan.buffers[buffer_id]
            allocations.append((slot(buffer_id), shape_getter(plan, buf.shape), buf.dtype))
            present.add(buffer_id)
        args = [slot(a[1]) if a[0] == "buffer" else a[1] for a in step.args]
        frees = []
        for a in step.args:
            buf = plan.buffers[a[1]] if a[0] == "buffer" else None
            if buf is not None and buf.kind == "intermediate" and buf.last_use == step_index and buf.id in present:
                present.discard(buf.id)
                frees.append(slot(buf.id))
        steps.append(PreparedStep(step.kernel, tuple(allocations), _slot_getter(args), tuple(frees)))
    given = tuple((base + b.id, b.index) for b in plan.buffers if b.kind == "given")
    outputs = [slot(i) for i in plan.outputs]
    freed = frozenset(s for step in steps for s in step.frees)
    return PreparedPlan(
        base, (None,) * len(plan.buffers), given, tuple(steps), _list_getter(outputs), freed, Intermediates(KEPT_SHAPES * len(freed))
    )


#: The stages in the order the compiler makes them (an artifact's manifest sorts them by name).
_STAGE_ORDER = ("fuser", "segmented", "outlined", "cpu", "gpu")
#: The backend stages, and what a fusion is compiled for to have each.
_BACKEND_STAGES = {"cpu": "the CPU (device='cpu', or NumPy arrays)", "gpu": "a CUDA device (device='cuda:N', or CUDA arrays)"}


class Inspectable:
    """The inspection API a compiled fusion and a loaded artifact share;
    they have ``segments``, ``stages`` (IR text by stage name), ``device``
    and ``image``."""

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def ir(self, stage: str = "fuser") -> str:
        """The IR after ``stage``: ``fuser``, ``segmented``, ``outlined``, then
        the backend's, ``cpu`` (LLVM dialect) or ``gpu`` (the kernels' gpu
        dialect)."""
        if stage in self.stages:
            return self.stages[stage]
        stages = ", ".join(sorted(self.stages, key=lambda name: (_STAGE_ORDER + (name,)).index(name)))
        if stage in _BACKEND_STAGES:
            raise KeyError(
                f"this fusion was compiled for {self.device}, so it has no '{stage}' stage, which only a fusion compiled "
                f"for {_BACKEND_STAGES[stage]} has (its stages: {stages})"
            )
        raise KeyError(f"unknown stage '{stage}'; stages: {stages}")

    @property
    def ptx(self) -> str:
        """The PTX of the kernels of a fusion compiled for a CUDA device: its
        kernel image's PTX file, which a fusion compiled in this process, one
        loaded from the disk cache and an artifact all have (``program`` is
        None for the loaded ones)."""
        if not self.device.startswith("cuda"):
            raise AttributeError(
                f"this fusion was compiled for {self.device}, so it has no PTX, which only a fusion compiled for "
                f"{_BACKEND_STAGES['gpu']} has; its kernels are in .ir('cpu')"
            )
        return self.image.files[self.image.spec["ptx"]].decode()

    def to_dot(self) -> str:
        """The segments, buffers and read/write edges as Graphviz dot."""
        from fuser_mlir.visualize import plan_to_dot

        return plan_to_dot(self)


class Runnable:
    """``run`` (and ``execute``, fd.execute's name for it) on a compiled fusion
    and a loaded artifact: the arguments are validated against the one
    signature it was compiled for, exactly as ``fd.execute`` validates them,
    and an InputError names what differs. ``launch(args, given)``, which
    each defines, runs arguments already validated (the executor's entry)."""

    _executor = None
    #: what it is called in an error about arguments of another signature
    described_as = "fusion"
    #: what to do with arguments of another signature
    other_signature_hint = "fd.execute compiles the fusion again for arguments like these"

    @property
    def executor(self):
        """The FusionExecutorCache that validates arguments and runs this fusion (it never compiles)."""
        if self._executor is None:
            from fuser_mlir.errors import InputError
            from fuser_mlir.executor import FusionExecutorCache

            if self.key is None or self.signature is None:
                raise InputError(
                    f"{self.described_as} {self.name!r} was compiled without an argument signature (compile_fusion called "
                    "directly), so it cannot check arguments: run it through fd.execute, or get it from fd.compile(inputs)"
                )
            self._executor = FusionExecutorCache.for_loaded(self)
        return self._executor

    @property
    def stats(self):
        return self.executor.stats

    def run(self, inputs: Sequence[object], outputs=None, *, cuda_graph: bool = False) -> list:
        """Run on ``inputs``; ``outputs`` is None or one buffer-or-None per
        visible output, and ``cuda_graph=True`` replays cache hits as one CUDA
        graph, exactly as ``fd.execute`` / FusionExecutorCache.run."""
        return self.executor.run(inputs, outputs, cuda_graph=cuda_graph)

    def execute(self, inputs: Sequence[object], outputs=None, *, cuda_graph: bool = False) -> list:
        """The same as :meth:`run` (``fd.execute``'s name)."""
        return self.run(inputs, outputs, cuda_graph=cuda_graph)

    def mismatch(self, key) -> str:
        """Why arguments with executor key ``key`` cannot run this fusion."""
        from fuser_mlir.runtime.artifact import describe_key_mismatch

        return describe_key_mismatch(self.key, key, self.described_as)
