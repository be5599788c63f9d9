"""Erase linalg generics on memrefs that have no outputs and whose bodies have no side effects.

Preconditions: linalg on memrefs (``fuser-cpu-pipeline`` after
bufferization). Generic bodies hold scalar ops of the ``arith`` and ``math``
dialects and calls of functions; a callee counts as free of side effects
where its declaration in the module carries ``llvm.readnone`` (as every libm
function ``fuser-lower-to-cpu`` declares does).

Effect: ``linalg-fuse-elementwise-ops`` fuses a producer into each consumer
and leaves the producer in place once it has no uses when its body calls a
function: MLIR cannot tell that a ``func.call`` has no side effects, so the
op is not trivially dead. After bufferization such a producer is a
``linalg.generic`` with inputs and no outputs (three of them in a row
softmax, each a loop calling ``expf``). It computes nothing that is kept, so
it is erased here: LLVM would delete the loops too, but later passes would
count them as loop nests reading their inputs (``fuser-block-rows``), and
compile time goes to lowering them. A generic with no outputs whose body has
an op of another dialect, or calls a function not declared ``llvm.readnone``,
stays.

    func.func private @expf(f32) -> f32 attributes {llvm.readnone}
    linalg.generic {...} ins(%x, %max : ...) {
    ^bb0(%a: f32, %m: f32):
      %0 = arith.subf %a, %m : f32
      %1 = func.call @expf(%0) : (f32) -> f32
      linalg.yield
    }
    ==>
    (nothing)
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.lowering.gpu_schedule import Generic
from fuser_mlir.passes.base import FuserPass

#: Dialects whose ops in a generic body have no side effects (the ``arith``
#: and ``math`` ops the lowering builds bodies from; ``linalg.yield`` ends them).
_PURE_DIALECTS = ("arith.", "math.")


def _readnone_functions(module: ir.Operation) -> set[str]:
    """Names of the functions ``module`` declares ``llvm.readnone``."""
    names = set()
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "func.func" and "llvm.readnone" in op.attributes:
            names.add(ir.StringAttr(op.attributes["sym_name"]).value)
    return names


def _free_of_effects(op: ir.Operation, readnone: set[str]) -> bool:
    """Whether ``op``, in a generic body, has no side effects."""
    if op.name == "linalg.yield" or op.name.startswith(_PURE_DIALECTS):
        return not op.regions
    if op.name == "func.call":
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value in readnone
    return False


def is_dead(generic: ir.Operation, readnone: set[str]) -> bool:
    """Whether ``generic`` (a ``linalg.generic`` on memrefs) keeps nothing:
    it has no outputs and no results, and its body no side effects."""
    g = Generic.of(generic)
    if generic.results or g.outputs:
        return False
    return all(_free_of_effects(op.operation, readnone) for op in g.body.operations)


@dataclass
class EraseDeadGenericsPass(FuserPass):
    NAME = "fuser-erase-dead-generics"
    SUMMARY = "Erase linalg generics on memrefs that have no outputs and whose bodies have no side effects."

    def run(self, module: ir.Operation) -> None:
        readnone = _readnone_functions(module)
        dead = []
        for function in module.regions[0].blocks[0].operations:
            if function.operation.name != "func.func" or not function.operation.regions[0].blocks:
                continue
            for op in function.operation.regions[0].blocks[0].operations:
                if op.operation.name == "linalg.generic" and is_dead(op.operation, readnone):
                    dead.append(op.operation)
        for op in dead:
            op.erase()
