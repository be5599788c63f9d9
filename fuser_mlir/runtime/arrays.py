"""Device arrays: views of CUDA memory that the GPU runtime reads and writes.

:class:`DeviceArray` is a strided view of a CUDA device buffer: a pointer,
a shape, byte strides, a NumPy dtype and the device ordinal. It is what the
runtime returns when the inputs are not torch tensors, and what
:func:`device_view` turns every foreign device array into, so the executor
sees one kind of object:

    x = DeviceArray.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.T.numpy()                       # strided copy back to the host
    view = device_view(torch_tensor)  # non-owning DeviceArray, owner=the tensor
    device_view(np.ones(3))           # None: not a device array

A DeviceArray speaks ``__cuda_array_interface__`` (version 3), so PyTorch
(``torch.as_tensor(x, device="cuda")``), CuPy (``cupy.asarray(x)``) and Numba
can wrap it without a copy. bfloat16 has no standard typestr: it is exported
as ``'<V2'`` (two opaque bytes), which consumers see as void; read its values
through :meth:`DeviceArray.numpy`.

This module never imports ``mlir``, and imports without CUDA present:
``cuda.bindings.driver`` (cuda-python) and ``torch`` are imported inside the
functions that need them. Every CUDA call is checked; a failure raises
:class:`~fuser_mlir.errors.CudaError` naming the call and the CUDA error.
Allocation, copies and the context are handled here directly (the primary
context of the device, made current as PyTorch does), so this module does not
depend on :mod:`fuser_mlir.runtime.cuda`.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence

import numpy as np

from fuser_mlir.errors import CudaError, InputError

#: NumPy dtype name -> ``__cuda_array_interface__`` typestr. bfloat16 has no
#: standard typestr and is exported as two opaque bytes (``'<V2'``).
TYPESTR_OF_DTYPE = {
    "float16": "<f2",
    "bfloat16": "<V2",
    "float32": "<f4",
    "float64": "<f8",
    "int32": "<i4",
    "int64": "<i8",
    "bool": "|b1",
}

#: The DLPack device type of CUDA memory (``kDLCUDA``).
DLPACK_CUDA = 2


def _bfloat16() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def typestr(dtype: np.dtype) -> str:
    """The ``__cuda_array_interface__`` typestr of ``dtype`` (``'<V2'`` for bfloat16)."""
    name = np.dtype(dtype).name
    if name not in TYPESTR_OF_DTYPE:
        raise InputError(f"a device array of dtype {name} is not supported; supported dtypes: {', '.join(TYPESTR_OF_DTYPE)}")
    return TYPESTR_OF_DTYPE[name]


def dtype_from_typestr(code: str, framework_dtype: object = None) -> np.dtype:
    """The NumPy dtype of a ``__cuda_array_interface__`` typestr.

    ``'<V2'`` is bfloat16 only when the exporting object says so: its
    ``dtype`` prints as ``torch.bfloat16`` or ``bfloat16`` (``framework_dtype``).
    Other integer, unsigned, float and bool typestrs map to their NumPy dtype
    (the executor then checks it against the definition); anything else is an
    InputError.
    """
    if code == "<V2":
        if str(framework_dtype) in ("torch.bfloat16", "bfloat16"):
            return _bfloat16()
        raise InputError(
            f"a device array has typestr '<V2' (two opaque bytes) and dtype {framework_dtype!r}; "
            "only bfloat16 arrays of PyTorch, JAX or fuser-mlir may use it"
        )
    try:
        dtype = np.dtype(code)
    except TypeError:
        raise InputError(f"a device array has typestr {code!r}, which is not a NumPy type string") from None
    if dtype.kind not in "biuf" or not dtype.isnative:
        raise InputError(f"a device array has typestr {code!r} ({dtype}); fuser-mlir supports native-endian bool, integer and float arrays")
    return dtype


def contiguous_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous (row-major) array of ``shape``."""
    strides = []
    step = itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def byte_extent(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    """``(low, high)``: byte offsets from element ``[0, ..., 0]`` of the first
    and one past the last byte the array touches (``(0, 0)`` when empty)."""
    if any(size == 0 for size in shape):
        return 0, 0
    low = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride < 0)
    high = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride > 0)
    return low, high + itemsize


# ---------------------------------------------------------------------------
# CUDA driver calls (cuda-python, imported on first use)
# ---------------------------------------------------------------------------

