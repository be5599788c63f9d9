"""All ``FUSER_*`` environment knobs, typed, with defaults.

Nothing else in the package reads ``os.environ``. Read a knob through the
functions here at the point of use, so tests can set the variable with
``monkeypatch.setenv``.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from pathlib import Path


def raw(name: str) -> str | None:
    """The text of a knob as set, unparsed: to notice that it changed before
    parsing it again (see ``fuser_mlir.runtime.cpu.cpu_threads``)."""
    return os.environ.get(name)


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off")


def reproducer_dir() -> Path:
    """``FUSER_REPRODUCER_DIR``: where a failed compile saves its input IR
    (default: the system temporary directory)."""
    return Path(os.environ.get("FUSER_REPRODUCER_DIR") or tempfile.gettempdir())


def dump_ir() -> bool:
    """``FUSER_DUMP_IR=1``: print the IR after every pass of every compile."""
    return _flag("FUSER_DUMP_IR", False)


def cuda_arch() -> str | None:
    """``FUSER_CUDA_ARCH`` (e.g. ``sm_90``): the GPU architecture to compile
    for; default: the device's own (``sm_90`` when there is no device)."""
    return os.environ.get("FUSER_CUDA_ARCH") or None


_LIBDEVICE_PLACES = (
    "nvvm/libdevice/libdevice.10.bc",  # under a CUDA toolkit
)


def libdevice_path() -> Path | None:
    """``FUSER_LIBDEVICE``: NVIDIA's libdevice bitcode, linked into kernels for
    math functions; default: found under ``CUDA_HOME``/``CUDA_PATH``,
    ``/usr/local/cuda``, or the nvidia-cuda-nvcc wheel."""
    explicit = os.environ.get("FUSER_LIBDEVICE")
    if explicit:
        return Path(explicit)
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]

        roots.extend(nvidia.cuda_nvcc.__path__)
    except ImportError:
        pass
    for root in filter(None, roots):
        for place in _LIBDEVICE_PLACES:
            candidate = Path(root) / place
            if candidate.is_file():
                return candidate
    return None


def c_compiler() -> str:
    """``FUSER_CC``: the C compiler that links CPU kernels into a shared
    library for artifacts and the disk cache (default ``cc``; ``""`` or
    ``none``: do not link, so CPU fusions have no kernel image)."""
    raw = os.environ.get("FUSER_CC")
    if raw is None:
        return "cc"
    return "" if raw.strip().lower() in ("", "none", "0") else raw.strip()


def cpu_threads() -> int:
    """``FUSER_CPU_THREADS``: how many threads one CPU kernel call may run
    on (default: the CPUs this process may use; ``1``: every call on the
    calling thread). Only calls on large arrays are split (see
    :class:`fuser_mlir.runtime.cpu.CpuKernel`). ValueError for a value that
    is not a whole number of 1 or more."""
    raw = os.environ.get("FUSER_CPU_THREADS")
    if not raw:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"FUSER_CPU_THREADS must be a whole number of threads, 1 or more; got {raw!r}")
    return threads


def cache_enabled() -> bool:
    """``FUSER_CACHE=0``: do not read or write the persistent kernel cache (default on)."""
    return _flag("FUSER_CACHE", True)


def cache_dir() -> Path:
    """``FUSER_CACHE_DIR``: where the persistent kernel cache lives
    (default ``~/.cache/fuser-mlir``, or ``$XDG_CACHE_HOME/fuser-mlir``)."""
    explicit = os.environ.get("FUSER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fuser-mlir"


#: Default bound of the persistent cache: 1 GiB.
DEFAULT_CACHE_MAX_BYTES = 1 << 30


_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def cache_max_bytes() -> int:
    """``FUSER_CACHE_MAX_BYTES``: size bound of the persistent cache; the least
    recently used entries are evicted beyond it (default 1 GiB). A number of
    bytes, or of KiB, MiB, GiB or TiB with a suffix (``512M``, ``2GiB``,
    ``1g``). A value it cannot read warns (ConfigWarning) and the default
    holds, so that a typo never stops a fusion."""
    raw = os.environ.get("FUSER_CACHE_MAX_BYTES")
    if not raw:
        return DEFAULT_CACHE_MAX_BYTES
    match = _SIZE.fullmatch(raw)
    if match is None:
        from fuser_mlir.errors import ConfigWarning

        warnings.warn(
            "FUSER_CACHE_MAX_BYTES must be a number of bytes, or of KiB, MiB, GiB or TiB with a suffix (512M, 2G); "
            f"got {raw!r}, so the cache holds at most the default 1 GiB",
            ConfigWarning,
            stacklevel=3,
        )
        return DEFAULT_CACHE_MAX_BYTES
    return int(match.group(1)) << (10 * " KMGT".index(match.group(2).upper() or " "))
