"""fuser-mlir: a GPU fusion compiler for Python users, built on MLIR."""

__version__ = "0.1.0"
