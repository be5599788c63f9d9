"""The runtime: runs compiled fusions without MLIR.

Nothing in this package imports ``mlir`` (a test checks it), so a process that
only loads artifacts or calls compiled kernels needs NumPy (and ml_dtypes for
bfloat16), not the MLIR bindings. Submodules are imported on demand:
:mod:`fuser_mlir.runtime.cpu` calls JIT-compiled CPU kernels on NumPy arrays;
:mod:`fuser_mlir.runtime.plan` runs launch plans.
"""
