"""The CUDA driver layer: cuda-python's ``cuda.bindings.driver``, no MLIR.

Imports without CUDA present; :func:`available` says whether a GPU can be
used here, and every other entry point raises
:class:`~fuser_mlir.errors.CudaError` (naming the call and the CUDA error)
when it cannot.

A compiled fusion's GPU kernels are one CUDA module (a cubin for the
device's architecture, else PTX that the driver compiles) and one
:class:`~fuser_mlir.runtime.launch.SegmentProgram` per segment: the launches
and temporaries as data (see :mod:`fuser_mlir.lowering.gpu_schedule`).
:class:`CudaSegment` runs a program:

- modules are loaded once per process and device, keyed by the binary's
  sha256 (:func:`load_module`); functions are looked up once;
- each launch owns its parameter buffer (one 8-byte slot per kernel
  parameter, memref descriptors expanded as MLIR's ``gpu.func`` lowering
  expects), filled in place per call and passed to ``cuLaunchKernel``;
- kernels go to the stream of the current call (:func:`use_stream`, e.g.
  torch's current stream) and stay asynchronous; temporaries are allocated
  and freed in stream order (``cuMemAllocAsync``/``cuMemFreeAsync``);
- a launch whose grid is empty (a zero-size tensor) is skipped.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import struct
import threading

import numpy as np

from fuser_mlir.errors import CudaError
from fuser_mlir.runtime.arrays import DeviceArray, check, driver, make_current, primary_context
from fuser_mlir.runtime.cpu import ArgKind
from fuser_mlir.runtime.launch import KernelLaunch, SegmentProgram, compile_formula

_state = threading.local()
_modules: dict[tuple[int, str], object] = {}  # (device, sha256 of the binary) -> CUmodule
_functions: dict[tuple[int, str], object] = {}  # (module handle, kernel name) -> CUfunction
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


# -- kernel modules and launches ---------------------------------------------------------


_TEMP_DTYPE = {"f16": "float16", "f32": "float32", "f64": "float64", "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64"}


def _temp_dtype(element: str):
    from fuser_mlir.runtime.cpu import numpy_dtype

    return numpy_dtype("bfloat16") if element == "bf16" else np.dtype(_TEMP_DTYPE[element])


def load_module(binary: bytes, device: int = 0) -> object:
    """A CUmodule of ``binary`` (a cubin, or PTX the driver compiles), loaded
    once per process and device: keyed by the binary's sha256."""
    key = (device, hashlib.sha256(binary).hexdigest())
    with _lock:
        module = _modules.get(key)
        if module is None:
            make_current(device)
            data = binary if binary[:4] == b"\x7fELF" else binary + b"\0"  # PTX is NUL-terminated text
            module = check(driver().cuModuleLoadData(data), "cuModuleLoadData")
            _modules[key] = module
    return module


def _function(module: object, name: str) -> object:
    key = (int(module), name)
    function = _functions.get(key)
    if function is None:
        function = check(driver().cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")
        _functions[key] = function
    return function


class _Launch:
    """One kernel launch with its parameter buffer: one 8-byte slot per
    kernel parameter, and the ``void*`` array pointing at the slots. The
    grid formulas and the slot fillers are closures made once; a call
    evaluates them and refills the slots in place."""

    def __init__(self, launch: KernelLaunch, function: object, arg_kinds: list[ArgKind], temp_ranks: list[int]):
        self.launch = launch
        self.function = function
        self.handle = int(function) if function is not None else 0
        self.grid = [compile_formula(e) for e in launch.grid]
        self.block = tuple(launch.block)
        self.fillers = []
        count = 0
        for binding in launch.args:
            kind = binding[0]
            if kind == "arg" and not arg_kinds[binding[1]].is_tensor:
                self.fillers.append(_scalar_filler(count, binding[1], arg_kinds[binding[1]].dtype))
                count += 1
                continue
            if kind == "arg":
                rank = arg_kinds[binding[1]].rank
            elif kind == "temp":
                rank = temp_ranks[binding[1]]
            elif kind == "flat":
                rank = 1
            else:
                rank = len(binding[2])
            self.fillers.append(_memref_filler(count, binding))
            count += 3 + 2 * rank
        self.count = count
        self.slots = (ctypes.c_int64 * max(1, count))()
        base = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * max(1, count))(*[base + 8 * i for i in range(count)])
        self.params = ctypes.addressof(self.pointers)

    def pack(self, args, temps, shapes=None) -> None:
        """Fill the slots for ``args`` (the segment's arguments) and ``temps``."""
        if shapes is None:
            shapes = [getattr(a, "shape", ()) for a in args]
        slots = self.slots
        for fill in self.fillers:
            fill(slots, args, temps, shapes)


