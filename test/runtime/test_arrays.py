"""DeviceArray and device_view: dtype and stride bookkeeping, views, foreign
arrays through __cuda_array_interface__ and DLPack, and host round trips.

Without a GPU, the round trips run against a fake driver whose "device
memory" is host memory; the tests marked ``gpu`` repeat them on a real device
and check PyTorch and CuPy interoperability."""

from __future__ import annotations

import ctypes
import enum
import gc
import subprocess
import sys
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from fuser_mlir.errors import CudaError, InputError
from fuser_mlir.runtime import arrays
from fuser_mlir.runtime.arrays import (
    DeviceArray,
    byte_extent,
    contiguous_strides,
    device_view,
    dtype_from_typestr,
    is_device_array,
    typestr,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(7)


class FakeCudaArray:
    """A foreign device array that speaks only ``__cuda_array_interface__``."""

    def __init__(self, interface: dict, dtype: object = None, device: object = None):
        self.__cuda_array_interface__ = interface
        if dtype is not None:
            self.dtype = dtype
        if device is not None:
            self.device = device


def interface(shape, typestr="<f4", ptr=0x7F0000, readonly=False, strides=None, **extra) -> dict:
    return {"version": 3, "shape": shape, "typestr": typestr, "data": (ptr, readonly), "strides": strides, **extra}


# ---------------------------------------------------------------------------
# dtypes, strides, extents
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, code",
    [(np.float16, "<f2"), (BF16, "<V2"), (np.float32, "<f4"), (np.float64, "<f8"), (np.int32, "<i4"), (np.int64, "<i8"), (np.bool_, "|b1")],
)
def test_typestr_of_every_supported_dtype_and_back(dtype, code):
    assert typestr(np.dtype(dtype)) == code
    framework_dtype = "torch.bfloat16" if code == "<V2" else None
    assert dtype_from_typestr(code, framework_dtype) == np.dtype(dtype)


def test_bfloat16_typestr_needs_the_exporter_to_say_bfloat16():
    assert dtype_from_typestr("<V2", "bfloat16") == BF16  # JAX's dtype prints as bfloat16
    with pytest.raises(InputError, match=r"typestr '<V2' \(two opaque bytes\) and dtype None; only bfloat16 arrays"):
        dtype_from_typestr("<V2")
    with pytest.raises(InputError, match="dtype 'torch.float16'"):
        dtype_from_typestr("<V2", "torch.float16")


@pytest.mark.parametrize(
    "code, message",
    [
        (">f4", r"typestr '>f4' \(>f4\); fuser-mlir supports native-endian bool, integer and float arrays"),
        ("<c8", r"typestr '<c8' \(complex64\)"),
        ("<V4", r"typestr '<V4' \(\|V4\)"),
        ("nonsense", "typestr 'nonsense', which is not a NumPy type string"),
    ],
)
def test_unsupported_typestrs_are_input_errors(code, message):
    with pytest.raises(InputError, match=message):
        dtype_from_typestr(code)


def test_other_numeric_typestrs_map_to_numpy_for_the_executor_to_reject():
    assert dtype_from_typestr("|u1") == np.uint8
    assert dtype_from_typestr("<i2") == np.int16


def test_exporting_an_unsupported_dtype_is_an_input_error():
    with pytest.raises(InputError, match="a device array of dtype complex64 is not supported; supported dtypes: float16, bfloat16"):
        typestr(np.dtype(np.complex64))


def test_contiguous_strides_and_byte_extents_agree_with_numpy():
    for shape in [(), (5,), (3, 4), (2, 3, 4), (1, 7)]:
        assert contiguous_strides(shape, 4) == np.empty(shape, np.float32).strides
    base = np.empty((6, 8), np.float64)
    for view in (base, base.T, base[::2, 1::3], base[::-1, ::-2], base[2:3, 5], base[:0]):
        low, high = byte_extent(view.shape, view.strides, view.itemsize)
        if view.size == 0:
            assert (low, high) == (0, 0)
            continue
        addresses = [view[i + (Ellipsis,)].__array_interface__["data"][0] for i in np.ndindex(view.shape)]
        start = view.__array_interface__["data"][0]
        assert (low, high) == (min(addresses) - start, max(addresses) - start + view.itemsize)


# ---------------------------------------------------------------------------
# DeviceArray views (no memory is touched)
# ---------------------------------------------------------------------------


