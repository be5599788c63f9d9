"""Validation of caller-provided (preallocated) output buffers.

``outputs`` is ``None`` or a list with one entry per visible output (in
``add_output`` order), each a buffer or ``None`` (allocate it). A visible
output that is also an in-place update may be given its input itself: the
update lands there anyway, so it is not a separate destination. Everything is
checked before anything runs, so a bad call writes nothing: length, array
type, shape, dtype, writability (of the inputs updated in place too),
overlap with inputs that are not the output's declared alias, and overlap
between given outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fuser_mlir.errors import InputError, counted


def visible_outputs(fusion) -> list:
    return [o for o in fusion.outputs if o.visible]


def validate_outputs(fusion, args: Sequence[object], outputs, device: str = "cpu") -> dict[int, object]:
    """Return ``{visible output index: buffer}`` for the given outputs (as the
    runtime's array type on ``device``)."""
    if outputs is None:
        return {}
    visible = visible_outputs(fusion)
    if not isinstance(outputs, (list, tuple)):
        wrap = f"; to give the one output, wrap it: outputs=[buf]" if len(visible) == 1 and hasattr(outputs, "shape") else ""
        raise InputError(f"outputs must be None or a list with one entry (a buffer or None) per output, got {type(outputs).__name__}{wrap}")
    if len(outputs) != len(visible):
        raise InputError(f"the fusion has {counted(len(visible), 'output')}, but outputs has {counted(len(outputs), 'entry')}; pass one buffer or None per output")
    shapes = [tuple(getattr(a, "shape", ())) for a in args]
    given: dict[int, object] = {}
    for index, (spec, buf) in enumerate(zip(visible, outputs)):
        if buf is None:
            continue
        array = _check_output(fusion, spec, index, buf, shapes, device)
        if spec.alias_input is not None and same_memory(array, args[spec.alias_input]):
            continue  # the aliased input itself: the in-place update already lands there
        given[index] = array
    _check_overlaps(visible, args, given)
    return given


def written_inputs(fusion) -> list[int]:
    """The inputs the fusion updates in place (an output aliased to them, visible or not)."""
    return sorted({o.alias_input for o in fusion.outputs if o.alias_input is not None})


def check_written_inputs(fusion, args: Sequence[object]) -> None:
    """InputError where an input the fusion updates in place is read-only
    (a NumPy array with ``writeable`` off, a read-only CUDA array), repeats
    elements (:func:`overlaps_itself`) or shares memory with another tensor
    input (the same array passed twice, a view of it): the fusion's other
    reads of that input would see its writes, which no hazard analysis of
    the definition can know of. Part of the inputs' validation
    (:func:`fuser_mlir.executor.validate_inputs`)."""
    for index in written_inputs(fusion):
        if overlaps_itself(args[index]):  # before read-only: numpy.broadcast_to's views are both, and a writable one is refused too
            raise InputError(f"input {index} {_shares_elements(args[index])}, but the fusion updates it in place; pass a copy")
        if _read_only(args[index]):
            raise InputError(
                f"input {index} is read-only, but the fusion updates it in place (an output aliased to it); "
                "pass a writable array (a copy), or define the output without the alias"
            )
        for other, arg in enumerate(args):
            if other != index and fusion.inputs[other].kind == "tensor" and may_overlap(args[index], arg):
                raise InputError(
                    f"input {index} is updated in place, but it shares memory with input {other}, which the fusion reads "
                    "as a separate tensor (it would see the writes); pass a copy of one of them"
                )


def _check_output(fusion, spec, index: int, buf: object, shapes, device: str):
    from fuser_mlir.executor import as_array

    array = as_array(buf, device)
    if array is None:
        kind = "a NumPy array" if device == "cpu" else "a CUDA array"
        raise InputError(f"output {index} must be {kind} or None, got {type(buf).__module__}.{type(buf).__qualname__}")
    if isinstance(array, np.ma.MaskedArray):
        raise InputError(f"output {index} is a numpy.ma.MaskedArray, whose mask the fusion would keep as it writes every element; pass its .data")
    buf = array
    expected = tuple(fusion.output_shape(spec.position, shapes))
    if tuple(buf.shape) != expected:
        raise InputError(
            f"output {index} has shape {list(buf.shape)}, but the fusion produces shape {list(expected)} for these inputs; "
            f"pass a buffer of shape {list(expected)}, or None to have it allocated"
        )
    if buf.dtype != spec.dtype.numpy:
        raise InputError(
            f"output {index} has dtype {buf.dtype}, but the fusion produces {spec.dtype.name} ({spec.dtype.numpy}); "
            f"pass a {spec.dtype.numpy} buffer, or None to have it allocated"
        )
    if overlaps_itself(buf):  # before read-only, as for inputs written in place
        raise InputError(f"output {index} {_shares_elements(buf)}, so its writes would race; pass a buffer of distinct elements")
    if _read_only(buf):
        raise InputError(f"output {index} is read-only; pass a writable array")
    return buf


def overlaps_itself(array) -> bool:
    """Whether two elements of ``array`` may share memory: a stride of 0 over
    a dim of several elements (``numpy.broadcast_to``, torch's ``expand``) or
    strides that interleave. Dims sorted by stride, each must step past all
    of the dims before it; a layout that fails this but happens to be
    disjoint counts too (torch refuses such written tensors the same way)."""
    _, shape, strides, itemsize = _geometry(array)
    if 0 in shape:
        return False
    span = itemsize
    for stride, size in sorted((abs(st), size) for size, st in zip(shape, strides) if size > 1):
        if stride < span:
            return True
        span = stride * size
    return False


def _shares_elements(array) -> str:
    _, shape, strides, _ = _geometry(array)
    return f"has elements that share memory (shape {list(shape)}, byte strides {list(strides)}: a stride of 0, or strides that interleave)"


def _read_only(array) -> bool:
    return not array.flags.writeable if isinstance(array, np.ndarray) else array.readonly


def _geometry(array) -> tuple[int, tuple, tuple, int]:
    """(address of element ``[0, ..., 0]``, shape, byte strides, itemsize) of
    a NumPy array, a device view, or a torch tensor (the cache-hit path
    checks the caller's own tensors)."""
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0], array.shape, array.strides, array.itemsize
    if hasattr(array, "data_ptr"):  # torch
        itemsize = array.element_size()
        return array.data_ptr(), tuple(array.shape), tuple(s * itemsize for s in array.stride()), itemsize
    return array.ptr, array.shape, array.strides, array.itemsize