_PRIMARY_CONTEXTS: dict[int, object] = {}


def driver():
    """``cuda.bindings.driver`` (cuda-python); CudaError when it is not installed."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise CudaError(f"CUDA is not available: cuda-bindings (cuda-python) cannot be imported ({exc}); install fuser-mlir[cuda]") from None
    return driver


def check(result, call: str):
    """Unpack a cuda-python result tuple; raise CudaError naming ``call`` on failure."""
    drv = driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        status, name = drv.cuGetErrorName(err)
        label = name.decode() if status == drv.CUresult.CUDA_SUCCESS else f"CUresult {int(err)}"
        raise CudaError(f"{call} failed: {label}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def primary_context(device: int):
    """The primary context of ``device``, retained once per process."""
    ctx = _PRIMARY_CONTEXTS.get(device)
    if ctx is not None:
        return ctx
    drv = driver()
    check(drv.cuInit(0), "cuInit")
    count = check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
    if not 0 <= device < count:
        raise CudaError(f"CUDA device {device} does not exist: this machine has {count} CUDA device(s)")
    handle = check(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
    ctx = check(drv.cuDevicePrimaryCtxRetain(handle), f"cuDevicePrimaryCtxRetain({device})")
    _PRIMARY_CONTEXTS[device] = ctx
    return ctx


def make_current(device: int) -> None:
    """Make ``device``'s primary context current on this thread (as PyTorch does)."""
    drv = driver()
    ctx = primary_context(device)
    if int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")) != int(ctx):
        check(drv.cuCtxSetCurrent(ctx), f"cuCtxSetCurrent(device {device})")


