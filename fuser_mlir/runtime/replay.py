"""Replays: the launches of a CUDA cache hit, worked out once per hit entry.

A hit's raw signature (:mod:`fuser_mlir.hit_cache`) fixes the type, dtype,
shape, strides, alignment class and device of every tensor argument. For one
hit entry, then, everything about its launches is fixed: which launch variant
of each step runs (``when``), grids and blocks, the size and stride slots of
every memref descriptor, the shapes of new outputs, intermediates and
temporaries, the memory statistics of a call. What changes from call to call
is only the data pointers (inputs, given outputs, buffers allocated per
call), the values of scalar inputs, and the stream.

:func:`trace` works that fixed part out once, by walking the launch plan and
the segments' launch programs exactly as :func:`fuser_mlir.runtime.plan.execute`
and :class:`~fuser_mlir.runtime.cuda.CudaSegment` would, with symbolic
pointers: a :class:`Trace` holds, per launch that runs, a slot array with
everything constant filled in (by the segment's own slot fillers) and the
slots that take a pointer or a scalar per call. :func:`plain_replay` and
:func:`graph_replay` turn a trace into one generated Python function per hit
entry (the way torch inductor writes its wrapper code: straight-line
statements, constants inlined, no loops or dispatch):

``plain_replay``
    per call: allocates the new outputs and one arena for the intermediates
    and temporaries (one ``torch.empty_strided`` when torch is in play, else one
    stream-ordered DeviceArray; buffers at 256-byte aligned offsets, and
    buffers whose lifetimes do not meet share bytes, so the arena is about
    the plan's largest live set), writes the pointer cells and scalar slots
    and launches every kernel through ctypes on the current stream (torch's
    current stream for torch tensors, else the legacy default stream). The
    arena is dropped after the last launch, freed in stream order like the
    buffers of the general path. Made twice per hit entry on one trace: as
    ``replay(args, given, pointers, memory)`` for the hit table's lookup,
    and with the entry's checks written out at its head
    (:class:`fuser_mlir.hit_cache.Guard`) as ``replay(inputs, outputs,
    memory)``, which the executor tries first for the entry hit last.

``graph_replay``
    (``cuda_graph=True``) builds a CUDA graph once, explicitly: one kernel
    node per launch, each depending on the one before (``cuGraphCreate``,
    ``cuGraphAddKernelNode_v2``, ``cuGraphInstantiateWithFlags``). The
    intermediates and temporaries live in one arena the graph owns (allocated
    once with ``cuMemAlloc``, kept as long as the hit entry: that is the
    memory cost of a graph, ``FusionExecutorCache.graph_bytes``), so their
    pointers are baked into the nodes. Per call: new outputs are allocated
    fresh; the nodes whose pointers or scalars differ from the last replay
    are updated with ``cuGraphExecKernelNodeSetParams_v2`` (which affects only
    later launches); then ``cuGraphLaunch`` on the current stream. Launches
    of one executable graph are ordered behind each other, so the shared
    arena is never used by two replays at once. Dropping the entry
    synchronizes the device, destroys the graph and frees the arena.

Per call the table's replay reads nothing from the tensors: the hit cache
read every data pointer once, for its signature, and hands them over (the
same pointers serve its overlap checks). A pointer is written once per call
however many kernel parameters take it: the allocated and aligned pointer
of every descriptor, in every launch, point at one 8-byte cell per pointer
(:class:`PointerCells`; the driver copies the values at each launch). Cells
and slot arrays (and a graph's node parameters) belong to the trace, so a
call holds the trace's lock while it writes them and launches.

A plan is not replayed (:class:`NotReplayable`; the hit then takes the
general path) when a formula of a launch program reads a scalar input's value
(``["arg", k]`` in a grid, a ``when``, a temporary's or a view's shape), when
a kernel is not a :class:`~fuser_mlir.runtime.cuda.CudaSegment`, or when
ctypes cannot load the driver library.
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading
import weakref
from dataclasses import dataclass, field

from fuser_mlir.errors import CudaError
from fuser_mlir.runtime import cuda
from fuser_mlir.runtime.cpu import numpy_dtype
from fuser_mlir.runtime.launch import reads_scalars
from fuser_mlir.runtime.plan import LaunchPlan, prepare

#: Alignment of every buffer in an arena, in bytes (what fresh buffers promise the kernels).
ALIGNMENT = 256


class NotReplayable(Exception):
    """A plan whose launches cannot be fixed by the raw signature (the message says why)."""


@dataclass(frozen=True)
class _Tensor:
    """A tensor argument of the trace: where its pointer comes from per call
    (``("input", i)``, ``("given", k)``, ``("output", buffer id)`` or
    ``("arena", block)``), and its fixed geometry."""

    source: tuple
    shape: tuple
    strides: tuple  # in elements
    nbytes: int


@dataclass(frozen=True)
class _Scalar:
    """A scalar argument of the trace: fusion input ``index`` (value of the traced call)."""

    index: int
    value: object


@dataclass
class TracedLaunch:
    """One kernel launch of a trace.

    ``slots`` holds the kernel parameters with every constant filled in;
    ``pointer_slots`` are ``(slot, source)``: parameters ``slot`` and
    ``slot + 1`` (allocated and aligned pointer of a memref descriptor) take
    the pointer of ``source`` per call, ``("arena", offset)`` being the
    arena's address plus ``offset`` (their entries in ``pointers`` point at
    the trace's cell for ``source``, not at ``slots``); ``scalar_slots`` are
    ``(slot, fusion input, format)``."""

    kernel: str
    handle: int  # the CUfunction
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    slots: ctypes.Array
    pointers: ctypes.Array  # one void* per slot: the kernel parameter array
    pointer_slots: tuple
    scalar_slots: tuple
    raw: object  # the segment's cuLaunchKernel (cuda._raw_launch)

    @property
    def params(self) -> int:
        return ctypes.addressof(self.pointers)


@dataclass
class PointerCells:
    """The per-call pointers of a trace's launches, one 8-byte cell per
    source (``index``: source -> cell); see :func:`_share_pointer_cells`."""

    values: ctypes.Array
    index: dict


@dataclass
class Trace:
    """The fixed part of a hit entry's calls (see the module docstring)."""

    launches: list[TracedLaunch]
    outputs: list[tuple[int, tuple, str]]  # (buffer id, shape, dtype) of each new output, in allocation order
    arena_bytes: int  # intermediates and temporaries, lifetimes overlaid
    arena_offsets: list[int]  # offset of each of them, in the order the general path allocates them
    results: list[tuple]  # the source of each visible output
    allocations: int  # buffers the plan allocates per call (MemoryStats counts these)
    allocated_bytes: int
    peak_bytes: int  # the plan's largest live set, inputs and given outputs included
    base_bytes: int  # inputs and given outputs
    cells: PointerCells  # what the launches' pointer parameters read
    #: held by a call while it writes the cells and slots and launches (the
    #: trace's replays share the cells and slots)
    lock: object = field(default_factory=threading.Lock)


