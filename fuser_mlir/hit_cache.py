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
validation when they are not plain Python numbers), whether each given output
is writable, whether a given output is its in-place input itself (which
decides whether it is a separate destination), and overlaps of given outputs
with inputs and with each other. Anything unusual (another array type, a
read-only output, an alias decision that differs from the remembered one) is
a miss: the caller runs the full path, which raises the usual error or
remembers the new signature.

NumPy arguments on the CPU take this path, and so do CUDA arguments that are
torch tensors or DeviceArrays (their
raw signature adds the device ordinal). A CUDA hit hands the caller's own
tensors to the GPU runtime, which reads pointer, shape and strides straight
from them (no device views, no mapping of results back): new outputs are
torch tensors when the inputs are, else DeviceArrays, exactly as on the full
path. Other CUDA arrays (CuPy, JAX, DLPack-only) take the full path. Entries
are few and bounded: when ``limit`` raw signatures are remembered (shapes
change often), the table starts over.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fuser_mlir.runtime.arrays import DeviceArray
from fuser_mlir.runtime.cpu import data_pointer

#: Python number types a scalar input of each dtype class takes as they are.
_FLOAT_TYPES = (float, int, bool)
_INT_TYPES = (int, bool)


@dataclass(frozen=True)
class HitEntry:
    """What a raw signature resolves to: the compiled fusion, and the layout
    of the given outputs it was compiled for."""

    compiled: object  # CompiledFusion
    #: (visible output index, declared alias input or None, given as a separate
    #: destination) for each output the caller passed a buffer for
    outputs: tuple[tuple[int, int | None, bool], ...]
    #: CUDA: new outputs are torch tensors (the inputs are)
    torch_outputs: bool = False
    #: byte range each input tensor touches, relative to its data pointer
    #: (None: a scalar or no elements); the raw signature fixes it
    input_extents: tuple = ()
    #: the same for each given output, by visible output index
    output_extents: dict | None = None
    #: per given output: whether it has its alias input's shape, strides and
    #: dtype (then it *is* that input exactly when the pointers are equal)
    alias_layouts: dict | None = None


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
        self._scalar_inputs = tuple((i, s, _FLOAT_TYPES if s.dtype.is_float else _INT_TYPES) for i, s in enumerate(specs) if s.kind != "tensor")
        self._visible = None  # visible output specs, on first use

    # -- the raw signature ------------------------------------------------------

    def signature(self, inputs: Sequence[object], outputs) -> tuple | None:
        """The raw signature of a call, or None when it cannot take the hit
        path (not a list of the right length, or a tensor argument that is
        not a NumPy array, a torch tensor or a DeviceArray)."""
        if type(inputs) is not list and type(inputs) is not tuple or len(inputs) != self._num_inputs:
            return None
        tensor = _torch_tensor_type()
        key = []
        for i in self._tensor_inputs:
            if not _append_raw(key, inputs[i], tensor):
                return None
        if outputs is None:
            return tuple(key)
        if type(outputs) is not list and type(outputs) is not tuple:
            return None
        key.append(len(outputs))
        for buf in outputs:
            if buf is None:
                key.append(None)
            elif not _append_raw(key, buf, tensor):
                return None
        return tuple(key)

    # -- lookup ------------------------------------------------------------------

    def lookup(self, inputs: Sequence[object], outputs):
        """``(entry, args, given)`` (the remembered entry, and the arguments
        as the full path would validate them, the caller's own arrays), or
        None (a miss: run the full path)."""
        signature = self.signature(inputs, outputs)
        if signature is None:
            return None
        entry = self._entries.get(signature)
        if entry is None:
            return None
        args = self._scalars(inputs) if self._scalar_inputs else inputs
        if not entry.outputs:
            return entry, args, {}
        given = self._given(entry, args, outputs)
        if given is None:
            return None
        return entry, args, given

    def _scalars(self, inputs: Sequence[object]) -> list:
        from fuser_mlir.executor import _check_scalar

        args = list(inputs)
        for i, spec, fast in self._scalar_inputs:
            value = args[i]
            if type(value) in fast:
                args[i] = float(value) if fast is _FLOAT_TYPES else (bool(value) if spec.dtype.name == "Bool" else int(value))
            else:
                args[i] = _check_scalar(spec, i, value)  # the full path's conversion and message
        return args

    def _given(self, entry: HitEntry, args: Sequence[object], outputs) -> dict | None:
        """The given outputs as the full validation would return them, or None
        when anything needs the full path: a read-only buffer, an alias
        decision other than the remembered one, or byte ranges that meet (the
        full path then decides, precisely, and names the overlap)."""
        given = {}
        spans = []
        for i, extent in enumerate(entry.input_extents):
            if extent is not None:
                base = _pointer(args[i])
                spans.append((i, base + extent[0], base + extent[1]))
        taken = []
        for index, alias, separate in entry.outputs:
            buf = outputs[index]
            if _read_only(buf):
                return None
            base = _pointer(buf)
            if alias is not None:
                same = entry.alias_layouts[index] and base == _pointer(args[alias])
                if same == separate:
                    return None
            if not separate:
                continue
            given[index] = buf
            extent = entry.output_extents[index]
            if extent is None:
                continue
            low, high = base + extent[0], base + extent[1]
            for i, other_low, other_high in spans:
                if i != alias and low < other_high and other_low < high:
                    return None
            for other_low, other_high in taken:
                if low < other_high and other_low < high:
                    return None
            taken.append((low, high))
        return given

    # -- remembering ----------------------------------------------------------------

    def remember(self, inputs: Sequence[object], outputs, compiled, given: dict[int, object], torch_outputs: bool = False) -> None:
        """Record a call that passed the full validation and ran ``compiled``."""
        signature = self.signature(inputs, outputs)
        if signature is None:
            return
        if self._visible is None:
            from fuser_mlir.outputs import visible_outputs

            self._visible = visible_outputs(self.fusion)
        layout = tuple(
            (index, self._visible[index].alias_input, index in given) for index, buf in enumerate(outputs or ()) if buf is not None
        )
        input_extents = tuple(None if i not in self._tensor_inputs else _relative_extent(inputs[i]) for i in range(self._num_inputs))
        output_extents = {index: _relative_extent(outputs[index]) for index, _, _ in layout}
        alias_layouts = {
            index: alias is not None and _same_layout(outputs[index], inputs[alias]) for index, alias, _ in layout
        }
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[signature] = HitEntry(compiled, layout, torch_outputs, input_extents, output_extents, alias_layouts)


def _append_raw(key: list, array: object, tensor_type) -> bool:
    """Add ``array``'s raw properties to ``key``; False for an array type the
    hit path does not take."""
    kind = type(array)
    if kind is np.ndarray:
        key += (0, array.dtype, array.shape, array.strides, data_pointer(array) & 15)
    elif kind is tensor_type:
        key += (1, array.dtype, array.shape, array.stride(), array.data_ptr() & 15, array.get_device())
    elif kind is DeviceArray:
        key += (2, array.dtype, array.shape, array.strides, array.ptr & 15, array.device, array.readonly)
    else:
        return False
    return True


def _read_only(array) -> bool:
    if type(array) is np.ndarray:
        return not array.flags.writeable
    return bool(getattr(array, "readonly", False))  # torch tensors have no read-only flag


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