def _free(ptr: int, device: int) -> None:
    """Finalizer of an allocation: free ``ptr`` with its context pushed."""
    drv = driver()
    ctx = primary_context(device)
    check(drv.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        check(drv.cuMemFree(ptr), f"cuMemFree(0x{ptr:x})")
    finally:
        check(drv.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _free_async(ptr: int, device: int, stream: int) -> None:
    """Finalizer of a stream-ordered allocation: free it after the work queued on ``stream``."""
    drv = driver()
    ctx = primary_context(device)
    check(drv.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        check(drv.cuMemFreeAsync(ptr, drv.CUstream(stream)), f"cuMemFreeAsync(0x{ptr:x})")
    finally:
        check(drv.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _pointer_device(ptr: int) -> int:
    """The ordinal of the device that holds ``ptr`` (asks the driver)."""
    drv = driver()
    check(drv.cuInit(0), "cuInit")
    attribute = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return int(check(drv.cuPointerGetAttribute(attribute, ptr), f"cuPointerGetAttribute(DEVICE_ORDINAL, 0x{ptr:x})"))


# ---------------------------------------------------------------------------
# DeviceArray
# ---------------------------------------------------------------------------


class DeviceArray:
    """A strided view of CUDA device memory.

    ``ptr`` is the address of element ``[0, ..., 0]``; ``strides`` are in
    bytes (negative ones allowed); ``owner`` is kept alive as long as the view
    (the array that owns the memory, or a foreign array this view wraps).
    Arrays from :meth:`empty` and :meth:`from_numpy` own their allocation and
    free it when they (and every view of them) are gone.
    """

    __slots__ = ("_ptr", "_shape", "_strides", "_dtype", "_owner", "_device", "_readonly", "_stream", "_finalizer", "__weakref__")

    def __init__(self, ptr: int, shape: Sequence[int], strides: Sequence[int], dtype, *, owner: object = None, device: int = 0, readonly: bool = False, stream: int | None = None):
        shape = tuple(int(s) for s in shape)
        strides = tuple(int(s) for s in strides)
        if len(shape) != len(strides):
            raise ValueError(f"DeviceArray: shape {list(shape)} and strides {list(strides)} have different ranks")
        if any(s < 0 for s in shape):
            raise ValueError(f"DeviceArray: negative size in shape {list(shape)}")
        self._ptr = int(ptr)
        self._shape = shape
        self._strides = strides
        self._dtype = np.dtype(dtype)
        self._owner = owner
        self._device = int(device)
        self._readonly = bool(readonly)
        self._stream = stream
        self._finalizer = None

    # -- properties --------------------------------------------------------

    @property
    def ptr(self) -> int:
        """The device address of element ``[0, ..., 0]``."""
        return self._ptr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides, one per dim."""
        return self._strides

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (not of the memory the strides span)."""
        return self.size * self.itemsize

    @property
    def device(self) -> int:
        """The CUDA device ordinal."""
        return self._device

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def stream(self) -> int | None:
        """The stream the producer of a foreign array named in its
        ``__cuda_array_interface__`` (work that writes it may still be
        queued there), or None."""
        return self._stream

    @property
    def base(self) -> object:
        """Like ``ndarray.base``: the object whose memory this view shares,
        None for an array that owns its allocation."""
        return self._owner

    @property
    def is_c_contiguous(self) -> bool:
        return all(stride == expected for size, stride, expected in zip(self._shape, self._strides, contiguous_strides(self._shape, self.itemsize)) if size > 1)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "version": 3,
            "shape": self._shape,
            "typestr": typestr(self._dtype),
            "data": (self._ptr, self._readonly),
            "strides": self._strides,
            "descr": [("", typestr(self._dtype))],
            "stream": None,
        }

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this view (no copy). ``stream`` is accepted for
        the protocol; the runtime's work is ordered on the legacy default
        stream or torch's current stream, which consumers synchronise with."""
        if copy:
            raise BufferError("DeviceArray.__dlpack__: copy=True is not supported; it exports a view")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"DeviceArray.__dlpack__: cannot export to device {tuple(dl_device)}")
        from fuser_mlir.runtime.dlpack import to_capsule

        return to_capsule(self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CUDA, self._device)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={list(self._shape)}, dtype={self._dtype.name}, strides={list(self._strides)}, device=cuda:{self._device}, ptr=0x{self._ptr:x}{', readonly' if self._readonly else ''})"

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    # -- views -------------------------------------------------------------

    def _view(self, ptr: int, shape, strides) -> "DeviceArray":
        """A view of this array's memory: ``ptr``, ``shape`` and ``strides``
        are Python ints made from this array's own, so the constructor's
        conversions and checks are skipped (a view costs a third as much;
        hit paths permute column-major arguments with it)."""
        view = DeviceArray.__new__(DeviceArray)
        view._ptr, view._shape, view._strides, view._dtype = ptr, tuple(shape), tuple(strides), self._dtype
        view._owner = self if self._owner is None else self._owner
        view._device, view._readonly, view._stream, view._finalizer = self._device, self._readonly, self._stream, None
        return view

    def __getitem__(self, key) -> "DeviceArray":
        """Basic indexing as NumPy does it: integers and slices (any step) one
        per dim, ``None`` for a new dim of size 1, and one ``...`` for the
        dims not named."""
        key = key if isinstance(key, tuple) else (key,)
        named = sum(1 for index in key if index is not None and index is not Ellipsis)
        if named > self.ndim:
            raise IndexError(f"too many indices for a DeviceArray of rank {self.ndim}: {named}")
        ellipses = [position for position, index in enumerate(key) if index is Ellipsis]
        if len(ellipses) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        rest = (slice(None),) * (self.ndim - named)
        key = key[: ellipses[0]] + rest + key[ellipses[0] + 1 :] if ellipses else key + rest
        ptr, shape, strides, dim = self._ptr, [], [], 0
        for index in key:
            if index is None:  # as NumPy's newaxis: size 1, stride 0
                shape.append(1)
                strides.append(0)
                continue
            size, stride = self._shape[dim], self._strides[dim]
            if isinstance(index, slice):
                start, stop, step = index.indices(size)
                ptr += start * stride
                shape.append(len(range(start, stop, step)))
                strides.append(stride * step)
            elif isinstance(index, (int, np.integer)):
                position = int(index) + size if index < 0 else int(index)
                if not 0 <= position < size:
                    raise IndexError(f"index {int(index)} is out of bounds for dim {dim} of size {size}")
                ptr += position * stride
            else:
                raise IndexError(f"DeviceArray supports integer, slice, None and ... indices only, got {type(index).__name__}")
            dim += 1
        return self._view(ptr, shape, strides)

    def transpose(self, *axes) -> "DeviceArray":
        """A view with permuted dims (reversed when no ``axes`` are given)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = tuple(axes) or tuple(reversed(range(self.ndim)))
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"transpose: axes {list(axes)} are not a permutation of the {self.ndim} dims")
        return self._view(self._ptr, [self._shape[a] for a in axes], [self._strides[a] for a in axes])

    @property
    def T(self) -> "DeviceArray":
        return self.transpose()

    def reshape(self, *shape) -> "DeviceArray":
        """A C-contiguous view of a C-contiguous array with another shape of
        the same size (one size may be -1); other arrays would need a copy,
        which a view cannot give: ValueError."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = [int(size) for size in shape]
        if shape.count(-1) > 1 or any(size < -1 for size in shape):
            raise ValueError(f"reshape: invalid shape {shape} (sizes of 0 or more, at most one -1)")
        if -1 in shape:
            known = math.prod(size for size in shape if size != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"reshape: cannot reshape a DeviceArray of size {self.size} into {shape}")
            shape[shape.index(-1)] = self.size // known
        if math.prod(shape) != self.size:
            raise ValueError(f"reshape: cannot reshape a DeviceArray of size {self.size} into {shape}")
        if not self.is_c_contiguous:
            raise ValueError("reshape: a DeviceArray that is not C-contiguous has no view of another shape; copy it first")
        return self._view(self._ptr, shape, contiguous_strides(shape, self.itemsize))

    # -- host transfers ------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A new host ndarray with this array's values (C-contiguous).

        Waits for all work on the device, copies the bytes the strides span
        with ``cuMemcpyDtoH``, and gathers the elements on the host.
        """
        result = np.empty(self._shape, self._dtype)
        low, high = byte_extent(self._shape, self._strides, self.itemsize)
        if high == low:
            return result
        drv = driver()
        make_current(self._device)
        check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
        staging = np.empty(high - low, np.uint8)
        check(drv.cuMemcpyDtoH(staging.ctypes.data, self._ptr + low, high - low), f"cuMemcpyDtoH({high - low} bytes)")
        result[...] = np.ndarray(self._shape, self._dtype, buffer=staging, offset=-low, strides=self._strides)
        return result

    @classmethod
    def empty(cls, shape: Sequence[int], dtype, device: int = 0, *, stream: int | None = None) -> "DeviceArray":
        """A new C-contiguous array on ``device`` (contents undefined), freed
        when it and its views are gone. With a ``stream`` handle, allocation
        and free are ordered on that stream (``cuMemAllocAsync``/``cuMemFreeAsync``):
        the free waits for the work queued on the stream before it."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        drv = driver()
        make_current(device)
        if stream is None:
            ptr = int(check(drv.cuMemAlloc(max(nbytes, 1)), f"cuMemAlloc({nbytes} bytes on device {device})"))
            free = (_free, ptr, device)
        else:
            ptr = int(check(drv.cuMemAllocAsync(max(nbytes, 1), drv.CUstream(stream)), f"cuMemAllocAsync({nbytes} bytes on device {device})"))
            free = (_free_async, ptr, device, stream)
        array = cls(ptr, shape, contiguous_strides(shape, dtype.itemsize), dtype, device=device)
        array._finalizer = weakref.finalize(array, *free)
        array._finalizer.atexit = False  # the driver frees everything at exit, and may be gone by then
        return array

    @classmethod
    def from_numpy(cls, array: np.ndarray, device: int = 0) -> "DeviceArray":
        """A new C-contiguous device copy of ``array`` (waits until the copy is complete)."""
        host = np.require(array, requirements="C")  # keeps 0-d arrays 0-d (ascontiguousarray does not)
        result = cls.empty(host.shape, host.dtype, device)
        if host.nbytes == 0:
            return result
        drv = driver()
        check(drv.cuMemcpyHtoD(result.ptr, host.ctypes.data, host.nbytes), f"cuMemcpyHtoD({host.nbytes} bytes)")
        check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
        return result


# ---------------------------------------------------------------------------
# Foreign arrays
# ---------------------------------------------------------------------------


def _is_torch_tensor(obj: object) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "element_size")


