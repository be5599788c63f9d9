"""HitCache: the cache-hit path of FusionExecutorCache, in a few microseconds.

A full validation (:func:`fuser_mlir.executor.validate_inputs`,
:func:`fuser_mlir.outputs.validate_outputs`) and the cache key
(:meth:`FusionExecutorCache.key`) walk the definition's specs, size classes
and reshape checks and derive stride orders, contiguity and alignment
classes: tens of microseconds per call. But every one of those checks, and
the key itself, is a function of a few raw properties of each tensor
argument: its type, dtype, shape, byte strides and data address modulo 16
(the alignment class). So a call whose tensors have the same raw properties
as an earlier call that passed the full validation passes it again, with the
same key: the *raw signature* (one tuple, built in one pass) maps straight to
that call's CompiledFusion.

What a hit still checks per call, because the raw signature does not fix it:
scalar inputs (converted, and checked by the same function as a full
validation when they are not plain Python numbers or are integers out of
their type's range), whether each given output and each NumPy input updated
in place is writable, whether a given output is its in-place input itself
(which decides whether it is a separate destination), and overlaps of given
outputs with inputs and with each other, and of inputs updated in place with
the other inputs (byte ranges that meet are a miss, unless they meet at a
pointer difference a full validation found elements apart at: interleaved
views, :attr:`HitEntry.apart`). Anything unusual (another array type, a
read-only output, an alias decision that differs from the remembered one) is
a miss: the caller runs the full path, which raises the usual error or
remembers the new signature.

NumPy arguments on the CPU take this path, and so do CUDA arguments that are
torch tensors or DeviceArrays (their raw signature adds the device ordinal).
Building the signature reads each tensor's data pointer once; the overlap
checks and the runner use those pointers (:class:`HitEntry` says in which
order). A CUDA hit hands the caller's own tensors to the GPU runtime: the
executor runs a replay generated at the entry's first hit
(:mod:`fuser_mlir.runtime.replay`), since the raw signature fixes every
grid, descriptor slot and buffer shape, so only pointers and scalars change
per call. New outputs are torch tensors when the inputs are, else
DeviceArrays, exactly as on the full path. The steady state of a CUDA
caller (one signature, call after call) skips even the lookup: the entry hit
last has its checks generated as code at the head of a second replay
(:class:`Guard`), which FusionExecutorCache.run tries first (:attr:`HitCache.last`);
when it answers None the lookup runs as above. A column-major call run on row-major views of its arguments (of an
elementwise fusion, :func:`fuser_mlir.executor.row_major_views`; or of a
fusion written again in their order, :func:`fuser_mlir.executor.relayout_order`)
is remembered under its own signature with the views' compiled fusion and
the permutation of each argument (:attr:`HitEntry.views`): on CUDA its
replay is traced on the views and reads the caller's pointers, so its hits
cost what a row-major hit costs (on the CPU the runner permutes the arrays
per call). Other CUDA arrays (CuPy, JAX,
DLPack-only) take the full path. Entries are few and bounded: when ``limit``
raw signatures are remembered (shapes change often), the table starts over
(dropping an entry drops its replay, and with it any CUDA graph it holds).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fuser_mlir.runtime.arrays import DeviceArray
from fuser_mlir.runtime.cpu import data_pointer

#: Python number types a scalar input of each dtype class takes as they are.
_FLOAT_TYPES = (float, int, bool)
_INT_TYPES = (int, bool)
#: The finite floats: an int past them (10**400) has no float, and inf or NaN takes the full path.
_FLOAT_BOUNDS = (-sys.float_info.max, sys.float_info.max)
#: How many pointer differences a hit entry remembers for two arguments whose
#: byte ranges meet without a shared element (HitEntry.apart); a call at
#: another difference takes the full path.
APART_LIMIT = 8


@dataclass(eq=False)
class HitEntry:
    """What a raw signature resolves to: the compiled fusion, the layout of
    the given outputs it was compiled for, and what a hit checks and runs.

    A call's *pointers* are the data addresses the signature read, in its
    order: one per tensor input, then one per output buffer passed (not None).
    """

    compiled: object  # CompiledFusion
    #: (visible output index, declared alias input or None, given as a separate
    #: destination) for each output the caller passed a buffer for
    outputs: tuple[tuple[int, int | None, bool], ...]
    #: CUDA: new outputs are torch tensors (the inputs are)
    torch_outputs: bool = False
    #: tensor input index -> position of its pointer
    input_at: dict = field(default_factory=dict)
    #: visible output index -> position of its pointer (outputs passed)
    given_at: dict = field(default_factory=dict)
    #: (input index, pointer position, low, high) for each tensor input with
    #: elements: the byte range it touches, relative to its pointer (the raw
    #: signature fixes it)
    spans: tuple = ()
    #: (written input, its pointer position, low, high, other tensor input,
    #: its pointer position, low, high) for each input updated in place and
    #: each other tensor input, both with elements: a hit whose byte ranges
    #: meet takes the full path (which names the overlap), unless they meet
    #: as they did in the remembered call (see ``apart``)
    written: tuple = ()
    #: per output passed: (index, alias, separate, pointer position, byte range
    #: relative to the pointer or None, whether it has its alias input's shape,
    #: strides and dtype (then it *is* that input exactly when the pointers are
    #: equal), pointer position of the alias, whether a NumPy writeable flag
    #: must be checked)
    checks: tuple = ()
    #: (pointer position, other pointer position) -> the differences (the
    #: other pointer minus the first) at which the two tensor arguments' byte
    #: ranges met in a remembered call, which the full validation found to
    #: share no element (interleaved views: ``x[:, 0::2]`` and ``x[:, 1::2]``).
    #: Whether two arrays share an element is a function of their shapes,
    #: strides and dtypes, which the raw signature fixes, and of this
    #: difference alone: a hit whose ranges meet at a remembered difference
    #: shares none either. At most :data:`APART_LIMIT` differences a pair
    apart: dict = field(default_factory=dict)
    #: the entry's runner, ``runner(args, given, pointers, memory) -> outputs``,
    #: made on its first hit by FusionExecutorCache (a generated replay on
    #: CUDA, see fuser_mlir.runtime.replay); ``graph``: the same with
    #: ``cuda_graph=True``
    replay: object = None
    graph: object = None
    #: why the entry runs the general path on CUDA ("" when it replays)
    not_replayed: str = ""
    #: the raw signature the entry was remembered under
    signature: tuple = ()
    #: column-major arguments: how they become the row-major views that
    #: ``compiled`` was compiled for (:class:`fuser_mlir.executor.Views`;
    #: FusionExecutorCache._run_on_views): a CUDA replay is traced on the
    #: views, other runners permute per call; None for any other entry
    views: object = None
    #: CUDA: the replay with this entry's checks built in,
    #: ``fast(inputs, outputs, memory) -> outputs``, None where the arguments
    #: differ from the signature in any way (see :class:`Guard`); made with
    #: ``replay``, where the checks can be written out
    fast: object = None


def _torch_tensor_type():
    """``torch.Tensor`` once torch is imported (never imports it)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


