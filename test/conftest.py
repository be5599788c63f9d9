"""Fixtures shared by the whole suite."""

import pytest

from devices import cuda_available


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> str:
    """The backend an end-to-end test runs on; ``cuda`` is skipped where no GPU is present."""
    if request.param == "cuda" and not cuda_available():
        pytest.skip("no CUDA device: needs cuda-bindings and an NVIDIA GPU")
    return request.param
