"""The Python frontend: FusionDefinition, DataType, and the handles ops return.

``datatype``, ``promotion``, ``shapes``, ``values``, ``ops`` and
``definition`` are pure Python; only ``emit`` (imported by
``FusionDefinition.build_module``) uses MLIR. The names below are imported
on first use, so that ``fuser_mlir.frontend.datatype`` alone (what a loaded
artifact needs) does not bring in the builder and its op table.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "DataType": "fuser_mlir.frontend.datatype",
    "FusionDefinition": "fuser_mlir.frontend.definition",
    "InputSpec": "fuser_mlir.frontend.specs",
    "OutputSpec": "fuser_mlir.frontend.specs",
    "Record": "fuser_mlir.frontend.definition",
    "Loc": "fuser_mlir.frontend.values",
    "Scalar": "fuser_mlir.frontend.values",
    "Tensor": "fuser_mlir.frontend.values",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fuser_mlir.frontend' has no attribute '{name}'")
    return getattr(importlib.import_module(_LAZY[name]), name)