def _strides_in_elements(array) -> list[int]:
    itemsize = array.itemsize
    return [s // itemsize for s in array.strides]


def _memref_filler(at: int, binding: list):
    """A closure writing the memref descriptor of ``binding`` at slot ``at``:
    allocated and aligned pointer (the address of element 0), offset 0,
    sizes, strides in elements."""
    kind = binding[0]
    if kind == "flat":  # a dense buffer as 1-D elements or vectors of binding[2] elements
        inner, lanes = binding[1], binding[2]
        source = 0 if inner[0] == "arg" else 1
        index = inner[1]

        def fill_flat(slots, args, temps, shapes):
            array = (args, temps)[source][index]
            pointer = array.ptr
            slots[at : at + 5] = (pointer, pointer, 0, math.prod(array.shape) // lanes, 1)

        return fill_flat
    if kind == "view":  # a temporary with another contiguous shape (a reshape)
        index, sizes = binding[1], [compile_formula(e) for e in binding[2]]

        def fill_view(slots, args, temps, shapes):
            pointer = temps[index].ptr
            shape = [size(shapes, args) for size in sizes]
            slots[at : at + 3 + 2 * len(shape)] = (pointer, pointer, 0, *shape, *_contiguous(shape))

        return fill_view
    source = 0 if kind == "arg" else 1
    index = binding[1]

    def fill(slots, args, temps, shapes):
        array = (args, temps)[source][index]
        pointer = array.ptr
        slots[at : at + 3 + 2 * array.ndim] = (pointer, pointer, 0, *array.shape, *_strides_in_elements(array))

    return fill


def _scalar_filler(at: int, index: int, dtype: str):
    """A closure writing scalar argument ``index`` into the low bytes of slot ``at``."""
    fmt = _scalar_format(dtype)

    def fill_scalar(slots, args, temps, shapes):
        slots[at] = _scalar_bits(fmt, args[index])

    return fill_scalar


def _contiguous(shape) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def _scalar_format(dtype: str) -> str:
    return {"float32": "f", "float64": "d", "int32": "i", "int64": "q", "bool": "?", "float16": "e", "bfloat16": "bf16"}[dtype]


def _scalar_bits(fmt: str, value) -> int:
    """``value`` as the bits of its kernel parameter, in the low bytes of a slot."""
    if fmt == "bf16":
        from fuser_mlir.runtime.cpu import numpy_dtype

        return int(np.asarray(value, dtype=numpy_dtype("bfloat16")).view(np.uint16))
    raw = struct.pack("<" + fmt, value if fmt != "?" else bool(value))
    return int.from_bytes(raw, "little", signed=False) if len(raw) < 8 else struct.unpack("<q", raw)[0]


@functools.cache
def _raw_launch():
    """``cuLaunchKernel`` of the driver library cuda-python uses, called
    through ctypes: cuda-python's wrapper costs about 4 µs per call, this
    under 1 µs (issue 9's host budget is 10 µs). None when ctypes cannot load
    the library; launches then go through cuda-python."""
    try:
        library = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    function = library.cuLaunchKernel
    u32, ptr = ctypes.c_uint32, ctypes.c_void_p
    function.argtypes = [ptr, u32, u32, u32, u32, u32, u32, u32, ptr, ptr, ptr]
    function.restype = ctypes.c_int
    return function


def _launch_failed(code: int, launch: _Launch, grid) -> CudaError:
    drv = driver()
    error = drv.CUresult(code)
    _, name = drv.cuGetErrorName(error)
    text = name.decode() if isinstance(name, bytes) else str(error)
    return CudaError(f"cuLaunchKernel({launch.launch.kernel}, grid={tuple(grid)}, block={launch.block}) failed: {text}")


class CudaSegment:
    """One segment's kernels, called as ``segment(*args)`` with device-array
    views (and Python scalars) in the segment's argument order: allocates the
    program's temporaries (stream-ordered), launches every kernel on the
    current stream (:func:`use_stream`) and frees the temporaries after them."""

    def __init__(self, name: str, program: SegmentProgram, module: object, arg_kinds: list[ArgKind], device: int):
        self.name = name
        self.program = program
        self.device = device
        self.arg_kinds = arg_kinds
        self.temps = [([compile_formula(e) for e in t.shape], _temp_dtype(t.dtype)) for t in program.temps]
        temp_ranks = [len(t.shape) for t in program.temps]
        self.launches = [
            _Launch(launch, _function(module, launch.kernel) if module is not None else None, arg_kinds, temp_ranks)
            for launch in program.launches
        ]
        self.raw = _raw_launch()

    def __call__(self, *args) -> None:
        shapes = [getattr(a, "shape", ()) for a in args]
        stream = current_stream()
        temps = [
            DeviceArray.empty([size(shapes, args) for size in sizes], dtype, self.device, stream=stream)
            for sizes, dtype in self.temps
        ]
        raw = self.raw
        for launch in self.launches:
            gx, gy, gz = [g(shapes, args) for g in launch.grid]
            if gx <= 0 or gy <= 0 or gz <= 0:
                continue  # an empty tensor: nothing to do
            launch.pack(args, temps, shapes)
            bx, by, bz = launch.block
            if raw is not None:
                code = raw(launch.handle, gx, gy, gz, bx, by, bz, 0, stream, launch.params, None)
                if code:
                    raise _launch_failed(code, launch, (gx, gy, gz))
            else:
                check(
                    driver().cuLaunchKernel(launch.function, gx, gy, gz, bx, by, bz, 0, stream, launch.params, 0),
                    f"cuLaunchKernel({launch.launch.kernel}, grid={(gx, gy, gz)}, block={launch.block})",
                )
        del temps  # freed in stream order, after the launches above


def load_program(ptx: str, cubin: bytes | None, arch: str, programs: dict, arg_kinds: dict, *, device: int = 0) -> dict[str, CudaSegment]:
    """Load a fusion's kernels on ``device``: the cubin when it was built for
    the device's architecture, else the PTX (compiled by the driver)."""
    major, minor = compute_capability(device)
    binary = cubin if cubin is not None and arch == f"sm_{major}{minor}" else ptx.encode()
    module = load_module(binary, device)
    return {name: CudaSegment(name, programs[name], module, arg_kinds[name], device) for name in programs}


def load_kernels(spec: dict, read, device: str) -> dict[str, CudaSegment]:
    """The segments of a CUDA kernel image (see
    :meth:`fuser_mlir.lowering.gpu.GpuProgram.image`); ``read(path)`` returns
    the verified bytes of an image file."""
    _, _, index = device.partition(":")
    ordinal = int(index or 0)
    major, minor = compute_capability(ordinal)
    here = f"sm_{major}{minor}"
    cubin_path = spec.get("cubin", {}).get(here)
    cubin = read(cubin_path) if cubin_path else None
    ptx = read(spec["ptx"]).decode()
    programs = {name: SegmentProgram.from_dict(s["program"]) for name, s in spec["segments"].items()}
    kinds = {name: [ArgKind(dtype, rank) for dtype, rank in s["args"]] for name, s in spec["segments"].items()}
    return load_program(ptx, cubin, here if cubin is not None else spec["arch"], programs, kinds, device=ordinal)


# -- running a launch plan on the GPU ----------------------------------------------------


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