class HitCache:
    """Raw argument signature -> :class:`HitEntry` (see the module docstring)."""

    def __init__(self, fusion, *, limit: int = 64):
        self.fusion = fusion
        self.limit = limit
        self._entries: dict[tuple, HitEntry] = {}
        specs = fusion.inputs
        self._num_inputs = len(specs)
        self._tensor_inputs = tuple(i for i, s in enumerate(specs) if s.kind == "tensor")
        #: (index, spec, Python types taken as they are, (least, greatest) value taken as it is, or None) per scalar input
        self._scalar_inputs = tuple(
            (i, s, _FLOAT_TYPES if s.dtype.is_float else _INT_TYPES,
             _FLOAT_BOUNDS if s.dtype.is_float else (s.dtype.int_range if s.dtype.is_int else None))
            for i, s in enumerate(specs)
            if s.kind != "tensor"
        )
        self._visible = None  # visible output specs, on first use
        self._written = ()  # inputs updated in place (a NumPy one's writeable flag is checked per hit), on first use
        self._tensor_type = None  # torch.Tensor, once torch is imported
        #: the ``fast`` function of the entry hit last (None: none yet, or
        #: the table changed since): FusionExecutorCache.run tries it first
        self.last = None

    # -- the raw signature ------------------------------------------------------

    def signature(self, inputs: Sequence[object], outputs) -> tuple | None:
        """The raw signature of a call, or None when it cannot take the hit
        path (not a list of the right length, or a tensor argument that is
        not a NumPy array, a torch tensor or a DeviceArray)."""
        return self._signature(inputs, outputs, [])

    def _signature(self, inputs: Sequence[object], outputs, pointers: list) -> tuple | None:
        """:meth:`signature`, appending the data pointer of each tensor
        argument it reads to ``pointers`` (see :class:`HitEntry`)."""
        if type(inputs) is not list and type(inputs) is not tuple or len(inputs) != self._num_inputs:
            return None
        tensor = self._tensor_type or _torch_tensor_type()
        key = []
        for i in self._tensor_inputs:
            pointer = _append_raw(key, inputs[i], tensor)
            if pointer is None:
                return None
            pointers.append(pointer)
        if outputs is None:
            return tuple(key)
        if type(outputs) is not list and type(outputs) is not tuple:
            return None
        key.append(len(outputs))
        for buf in outputs:
            if buf is None:
                key.append(None)
                continue
            pointer = _append_raw(key, buf, tensor)
            if pointer is None:
                return None
            pointers.append(pointer)
        return tuple(key)

    # -- lookup ------------------------------------------------------------------

    def lookup(self, inputs: Sequence[object], outputs):
        """``(entry, args, given, pointers)`` (the remembered entry, the
        arguments as the full path would validate them, the caller's own
        arrays, and the call's pointers), or None (a miss: run the full path)."""
        pointers = []
        signature = self._signature(inputs, outputs, pointers)
        if signature is None:
            return None
        entry = self._entries.get(signature)
        if entry is None:
            return None
        for i in self._written:
            if type(inputs[i]) is np.ndarray and not inputs[i].flags.writeable:
                return None  # an input updated in place, read-only: the full path names it
        apart = entry.apart
        for _, at, low, high, _, other_at, other_low, other_high in entry.written:
            start, other = pointers[at], pointers[other_at]
            if start + low < other + other_high and other + other_low < start + high and other - start not in apart.get((at, other_at), ()):
                return None  # an input updated in place meets another input: the full path names it
        args = self._scalars(inputs) if self._scalar_inputs else inputs
        if not entry.checks:
            return entry, args, {}, pointers
        given = _given(entry, outputs, pointers)
        if given is None:
            return None
        return entry, args, given, pointers

    def _scalars(self, inputs: Sequence[object]) -> list:
        from fuser_mlir.executor import _check_scalar

        args = list(inputs)
        for i, spec, fast, bounds in self._scalar_inputs:
            value = args[i]
            if type(value) in fast and (bounds is None or bounds[0] <= value <= bounds[1]):
                args[i] = float(value) if fast is _FLOAT_TYPES else (bool(value) if spec.dtype.name == "Bool" else int(value))
            else:
                args[i] = _check_scalar(spec, i, value)  # the full path's conversion and message
        return args

    # -- remembering ----------------------------------------------------------------

    def entry(self, inputs: Sequence[object], outputs) -> HitEntry | None:
        """The entry remembered for the raw signature of these arguments, if any."""
        signature = self.signature(inputs, outputs)
        return None if signature is None else self._entries.get(signature)

    def remember(self, inputs: Sequence[object], outputs, compiled, given: dict[int, object], torch_outputs: bool = False, views=None) -> None:
        """Record a call that passed the full validation and ran ``compiled``
        (``views``: on its arguments' dims permuted so, see HitEntry.views)."""
        pointers = []
        signature = self._signature(inputs, outputs, pointers)
        if signature is None:
            return
        self._tensor_type = _torch_tensor_type()
        if self._visible is None:
            from fuser_mlir.outputs import visible_outputs, written_inputs

            self._visible = visible_outputs(self.fusion)
            self._written = written_inputs(self.fusion)
        passed = [index for index, buf in enumerate(outputs or ()) if buf is not None]
        input_at = {i: k for k, i in enumerate(self._tensor_inputs)}
        given_at = {index: len(input_at) + k for k, index in enumerate(passed)}
        spans = []
        for i in self._tensor_inputs:
            extent = _relative_extent(inputs[i])
            if extent is not None:
                spans.append((i, input_at[i], *extent))
        ranges = [(at, pointers[at] + low, pointers[at] + high) for _, at, low, high in spans]
        layout, checks = [], []
        for index in passed:
            buf, alias = outputs[index], self._visible[index].alias_input
            separate = index in given
            layout.append((index, alias, separate))
            same_layout = alias is not None and _same_layout(buf, inputs[alias])
            alias_at = input_at[alias] if alias is not None else None
            extent = _relative_extent(buf)
            checks.append((index, alias, separate, given_at[index], extent, same_layout, alias_at, type(buf) is np.ndarray))
            if separate and extent is not None:
                at = given_at[index]
                ranges.append((at, pointers[at] + extent[0], pointers[at] + extent[1]))
        apart = {  # every two ranges that meet (a hit consults only pairs the full validation found to share no element)
            (a, b): frozenset({pointers[b] - pointers[a]})
            for a, a_low, a_high in ranges for b, b_low, b_high in ranges if a != b and a_low < b_high and b_low < a_high
        }
        existing = self._entries.get(signature)
        if existing is not None and existing.compiled is compiled and existing.outputs == tuple(layout) and existing.views == views:
            # keep its runner (and any CUDA graph it built); its guard (made
            # with the runner) keeps the differences it knew and leaves new
            # ones to lookup
            for pair, differences in apart.items():
                known = existing.apart.get(pair, frozenset())
                if len(known) < APART_LIMIT:
                    existing.apart[pair] = known | differences
            return
        written = tuple((*span, *other) for span in spans if span[0] in self._written for other in spans if other[0] != span[0])
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self.last = None
        self._entries[signature] = HitEntry(
            compiled, tuple(layout), torch_outputs, input_at, given_at, tuple(spans), written, tuple(checks), apart, signature=signature, views=views
        )

    def guard(self, entry: HitEntry) -> "Guard | None":
        """The checks of ``entry`` as generated code (see :class:`Guard`), or
        None where a hit must take :meth:`lookup` (a NumPy buffer's writeable
        flag to check) or can never be taken (an output remembered as its
        in-place input itself, laid out otherwise: :func:`_given` always
        sends it to the full path)."""
        for _, alias, separate, _, _, same_layout, _, numpy_buffer in entry.checks:
            if numpy_buffer or (alias is not None and not same_layout and not separate):
                return None
        return Guard(self, entry)