def test_properties_repr_and_interface():
    a = DeviceArray(0x1000, (3, 4), (16, 4), np.float32, device=1, readonly=True)
    assert (a.shape, a.strides, a.dtype, a.ndim, a.size, a.nbytes, a.itemsize, a.device, a.readonly, a.ptr) == ((3, 4), (16, 4), np.float32, 2, 12, 48, 4, 1, True, 0x1000)
    assert a.base is None and a.is_c_contiguous and not a.T.is_c_contiguous
    assert repr(a) == "DeviceArray(shape=[3, 4], dtype=float32, strides=[16, 4], device=cuda:1, ptr=0x1000, readonly)"
    assert a.__cuda_array_interface__ == {
        "version": 3,
        "shape": (3, 4),
        "typestr": "<f4",
        "data": (0x1000, True),
        "strides": (16, 4),
        "descr": [("", "<f4")],
        "stream": None,
    }
    assert DeviceArray(0, (2,), (2,), BF16).__cuda_array_interface__["typestr"] == "<V2"
    zero_d = DeviceArray(0x2000, (), (), np.float64)
    assert (zero_d.size, zero_d.nbytes, zero_d.ndim) == (1, 8, 0)


def test_constructor_rejects_mismatched_ranks_and_negative_sizes():
    with pytest.raises(ValueError, match=r"shape \[2, 3\] and strides \[4\] have different ranks"):
        DeviceArray(0, (2, 3), (4,), np.float32)
    with pytest.raises(ValueError, match=r"negative size in shape \[-1\]"):
        DeviceArray(0, (-1,), (4,), np.float32)


@pytest.mark.parametrize(
    "key",
    [
        (slice(None),), (slice(1, None), slice(None, None, 2)), (slice(None, None, -1), slice(None, None, -3)), 2, (-1, 3), (slice(4, 1, -2), 0),
        (slice(5, 5),), (Ellipsis,), (Ellipsis, 0), (1, Ellipsis), (Ellipsis, 2, 3), (slice(None), None), (None, 1, None, slice(None, None, 2), None),
        None, (Ellipsis, None), (None, Ellipsis, -1),
    ],
)
def test_indexing_matches_numpy_basic_indexing(key):
    host = np.empty((6, 7), np.float32)
    start = host.__array_interface__["data"][0]
    device = DeviceArray(start, host.shape, host.strides, host.dtype)
    key = key if isinstance(key, tuple) else (key,)
    expected, view = host[key if Ellipsis in key else key + (Ellipsis,)], device[key]  # a view, also when 0-d
    assert view.shape == expected.shape and view.strides == expected.strides
    if expected.size:
        assert view.ptr - start == expected.__array_interface__["data"][0] - start
    assert view.base is device and device[1:][::2].base is device  # like ndarray.base: the owner
    t = device.transpose(1, 0)
    assert (t.shape, t.strides) == (host.T.shape, host.T.strides) and t.T.strides == device.strides


@pytest.mark.parametrize("shape", [(4, 1), (2, 2), (-1,), (1, -1, 1), ((2, 2),), ([4, 1],)])
def test_reshape_of_a_contiguous_array_is_numpy_s_view(shape):
    host = np.empty(4, np.float64)
    start = host.__array_interface__["data"][0]
    device = DeviceArray(start, host.shape, host.strides, host.dtype)
    expected, view = host.reshape(*shape), device.reshape(*shape)
    assert (view.shape, view.strides, view.ptr, view.base) == (expected.shape, expected.strides, start, device)


def test_reshape_errors():
    a = DeviceArray(0x1000, (3, 4), (16, 4), np.float32)
    with pytest.raises(ValueError, match=r"cannot reshape a DeviceArray of size 12 into \[5, 2\]"):
        a.reshape(5, 2)
    with pytest.raises(ValueError, match=r"cannot reshape a DeviceArray of size 12 into \[5, -1\]"):
        a.reshape(5, -1)
    with pytest.raises(ValueError, match=r"invalid shape \[-1, -1\]"):
        a.reshape(-1, -1)
    with pytest.raises(ValueError, match="not C-contiguous has no view of another shape; copy it first"):
        a.T.reshape(12)


