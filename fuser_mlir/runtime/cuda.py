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

That is the general path. A cache hit runs a replay instead
(:mod:`fuser_mlir.runtime.replay`): the same launches worked out once per
argument signature, or one CUDA graph (:class:`GraphApi`). Calls on the hot
path go to the driver library through ctypes (:func:`_bare_function`), not
through cuda-python, whose wrappers cost microseconds each.
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
from fuser_mlir.runtime.plan import execute

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
    """Make ``device``'s primary context current on this thread. The common
    case, the context already current, costs one ``cuCtxGetCurrent`` through
    ctypes (about 0.2 µs) and no cuda-python call."""
    fast = _context_checks.get(device)
    if fast is not None:
        get_current, primary = fast
        cell = ctypes.c_void_p()
        if get_current(ctypes.byref(cell)) == 0 and cell.value == primary:
            return
    make_current(device)
    if fast is None:
        get_current = _bare_function("cuCtxGetCurrent")
        if get_current is not None:
            _context_checks[device] = (get_current, int(primary_context(device)))


#: device -> (cuCtxGetCurrent through ctypes, handle of the device's primary context)
_context_checks: dict[int, tuple] = {}


@functools.cache
def _libcuda():
    """The driver library, for the calls on the hot path (see _raw_launch)."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def _raw_function(name: str, argtypes: list):
    """``name`` of the driver library with ``argtypes`` (None without the
    library): for calls made once, where ctypes' argument checks are worth
    their cost."""
    library = _libcuda()
    if library is None:
        return None
    function = getattr(library, name)
    if function.argtypes is None:
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return function


def _bare_function(name: str):
    """``name`` of the driver library as a function object of its own with
    no ``argtypes`` (None without the library). Hot-path calls go through
    these: ctypes then converts nothing but Python ints (to C ``int``), so
    callers pass every pointer and handle as a prebuilt ``ctypes.c_void_p``
    and only 32-bit values as ints. A call costs about 0.3 µs instead of
    0.8 µs with ``argtypes`` (11 arguments, measured)."""
    library = _libcuda()
    if library is None:
        return None
    function = library[name]  # __getitem__ makes a new function object: argtypes set elsewhere do not apply
    function.restype = ctypes.c_int
    return function


def error_name(code: int) -> str:
    """``CUDA_ERROR_...``: the driver's name of a ``CUresult``."""
    get_name = _raw_function("cuGetErrorName", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])
    name = ctypes.c_char_p()
    if get_name is not None and get_name(code, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode()
    return f"CUresult {code}"


@functools.cache
def compute_capability(device: int = 0) -> tuple[int, int]:
    return _attribute(device, "COMPUTE_CAPABILITY_MAJOR"), _attribute(device, "COMPUTE_CAPABILITY_MINOR")


@functools.cache
def multiprocessors(device: int = 0) -> int:
    """The SMs of ``device`` (a launch formula's ``["sms"]``)."""
    return _attribute(device, "MULTIPROCESSOR_COUNT")


def _attribute(device: int, name: str) -> int:
    """``CU_DEVICE_ATTRIBUTE_{name}`` of ``device``."""
    drv = driver()
    primary_context(device)  # initialises the driver, checks the device exists
    dev = check(drv.cuDeviceGet(device), "cuDeviceGet")
    return check(drv.cuDeviceGetAttribute(getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}"), dev), "cuDeviceGetAttribute")


def synchronize() -> None:
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


# -- the stream of the current call ----------------------------------------------------


def current_stream() -> int:
    """The stream handle kernels of this thread launch on (0: the legacy default stream)."""
    return getattr(_state, "stream", 0)


class use_stream:
    """``with use_stream(handle, allocate):`` launches of this thread go to
    ``handle``, and segments allocate their temporaries with ``allocate``
    (``(shape, dtype name) -> array``; default: stream-ordered DeviceArrays)."""

    def __init__(self, handle: int, allocate=None):
        self.handle = handle
        self.allocate = allocate

    def __enter__(self) -> None:
        self.previous = current_stream(), getattr(_state, "allocate", None)
        _state.stream, _state.allocate = self.handle, self.allocate

    def __exit__(self, *exc) -> None:
        _state.stream, _state.allocate = self.previous


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


def _allow_dynamic_shared(function: object) -> None:
    """Let ``function`` take as much dynamic shared memory as a block of the
    current device may opt in to (beyond the default 48 KB), less its static
    shared memory."""
    drv = driver()
    dev = check(drv.cuCtxGetDevice(), "cuCtxGetDevice")
    limit = check(
        drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
        "cuDeviceGetAttribute",
    )
    attr = drv.CUfunction_attribute
    static = check(drv.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function), "cuFuncGetAttribute")
    check(drv.cuFuncSetAttribute(function, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, limit - static), "cuFuncSetAttribute")


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

    def __init__(self, launch: KernelLaunch, function: object, arg_kinds: list[ArgKind], temp_ranks: list[int], sms: int):
        self.launch = launch
        self.function = function
        self.handle = int(function) if function is not None else 0
        self.handle_arg = ctypes.c_void_p(self.handle)  # for the bare cuLaunchKernel (see _bare_function)
        self.grid = [compile_formula(e, sms) for e in launch.grid]
        self.when = compile_formula(launch.when, sms) if launch.when else None
        dynamic = isinstance(launch.shared_bytes, list)
        self.shared = compile_formula(launch.shared_bytes if dynamic else ["const", launch.shared_bytes], sms)
        if dynamic and function is not None:
            _allow_dynamic_shared(function)
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
            self.fillers.append(_memref_filler(count, binding, sms))
            count += 3 + 2 * rank
        self.count = count
        self.slots, self.pointers = parameter_buffer(count)
        self.params = ctypes.addressof(self.pointers)
        self.params_arg = ctypes.c_void_p(self.params)

    def pack(self, args, temps, shapes=None, geometries=None) -> None:
        """Fill the slots for ``args`` (the segment's arguments) and ``temps``
        (``geometries``: :func:`_geometry` of each tensor argument, if known)."""
        if shapes is None:
            shapes = [getattr(a, "shape", ()) for a in args]
        if geometries is None:
            geometries = [None if isinstance(a, (int, float, bool)) else _geometry(a) for a in args]
        temp_geometries = [_geometry(t) for t in temps]
        values = []
        for fill in self.fillers:
            values += fill(args, geometries, temp_geometries, shapes)
        self.slots[: len(values)] = values


def parameter_buffer(count: int) -> tuple[ctypes.Array, ctypes.Array]:
    """``count`` kernel parameters: 8-byte slots, and the ``void*`` array
    pointing at each (what ``cuLaunchKernel`` takes as ``kernelParams``)."""
    slots = (ctypes.c_int64 * max(1, count))()
    base = ctypes.addressof(slots)
    return slots, (ctypes.c_void_p * max(1, count))(*[base + 8 * i for i in range(count)])


def _geometry(array) -> tuple:
    """(address of element 0, shape, strides in elements) of a DeviceArray
    or of a torch tensor (the cache-hit path passes the caller's own)."""
    if type(array) is DeviceArray:
        itemsize = array.itemsize
        return array.ptr, array.shape, [s // itemsize for s in array.strides]
    return array.data_ptr(), array.shape, array.stride()


def _memref_filler(at: int, binding: list, sms: int | None):
    """A closure giving the memref descriptor of ``binding`` (slots from
    ``at``): allocated and aligned pointer (the address of element 0),
    offset 0, sizes, strides in elements; a view's sizes may read the
    device's ``sms``, as a temporary's may."""
    kind = binding[0]
    if kind == "flat":  # a dense buffer as 1-D elements or vectors of binding[2] elements
        inner, lanes = binding[1], binding[2]
        source = 0 if inner[0] == "arg" else 1
        index = inner[1]

        def fill_flat(args, geometries, temp_geometries, shapes):
            pointer, shape, _ = (geometries, temp_geometries)[source][index]
            return (pointer, pointer, 0, math.prod(shape) // lanes, 1)

        return fill_flat
    if kind == "view":  # a temporary with another contiguous shape (a reshape)
        index, sizes = binding[1], [compile_formula(e, sms) for e in binding[2]]

        def fill_view(args, geometries, temp_geometries, shapes):
            pointer = temp_geometries[index][0]
            shape = [size(shapes, args) for size in sizes]
            return (pointer, pointer, 0, *shape, *_contiguous(shape))

        return fill_view
    source = 0 if kind == "arg" else 1
    index = binding[1]

    def fill(args, geometries, temp_geometries, shapes):
        pointer, shape, strides = (geometries, temp_geometries)[source][index]
        return (pointer, pointer, 0, *shape, *strides)

    return fill


def _scalar_filler(at: int, index: int, dtype: str):
    """A closure giving scalar argument ``index`` as the bits of slot ``at``."""
    fmt = _scalar_format(dtype)

    def fill_scalar(args, geometries, temp_geometries, shapes):
        return (_scalar_bits(fmt, args[index]),)

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


def _raw_launch():
    """``cuLaunchKernel`` of the driver library cuda-python uses, called
    through ctypes with no ``argtypes`` (:func:`_bare_function`): handle,
    stream and parameter array go as ``ctypes.c_void_p``, grid and block as
    ints. cuda-python's wrapper costs about 4 µs per call, this about 0.3 µs
    plus the driver's own time (issue 9's host budget is 10 µs). None when
    ctypes cannot load the library; launches then go through cuda-python."""
    return _bare_function("cuLaunchKernel")


def call_error(call: str, code: int) -> CudaError:
    """The error of a driver call made through ctypes (``code``: its CUresult)."""
    return CudaError(f"{call} failed: {error_name(code)}")


def launch_error(kernel: str, grid, block, code: int) -> CudaError:
    """The error of a failed ``cuLaunchKernel``."""
    return call_error(f"cuLaunchKernel({kernel}, grid={tuple(grid)}, block={tuple(block)})", code)


# -- CUDA graphs (see fuser_mlir.runtime.replay) ----------------------------------------


class KernelNodeParams(ctypes.Structure):
    """``CUDA_KERNEL_NODE_PARAMS_v2`` of cuda.h (CUDA 12.0 and later, 72 bytes):
    what ``cuGraphAddKernelNode_v2`` and ``cuGraphExecKernelNodeSetParams_v2``
    read. ``kern`` and ``ctx`` stay NULL (``func`` is set; the current context)."""

    _fields_ = [
        ("func", ctypes.c_void_p),
        ("gridDimX", ctypes.c_uint),
        ("gridDimY", ctypes.c_uint),
        ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint),
        ("blockDimY", ctypes.c_uint),
        ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("kernelParams", ctypes.c_void_p),
        ("extra", ctypes.c_void_p),
        ("kern", ctypes.c_void_p),
        ("ctx", ctypes.c_void_p),
    ]


class GraphApi:
    """The driver's graph calls, through ctypes, under the names cuda.h maps
    them to since CUDA 12.0 (``cuGraphAddKernelNode`` is
    ``cuGraphAddKernelNode_v2``, ``cuGraphInstantiate`` is
    ``cuGraphInstantiateWithFlags``). The calls made once per graph take
    ``argtypes`` (out-parameters and structs as addresses, ints); the two of
    every replay, ``set_kernel_params`` and ``launch``, are bare
    (:func:`_bare_function`: every argument a ``ctypes.c_void_p``). Each
    returns a CUresult."""

    def __init__(self):
        ptr, size = ctypes.c_void_p, ctypes.c_size_t
        self.create = self._function("cuGraphCreate", [ptr, ctypes.c_uint])
        self.add_kernel_node = self._function("cuGraphAddKernelNode_v2", [ptr, ptr, ptr, size, ptr])
        self.instantiate = self._function("cuGraphInstantiateWithFlags", [ptr, ptr, ctypes.c_ulonglong])
        self.destroy_exec = self._function("cuGraphExecDestroy", [ptr])
        self.destroy = self._function("cuGraphDestroy", [ptr])
        self.set_kernel_params = self._function("cuGraphExecKernelNodeSetParams_v2", None)
        self.launch = self._function("cuGraphLaunch", None)

    @staticmethod
    def _function(name: str, argtypes: list | None):
        if _libcuda() is None:
            raise CudaError("CUDA graphs need the driver library libcuda.so.1, which ctypes cannot load here")
        try:
            return _raw_function(name, argtypes) if argtypes is not None else _bare_function(name)
        except AttributeError:
            raise CudaError(f"the CUDA driver has no {name}: CUDA graphs need a driver for CUDA 12.0 or later") from None

    def check(self, code: int, call: str) -> None:
        if code:
            raise call_error(call, code)

    @staticmethod
    def synchronize(device: int) -> None:
        """Wait for all work on ``device`` (its primary context pushed, so any thread may call it)."""
        drv = driver()
        check(drv.cuCtxPushCurrent(primary_context(device)), "cuCtxPushCurrent")
        try:
            check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
        finally:
            check(drv.cuCtxPopCurrent(), "cuCtxPopCurrent")


@functools.cache
def graph_api() -> GraphApi:
    """The driver's graph calls (:class:`GraphApi`), loaded once; CudaError
    where the driver library or one of the calls is missing."""
    return GraphApi()


class CudaSegment:
    """One segment's kernels, called as ``segment(*args)`` with device-array
    views (and Python scalars) in the segment's argument order: allocates the
    program's temporaries (stream-ordered), launches every kernel on the
    current stream (:func:`use_stream`) and frees the temporaries after them."""

    def __init__(self, name: str, program: SegmentProgram, module: object, arg_kinds: list[ArgKind], device: int, sms: int | None = None):
        self.name = name
        self.program = program
        self.device = device
        self.arg_kinds = arg_kinds
        if sms is None and module is not None:
            sms = multiprocessors(device)  # launch formulas' ["sms"] (none without a module: stand-ins in tests)
        self.temps = [([compile_formula(e, sms) for e in t.shape], _temp_dtype(t.dtype).name) for t in program.temps]
        temp_ranks = [len(t.shape) for t in program.temps]
        self.launches = [
            _Launch(launch, _function(module, launch.kernel) if module is not None else None, arg_kinds, temp_ranks, sms)
            for launch in program.launches
        ]
        self.raw = _raw_launch()

    def __call__(self, *args) -> None:
        shapes = [getattr(a, "shape", ()) for a in args]
        stream = current_stream()
        if self.temps:
            allocate = getattr(_state, "allocate", None) or self._allocate
            temps = [allocate(tuple(size(shapes, args) for size in sizes), dtype) for sizes, dtype in self.temps]
        else:
            temps = ()
        raw = self.raw
        stream_arg = ctypes.c_void_p(stream)
        geometries = [None if isinstance(a, (int, float, bool)) else _geometry(a) for a in args]
        for launch in self.launches:
            if launch.when is not None and not launch.when(shapes, args):
                continue  # the other variant of this step runs
            gx, gy, gz = [g(shapes, args) for g in launch.grid]
            if gx <= 0 or gy <= 0 or gz <= 0:
                continue  # an empty tensor: nothing to do
            launch.pack(args, temps, shapes, geometries)
            bx, by, bz = launch.block
            shared = launch.shared(shapes, args)
            if raw is not None:
                code = raw(launch.handle_arg, gx, gy, gz, bx, by, bz, shared, stream_arg, launch.params_arg, None)
                if code:
                    raise launch_error(launch.launch.kernel, (gx, gy, gz), launch.block, code)
            else:
                check(
                    driver().cuLaunchKernel(launch.function, gx, gy, gz, bx, by, bz, shared, stream, launch.params, 0),
                    f"cuLaunchKernel({launch.launch.kernel}, grid={(gx, gy, gz)}, block={launch.block})",
                )
        del temps  # freed in stream order, after the launches above

    def _allocate(self, shape, dtype: str):
        from fuser_mlir.runtime.cpu import numpy_dtype

        return DeviceArray.empty(shape, numpy_dtype(dtype), self.device, stream=current_stream())


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


def execute_plan(
    plan, kernels: dict, args, given: dict, stats, *, device: int = 0, torch_outputs: bool = False, raw: bool = False
) -> list:
    """Run ``plan`` on ``device`` with device-array views ``args``/``given``
    (with ``raw``: the caller's own torch tensors or DeviceArrays).

    New buffers are torch tensors (``torch_outputs``: the inputs were torch
    tensors; work goes on torch's current stream) or
    :class:`~fuser_mlir.runtime.arrays.DeviceArray`\\ s (legacy default stream).
    Returns the visible outputs: views, or with ``raw`` the arrays themselves."""
    ensure_context(device)
    allocate = _allocator(device, torch_outputs, raw)
    stream = _torch_stream(device) if torch_outputs else 0
    temporaries = _allocator(device, torch_outputs, True)  # torch's caching allocator when torch is in play
    with use_stream(stream, temporaries):
        return execute(plan, kernels, args, given, allocate, stats)


@functools.cache
def _allocator(device: int, torch_outputs: bool, raw: bool):
    from fuser_mlir.runtime import arrays
    from fuser_mlir.runtime.cpu import numpy_dtype

    if torch_outputs:
        import torch

        dtypes = {}
        where = torch.device("cuda", device)  # parsed once, not per call

        def allocate(shape, dtype):
            if dtype not in dtypes:
                dtypes[dtype] = arrays.torch_dtype(numpy_dtype(dtype))
            tensor = torch.empty(shape, dtype=dtypes[dtype], device=where)
            return tensor if raw else arrays.device_view(tensor)

        if raw:  # what generated replays call in its place: torch.empty_strided(shape, strides, dtype=, device=)
            # (the same C-contiguous tensor as torch.empty's: 1.7 us of CPU against 2.8 for a shape tuple on the H200 host)
            allocate.torch_empty_strided = (torch.empty_strided, where, lambda dtype: arrays.torch_dtype(numpy_dtype(dtype)), _torch_fast_empty(torch))
        return allocate

    def allocate(shape, dtype):
        # stream-ordered, so dropping an intermediate right after its last
        # launch frees it only once that launch has run
        return arrays.DeviceArray.empty(shape, numpy_dtype(dtype), device=device, stream=0)

    return allocate


def _torch_fast_empty(torch):
    """``(empty_strided_cuda(shape, strides, dtype), current_device())``:
    the allocator torch.compile's generated code calls, which skips torch's
    argument parsing and dispatch (it allocates on the current CUDA device),
    and torch's current device getter; None where this torch lacks either or
    the allocator does not give what ``torch.empty_strided`` gives (checked
    once, on a small tensor)."""
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    fast, current = getattr(guards, "_empty_strided_cuda", None), getattr(torch._C, "_cuda_getDevice", None)
    if fast is None or current is None:
        return None
    try:
        probe = fast((2, 3), (3, 1), torch.float16)
        same = probe.is_cuda and probe.get_device() == current() and probe.shape == (2, 3) and probe.stride() == (3, 1)
        same = same and probe.dtype is torch.float16 and not probe.requires_grad
    except Exception:  # noqa: BLE001  (a private API that changed: use the public one)
        return None
    return (fast, current) if same else None


@functools.cache
def _torch_stream_function():
    """``device -> handle`` of torch's current stream: the raw getter
    torch.compile's generated code calls (no Stream object), where torch has it."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: int(torch.cuda.current_stream(device).cuda_stream)


def _torch_stream(device: int) -> int:
    """The handle of torch's current stream on ``device``."""
    return int(_torch_stream_function()(device))