class Guard:
    """:meth:`HitCache.lookup`'s work for one entry, as straight-line code at
    the head of a generated replay (:func:`fuser_mlir.runtime.replay.plain_replay`
    with ``arguments=``): ``replay(inputs, outputs, memory)`` returns None
    unless the arguments have the entry's raw signature and pass its checks
    (scalar types, alias decisions, overlaps), exactly as a lookup that finds
    this entry would. Each tensor's properties are compared with the entry's
    constants where they are read: no signature tuple is built or hashed, and
    no pointer list or given dictionary is made (on the H200 host a lookup
    took 4-6 µs of a 15 µs hit with three tensors)."""

    parameters = "inputs, outputs, memory"

    def __init__(self, cache: HitCache, entry: HitEntry):
        self.cache = cache
        self.entry = entry
        self._scalars = {i for i, *_ in cache._scalar_inputs}

    def write(self, w, sources) -> None:
        """Statements that return None on any difference, and bind each
        tensor's pointer (``p<input>``, ``g<output>``) and each scalar
        (``s<input>``, converted as the full validation does): every
        pointer, whichever of them ``sources`` (those the launches read) names."""
        cache, entry = self.cache, self.entry
        signature = iter(entry.signature)
        w.line(f"if type(inputs) is not list and type(inputs) is not tuple or len(inputs) != {cache._num_inputs}:")
        w.line("return None", 2)
        for i in cache._tensor_inputs:
            self._tensor(w, f"inputs[{i}]", f"x{i}", f"p{i}", signature)
        for i, spec, fast, bounds in cache._scalar_inputs:
            kinds = w.constant(f"SCALAR{i}", fast)
            w.line(f"s{i} = inputs[{i}]")
            w.line(f"if type(s{i}) not in {kinds}{f' or not {bounds[0]} <= s{i} <= {bounds[1]}' if bounds else ''}:")
            w.line("return None  # the full path converts or refuses it", 2)
            convert = "float" if fast is _FLOAT_TYPES else ("bool" if spec.dtype.name == "Bool" else "int")
            w.line(f"s{i} = {convert}(s{i})")
        for i, at, low, high, other, other_at, other_low, other_high in entry.written:
            meets = f"{_plus(f'p{i}', low)} < {_plus(f'p{other}', other_high)} and {_plus(f'p{other}', other_low)} < {_plus(f'p{i}', high)}"
            w.line(f"if {meets}{self._elsewhere(at, f'p{i}', other_at, f'p{other}')}:")
            w.line("return None  # an input updated in place meets another input: the full path names it", 2)
        count = next(signature, None)
        if count is None:
            w.line("if outputs is not None:")
            w.line("return None", 2)
            return
        w.line(f"if type(outputs) is not list and type(outputs) is not tuple or len(outputs) != {count}:")
        w.line("return None", 2)
        for index in range(count):
            if index not in entry.given_at:
                next(signature)
                w.line(f"if outputs[{index}] is not None:")
                w.line("return None", 2)
            else:
                self._tensor(w, f"outputs[{index}]", f"y{index}", f"g{index}", signature)
        self._checks(w)

    def _tensor(self, w, item: str, name: str, pointer: str, signature) -> None:
        """Checks of one tensor argument against its part of the signature (see _append_raw)."""
        kind = next(signature)
        w.line(f"{name} = {item}")
        if kind == 1:
            dtype, shape, strides, align, device = (next(signature) for _ in range(5))
            w.line(f"if type({name}) is not {w.constant('TENSOR', self.cache._tensor_type)}:")
            w.line("return None", 2)
            w.line(f"{pointer} = {name}.data_ptr()")
            compare = [
                f"{pointer} & 15 != {align}", f"{name}.dtype is not {w.constant(f'D_{name}', dtype)}",
                f"{name}.shape != {tuple(shape)!r}", f"{name}.stride() != {tuple(strides)!r}", f"{name}.get_device() != {device}",
            ]
        elif kind == 2:
            dtype, shape, strides, align, device, readonly = (next(signature) for _ in range(6))
            w.line(f"if type({name}) is not {w.constant('DEVICE_ARRAY', DeviceArray)}:")
            w.line("return None", 2)
            w.line(f"{pointer} = {name}._ptr")
            compare = [
                f"{pointer} & 15 != {align}", f"{name}._dtype != {w.constant(f'D_{name}', dtype)}", f"{name}._shape != {tuple(shape)!r}",
                f"{name}._strides != {tuple(strides)!r}", f"{name}._device != {device}", f"{name}._readonly is not {readonly}",
            ]
        else:
            raise ValueError(f"a NumPy argument has no guard (kind {kind})")
        w.line(f"if {' or '.join(compare)}:")
        w.line("return None", 2)

    def _checks(self, w) -> None:
        """_given's alias decisions and overlap checks, with the entry's constants."""
        entry = self.entry
        taken = []
        for index, alias, separate, at, extent, same_layout, _, _ in entry.checks:
            given = f"g{index}"
            if alias is not None and same_layout:  # (not same_layout: separate, see HitCache.guard)
                w.line(f"if {given} {'==' if separate else '!='} p{alias}:")
                w.line("return None  # the other alias decision: the full path makes it", 2)
            if not separate or extent is None:
                continue
            low, high = _plus(given, extent[0]), _plus(given, extent[1])
            meets = [
                f"{low} < {_plus(f'p{i}', other_high)} and {_plus(f'p{i}', other_low)} < {high}{self._elsewhere(at, given, position, f'p{i}')}"
                for i, position, other_low, other_high in entry.spans
            ]
            meets += [
                f"{low} < {other_high} and {other_low} < {high}{self._elsewhere(at, given, position, other)}"
                for position, other, other_low, other_high in taken
            ]
            for condition in meets:
                w.line(f"if {condition}:")
                w.line("return None  # byte ranges meet (elsewhere than where they met apart): the full path decides and names the overlap", 2)
            taken.append((at, given, low, high))

    def _elsewhere(self, at: int, name: str, other_at: int, other: str) -> str:
        """`` and <other> - <name> not in (D, ...)`` where the two arguments'
        byte ranges met at those differences in remembered calls, sharing no
        element (HitEntry.apart); else nothing: any meeting is a miss."""
        differences = self.entry.apart.get((at, other_at))
        return "" if not differences else f" and {other} - {name} not in {tuple(sorted(differences))!r}"

    def arg(self, index: int) -> str:
        return f"s{index}" if index in self._scalars else f"inputs[{index}]"

    def given(self, index: int) -> str:
        return f"outputs[{index}]"


