"""Fusions for the tests of the CPU pipeline's passes (test/passes/).

A case is a function ``build(fd, x, w)`` that adds ops and outputs to ``fd``
from an input ``x`` and, where the case has a second shape, a 1-D weight
``w`` (else None); :func:`fusion` defines the inputs for the given shapes.
"""

from __future__ import annotations

import re
import numpy as np

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir import pipeline as P

#: The float dtypes the pass tests run, and the tolerance of each against
#: the float64 reference.
FLOAT_DTYPES = {"float32": DataType.Float, "float16": DataType.Half, "bfloat16": DataType.BFloat16}
FLOAT_TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}


def fusion(build, dtype: DataType, shapes) -> FusionDefinition:
    """``build``'s fusion on an input of ``len(shapes[0])`` dims of ``dtype``
    and, where ``shapes`` has a second shape, a 1-D weight of it."""
    with FusionDefinition(name=build.__name__) as fd:
        x = fd.define_tensor([-1] * len(shapes[0]), dtype=dtype)
        w = fd.define_tensor([-1], dtype=dtype) if len(shapes) > 1 else None
        build(fd, x, w)
    return fd


def poisoned(fd: FusionDefinition, expected) -> list[np.ndarray]:
    """Outputs for ``fd``'s visible outputs of the shapes of ``expected``: NaN, or 0 for integers."""
    outputs = []
    for spec, e in zip([o for o in fd.outputs if o.visible], expected):  # hidden aliases take no given output
        dtype = spec.dtype.numpy
        outputs.append(np.full(e.shape, 0 if np.issubdtype(dtype, np.integer) else np.nan, dtype))
    return outputs


def libm_calls(code: str, name: str) -> int:
    """The calls of libm function ``name`` in lowered LLVM-dialect ``code``:
    of the function itself or of its wrapper (``@fuser.expf``, with a vector
    library; fuser_mlir/lowering/vector_library.py)."""
    return len(re.findall(rf"llvm\.call @(?:fuser\.)?{name}\(", code))


def edit_pipeline(monkeypatch, old: str, new: str) -> None:
    """Compile the CPU kernels made from here on with ``old`` in
    ``fuser-cpu-pipeline`` replaced by ``new``."""
    text = P.PIPELINES["fuser-cpu-pipeline"]
    assert old in text
    monkeypatch.setitem(P.PIPELINES, "fuser-cpu-pipeline", text.replace(old, new))


def with_pass_option(monkeypatch, name: str, option: str, value: int) -> None:
    """Compile the CPU kernels made from here on with pass ``name`` run
    with ``option=value``."""
    edit_pipeline(monkeypatch, name, f"{name}{{{option}={value}}}")


def pipeline_without(monkeypatch, name: str) -> None:
    """Compile the CPU kernels made from here on without pass ``name``."""
    edit_pipeline(monkeypatch, f"{name}, ", "")