# -- tracing -----------------------------------------------------------------------------


def trace(plan: LaunchPlan, kernels: dict, args, given: dict) -> Trace:
    """The launches ``plan`` makes for arguments like ``args``/``given``
    (the caller's torch tensors or DeviceArrays, and Python scalars), with
    symbolic pointers. NotReplayable when they are not fixed by the raw
    signature."""
    prepared = plan.__dict__.get("_prepared")
    if prepared is None:
        prepared = plan.__dict__["_prepared"] = prepare(plan)
    num_inputs = plan.num_inputs
    values: list = [None] * (num_inputs + len(plan.buffers))
    live = 0
    for i, arg in enumerate(args):
        if isinstance(arg, (int, float, bool)):
            values[i] = _Scalar(i, arg)
        else:
            values[i] = _tensor(("input", i), arg)
            live += values[i].nbytes
    for slot, index in prepared.given:
        values[slot] = _tensor(("given", index), given[index])
        live += values[slot].nbytes
    base = peak = live
    allocations = allocated = 0
    blocks: list[list[int]] = []  # [nbytes, first step, last step] of each arena buffer
    outputs = []
    launches = []
    for step_index, step in enumerate(prepared.steps):
        segment = kernels[step.kernel]
        if not isinstance(segment, cuda.CudaSegment):
            raise NotReplayable(f"segment {step.kernel} is not a CUDA segment")
        for slot, shape_of, dtype in step.allocations:
            shape = tuple(int(s) for s in shape_of(args))
            nbytes = math.prod(shape) * numpy_dtype(dtype).itemsize
            buffer_id = slot - num_inputs
            if plan.buffers[buffer_id].kind == "output":
                source = ("output", buffer_id)
                outputs.append((buffer_id, shape, dtype))
            else:
                source = ("arena", len(blocks))
                blocks.append([nbytes, step_index, len(prepared.steps)])
            values[slot] = _Tensor(source, shape, tuple(cuda._contiguous(shape)), nbytes)
            live += nbytes
            allocations += 1
            allocated += nbytes
            peak = max(peak, live)
        launches += _trace_segment(segment, step.args(values), blocks, step_index)
        for slot in step.frees:
            freed = values[slot]
            live -= freed.nbytes
            if freed.source[0] == "arena":
                blocks[freed.source[1]][2] = step_index
            values[slot] = None
    offsets, arena_bytes = place(blocks)
    for launch in launches:
        launch.pointer_slots = tuple(
            (slot, ("arena", offsets[source[1]]) if source[0] == "arena" else source) for slot, source in launch.pointer_slots
        )
    cells = _share_pointer_cells(launches)
    results = []
    for buffer_id in plan.outputs:
        buf = plan.buffers[buffer_id]
        if buf.kind not in ("input", "given", "output"):
            raise NotReplayable(f"visible output b{buffer_id} is an {buf.kind} buffer")
        results.append((buf.kind, buffer_id if buf.kind == "output" else buf.index))
    return Trace(launches, outputs, arena_bytes, offsets, results, allocations, allocated, peak, base, cells)


