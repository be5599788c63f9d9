"""Kernel images: compiled kernels as plain data, loadable without MLIR.

A :class:`KernelImage` is what a backend's compiler leaves behind so that a
process without MLIR can call the kernels again: ``files`` (the binaries, by
artifact-relative path under ``kernels/``) and ``spec`` (JSON-able data that
says how to call each kernel: entry symbols, argument kinds, launch data).
An artifact (:mod:`fuser_mlir.runtime.artifact`) stores both; the disk cache
stores artifacts.

Backends and what their images hold:

``cpu``
    one shared library ``kernels/<fusion>.so`` linked by the system C compiler
    from the object file MLIR's ExecutionEngine emits (position-independent
    code), and per segment its packed entry symbol and argument kinds; see
    :func:`fuser_mlir.runtime.cpu.load_kernels`.
``cuda``
    PTX/cubin and launch data (written by the GPU backend);
    :func:`fuser_mlir.runtime.cuda.load_kernels`.

:func:`load_kernels` dispatches on the backend. The CUDA loader is imported
only when a CUDA image is loaded, so a CPU-only process never imports
cuda-python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fuser_mlir.errors import ArtifactError

BACKENDS = ("cpu", "cuda")


@dataclass
class KernelImage:
    """The kernels of one compiled fusion, as bytes plus calling data."""

    backend: str  # "cpu" or "cuda"
    spec: dict  # JSON-able: everything needed to call the kernels
    files: dict[str, bytes] = field(default_factory=dict)  # artifact-relative path ("kernels/...") -> contents

    @property
    def nbytes(self) -> int:
        return sum(len(data) for data in self.files.values())


def load_kernels(image_spec: dict, backend: str, read: Callable[[str], bytes], device: str) -> dict[str, Callable]:
    """The callable kernels of an image: ``{segment name: kernel}``.

    ``read(path)`` returns the (already verified) bytes of an image file;
    ``device`` is ``"cpu"`` or ``"cuda:N"``.
    """
    if backend == "cpu":
        from fuser_mlir.runtime import cpu

        return cpu.load_kernels(image_spec, read, device)
    if backend == "cuda":
        from fuser_mlir.runtime import cuda

        loader = getattr(cuda, "load_kernels", None)
        if loader is None:
            raise ArtifactError("this fuser-mlir cannot load CUDA kernel images yet (fuser_mlir.runtime.cuda.load_kernels is missing)")
        return loader(image_spec, read, device)
    raise ArtifactError(f"unknown kernel image backend {backend!r}; known: {', '.join(BACKENDS)}")