def test_indexing_errors():
    a = DeviceArray(0x1000, (3, 4), (16, 4), np.float32)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dim 0 of size 3"):
        a[3]
    with pytest.raises(IndexError, match="too many indices for a DeviceArray of rank 2: 3"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for a DeviceArray of rank 2: 3"):
        a[None, 0, ..., 0, 0]
    with pytest.raises(IndexError, match=r"a single ellipsis \('...'\)"):
        a[..., 0, ...]
    with pytest.raises(IndexError, match="integer, slice, None and ... indices only, got list"):
        a[[0, 1]]
    with pytest.raises(ValueError, match=r"axes \[0, 0\] are not a permutation of the 2 dims"):
        a.transpose(0, 0)


# ---------------------------------------------------------------------------
# device_view of foreign arrays
# ---------------------------------------------------------------------------


def test_device_view_of_a_cuda_array_interface_without_strides_is_c_contiguous():
    obj = FakeCudaArray(interface((2, 3, 4), stream=7), device=SimpleNamespace(id=2))
    view = device_view(obj)
    assert isinstance(view, DeviceArray)
    assert (view.ptr, view.shape, view.strides, view.dtype, view.device, view.readonly, view.stream) == (0x7F0000, (2, 3, 4), (48, 16, 4), np.float32, 2, False, 7)
    assert view.base is obj  # non-owning: keeps the foreign array alive
    assert is_device_array(obj)


def test_device_view_keeps_strides_and_the_readonly_flag():
    obj = FakeCudaArray(interface((4, 3), "<f8", readonly=True, strides=(8, 64)), device=SimpleNamespace(index=0))
    view = device_view(obj)
    assert (view.strides, view.dtype, view.readonly) == ((8, 64), np.float64, True)
    assert device_view(view).readonly and device_view(view).base is view


def test_device_view_of_a_bfloat16_torch_like_array():
    obj = FakeCudaArray(interface((5,), "<V2"), dtype="torch.bfloat16", device=SimpleNamespace(index=0))
    assert device_view(obj).dtype == BF16
    with pytest.raises(InputError, match="typestr '<V2'"):
        device_view(FakeCudaArray(interface((5,), "<V2"), device=SimpleNamespace(index=0)))


def test_device_of_an_array_without_a_device_attribute_comes_from_the_driver(monkeypatch):
    asked = []
    monkeypatch.setattr(arrays, "_pointer_device", lambda ptr: asked.append(ptr) or 3)
    assert device_view(FakeCudaArray(interface((2,), ptr=0xABC0))).device == 3
    assert asked == [0xABC0]
    assert device_view(FakeCudaArray(interface((0,), ptr=0))).device == 0  # empty arrays may have a null pointer


def test_device_view_rejects_masked_arrays():
    with pytest.raises(InputError, match="masked device arrays are not supported"):
        device_view(FakeCudaArray(interface((2,), mask=object()), device=SimpleNamespace(id=0)))


def test_host_objects_are_not_device_arrays():
    for obj in (np.ones(3), [1.0, 2.0], 3.5, "x", None):
        assert device_view(obj) is None
        assert not is_device_array(obj)


class DlpackOnly:
    def __init__(self, device_type: int):
        self.device_type = device_type

    def __dlpack__(self, stream=None):
        raise AssertionError("not consumed in this test")

    def __dlpack_device__(self):
        return (self.device_type, 0)


def test_dlpack_only_arrays(monkeypatch):
    cpu = DlpackOnly(1)
    assert device_view(cpu) is None and not is_device_array(cpu)
    cuda = DlpackOnly(2)
    assert is_device_array(cuda)
    monkeypatch.setitem(sys.modules, "torch", None)  # make both imports fail
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(InputError, match="test_arrays.DlpackOnly is a CUDA array that only speaks DLPack; fuser-mlir reads DLPack through PyTorch or CuPy, and neither is installed"):
        device_view(cuda)


def test_a_host_dlpack_array_is_not_taken_for_a_cuda_array():
    """A torch CPU tensor speaks DLPack on the host: not a CUDA array, so a
    call naming it gets the usual message for a wrong argument (it got
    AttributeError from device inference, or was called a CUDA array)."""
    from fuser_mlir import DataType, FusionDefinition
    from fuser_mlir.executor import infer_device, value_device

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x + y)
    host, device = DlpackOnly(1), DeviceArray(0x1000, (4,), (4,), np.float32)
    assert value_device(host) is None and value_device(DlpackOnly(2)) == "cuda"
    assert infer_device(fd, [host, device], None) == "cuda:0"
    with pytest.raises(InputError, match="input 0 must be a NumPy array of dtype float32, got test_arrays.DlpackOnly"):
        fd.execute([host, np.ones(4, np.float32)])