def _share_pointer_cells(launches: list[TracedLaunch]) -> PointerCells:
    """One 8-byte cell per pointer source, which every kernel parameter
    taking that pointer (allocated and aligned pointer of each descriptor,
    in every launch) points at: a call writes each pointer once, however
    many descriptors and kernels take it (the driver copies the values at
    each launch, or at each graph node update)."""
    sources = sorted({source for launch in launches for _, source in launch.pointer_slots})
    cells = PointerCells((ctypes.c_int64 * max(1, len(sources)))(), {source: k for k, source in enumerate(sources)})
    base = ctypes.addressof(cells.values)
    for launch in launches:
        for slot, source in launch.pointer_slots:
            launch.pointers[slot] = launch.pointers[slot + 1] = base + 8 * cells.index[source]
    return cells


def _tensor(source: tuple, array) -> _Tensor:
    _, shape, strides = cuda._geometry(array)
    return _Tensor(source, tuple(shape), tuple(strides), int(array.nbytes))


def _program_reads_scalars(program) -> bool:
    formulas = [e for t in program.temps for e in t.shape]
    for launch in program.launches:
        formulas += [*launch.grid, launch.when]
        if isinstance(launch.shared_bytes, list):
            formulas.append(launch.shared_bytes)
        formulas += [e for b in launch.args if b[0] == "view" for e in b[2]]
    return any(reads_scalars(e) for e in formulas)


def _trace_segment(segment, args: tuple, blocks: list, step_index: int) -> list[TracedLaunch]:
    """The launches of one segment call, as :meth:`CudaSegment.__call__` makes them."""
    if _program_reads_scalars(segment.program):
        raise NotReplayable(f"a launch formula of segment {segment.name} reads a scalar input's value")
    shapes = [getattr(a, "shape", ()) for a in args]
    temps = []
    for sizes, dtype in segment.temps:
        shape = tuple(int(size(shapes, args)) for size in sizes)
        nbytes = math.prod(shape) * numpy_dtype(dtype).itemsize
        temps.append(_Tensor(("arena", len(blocks)), shape, tuple(cuda._contiguous(shape)), nbytes))
        blocks.append([nbytes, step_index, step_index])
    fill_args = [a.value if type(a) is _Scalar else a for a in args]
    geometries = [None if type(a) is _Scalar else (0, a.shape, a.strides) for a in args]
    temp_geometries = [(0, t.shape, t.strides) for t in temps]
    traced = []
    for launch in segment.launches:
        if launch.when is not None and not launch.when(shapes, args):
            continue  # the other variant of this step runs
        grid = tuple(int(g(shapes, args)) for g in launch.grid)
        if min(grid) <= 0:
            continue  # an empty tensor: nothing to do
        if segment.raw is None:
            raise NotReplayable("ctypes cannot load the CUDA driver library")
        slots, pointers = cuda.parameter_buffer(launch.count)
        pointer_slots, scalar_slots = [], []
        at = 0
        for binding, fill in zip(launch.launch.args, launch.fillers):
            filled = fill(fill_args, geometries, temp_geometries, shapes)
            slots[at : at + len(filled)] = list(filled)
            if binding[0] == "arg" and type(args[binding[1]]) is _Scalar:
                dtype = segment.arg_kinds[binding[1]].dtype
                scalar_slots.append((at, args[binding[1]].index, cuda._scalar_format(dtype)))
            else:
                pointer_slots.append((at, _source(binding, args, temps)))
            at += len(filled)
        traced.append(
            TracedLaunch(
                launch.launch.kernel, launch.handle, grid, tuple(launch.block), int(launch.shared(shapes, args)),
                slots, pointers, tuple(pointer_slots), tuple(scalar_slots), segment.raw,
            )
        )
    return traced


