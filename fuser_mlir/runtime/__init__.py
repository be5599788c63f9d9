"""The runtime: runs compiled fusions without MLIR.

Nothing in this package imports ``mlir`` (a test checks it), so a process that
only loads artifacts or calls compiled kernels needs NumPy (and ml_dtypes for
bfloat16), not the MLIR bindings. Submodules are imported on demand:
:mod:`fuser_mlir.runtime.cpu` calls JIT-compiled CPU kernels on NumPy arrays
(and loads CPU kernel libraries); :mod:`fuser_mlir.runtime.plan` runs launch
plans; :mod:`fuser_mlir.runtime.image` is the backend-neutral kernel image;
:mod:`fuser_mlir.runtime.artifact` exports and loads compiled artifacts
(``fuser_mlir.load``); :mod:`fuser_mlir.runtime.cache` is the persistent
kernel cache; :mod:`fuser_mlir.runtime.signature` is what arguments are
validated against when there is no FusionDefinition.
"""
