"""The Python frontend: FusionDefinition, DataType, and the handles ops return.

``datatype``, ``promotion``, ``shapes``, ``values``, ``ops`` and
``definition`` are pure Python; only ``emit`` (imported by
``FusionDefinition.build_module``) uses MLIR.
"""

from fuser_mlir.frontend.datatype import DataType
from fuser_mlir.frontend.definition import FusionDefinition, InputSpec, OutputSpec, Record
from fuser_mlir.frontend.values import Loc, Scalar, Tensor

__all__ = ["DataType", "FusionDefinition", "InputSpec", "Loc", "OutputSpec", "Record", "Scalar", "Tensor"]