def _source(binding: list, args: tuple, temps: list) -> tuple:
    """Where the pointer of a memref binding comes from."""
    kind = binding[0]
    if kind == "flat":
        return _source(binding[1], args, temps)
    if kind == "arg":
        return args[binding[1]].source
    return temps[binding[1]].source  # temp, view


def place(blocks: list[list[int]]) -> tuple[list[int], int]:
    """Offsets of arena buffers ``[nbytes, first step, last step]`` (first
    fit, in allocation order, every buffer ``ALIGNMENT``-aligned, at least
    one alignment unit) such that buffers alive at one step never meet, and
    the arena's size. Buffers whose lifetimes do not meet may share bytes:
    kernels run in launch order on one stream (or one graph chain)."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first step, last step)
    offsets = []
    for nbytes, first, last in blocks:
        size = -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        offset = 0
        for low, high in sorted((o, e) for o, e, f, l in placed if f <= last and first <= l):
            if offset + size <= low:
                break
            offset = max(offset, high)
        placed.append((offset, offset + size, first, last))
        offsets.append(offset)
    return offsets, max((end for _, end, _, _ in placed), default=0)


# -- code generation -----------------------------------------------------------------------


class _Writer:
    """Source lines and the constants they name (the generated function's globals)."""

    def __init__(self):
        self.lines: list[str] = []
        self.names: dict[str, object] = {}

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + text)

    def constant(self, name: str, value: object) -> str:
        self.names[name] = value
        return name

    def function(self, name: str):
        source = "\n".join(self.lines) + "\n"
        namespace = dict(self.names)
        exec(compile(source, f"<fuser-mlir {name}>", "exec"), namespace)
        function = namespace.pop(name)  # no cycle through the function's globals
        function.source = source
        return function


class Arguments:
    """How generated code reads a call's arguments: the hit table's
    ``replay(args, given, pointers, memory)`` (the default), or a function
    that checks the arguments itself (:class:`fuser_mlir.hit_cache.Guard`)."""

    #: the generated function's parameters
    parameters = "args, given, pointers, memory"

    def __init__(self, input_at: dict, given_at: dict):
        self.input_at = input_at
        self.given_at = given_at

    def write(self, w: _Writer, sources: list) -> None:
        """Statements binding the pointer of each input and given output among
        ``sources`` (``p<input>``, ``g<output>``; new outputs': see _prologue)."""
        for kind, index in sources:
            if kind == "input":
                w.line(f"p{index} = pointers[{self.input_at[index]}]")
            elif kind == "given":
                w.line(f"g{index} = pointers[{self.given_at[index]}]")

    def arg(self, index: int) -> str:
        """Fusion input ``index`` (a scalar as the full validation converts it)."""
        return f"args[{index}]"

    def given(self, index: int) -> str:
        """The given buffer of visible output ``index``."""
        return f"given[{index}]"


def _pointer_expression(source: tuple) -> str:
    """The name of a pointer in the generated code (an arena buffer's: ``a<offset>``)."""
    kind, index = source
    return {"input": "p", "given": "g", "output": "q", "arena": "a"}[kind] + str(index)


#: cuLaunchKernel's answer when this thread's current context is not the
#: kernel's (CUDA_ERROR_INVALID_CONTEXT: none; CUDA_ERROR_INVALID_HANDLE: another).
CONTEXT_ERRORS = (201, 400)


