"""The CUDA driver layer: cuda-python's ``cuda.bindings.driver``, no MLIR.

Imports without CUDA present; :func:`available` says whether a GPU can be
used here, and every other entry point raises
:class:`~fuser_mlir.errors.CudaError` (naming the call and the CUDA error)
when it cannot.

GPU segments are host functions JIT-compiled on the CPU that launch their
kernels through MLIR's GPU runtime ABI (``mgpuModuleLoadJIT``,
``mgpuLaunchKernel``, ...). :func:`mgpu_symbols` provides those functions as
ctypes callbacks into this module, so the same driver layer serves them:

- each JIT engine's constructors load its modules once, its destructors
  unload them; functions are cached per loaded module (never by the address
  of the embedded PTX: a later engine can reuse a freed engine's addresses);
- ``mgpuStreamCreate`` hands out the stream of the current call
  (:func:`use_stream`, e.g. torch's current stream), and
  ``mgpuStreamSynchronize``/``mgpuStreamDestroy`` do nothing: launches stay
  asynchronous and ordered on that stream;
- ``mgpuMemAlloc``/``mgpuMemFree`` allocate intermediates inside a segment,
  stream-ordered (``cuMemAllocAsync``/``cuMemFreeAsync``).

A callback cannot raise into the JIT-compiled caller; it records the error and
returns null, and :func:`raise_pending` (called after every segment) raises it.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from fuser_mlir.errors import CudaError
from fuser_mlir.runtime.arrays import check, driver, make_current, primary_context

_state = threading.local()
_modules: dict[int, object] = {}  # handle -> CUmodule, while loaded
_functions: dict[tuple[int, bytes], object] = {}  # (module, name) -> CUfunction
_function_by_handle: dict[int, object] = {}
_pending: list[BaseException] = []
_lock = threading.Lock()


def available() -> bool:
    """Whether a CUDA GPU can run fusions in this process."""
    try:
        drv = driver()
        check(drv.cuInit(0), "cuInit")
        return check(drv.cuDeviceGetCount(), "cuDeviceGetCount") > 0
    except CudaError:
        return False


def ensure_context(device: int = 0) -> None:
    """Make ``device``'s primary context current on this thread."""
    make_current(device)


@functools.cache
def compute_capability(device: int = 0) -> tuple[int, int]:
    drv = driver()
    primary_context(device)  # initialises the driver, checks the device exists
    dev = check(drv.cuDeviceGet(device), "cuDeviceGet")
    attr = drv.CUdevice_attribute
    major = check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
    minor = check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
    return major, minor


def mem_alloc(nbytes: int) -> int:
    """``nbytes`` of device memory (at least 1 byte) as an address."""
    return int(check(driver().cuMemAlloc(max(1, nbytes)), f"cuMemAlloc({nbytes} bytes)"))


def mem_free(address: int) -> None:
    check(driver().cuMemFree(address), "cuMemFree")


def synchronize() -> None:
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


# -- the stream of the current call ----------------------------------------------------


def current_stream() -> int:
    """The stream handle kernels of this thread launch on (0: the legacy default stream)."""
    return getattr(_state, "stream", 0)


class use_stream:
    """``with use_stream(handle):`` launches of this thread go to ``handle``."""

    def __init__(self, handle: int):
        self.handle = handle

    def __enter__(self) -> None:
        self.previous = current_stream()
        _state.stream = self.handle

    def __exit__(self, *exc) -> None:
        _state.stream = self.previous


# -- MLIR's GPU runtime ABI as callbacks ------------------------------------------------


def _guard(default):
    """Run a callback body; record an exception for raise_pending() instead of raising."""

    def wrap(fn):
        @functools.wraps(fn)
        def guarded(*args):
            try:
                return fn(*args)
            except BaseException as err:  # noqa: BLE001 - re-raised by raise_pending
                with _lock:
                    _pending.append(err)
                return default

        return guarded

    return wrap


def raise_pending() -> None:
    """Raise the first error a runtime callback recorded since the last call."""
    with _lock:
        if not _pending:
            return
        error, _pending[:] = _pending[0], []
    raise error


@_guard(None)
def _module_load_jit(data: int, opt_level: int) -> int:
    ensure_context()
    module = check(driver().cuModuleLoadData(data), "cuModuleLoadData (PTX JIT)")
    _modules[_handle(module)] = module
    return _handle(module)


@_guard(None)
def _module_load(data: int, size: int) -> int:
    return _module_load_jit(data, 0)


def _handle(obj) -> int:
    """The handle value of a cuda-python handle object (CUmodule, CUfunction);
    ``getPtr()`` would be the address of the object's storage instead."""
    return int(obj)


@_guard(None)
def _module_unload(module: int) -> None:
    """A JIT engine's destructors unload its modules; forget their functions."""
    loaded = _modules.pop(module, None)
    for key in [k for k in _functions if k[0] == module]:
        _function_by_handle.pop(_handle(_functions.pop(key)), None)
    if loaded is not None:
        check(driver().cuModuleUnload(loaded), "cuModuleUnload")


