"""Element types of fusion values, as nvFuser's Python frontend names them.

Pure Python (no MLIR import): the runtime and the executor read these too.
Each member's value is its MLIR element type name, so ``DataType.Half.mlir``
is ``"f16"`` and ``DataType.from_mlir("f16")`` is ``DataType.Half``.

    DataType.Float.numpy          -> dtype('float32')
    DataType.from_numpy("int32")  -> DataType.Int32
    DataType.of_python(2.0)       -> DataType.Double   (nvFuser: float -> Double)
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

_NUMPY = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "i1": np.dtype(np.bool_),
}


class DataType(enum.Enum):
    """The element types a fusion value can have."""

    Float = "f32"
    Double = "f64"
    Half = "f16"
    BFloat16 = "bf16"
    Int = "i64"
    Int32 = "i32"
    Bool = "i1"

    @property
    def mlir(self) -> str:
        """The MLIR element type name: ``"f32"``, ``"bf16"``, ``"i1"``, ..."""
        return self.value

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of arrays of this type (BFloat16: ``ml_dtypes.bfloat16``)."""
        return _NUMPY[self.value]

    @property
    def is_float(self) -> bool:
        return self.value.startswith(("f", "bf"))

    @property
    def is_int(self) -> bool:
        """Integers other than Bool."""
        return self in (DataType.Int, DataType.Int32)

    @property
    def int_range(self) -> tuple[int, int]:
        """The least and greatest value of an integer type (Int, Int32)."""
        if not self.is_int:
            raise ValueError(f"{self.name} is not an integer type")
        bits = int(self.value[1:])
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    @property
    def is_bool(self) -> bool:
        return self is DataType.Bool

    @property
    def is_low_precision(self) -> bool:
        """Half and BFloat16, which fusions compute in Float."""
        return self in (DataType.Half, DataType.BFloat16)

    @property
    def itemsize(self) -> int:
        """Bytes per element (Bool: 1, as NumPy stores it)."""
        return self.numpy.itemsize

    @classmethod
    def from_numpy(cls, dtype: object) -> "DataType":
        """The DataType of a NumPy dtype (or anything ``np.dtype`` accepts)."""
        try:
            wanted = np.dtype(dtype)
        except TypeError:
            raise ValueError(f"{dtype!r} is not a NumPy dtype") from None
        for member in cls:
            if member.numpy == wanted:
                return member
        supported = ", ".join(str(m.numpy) for m in cls)
        raise ValueError(f"NumPy dtype {wanted} has no fuser DataType; supported: {supported}")

    @classmethod
    def from_mlir(cls, name: str) -> "DataType":
        """The DataType of an MLIR element type name such as ``"bf16"``."""
        try:
            return cls(str(name))
        except ValueError:
            supported = ", ".join(m.value for m in cls)
            raise ValueError(f"MLIR type '{name}' has no fuser DataType; supported: {supported}") from None

    @classmethod
    def of_python(cls, value: object) -> "DataType":
        """The DataType of a Python or NumPy scalar, as nvFuser types constants.

        ``bool -> Bool``, ``int -> Int``, ``float -> Double``; a NumPy scalar keeps
        its own dtype.
        """
        if isinstance(value, np.generic):
            return cls.from_numpy(value.dtype)
        if isinstance(value, bool):
            return cls.Bool
        if isinstance(value, int):
            return cls.Int
        if isinstance(value, float):
            return cls.Double
        raise TypeError(f"{value!r} ({type(value).__name__}) is not a Python number; expected bool, int or float")


def is_python_number(value: object) -> bool:
    """True for Python and NumPy scalars (bool, int, float) that ops accept as constants."""
    if isinstance(value, np.generic):
        return value.dtype.kind in "biuf" or value.dtype == ml_dtypes.bfloat16
    return isinstance(value, (bool, int, float))