def _prologue(w: _Writer, trace: Trace, arguments: Arguments, *, device: int, torch_outputs: bool, allocate, current_stream, ensure, check_context: bool = True, back: tuple | None = None) -> None:
    """The arguments' checks and pointers (``arguments``), context check
    (unless the caller retries a launch the context made fail, see
    plain_replay), stream, and new outputs (each made as the trace's
    row-major buffer, then seen with its dims in the order ``back`` gives
    its visible output: see plain_replay)."""
    w.lines.append(f"def replay({arguments.parameters}):")
    arguments.write(w, _sources(trace))
    w.constant("ensure", ensure)
    if check_context:
        w.line(f"ensure({device})")
    default_stream = w.constant("STREAM", ctypes.c_void_p(0))
    if current_stream is not None:
        w.constant("current_stream", current_stream)
        w.constant("c_void_p", ctypes.c_void_p)
        w.line(f"stream = current_stream({device})")
        w.line(f"stream = c_void_p(stream) if stream else {default_stream}")
    else:
        w.line(f"stream = {default_stream}")
    data = ".data_ptr()" if torch_outputs else ".ptr"
    seen = {} if back is None else {index: back[k] for k, (kind, index) in enumerate(trace.results) if kind == "output"}
    for buffer_id, shape, dtype in trace.outputs:
        w.line(f"o{buffer_id} = {_allocation(w, allocate, shape, dtype, seen.get(buffer_id))}")
        w.line(f"q{buffer_id} = o{buffer_id}{data}")


def _allocation(w: _Writer, allocate, shape: tuple, dtype: str, back: tuple | None = None) -> str:
    """The expression allocating a new buffer: the runtime's torch
    allocations as a direct ``torch.empty_strided`` call with the C-contiguous
    strides written out (see cuda._allocator), or where torch has it the
    allocator torch.compile's generated code calls, on the current device
    (checked once per call, before the first allocation: ``empty_strided``
    on the fusion's device otherwise);
    any other allocator called as ``allocate(shape, dtype)``. With ``back``,
    the same bytes seen with their dims in that order: ``empty_strided`` of
    the permuted shape and strides, or the allocation's ``.transpose(back)``."""
    inline = getattr(allocate, "torch_empty_strided", None)
    if inline is None:
        w.constant("allocate", allocate)
        return f"allocate({shape!r}, {dtype!r})" + ("" if back is None else f".transpose({back!r})")
    empty_strided, where, torch_dtype, fast = inline
    w.constant("empty_strided", empty_strided)
    w.constant("DEVICE", where)
    strides = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
    if back is not None:
        shape, strides = tuple(shape[d] for d in back), tuple(strides[d] for d in back)
    kind = w.constant(f"T_{dtype}", torch_dtype(dtype))
    slow = f"empty_strided({shape!r}, {strides!r}, dtype={kind}, device=DEVICE)"
    if fast is None:
        return slow
    if "current_device" not in w.names:  # the first allocation of the call
        w.constant("fast_empty", fast[0])
        w.constant("current_device", fast[1])
        w.line(f"here = current_device() == {where.index}")
    return f"(fast_empty({shape!r}, {strides!r}, {kind}) if here else {slow})"


def _write_cells(w: _Writer, trace: Trace, sources, indent: int) -> None:
    """One statement writing the cells of ``sources`` (see PointerCells)."""
    if sources:
        cells = w.constant("C", trace.cells.values)
        targets = ", ".join(f"{cells}[{trace.cells.index[s]}]" for s in sources)
        w.line(f"{targets} = {', '.join(map(_pointer_expression, sources))}", indent)


def _write_scalars(w: _Writer, n: int, launch: TracedLaunch, arguments: Arguments, indent: int) -> None:
    """Statements writing the scalar slots of launch ``n``."""
    slots = w.constant(f"S{n}", launch.slots)
    base = ctypes.addressof(launch.slots)
    for slot, index, fmt in launch.scalar_slots:
        if fmt in ("f", "d"):  # written in place: the low bytes of the slot, as _scalar_bits gives them
            view = (ctypes.c_float if fmt == "f" else ctypes.c_double).from_address(base + 8 * slot)
            w.line(f"{w.constant(f'V{n}_{slot}', view)}.value = {arguments.arg(index)}", indent)
        else:
            w.constant("bits", cuda._scalar_bits)
            w.line(f"{slots}[{slot}] = bits({fmt!r}, {arguments.arg(index)})", indent)


