"""Lowerings of the fuser dialect to targets.

:mod:`~fuser_mlir.lowering.scalar` holds the per-element semantics of every op
(arith/math), :mod:`~fuser_mlir.lowering.linalg` builds linalg on tensors from
fuser ops, and :mod:`~fuser_mlir.lowering.cpu` compiles segments for the CPU
through the LLVM dialect and MLIR's ExecutionEngine.
"""