def test_the_arrays_module_imports_without_mlir_cuda_or_torch():
    code = (
        "import sys, fuser_mlir.runtime.arrays\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mlir', 'cuda', 'torch', 'cupy')]\n"
        "sys.exit(1 if loaded else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ---------------------------------------------------------------------------
# host round trips against a fake driver (host memory stands in for the device)
# ---------------------------------------------------------------------------


class FakeDriver:
    """The subset of ``cuda.bindings.driver`` that arrays.py calls."""

    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = 1
        CUDA_ERROR_OUT_OF_MEMORY = 2

    class CUpointer_attribute(enum.IntEnum):
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9

    def __init__(self):
        self.memory: dict[int, ctypes.Array] = {}
        self.freed: list[int] = []
        self.failing: dict[str, int] = {}
        self.current = 0
        self.pushed: list[int] = []

    def _result(self, call: str, *values):
        return (self.CUresult(self.failing.get(call, 0)), *values)

    def cuInit(self, flags):
        return self._result("cuInit")

    def cuDeviceGetCount(self):
        return self._result("cuDeviceGetCount", 1)

    def cuDeviceGet(self, ordinal):
        return self._result("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxRetain(self, device):
        return self._result("cuDevicePrimaryCtxRetain", 100 + device)

    def cuCtxGetCurrent(self):
        return self._result("cuCtxGetCurrent", self.current)

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx
        return self._result("cuCtxSetCurrent")

    def cuCtxPushCurrent(self, ctx):
        self.pushed.append(self.current)
        self.current = ctx
        return self._result("cuCtxPushCurrent")

    def cuCtxPopCurrent(self):
        popped, self.current = self.current, self.pushed.pop()
        return self._result("cuCtxPopCurrent", popped)

    def cuCtxSynchronize(self):
        return self._result("cuCtxSynchronize")

    def cuMemAlloc(self, nbytes):
        if "cuMemAlloc" in self.failing:
            return self._result("cuMemAlloc", 0)
        buffer = (ctypes.c_char * nbytes)()
        self.memory[ctypes.addressof(buffer)] = buffer
        return self._result("cuMemAlloc", ctypes.addressof(buffer))

    def cuMemFree(self, ptr):
        del self.memory[ptr]
        self.freed.append(ptr)
        return self._result("cuMemFree")

    def cuMemcpyHtoD(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return self._result("cuMemcpyHtoD")

    def cuMemcpyDtoH(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return self._result("cuMemcpyDtoH")

    def cuGetErrorName(self, err):
        return (self.CUresult.CUDA_SUCCESS, self.CUresult(err).name.encode())


@pytest.fixture
def fake_driver(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setattr(arrays, "driver", lambda: driver)
    monkeypatch.setattr(arrays, "_PRIMARY_CONTEXTS", {})
    yield driver
    gc.collect()  # run finalizers while the fake is still installed


def strided_views(host: np.ndarray, device: DeviceArray):
    """The same views of a host array and of its device copy."""
    for key in [(slice(None),), (slice(1, None), slice(None, None, 2)), (slice(None, None, -1), slice(None, None, -3)), (2,), (slice(None), 4)]:
        yield host[key], device[key]
    yield host.T, device.T


def round_trips(device_index: int = 0):
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16, BF16):
        host = (RNG.standard_normal((6, 7)) * 10).astype(dtype)
        device = DeviceArray.from_numpy(host, device=device_index)
        assert (device.shape, device.dtype, device.strides, device.device) == (host.shape, host.dtype, host.strides, device_index)
        np.testing.assert_array_equal(device.numpy(), host)
        for expected, view in strided_views(host, device):
            copy = view.numpy()
            assert copy.flags.c_contiguous and copy.dtype == expected.dtype
            np.testing.assert_array_equal(copy, expected)
    np.testing.assert_array_equal(DeviceArray.from_numpy(np.array(2.5, np.float32)).numpy(), np.array(2.5, np.float32))
    assert DeviceArray.from_numpy(np.empty((0, 3), np.float32)).numpy().shape == (0, 3)
    transposed = np.arange(12, dtype=np.float32).reshape(3, 4).T  # not contiguous: copied contiguously
    np.testing.assert_array_equal(DeviceArray.from_numpy(transposed).numpy(), transposed)
    assert DeviceArray.from_numpy(transposed).is_c_contiguous


def test_round_trips_through_the_fake_driver(fake_driver):
    round_trips()
    assert fake_driver.pushed == []


def test_an_allocation_is_freed_once_the_array_and_its_views_are_gone(fake_driver):
    a = DeviceArray.empty((4, 5), np.float32)
    assert (a.strides, a.base) == ((20, 4), None)
    ptr, view = a.ptr, a[1:]
    del a
    gc.collect()
    assert fake_driver.freed == []  # the view keeps its owner alive
    del view
    gc.collect()
    assert fake_driver.freed == [ptr] and ptr not in fake_driver.memory
    assert fake_driver.current == 100 and fake_driver.pushed == []  # freed with the context pushed and popped


def test_failed_cuda_calls_name_the_call_and_the_error(fake_driver):
    fake_driver.failing["cuMemAlloc"] = FakeDriver.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(CudaError, match=r"cuMemAlloc\(4000 bytes on device 0\) failed: CUDA_ERROR_OUT_OF_MEMORY"):
        DeviceArray.empty((1000,), np.float32)
    del fake_driver.failing["cuMemAlloc"]
    a = DeviceArray.from_numpy(np.ones(3, np.float32))
    fake_driver.failing["cuMemcpyDtoH"] = FakeDriver.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError, match=r"cuMemcpyDtoH\(12 bytes\) failed: CUDA_ERROR_INVALID_VALUE"):
        a.numpy()
    with pytest.raises(CudaError, match="CUDA device 1 does not exist: this machine has 1 CUDA device"):
        DeviceArray.empty((2,), np.float32, device=1)


def test_without_cuda_bindings_device_memory_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(CudaError, match=r"CUDA is not available: cuda-bindings \(cuda-python\) cannot be imported .*; install fuser-mlir\[cuda\]"):
        DeviceArray.empty((2,), np.float32)


# ---------------------------------------------------------------------------
# on a GPU
# ---------------------------------------------------------------------------


@pytest.fixture
def gpu():
    driver = pytest.importorskip("cuda.bindings.driver")
    if driver.cuInit(0)[0] != driver.CUresult.CUDA_SUCCESS or driver.cuDeviceGetCount()[1] == 0:
        pytest.skip("no CUDA device")


@pytest.mark.gpu
def test_round_trips_on_the_gpu(gpu):
    round_trips()
    a = DeviceArray.empty((1 << 20,), np.float32)
    assert a.ptr % 256 == 0 and a.device == 0
    del a
    gc.collect()


@pytest.mark.gpu
def test_torch_tensors_are_viewed_without_a_copy(gpu):
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool):
        t = (torch.randn(6, 8, device="cuda") * 10).to(dtype)
        view = device_view(t[:, ::2])
        assert view.base is not None and view.ptr == t.data_ptr()
        assert view.strides == (8 * t.element_size(), 2 * t.element_size())
        expected = t[:, ::2].cpu()
        if dtype == torch.bfloat16:
            np.testing.assert_array_equal(view.numpy(), expected.view(torch.int16).numpy().view(BF16))
        else:
            np.testing.assert_array_equal(view.numpy(), expected.numpy())
    assert device_view(torch.ones(2, requires_grad=True, device="cuda")).shape == (2,)
    assert device_view(torch.ones(2)) is None  # a CPU tensor
    # the other direction: torch reads a DeviceArray through __cuda_array_interface__
    host = RNG.standard_normal((4, 5)).astype(np.float32)
    d = DeviceArray.from_numpy(host)
    wrapped = torch.as_tensor(d.T, device="cuda")
    assert wrapped.data_ptr() == d.ptr
    np.testing.assert_array_equal(wrapped.cpu().numpy(), host.T)


@pytest.mark.gpu
def test_dlpack_only_cuda_arrays_are_read_through_a_framework(gpu):
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32, device="cuda")

    class Wrapper:
        def __dlpack__(self, stream=None):
            return t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    view = device_view(Wrapper())
    assert view.ptr == t.data_ptr()
    np.testing.assert_array_equal(view.numpy(), np.arange(10, dtype=np.float32))


@pytest.mark.gpu
def test_cupy_arrays_are_viewed_and_read_device_arrays(gpu):
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(12, dtype=cupy.float64).reshape(3, 4)[:, 1::2]
    view = device_view(x)
    assert (view.ptr, view.strides, view.device) == (x.data.ptr, x.strides, 0)
    np.testing.assert_array_equal(view.numpy(), x.get())
    host = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(cupy.asarray(DeviceArray.from_numpy(host)).get(), host)


@pytest.mark.gpu
def test_torch_helpers(gpu):
    torch = pytest.importorskip("torch")
    t = arrays.torch_empty((3, 4), BF16, 0)
    assert (t.dtype, tuple(t.shape), t.device.type, t.is_contiguous()) == (torch.bfloat16, (3, 4), "cuda", True)
    assert arrays.torch_current_stream_handle(0) == torch.cuda.current_stream(0).cuda_stream
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert arrays.torch_current_stream_handle(0) == stream.cuda_stream