def _epilogue(w: _Writer, trace: Trace, arguments: Arguments, allocations: int, allocated: int, peak: int) -> None:
    if allocations:
        w.line(f"memory.allocations += {allocations}")
        w.line(f"memory.allocated_bytes += {allocated}")
    w.line(f"peak = memory.live_bytes + {peak}")
    w.line("if peak > memory.peak_live_bytes:")
    w.line("memory.peak_live_bytes = peak", 2)
    results = []
    for kind, index in trace.results:
        results.append({"input": arguments.arg, "given": arguments.given, "output": lambda i: f"o{i}"}[kind](index))
    w.line(f"return [{', '.join(results)}]")


def _sources(trace: Trace) -> list:
    """The per-call pointer sources the launches read (all but the arena's)."""
    return sorted({source for launch in trace.launches for _, source in launch.pointer_slots if source[0] != "arena"})


def plain_replay(trace: Trace, *, device: int, torch_outputs: bool, input_at: dict | None = None, given_at: dict | None = None, arguments: Arguments | None = None, allocate=None, current_stream=None, ensure=None, back: tuple | None = None):
    """The per-call function of a trace, launching kernel by kernel:
    ``replay(args, given, pointers, memory) -> outputs`` (see the module
    docstring). With torch tensors (``torch_outputs``) the thread's CUDA
    context is not checked before launching (torch keeps its device's
    primary context current; the check costs 1 µs on the H200 host): when
    the first launch answers that the context is wrong
    (:data:`CONTEXT_ERRORS`), the replay makes it current and launches
    again. ``input_at``/``given_at`` say where in ``pointers`` the data
    pointer of each tensor input / given output is; or ``arguments`` says
    how the function reads its arguments (a hit cache's guard:
    ``replay(inputs, outputs, memory)``, None when they do not match).
    ``allocate``, ``current_stream`` and ``ensure`` default to the CUDA
    runtime's (``_allocator``, torch's current raw stream or the legacy
    default stream, ``ensure_context``); tests pass their own. ``back``: a
    trace made on row-major views of the caller's column-major arrays
    (HitEntry.views), whose new visible output k the caller sees with its
    dims in order ``back[k]`` (the inverse permutation: its own dims)."""
    allocate, current_stream, ensure = _defaults(device, torch_outputs, allocate, current_stream, ensure)
    if arguments is None:
        arguments = Arguments(input_at, given_at)
    w = _Writer()
    _prologue(
        w, trace, arguments, device=device, torch_outputs=torch_outputs, allocate=allocate, current_stream=current_stream, ensure=ensure,
        check_context=not torch_outputs, back=back,
    )
    if trace.arena_bytes:
        w.line(f"arena = {_allocation(w, allocate, (trace.arena_bytes,), 'uint8')}")
        w.line("a0 = arena" + (".data_ptr()" if torch_outputs else ".ptr"))
        for offset in sorted({s[1] for launch in trace.launches for _, s in launch.pointer_slots if s[0] == "arena"} - {0}):
            w.line(f"a{offset} = a0 + {offset}")
    if trace.launches:  # none: every tensor is empty
        w.line("with lock:")
        _write_cells(w, trace, sorted(trace.cells.index), 2)
    w.constant("lock", trace.lock)
    w.constant("failed", _launch_failed)
    for n, launch in enumerate(trace.launches):
        _write_scalars(w, n, launch, arguments, 2)
        handle = w.constant(f"H{n}", ctypes.c_void_p(launch.handle))
        params = w.constant(f"P{n}", ctypes.c_void_p(launch.params))
        w.constant(f"launch{n}", launch.raw)
        w.constant(f"L{n}", launch)
        gx, gy, gz = launch.grid
        bx, by, bz = launch.block
        call = f"launch{n}({handle}, {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {launch.shared}, stream, {params}, None)"
        w.line(f"code = {call}", 2)
        w.line("if code:", 2)
        if n == 0 and torch_outputs:  # the context is checked only when a launch says it is wrong
            w.constant("CONTEXT_ERRORS", CONTEXT_ERRORS)
            w.line("if code in CONTEXT_ERRORS:", 3)
            w.line(f"ensure({device})", 4)
            w.line(f"code = {call}", 4)
            w.line("if code:", 3)
            w.line(f"raise failed(L{n}, code)", 4)
            continue
        w.line(f"raise failed(L{n}, code)", 3)
    if trace.arena_bytes:
        w.line("del arena  # freed in stream order, after the launches above")
    _epilogue(w, trace, arguments, trace.allocations, trace.allocated_bytes, trace.peak_bytes)
    replay = w.function("replay")
    replay.trace = trace
    replay.graph_bytes = 0
    return replay


