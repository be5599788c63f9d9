"""The specs a definition records for its inputs and outputs: plain data,
shared by the builder and by loaded artifacts (which need no builder)."""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir.frontend.datatype import DataType


@dataclass(frozen=True)
class InputSpec:
    """A fusion input, argument ``index`` of the fusion function.

    ``shape`` uses -1 (symbolic), 1 (broadcast dim), N (static). ``contiguity``
    and ``stride_order`` have one entry per dim, indexed by *logical* dim:
    ``stride_order[d]`` is the rank of dim d's stride (0 = fastest; row-major
    is ``(rank-1, ..., 0)``), ``contiguity[d]`` is None for a broadcast dim and
    otherwise whether dim d is dense given the next faster dim. Scalars have
    ``shape``, ``contiguity`` and ``stride_order`` ``()``.
    """

    index: int
    kind: str  # "tensor" or "scalar"
    dtype: DataType
    shape: tuple[int, ...] = ()
    contiguity: tuple[bool | None, ...] = ()
    stride_order: tuple[int, ...] = ()
    value_id: int = -1

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def allocation_order(self) -> tuple[int, ...]:
        """The dims from outermost (largest stride) to innermost."""
        return tuple(sorted(range(self.rank), key=lambda d: -self.stride_order[d]))


@dataclass(frozen=True)
class OutputSpec:
    """Output ``position`` of ``fd.outputs``: the value ``tensor`` (a handle id) and where it goes.

    ``alias_input`` is the index of the input whose buffer receives it, or None.
    ``visible`` outputs are returned by execute, in ``fd.outputs`` order.
    """

    position: int
    tensor: int
    dtype: DataType
    rank: int
    shape: tuple[int, ...]
    alias_input: int | None
    visible: bool
