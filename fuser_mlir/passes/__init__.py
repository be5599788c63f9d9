"""The registry of fuser-mlir's Python passes.

Pipeline strings cannot name Python passes, so ``fuser-opt`` and the compiler
look names up here first. Modules are imported lazily, on first use. For every
entry, the registry key, the pass class's ``NAME``, the module name (``-`` to
``_``, without the ``fuser-`` prefix) and the lit test file
(``lit_tests/passes/<name without fuser->.mlir``) agree; ``test_registry.py``
enforces it, and that the summary is the first line of the module docstring.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from fuser_mlir.passes.base import FuserPass


@dataclass(frozen=True)
class PassEntry:
    name: str
    summary: str

    @property
    def module(self) -> str:
        return "fuser_mlir.passes." + self.name.removeprefix("fuser-").replace("-", "_")


_ENTRIES = [
    PassEntry("fuser-verify", "Check the fuser-dialect invariants that IRDL cannot express."),
    PassEntry("fuser-segment", "Assign every computing fuser op to a segment (a future kernel)."),
    PassEntry("fuser-resolve-alias-hazards", "Resolve in-place alias hazards: every read of an input sees its entry value."),
    PassEntry("fuser-test-print-alias-hazards", "Annotate every in-place store with the alias hazards the analysis finds."),
    PassEntry("fuser-outline-segments", "Move each segment into a private function; the host calls them in order."),
    PassEntry("fuser-lower-to-cpu", "Lower segment functions to linalg on tensors over strided memref arguments."),
    PassEntry("fuser-erase-dead-generics", "Erase linalg generics on memrefs that have no outputs and whose bodies have no side effects."),
    PassEntry("fuser-block-rows", "Run the loop nests of a segment block by block of rows, so that nests sharing data find it in cache."),
    PassEntry("fuser-share-call-results", "Compute once a function call that two loop nests of a segment both compute."),
    PassEntry("fuser-unroll-jam-reductions", "Unroll and jam the reduction loop of linalg generics whose inner loops are parallel."),
    PassEntry("fuser-block-sums", "Sum float32 reductions in blocks of elements, each block's sum added into a float64 total."),
    PassEntry("fuser-lower-to-gpu", "Schedule every segment function into gpu.func kernels in one gpu.module."),
]

REGISTRY: dict[str, PassEntry] = {e.name: e for e in _ENTRIES}


def pass_class(name: str) -> type[FuserPass]:
    """The pass class registered as ``name`` (imports its module)."""
    entry = REGISTRY[name]
    module = importlib.import_module(entry.module)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, FuserPass) and value.NAME == name:
            return value
    raise LookupError(f"module {entry.module} defines no pass named '{name}'")