def _defaults(device: int, torch_outputs: bool, allocate, current_stream, ensure):
    if allocate is None:
        allocate = cuda._allocator(device, torch_outputs, True)
    if current_stream is None and torch_outputs:
        current_stream = cuda._torch_stream_function()
    return allocate, current_stream, ensure if ensure is not None else cuda.ensure_context


def _launch_failed(launch: TracedLaunch, code: int) -> CudaError:
    return cuda.launch_error(launch.kernel, launch.grid, launch.block, code)


# -- CUDA graphs -----------------------------------------------------------------------------


class _GraphHandles:
    """What a replayed graph holds on the device, released together (:meth:`release`)."""

    def __init__(self, api, device: int):
        self.api = api
        self.device = device
        self.graph = ctypes.c_void_p()
        self.exec = ctypes.c_void_p()
        self.arena = None  # a DeviceArray (cuMemAlloc), freed after the graph

    def release(self) -> None:
        """Wait for the graph's launches in flight (they use the arena),
        destroy the executable graph and the graph, drop the arena."""
        if self.exec.value or self.arena is not None:
            try:
                self.api.synchronize(self.device)
            except CudaError:
                pass  # the context is gone (interpreter exit): so is everything it held
        if self.exec.value:
            self.api.destroy_exec(self.exec)
            self.exec = ctypes.c_void_p()
        if self.graph.value:
            self.api.destroy(self.graph)
            self.graph = ctypes.c_void_p()
        self.arena = None


def _device_bytes(device: int, nbytes: int):
    """``nbytes`` of device memory (``cuMemAlloc``: usable from any stream), freed with the array."""
    import numpy as np

    from fuser_mlir.runtime.arrays import DeviceArray

    return DeviceArray.empty((nbytes,), np.uint8, device)


class GraphReplay:
    """A trace as an instantiated CUDA graph (see the module docstring);
    ``graph_replay`` wraps it in the generated per-call function."""

    def __init__(self, trace: Trace, device: int, *, api=None, allocate_arena=None):
        if api is None:
            cuda.ensure_context(device)  # instantiating binds the graph to the current context
            api = cuda.graph_api()
        if allocate_arena is None:
            allocate_arena = functools.partial(_device_bytes, device)
        self.api = api
        self.handles = handles = _GraphHandles(api, device)
        self._finalizer = weakref.finalize(self, handles.release)
        self._finalizer.atexit = False  # the driver releases everything at exit, and may be gone by then
        base = 0
        if trace.arena_bytes:
            handles.arena = allocate_arena(trace.arena_bytes)
            base = handles.arena.ptr
        api.check(api.create(ctypes.addressof(handles.graph), 0), "cuGraphCreate")
        self.nodes: list[ctypes.c_void_p] = []
        self.params: list[cuda.KernelNodeParams] = []
        for source, k in trace.cells.index.items():
            if source[0] == "arena":
                trace.cells.values[k] = base + source[1]
        for launch in trace.launches:
            params = cuda.KernelNodeParams(
                func=launch.handle, gridDimX=launch.grid[0], gridDimY=launch.grid[1], gridDimZ=launch.grid[2],
                blockDimX=launch.block[0], blockDimY=launch.block[1], blockDimZ=launch.block[2],
                sharedMemBytes=launch.shared, kernelParams=launch.params,
            )
            node = ctypes.c_void_p()
            dependencies = (ctypes.c_void_p * 1)(self.nodes[-1].value) if self.nodes else None
            code = api.add_kernel_node(
                ctypes.addressof(node), handles.graph, ctypes.addressof(dependencies) if dependencies else None, 1 if dependencies else 0,
                ctypes.addressof(params),
            )
            api.check(code, f"cuGraphAddKernelNode_v2({launch.kernel})")
            self.nodes.append(node)
            self.params.append(params)
        if self.nodes:
            api.check(api.instantiate(ctypes.addressof(handles.exec), handles.graph, 0), "cuGraphInstantiateWithFlags")
        self.bytes = trace.arena_bytes