def _plus(name: str, offset: int) -> str:
    """``name + offset`` in generated code."""
    return f"{name} + {offset}" if offset else name


def _given(entry: HitEntry, outputs, pointers: list) -> dict | None:
    """The given outputs as the full validation would return them, or None
    when anything needs the full path: a read-only buffer, an alias decision
    other than the remembered one, or byte ranges that meet (the full path
    then decides, precisely, and names the overlap)."""
    given = {}
    taken = []
    apart = entry.apart
    for index, alias, separate, at, extent, same_layout, alias_at, numpy_buffer in entry.checks:
        buf = outputs[index]
        if numpy_buffer and not buf.flags.writeable:
            return None  # a read-only DeviceArray has another signature; torch tensors have no such flag
        base = pointers[at]
        if alias is not None and (same_layout and base == pointers[alias_at]) == separate:
            return None
        if not separate:
            continue
        given[index] = buf
        if extent is None:
            continue
        low, high = base + extent[0], base + extent[1]
        for _, position, other_low, other_high in entry.spans:
            start = pointers[position]
            if low < start + other_high and start + other_low < high and start - base not in apart.get((at, position), ()):
                return None
        for position, other_low, other_high in taken:
            if low < other_high and other_low < high and pointers[position] - base not in apart.get((at, position), ()):
                return None
        taken.append((at, low, high))
    return given