@_guard(None)
def _module_get_function(module: int, name: int) -> int:
    if not module:
        raise CudaError("mgpuModuleGetFunction: no module (its PTX failed to load)")
    key = (module, ctypes.string_at(name))
    function = _functions.get(key)
    if function is None:
        drv = driver()
        function = check(drv.cuModuleGetFunction(drv.CUmodule(module), key[1]), f"cuModuleGetFunction({key[1].decode()})")
        _functions[key] = function
        _function_by_handle[_handle(function)] = function
    return _handle(function)


@_guard(None)
def _launch_kernel(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra, count=0) -> None:
    if not function:
        raise CudaError("mgpuLaunchKernel: no kernel function (its module failed to load)")
    drv = driver()
    check(
        drv.cuLaunchKernel(_function_by_handle.get(function) or drv.CUfunction(function), gx, gy, gz, bx, by, bz, smem, drv.CUstream(stream or 0), params, 0),
        f"cuLaunchKernel(grid=({gx}, {gy}, {gz}), block=({bx}, {by}, {bz}))",
    )


def _stream_create() -> int:
    return current_stream()


def _stream_nothing(stream: int) -> None:
    """Launches stay asynchronous and ordered on the call's stream."""


@_guard(None)
def _mem_alloc(size: int, stream: int) -> int:
    """Stream-ordered: the buffer is usable by work queued after this point."""
    drv = driver()
    return int(check(drv.cuMemAllocAsync(max(1, size), drv.CUstream(stream or 0)), f"cuMemAllocAsync({size} bytes)"))


@_guard(None)
def _mem_free(ptr: int, stream: int) -> None:
    """Stream-ordered: freed once the work queued before it has finished."""
    if ptr:
        drv = driver()
        check(drv.cuMemFreeAsync(ptr, drv.CUstream(stream or 0)), "cuMemFreeAsync")


_P, _I32, _I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
_SIGNATURES = {
    "mgpuModuleLoadJIT": (ctypes.CFUNCTYPE(_P, _P, _I32), _module_load_jit),
    "mgpuModuleLoad": (ctypes.CFUNCTYPE(_P, _P, _I64), _module_load),
    "mgpuModuleUnload": (ctypes.CFUNCTYPE(None, _P), _module_unload),
    "mgpuModuleGetFunction": (ctypes.CFUNCTYPE(_P, _P, _P), _module_get_function),
    "mgpuLaunchKernel": (
        ctypes.CFUNCTYPE(None, _P, _I64, _I64, _I64, _I64, _I64, _I64, _I32, _P, _P, _P, _I64),
        _launch_kernel,
    ),
    "mgpuStreamCreate": (ctypes.CFUNCTYPE(_P), _stream_create),
    "mgpuStreamSynchronize": (ctypes.CFUNCTYPE(None, _P), _stream_nothing),
    "mgpuStreamDestroy": (ctypes.CFUNCTYPE(None, _P), _stream_nothing),
    "mgpuMemAlloc": (ctypes.CFUNCTYPE(_P, ctypes.c_uint64, _P), _mem_alloc),
    "mgpuMemFree": (ctypes.CFUNCTYPE(None, _P, _P), _mem_free),
}


@functools.cache
def mgpu_symbols() -> dict[str, int]:
    """Name -> address of each MLIR GPU runtime function this module implements.
    The ctypes callback objects live as long as the process (cached)."""
    callbacks = {name: prototype(fn) for name, (prototype, fn) in _SIGNATURES.items()}
    mgpu_symbols.callbacks = callbacks  # keep them alive
    return {name: ctypes.cast(cb, ctypes.c_void_p).value for name, cb in callbacks.items()}


# -- running a launch plan on the GPU ----------------------------------------------------


def checked_kernel(kernel):
    """``kernel`` (a segment's JIT-compiled host code) followed by
    :func:`raise_pending`, so a failed launch raises where it happened."""

    def run(*args):
        kernel(*args)
        raise_pending()

    return run


def execute_plan(plan, kernels: dict, args, given: dict, stats, *, device: int = 0, torch_outputs: bool = False) -> list:
    """Run ``plan`` on ``device`` with device-array views ``args``/``given``.

    New buffers are torch tensors (``torch_outputs``: the inputs were torch
    tensors; work goes on torch's current stream) or
    :class:`~fuser_mlir.runtime.arrays.DeviceArray`\\ s (legacy default stream).
    Returns the runtime's views of the visible outputs."""
    from fuser_mlir.runtime import arrays
    from fuser_mlir.runtime.cpu import numpy_dtype
    from fuser_mlir.runtime.plan import execute

    ensure_context(device)
    if torch_outputs:
        stream = arrays.torch_current_stream_handle(device)

        def allocate(shape, dtype):
            return arrays.device_view(arrays.torch_empty(shape, numpy_dtype(dtype), device))

    else:
        stream = 0

        def allocate(shape, dtype):
            # stream-ordered, so dropping an intermediate right after its last
            # launch frees it only once that launch has run
            return arrays.DeviceArray.empty(shape, numpy_dtype(dtype), device=device, stream=stream)

    with use_stream(stream):
        return execute(plan, kernels, args, given, allocate, stats)