def _torch_view(tensor) -> DeviceArray | None:
    """A view of a torch tensor read from its attributes: works for bfloat16
    and for tensors that require grad, which ``__cuda_array_interface__`` refuses."""
    if not tensor.is_cuda:
        return None
    name = str(tensor.dtype).removeprefix("torch.")
    try:
        dtype = _bfloat16() if name == "bfloat16" else np.dtype(name)
    except TypeError:
        raise InputError(f"a torch tensor of dtype {tensor.dtype} has no NumPy dtype; fuser-mlir supports {', '.join(TYPESTR_OF_DTYPE)}") from None
    itemsize = tensor.element_size()
    strides = tuple(s * itemsize for s in tensor.stride())
    return DeviceArray(tensor.data_ptr(), tuple(tensor.shape), strides, dtype, owner=tensor, device=tensor.device.index)


def _device_ordinal(obj: object, ptr: int) -> int:
    """The device of a foreign array: its ``device.index`` (PyTorch) or
    ``device.id`` (CuPy, JAX), else the driver's answer for its pointer."""
    device = getattr(obj, "device", None)
    for attribute in ("index", "id"):
        ordinal = getattr(device, attribute, None)
        if isinstance(ordinal, int):
            return ordinal
    if ptr == 0:
        return 0
    return _pointer_device(ptr)


