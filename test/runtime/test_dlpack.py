"""DLPack export of DeviceArrays: the capsule describes the view exactly and
keeps the array alive; a GPU test hands it to torch without a copy."""

import gc

import ml_dtypes
import numpy as np
import pytest

from fuser_mlir.runtime import dlpack
from fuser_mlir.runtime.arrays import DeviceArray


def view(shape, strides, dtype=np.float32, ptr=0x7F0000001000, device=0):
    return DeviceArray(ptr, shape, strides, np.dtype(dtype), device=device)


def test_capsule_describes_a_strided_view():
    array = view((3, 4), (64, 8), np.float64, device=1)
    capsule = array.__dlpack__()
    tensor = dlpack.read_capsule(capsule)
    assert tensor.data == 0x7F0000001000
    assert (tensor.device.device_type, tensor.device.device_id) == (dlpack.KDL_CUDA, 1)
    assert tensor.ndim == 2
    assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (2, 64, 1)
    assert [tensor.shape[i] for i in range(2)] == [3, 4]
    assert [tensor.strides[i] for i in range(2)] == [8, 1]  # in elements
    assert array.__dlpack_device__() == (dlpack.KDL_CUDA, 1)


@pytest.mark.parametrize(
    "dtype, code",
    [(np.float16, (2, 16)), (ml_dtypes.bfloat16, (4, 16)), (np.int32, (0, 32)), (np.int64, (0, 64)), (np.bool_, (6, 8))],
)
def test_dtype_codes(dtype, code):
    tensor = dlpack.read_capsule(view((2,), (np.dtype(dtype).itemsize,), dtype).__dlpack__())
    assert (tensor.dtype.code, tensor.dtype.bits) == code


def test_an_unconsumed_capsule_releases_the_array():
    before = len(dlpack._alive)
    capsule = view((5,), (4,)).__dlpack__()
    assert len(dlpack._alive) == before + 1
    del capsule
    gc.collect()
    assert len(dlpack._alive) == before


def test_unsupported_requests_are_refused():
    array = view((2,), (4,))
    with pytest.raises(BufferError, match="copy=True is not supported"):
        array.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"cannot export to device \(1, 0\)"):
        array.__dlpack__(dl_device=(1, 0))
    with pytest.raises(ValueError, match="does not support dtype complex64"):
        dlpack.dtype_code(np.complex64)


@pytest.mark.gpu
def test_torch_reads_a_device_array_without_a_copy(cuda):
    torch = pytest.importorskip("torch")
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    array = DeviceArray.from_numpy(host)
    tensor = torch.from_dlpack(array.T)
    assert tensor.data_ptr() == array.ptr
    np.testing.assert_array_equal(tensor.cpu().numpy(), host.T)