def graph_replay(
    trace: Trace, *, device: int, torch_outputs: bool, input_at: dict, given_at: dict,
    allocate=None, current_stream=None, ensure=None, api=None, allocate_arena=None, back: tuple | None = None,
):
    """The per-call function of a trace replayed as a CUDA graph:
    ``replay(args, given, pointers, memory) -> outputs``, same contract as
    :func:`plain_replay` (``back`` too); ``replay.graph`` is the :class:`GraphReplay` (it
    owns the arena: ``replay.graph_bytes``). ``api`` and ``allocate_arena``
    (``nbytes -> array with .ptr``) stand in for the driver in tests."""
    allocate, current_stream, ensure = _defaults(device, torch_outputs, allocate, current_stream, ensure)
    graph = GraphReplay(trace, device, api=api, allocate_arena=allocate_arena)
    w = _Writer()
    arguments = Arguments(input_at, given_at)
    _prologue(w, trace, arguments, device=device, torch_outputs=torch_outputs, allocate=allocate, current_stream=current_stream, ensure=ensure, back=back)
    if trace.launches:  # none: every tensor is empty
        _graph_launch(w, trace, graph, arguments)
    output_bytes = sum(math.prod(shape) * numpy_dtype(dtype).itemsize for _, shape, dtype in trace.outputs)
    peak = trace.base_bytes + output_bytes + trace.arena_bytes  # the graph's arena is live in every replay
    _epilogue(w, trace, arguments, len(trace.outputs), output_bytes, peak)
    replay = w.function("replay")
    replay.trace = trace
    replay.graph = graph
    replay.graph_bytes = graph.bytes
    return replay


def _graph_launch(w: _Writer, trace: Trace, graph: GraphReplay, arguments: Arguments) -> None:
    """Update the nodes whose per-call values changed since the last replay, launch the graph."""
    sources = _sources(trace)
    scalars = sorted({index for launch in trace.launches for _, index, _ in launch.scalar_slots})
    changing = [_pointer_expression(s) for s in sources] + [arguments.arg(i) for i in scalars]
    flag = {expression: f"c{k}" for k, expression in enumerate(changing)}
    w.constant("last", [None] * len(changing))  # the values of the last replay (None: set every node)
    w.constant("failed", cuda.call_error)
    w.constant("lock", trace.lock)
    w.constant("set_params", graph.api.set_kernel_params)
    w.constant("graph_launch", graph.api.launch)
    exec_handle = w.constant("EXEC", graph.handles.exec)
    w.line("with lock:")
    for expression, name in flag.items():
        w.line(f"{name} = {expression} != last[{name[1:]}]", 2)
    if changing:
        w.line(f"if {' or '.join(flag.values())}:", 2)
        _write_cells(w, trace, sources, 3)  # arena cells: fixed when the graph was built
    for n, launch in enumerate(trace.launches):
        used = [flag[_pointer_expression(s)] for _, s in launch.pointer_slots if s[0] != "arena"]
        used += [flag[arguments.arg(i)] for _, i, _ in launch.scalar_slots]
        if not used:
            continue  # every parameter fixed: set once, when the graph was built
        w.line(f"if {' or '.join(dict.fromkeys(used))}:", 2)
        _write_scalars(w, n, launch, arguments, 3)
        node = w.constant(f"N{n}", graph.nodes[n])
        params = w.constant(f"K{n}", ctypes.c_void_p(ctypes.addressof(graph.params[n])))
        w.line(f"code = set_params({exec_handle}, {node}, {params})", 3)
        w.line("if code:", 3)
        w.line(f"raise failed('cuGraphExecKernelNodeSetParams_v2({launch.kernel})', code)", 4)
    if changing:
        w.line(f"last[:] = ({', '.join(changing)},)", 2)
    w.line(f"code = graph_launch({exec_handle}, stream)", 2)
    w.line("if code:", 2)
    w.line("raise failed('cuGraphLaunch', code)", 3)