def _append_raw(key: list, array: object, tensor_type) -> int | None:
    """Add ``array``'s raw properties to ``key``; return its data pointer,
    or None for an array type the hit path does not take."""
    kind = type(array)
    if kind is tensor_type:
        pointer = array.data_ptr()
        key += (1, array.dtype, array.shape, array.stride(), pointer & 15, array.get_device())
    elif kind is DeviceArray:  # its slots, not its properties: 50 ns less each
        pointer = array._ptr
        key += (2, array._dtype, array._shape, array._strides, pointer & 15, array._device, array._readonly)
    elif kind is np.ndarray:
        pointer = data_pointer(array)
        key += (0, array.dtype, array.shape, array.strides, pointer & 15)
    else:
        return None
    return pointer


def _pointer(array) -> int:
    """The address of element ``[0, ..., 0]`` of an array the hit path takes."""
    kind = type(array)
    if kind is np.ndarray:
        return data_pointer(array)
    if kind is DeviceArray:
        return array.ptr
    return array.data_ptr()


def _relative_extent(array) -> tuple[int, int] | None:
    """The byte range ``array`` touches, relative to its pointer (None: empty)."""
    from fuser_mlir.outputs import _span

    low, high = _span(array)
    if low >= high:
        return None
    base = _pointer(array)
    return low - base, high - base


def _same_layout(a, b) -> bool:
    from fuser_mlir.outputs import _geometry

    return _geometry(a)[1:] == _geometry(b)[1:] and str(a.dtype) == str(b.dtype)
