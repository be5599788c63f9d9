"""Fixtures shared by the whole suite."""

import atexit
import os
import shutil
import tempfile

import pytest

from devices import skip_without_cuda

# The persistent kernel cache of the whole suite (and of the processes tests
# start, which inherit the variable) is a fresh temporary directory: tests
# never read or write ~/.cache, and a run never reuses another run's entries.
# The reproducers of the compiles that tests make fail go under it too.
_CACHE_DIR = tempfile.mkdtemp(prefix="fuser-test-cache-")
os.environ["FUSER_CACHE_DIR"] = _CACHE_DIR
os.environ["FUSER_REPRODUCER_DIR"] = os.path.join(_CACHE_DIR, "reproducers")
os.environ.pop("FUSER_CACHE", None)
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> str:
    """The backend an end-to-end test runs on; ``cuda`` is skipped where no GPU is present."""
    if request.param == "cuda":
        skip_without_cuda()
    return request.param


@pytest.fixture
def cuda():
    """Skips the test where there is no CUDA device."""
    skip_without_cuda()


@pytest.fixture
def constants(cuda, monkeypatch):
    """The monkeypatch a GPU test sets gpu_schedule constants with: kernels
    compiled with them are kept out of the kernel cache (FUSER_CACHE=0)."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    return monkeypatch
