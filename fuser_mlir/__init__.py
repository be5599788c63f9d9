"""fuser-mlir: a GPU fusion compiler for Python users, built on MLIR.

    from fuser_mlir import FusionDefinition, DataType, FusionExecutorCache

The names below are imported lazily, so ``import fuser_mlir.runtime`` (which
never needs MLIR) does not load the MLIR bindings. ``fuser_mlir.load(path)``
loads a compiled artifact (``compiled.export(path)``) without MLIR.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "FusionDefinition": "fuser_mlir.frontend",
    "DataType": "fuser_mlir.frontend.datatype",
    "FusionExecutorCache": "fuser_mlir.executor",
    "FuserError": "fuser_mlir.errors",
    "InputError": "fuser_mlir.errors",
    "DefinitionError": "fuser_mlir.errors",
    "CompileError": "fuser_mlir.errors",
    "ArtifactError": "fuser_mlir.errors",
    "DeviceError": "fuser_mlir.errors",
    "CudaError": "fuser_mlir.errors",
    "CacheWarning": "fuser_mlir.errors",
    "ConfigWarning": "fuser_mlir.errors",
    "load": "fuser_mlir.runtime.artifact",
}

__all__ = [*sorted(_LAZY), "__version__"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fuser_mlir' has no attribute '{name}'")
    return getattr(importlib.import_module(_LAZY[name]), name)
