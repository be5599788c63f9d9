"""Command-line tools: ``fuser-opt`` (an mlir-opt for fuser IR) and ``fuser-mlir``."""