def _extent(geometry) -> tuple[int, int]:
    """The byte range ``[lo, hi)`` a (possibly strided) array touches."""
    from fuser_mlir.runtime.arrays import byte_extent

    pointer, shape, strides, itemsize = geometry
    low, high = byte_extent(shape, strides, itemsize)
    return pointer + low, pointer + high


def same_memory(a, b) -> bool:
    """Whether two arrays are views of exactly the same elements, in the same
    layout (the stride of a dim of one element is no part of it)."""
    if isinstance(a, (int, float, bool)) or isinstance(b, (int, float, bool)):
        return False
    return _layout(a) == _layout(b) and str(a.dtype) == str(b.dtype)


def _layout(array) -> tuple:
    pointer, shape, strides, itemsize = _geometry(array)
    return pointer, tuple(shape), tuple(0 if size == 1 else stride for size, stride in zip(shape, strides)), itemsize


def _span(array) -> tuple[int, int]:
    """The byte range ``[lo, hi)`` an array touches (empty for no elements);
    a contiguous torch tensor's without building its geometry."""
    if isinstance(array, np.ndarray):
        low, high = np.lib.array_utils.byte_bounds(array) if hasattr(np.lib, "array_utils") else np.byte_bounds(array)
        return (low, high) if array.size else (0, 0)
    if hasattr(array, "is_contiguous") and array.is_contiguous():
        pointer = array.data_ptr()
        return pointer, pointer + array.numel() * array.element_size()
    geometry = _geometry(array)
    if 0 in geometry[1]:
        return 0, 0
    return _extent(geometry)


#: How hard :func:`may_overlap` looks for a shared element of two arrays
#: whose byte ranges meet (``numpy.shares_memory``'s ``max_work``); past it
#: they count as overlapping.
OVERLAP_WORK = 10_000


def may_overlap(a, b) -> bool:
    """Whether two arrays (NumPy, device views or torch tensors) may share
    memory: their byte ranges meet and, as far as ``numpy.shares_memory`` can
    tell within :data:`OVERLAP_WORK`, an element (interleaved views such as
    ``x[:, 0::2]`` and ``x[:, 1::2]`` do not overlap)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):  # (shares_memory compares NumPy arrays' bounds first itself)
        (a_lo, a_hi), (b_lo, b_hi) = _span(a), _span(b)
        if not (a_lo < a_hi and b_lo < b_hi and a_lo < b_hi and b_lo < a_hi):
            return False
    try:
        return bool(np.shares_memory(_address_view(a), _address_view(b), max_work=OVERLAP_WORK))
    except getattr(np, "exceptions", np).TooHardError:
        return True


class _Addresses:
    """An array's addresses as a NumPy array interface (nothing is read:
    ``numpy.shares_memory`` compares addresses alone, so a device's do too)."""

    def __init__(self, array):
        pointer, shape, strides, itemsize = _geometry(array)
        self.__array_interface__ = {"data": (pointer, True), "shape": tuple(shape), "strides": tuple(strides), "typestr": f"|V{itemsize}", "version": 3}


def _address_view(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else np.asarray(_Addresses(array))


def _check_overlaps(visible, args, given: dict[int, object]) -> None:
    for index, buf in given.items():
        alias = visible[index].alias_input
        for input_index, arg in enumerate(args):
            if isinstance(arg, (int, float, bool)) or not may_overlap(buf, arg):
                continue
            if input_index == alias:  # not the input itself (validate_outputs took that): a view of it in another layout
                raise InputError(
                    f"output {index} shares memory with input {input_index}, which it updates in place, but is not that input "
                    "itself (the same elements in the same layout); pass the input itself or a separate buffer"
                )
            raise InputError(f"output {index} overlaps input {input_index}, which is not its declared alias; pass a separate buffer")
        for other, other_buf in given.items():
            if other > index and may_overlap(buf, other_buf):
                raise InputError(f"output {index} overlaps output {other}; given outputs must not share memory")
