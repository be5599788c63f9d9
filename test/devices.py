"""Where a test's arrays live: ``"cpu"`` (NumPy arrays) or ``"cuda"`` (DeviceArray).

End-to-end tests take the ``device`` fixture (test/conftest.py), pass their
inputs and poisoned outputs through :func:`to_device`, and read results back
with :func:`to_host`; on ``"cpu"`` both are the identity, so the CPU variant
runs exactly the NumPy test.

    x = rand(8, 16)
    (out,) = fd.execute([to_device(x, device)])
    np.testing.assert_allclose(to_host(out), reference(x))
"""

from __future__ import annotations

import functools

import numpy as np

from fuser_mlir.runtime.arrays import DeviceArray


@functools.cache
def cuda_available() -> bool:
    """Whether cuda-bindings imports and the driver sees at least one GPU."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    if driver.cuInit(0)[0] != driver.CUresult.CUDA_SUCCESS:
        return False
    err, count = driver.cuDeviceGetCount()
    return err == driver.CUresult.CUDA_SUCCESS and count > 0


def skip_without_cuda() -> None:
    """Skip the calling test where there is no CUDA device."""
    if not cuda_available():
        import pytest

        pytest.skip("no CUDA device: needs cuda-bindings and an NVIDIA GPU")


def assert_unchanged(actual, was: np.ndarray, message: str) -> None:
    """``actual`` (any array :func:`to_host` reads) holds the bytes of
    ``was``, element for element: NaNs compare equal to themselves, and a
    NaN's payload must stay as it was too. ``np.testing.assert_array_equal``
    sees a bfloat16 NaN as unequal to itself with the GPU host's NumPy and
    ml_dtypes."""
    actual = to_host(actual)
    assert actual.shape == was.shape and actual.dtype == was.dtype, f"{message}: {actual.dtype}{list(actual.shape)}, was {was.dtype}{list(was.shape)}"
    np.testing.assert_array_equal(_bytes(actual), _bytes(was), err_msg=message)


def _bytes(array: np.ndarray) -> np.ndarray:
    """Each element's bytes, a row of them an element."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, array.dtype.itemsize)


def to_device(array: np.ndarray, device: str):
    """``array`` itself on ``"cpu"``; a C-contiguous DeviceArray copy on ``"cuda"``/``"cuda:N"``."""
    if device == "cpu":
        return array
    index = int(device.partition(":")[2] or 0)
    return DeviceArray.from_numpy(np.asarray(array), device=index)


def to_host(x) -> np.ndarray:
    """A NumPy array with the values of ``x``: a NumPy array (returned as it is),
    a DeviceArray, a CuPy array or a torch tensor."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, DeviceArray):
        return x.numpy()
    if type(x).__module__.startswith("torch"):
        return _torch_to_numpy(x)
    if hasattr(x, "get"):  # CuPy
        return x.get()
    raise TypeError(f"to_host: cannot copy a {type(x).__module__}.{type(x).__qualname__} to the host")


def _torch_to_numpy(tensor) -> np.ndarray:
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:  # NumPy has no bfloat16: go through the bits
        import ml_dtypes

        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def subprocess_env(repo, **extra) -> dict:
    """The environment of a child Python process that imports this checkout
    (``repo`` first on PYTHONPATH, what the parent had after it: on a GPU host
    the MLIR bindings come from PYTHONPATH too)."""
    import os

    path = os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