def _from_cuda_array_interface(obj: object, interface: dict) -> DeviceArray:
    if interface.get("mask") is not None:
        raise InputError(f"{type(obj).__qualname__}: masked device arrays are not supported")
    shape = tuple(int(s) for s in interface["shape"])
    dtype = dtype_from_typestr(interface["typestr"], getattr(obj, "dtype", None))
    strides = interface.get("strides")
    strides = contiguous_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    ptr, readonly = interface["data"]
    return DeviceArray(ptr, shape, strides, dtype, owner=obj, device=_device_ordinal(obj, ptr), readonly=readonly, stream=interface.get("stream"))


def _from_dlpack(obj: object) -> object:
    """``obj`` converted by a framework that reads DLPack and exports ``__cuda_array_interface__``."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        return torch.from_dlpack(obj)
    try:
        import cupy
    except ImportError:
        raise InputError(
            f"{type(obj).__module__}.{type(obj).__qualname__} is a CUDA array that only speaks DLPack; "
            "fuser-mlir reads DLPack through PyTorch or CuPy, and neither is installed"
        ) from None
    return cupy.from_dlpack(obj)


def device_view(obj: object) -> DeviceArray | None:
    """A non-owning DeviceArray of a CUDA array (``owner=obj``), or None when
    ``obj`` is not one.

    Reads PyTorch tensors from their attributes, other arrays through
    ``__cuda_array_interface__`` (CuPy, Numba, JAX, DeviceArray), and arrays
    that only speak DLPack with a CUDA device (``__dlpack_device__()[0] == 2``)
    through ``torch.from_dlpack`` or ``cupy.from_dlpack`` (the view's owner is
    then the converted array, which keeps ``obj``'s memory alive). A torch CPU
    tensor or a DLPack array on another device gives None.
    """
    if isinstance(obj, DeviceArray):
        return DeviceArray(obj.ptr, obj.shape, obj.strides, obj.dtype, owner=obj, device=obj.device, readonly=obj.readonly, stream=obj.stream)
    if _is_torch_tensor(obj):
        return _torch_view(obj)
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_cuda_array_interface(obj, interface)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        if obj.__dlpack_device__()[0] != DLPACK_CUDA:
            return None
        return device_view(_from_dlpack(obj))  # owned by the converted array, which keeps obj's memory alive
    return None


def is_device_array(obj: object) -> bool:
    """Whether ``obj`` is a CUDA array :func:`device_view` accepts (without
    converting anything)."""
    if isinstance(obj, DeviceArray):
        return True
    if _is_torch_tensor(obj):
        return bool(obj.is_cuda)
    if hasattr(obj, "__cuda_array_interface__"):
        return True
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return obj.__dlpack_device__()[0] == DLPACK_CUDA
    return False


# ---------------------------------------------------------------------------
# PyTorch helpers for the executor (torch imported on use)
# ---------------------------------------------------------------------------


def torch_dtype(dtype: np.dtype):
    """The torch dtype of a NumPy dtype (bfloat16 included)."""
    import torch

    return getattr(torch, np.dtype(dtype).name)


def torch_empty(shape: Sequence[int], dtype, device_index: int):
    """A new C-contiguous torch tensor on ``cuda:device_index`` (allocated by
    PyTorch's caching allocator, on its current stream)."""
    import torch

    return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=f"cuda:{device_index}")


def torch_current_stream_handle(device_index: int) -> int:
    """The ``CUstream`` handle (an int) of PyTorch's current stream on the device."""
    import torch

    return int(torch.cuda.current_stream(device_index).cuda_stream)
