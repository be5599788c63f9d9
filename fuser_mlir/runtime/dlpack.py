"""DLPack export of device arrays (``__dlpack__``), with ctypes, no MLIR.

:func:`to_capsule` builds a ``DLManagedTensor`` (DLPack's original, unversioned
ABI, which every consumer accepts) describing a strided CUDA buffer and wraps
it in a ``"dltensor"`` PyCapsule. The capsule keeps the exporting array alive
until the consumer calls the deleter (or, if nobody consumed it, until the
capsule is destroyed).

    torch.from_dlpack(device_array)   # no copy
"""

from __future__ import annotations

import ctypes

import numpy as np

KDL_CUDA = 2

_DTYPE_CODES = {  # NumPy dtype name -> (DLPack type code, bits)
    "bool": (6, 8),
    "int32": (0, 32),
    "int64": (0, 64),
    "float16": (2, 16),
    "bfloat16": (4, 16),
    "float32": (2, 32),
    "float64": (2, 64),
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

# The destructor gets a capsule that is being destroyed: a raw pointer, never
# a py_object (which would resurrect it).
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAME = b"dltensor"

_pythonapi = ctypes.pythonapi
_pythonapi.PyCapsule_New.restype = ctypes.py_object
_pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
_pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _pythonapi))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _pythonapi))

#: address of each live DLManagedTensor -> what must outlive it (the array,
#: the shape/stride buffers, the struct itself)
_alive: dict[int, tuple] = {}


@_Deleter
def _delete(managed) -> None:
    _alive.pop(ctypes.addressof(managed.contents), None)


@_CapsuleDestructor
def _destroy_capsule(capsule) -> None:
    """An unconsumed capsule frees its tensor; a consumed one was renamed."""
    if _raw_is_valid(capsule, _NAME):
        _alive.pop(_raw_get_pointer(capsule, _NAME), None)


def dtype_code(dtype: np.dtype) -> tuple[int, int]:
    """DLPack's (type code, bits) of a NumPy dtype; ValueError for others."""
    try:
        return _DTYPE_CODES[np.dtype(dtype).name]
    except KeyError:
        raise ValueError(f"DLPack export does not support dtype {np.dtype(dtype).name}") from None


def to_capsule(array) -> object:
    """A ``"dltensor"`` capsule viewing ``array`` (a DeviceArray: ptr, shape,
    byte strides, dtype, device)."""
    code, bits = dtype_code(array.dtype)
    ndim = len(array.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*[s // array.itemsize for s in array.strides])
    managed = DLManagedTensor()
    managed.dl_tensor.data = array.ptr
    managed.dl_tensor.device = DLDevice(KDL_CUDA, array.device)
    managed.dl_tensor.ndim = ndim
    managed.dl_tensor.dtype = DLDataType(code, bits, 1)
    managed.dl_tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    managed.dl_tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    managed.dl_tensor.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _alive[address] = (array, shape, strides, managed)
    return _pythonapi.PyCapsule_New(address, _NAME, _destroy_capsule)


def read_capsule(capsule) -> DLTensor:
    """The DLTensor inside an unconsumed capsule (for tests and debugging)."""
    address = _pythonapi.PyCapsule_GetPointer(capsule, _NAME)
    return DLManagedTensor.from_address(address).dl_tensor
