"""Call a JIT-compiled CPU kernel on NumPy arrays and Python scalars.

A kernel is a segment function lowered by ``fuser-cpu-pipeline`` with
``llvm.emit_c_interface``; :func:`fuser_mlir.lowering.cpu.compile_cpu` looks up
its *packed* entry point (``engine.raw_lookup("_mlir_ciface_<name>")``), which
takes one ``void**``: element ``i`` points to argument ``i``. A tensor
argument of the C interface is a pointer to a memref descriptor, so element
``i`` points to a cell holding the descriptor's address; a scalar argument is
read from the storage element ``i`` points to (``f16``/``bf16`` as their
16-bit patterns, ``i1`` as one byte), which sidesteps the C ABI of half types.

A rank-``r`` descriptor is ``3 + 2r`` 64-bit words: allocated pointer,
aligned pointer, offset, sizes, strides (in elements). Arrays are passed as
they are, with their own strides (negative ones too; the aligned pointer is
the address of element ``[0, ..., 0]`` and the offset is 0). The caller has
validated dtypes and shapes already; this module does no checks beyond the
argument count.

This module must not import ``mlir``: compiled kernels run in processes that
have NumPy only.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Element type of the IR -> NumPy dtype name.
DTYPE_OF_ELEMENT = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "i1": "bool",
}

_SCALAR_STORAGE = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "bool": ctypes.c_uint8,
    "float16": ctypes.c_uint16,
    "bfloat16": ctypes.c_uint16,
}


@dataclass(frozen=True)
class ArgKind:
    """One kernel argument: a tensor of ``rank`` (``None`` for a scalar) whose
    elements have the NumPy dtype named ``dtype`` (``"float32"``, ``"bfloat16"``,
    ``"bool"``, ...)."""

    dtype: str
    rank: int | None = None

    @property
    def is_tensor(self) -> bool:
        return self.rank is not None

    @classmethod
    def tensor(cls, dtype: str, rank: int) -> "ArgKind":
        return cls(dtype, rank)

    @classmethod
    def scalar(cls, dtype: str) -> "ArgKind":
        return cls(dtype, None)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype named ``name``; ``bfloat16`` comes from ml_dtypes."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _half_bits(dtype: np.dtype) -> Callable[[object], int]:
    """Python scalar -> the 16-bit pattern of its ``dtype`` value (round to nearest even)."""

    def bits(value: object) -> int:
        return int(np.asarray(value, dtype=dtype).view(np.uint16))

    return bits


def _scalar_setter(kind: ArgKind, storage: ctypes._SimpleCData) -> Callable[[object], None]:
    if kind.dtype in ("float16", "bfloat16"):
        to_bits = _half_bits(numpy_dtype(kind.dtype))

        def set_half(value: object) -> None:
            storage.value = to_bits(value)

        return set_half
    if kind.dtype == "bool":

        def set_bool(value: object) -> None:
            storage.value = 1 if value else 0

        return set_bool
    convert = float if kind.dtype.startswith("float") else int

    def set_number(value: object) -> None:
        storage.value = convert(value)

    return set_number


def _interface_pointer(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _probe_data_offset() -> int | None:
    """Where CPython + NumPy keep an ndarray's data pointer, relative to
    ``id(array)``: right after the object header (``PyArrayObject_fields.data``).
    Reading it is five times faster than ``__array_interface__`` (which builds
    a dict). Verified here on sample arrays; None (use the slow path) if the
    layout differs, e.g. on another Python implementation."""
    samples = [np.arange(4.0)[1:], np.zeros((3, 2), np.float32).T, np.empty(0, np.int8)]
    for offset in (16,):
        if all(ctypes.c_void_p.from_address(id(a) + offset).value == _interface_pointer(a) for a in samples):
            return offset
    return None


_DATA_OFFSET = _probe_data_offset()


def data_pointer(array) -> int:
    """The address of element ``[0, ..., 0]`` of ``array``: a NumPy array, or
    a device-array view (:class:`~fuser_mlir.runtime.arrays.DeviceArray`,
    whose ``ptr`` is a device address for GPU segments' host code)."""
    if _DATA_OFFSET is not None and type(array) is np.ndarray:
        return ctypes.c_void_p.from_address(id(array) + _DATA_OFFSET).value or 0
    pointer = getattr(array, "ptr", None)
    return pointer if pointer is not None else _interface_pointer(array)


def _pointer_getter() -> Callable[[object], int]:
    """``data_pointer`` with the NumPy case inlined (the hot path of a kernel call)."""
    if _DATA_OFFSET is None:
        return data_pointer
    ndarray, from_address, offset, general = np.ndarray, ctypes.c_void_p.from_address, _DATA_OFFSET, data_pointer

    def pointer_of(array) -> int:
        if type(array) is ndarray:
            return from_address(id(array) + offset).value or 0
        return general(array)

    return pointer_of


def _tensor_setter(kind: ArgKind, descriptor: ctypes.Array) -> Callable[[np.ndarray], None]:
    """Fill ``descriptor`` in place from an array: one slice assignment,
    specialised for ranks 0-2 (no per-dim loop)."""
    itemsize = numpy_dtype(kind.dtype).itemsize
    pointer_of = _pointer_getter()
    if kind.rank == 0:

        def set_scalar_tensor(array: np.ndarray) -> None:
            pointer = pointer_of(array)
            descriptor[:] = (pointer, pointer, 0)

        return set_scalar_tensor
    if kind.rank == 1:

        def set_vector(array: np.ndarray) -> None:
            pointer = pointer_of(array)
            descriptor[:] = (pointer, pointer, 0, array.shape[0], array.strides[0] // itemsize)

        return set_vector
    if kind.rank == 2:

        def set_matrix(array: np.ndarray) -> None:
            pointer = pointer_of(array)
            (rows, cols), (row_stride, col_stride) = array.shape, array.strides
            descriptor[:] = (pointer, pointer, 0, rows, cols, row_stride // itemsize, col_stride // itemsize)

        return set_matrix

    def set_tensor(array: np.ndarray) -> None:
        pointer = pointer_of(array)
        descriptor[:] = (pointer, pointer, 0, *array.shape, *[s // itemsize for s in array.strides])

    return set_tensor


class CpuKernel:
    """A compiled segment, called as ``kernel(*args)`` with NumPy arrays for
    tensor arguments and Python/NumPy scalars for scalar ones, in the
    segment's argument order (inputs, then destinations, which it writes).

    ``address`` is the packed ``_mlir_ciface_<name>`` entry point; ``keepalive``
    is whatever owns the code (the ExecutionEngine), held as long as the kernel.
    Calls are serialised per kernel: the argument buffers are reused.
    """

    def __init__(self, address: int, arg_kinds: Sequence[ArgKind], *, name: str = "", keepalive: object = None):
        if not address:
            raise ValueError(f"CpuKernel {name or '<unnamed>'}: the entry point address is null")
        self.name = name
        self.arg_kinds = tuple(arg_kinds)
        self._keepalive = keepalive
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._storage: list[object] = []  # descriptors, pointer cells, scalars (kept alive)
        self._setters: list[Callable] = []
        self._packed = (ctypes.c_void_p * max(1, len(self.arg_kinds)))()
        for index, kind in enumerate(self.arg_kinds):
            self._packed[index] = self._prepare(kind)
        self._packed_address = ctypes.addressof(self._packed)  # an int converts faster than the array
        self._lock = threading.Lock()

    def _prepare(self, kind: ArgKind) -> int:
        """Allocate the storage of one argument; return what its packed slot points to."""
        if kind.is_tensor:
            descriptor = (ctypes.c_int64 * (3 + 2 * kind.rank))()
            cell = ctypes.c_void_p(ctypes.addressof(descriptor))
            self._storage += [descriptor, cell]
            self._setters.append(_tensor_setter(kind, descriptor))
            return ctypes.addressof(cell)
        storage = _SCALAR_STORAGE[kind.dtype]()
        self._storage.append(storage)
        self._setters.append(_scalar_setter(kind, storage))
        return ctypes.addressof(storage)

    def __call__(self, *args: object) -> None:
        if len(args) != len(self._setters):
            raise TypeError(f"CpuKernel {self.name}: expected {len(self._setters)} arguments, got {len(args)}")
        with self._lock:
            for setter, value in zip(self._setters, args):
                setter(value)
            self._function(self._packed_address)

    def __repr__(self) -> str:
        kinds = ", ".join(k.dtype if k.rank is None else f"{k.dtype}[{k.rank}d]" for k in self.arg_kinds)
        return f"CpuKernel({self.name}: {kinds})"
