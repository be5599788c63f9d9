"""Handles to fusion values (Tensor, Scalar) and the user's source locations.

A handle is what ``fd.define_tensor``, ``fd.ops.*`` and the Python operators
return. It knows its FusionDefinition, its id there, its dtype and, for a
tensor, its shape (``-1`` symbolic, ``1`` broadcast, ``N`` static) and the
extent of each dim (see :mod:`fuser_mlir.frontend.shapes`). Operators record
ops through ``fd.ops``, so ``t0 * 2.0 + t1`` records a mul and an add.

Handles overload ``==``, so they never compare or hash by value: code that
keeps handles in containers must key them by ``id``. ``bool(handle)`` raises,
because a value has no truth value while the fusion is being defined.

Pure Python; no MLIR.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fuser_mlir.errors import DefinitionError
from fuser_mlir.frontend.datatype import DataType, is_python_number

if TYPE_CHECKING:
    from fuser_mlir.frontend.definition import FusionDefinition

_FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class Loc:
    """A source location: the user's line that defined a value or op."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.line}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


def _column(frame) -> int:
    """1-based column of the frame's current instruction (0 where Python cannot tell)."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:  # Python 3.10
        return 0
    entry = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)
    if entry is None or entry[2] is None:
        return 0
    return entry[2] + 1


def user_location() -> Loc:
    """The location of the innermost caller outside ``fuser_mlir/frontend``."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_FRONTEND_DIR):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN_LOC
    return Loc(frame.f_code.co_filename, frame.f_lineno, _column(frame))


class Value:
    """A value of a fusion: a Tensor or a Scalar."""

    __slots__ = ("fd", "id", "dtype", "loc")

    def __init__(self, fd: "FusionDefinition", id: int, dtype: DataType, loc: Loc):
        self.fd = fd
        self.id = id
        self.dtype = dtype
        self.loc = loc

    @property
    def is_tensor(self) -> bool:
        return isinstance(self, Tensor)

    def __bool__(self) -> bool:
        raise DefinitionError(
            f"{self!r} has no truth value while the fusion is being defined; "
            "use fd.ops.where(cond, a, b) to select values"
        )

    __hash__ = object.__hash__

    # -- arithmetic -----------------------------------------------------------
    def __add__(self, other):
        return self._binary("add", self, other)

    def __radd__(self, other):
        return self._binary("add", other, self)

    def __sub__(self, other):
        return self._binary("sub", self, other)

    def __rsub__(self, other):
        return self._binary("sub", other, self)

    def __mul__(self, other):
        return self._binary("mul", self, other)

    def __rmul__(self, other):
        return self._binary("mul", other, self)

    def __truediv__(self, other):
        return self._binary("div", self, other)

    def __rtruediv__(self, other):
        return self._binary("div", other, self)

    def __pow__(self, other):
        return self._binary("pow", self, other)

    def __rpow__(self, other):
        return self._binary("pow", other, self)

    def __mod__(self, other):
        return self._binary("remainder", self, other)

    def __rmod__(self, other):
        return self._binary("remainder", other, self)

    def __and__(self, other):
        return self._binary("bitwise_and", self, other)

    def __rand__(self, other):
        return self._binary("bitwise_and", other, self)

    def __or__(self, other):
        return self._binary("bitwise_or", self, other)

    def __ror__(self, other):
        return self._binary("bitwise_or", other, self)

    def __xor__(self, other):
        return self._binary("bitwise_xor", self, other)

    def __rxor__(self, other):
        return self._binary("bitwise_xor", other, self)

    def __neg__(self):
        return self.fd.ops.neg(self)

    def __abs__(self):
        return self.fd.ops.abs(self)

    def __invert__(self):
        return self.fd.ops.bitwise_not(self)

    # -- comparisons ------------------------------------------------------------
    def __eq__(self, other):
        return self._binary("eq", self, other)

    def __ne__(self, other):
        return self._binary("ne", self, other)

    def __lt__(self, other):
        return self._binary("lt", self, other)

    def __le__(self, other):
        return self._binary("le", self, other)

    def __gt__(self, other):
        return self._binary("gt", self, other)

    def __ge__(self, other):
        return self._binary("ge", self, other)

    #: NumPy defers its operators to ours (``np.ones(3) + x`` calls ``x.__radd__``)
    #: instead of applying them to each element, which made an array of handles
    __array_ufunc__ = None

    def _binary(self, name: str, lhs, rhs):
        other = rhs if lhs is self else lhs
        if not (isinstance(other, Value) or is_python_number(other) or hasattr(other, "__array__")):
            return NotImplemented
        return getattr(self.fd.ops, name)(lhs, rhs)  # an array: a DefinitionError naming the operand and the fix


class Tensor(Value):
    """A tensor of a fusion: ``shape`` uses -1 (symbolic), 1 (broadcast), N (static)."""

    __slots__ = ("shape", "dims")

    def __init__(self, fd, id: int, dtype: DataType, loc: Loc, shape: tuple[int, ...], dims: tuple):
        super().__init__(fd, id, dtype, loc)
        self.shape = tuple(shape)
        self.dims = tuple(dims)  # extent id per dim, None for broadcast dims

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Tensor(id={self.id}, shape={list(self.shape)}, dtype={self.dtype.name})"


class Scalar(Value):
    """A scalar of a fusion: a runtime input, a constant, or a result of scalar ops."""

    __slots__ = ()

    ndim = 0
    shape = ()

    def __repr__(self) -> str:
        return f"Scalar(id={self.id}, dtype={self.dtype.name})"
