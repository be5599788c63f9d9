"""Symbolic sizes of a fusion: extents, their equalities, and evaluation.

Every tensor dim that is not a broadcast dim (static size 1) has an *extent*:
a symbol for its runtime size. An input tensor's dims each get a fresh extent;
ops pass extents on (permute, reduction) or *unify* them (a pointwise op makes
the dims it combines one size; an in-place alias makes the output fit its
input). Reshape creates *derived* extents (``Product``: an exact product or
quotient of other extents), and static sizes are extents with a known value.

:class:`ShapeAnalysis` groups the extents of the ops that reach an output into
classes (union-find) and answers what the executor and the IR builder need:
which input dims must be equal (``size_classes``), how to compute a size from
the input shapes (``expression``), the concrete shape of a value for given
input shapes, and a check of given input shapes with messages such as
``input 1 dim 2 has size 3, but input 0 dim 1, bound to the same size, has 10``.

Pure Python; no MLIR.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fuser_mlir.errors import InputError

#: A tensor's dims: an extent id per dim, ``None`` for a broadcast dim (size 1).
Dims = tuple  # tuple[int | None, ...]


@dataclass(frozen=True)
class Product:
    """``scale * prod(factors) / divisor`` (an exact division), over extent ids."""

    factors: tuple[int, ...] = ()
    scale: int = 1
    divisor: int = 1


@dataclass(frozen=True)
class Extent:
    """One symbolic size. Exactly one of ``input_dim``, ``static`` (alone), ``derived`` says where it comes from."""

    id: int
    static: int | None = None  # known size (inputs with a static dim also set it)
    input_dim: tuple[int, int] | None = None  # (input index, dim)
    derived: Product | None = None  # computed from other extents (reshape)
    note: str = ""  # how diagnostics name it: "dim 1 of 'reshape' at f.py:3"


class UnionFind:
    """Classes of extent ids; the root of a class is its smallest id."""

    def __init__(self, size: int = 0):
        self.parent: list[int] = list(range(size))

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        low, high = min(ra, rb), max(ra, rb)
        self.parent[high] = low
        return low


def format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


@dataclass(frozen=True)
class ReshapeCheck:
    """A live reshape: its operand's and result's dims, for the run-time check."""

    operand: Dims
    result: Dims
    new_shape: tuple[int, ...]
    where: str  # "'reshape' at f.py:3"


@dataclass(frozen=True)
class NonemptyCheck:
    """A live max or min: the extents of the dims it reduces, and the dims of
    the outputs its result reaches. A maximum of no elements has no value, so
    a reduced dim of size 0 is an error where one of those outputs has
    elements (a softmax over an empty dim has no elements to show it)."""

    reduced: Dims
    outputs: tuple[Dims, ...]
    where: str  # "'max' at f.py:3"


class ShapeAnalysis:
    """Size classes of the extents that the live ops unify."""

    def __init__(self, extents: Sequence[Extent], unifications: Iterable[tuple[int, int]], reshapes: Sequence[ReshapeCheck] = (),
                 nonempty: Sequence[NonemptyCheck] = ()):
        self.extents = list(extents)
        self.reshapes = list(reshapes)
        self.nonempty = list(nonempty)
        self._uf = UnionFind(len(self.extents))
        for a, b in unifications:
            self._uf.union(a, b)
        self._members: dict[int, list[int]] = {}
        for e in self.extents:
            self._members.setdefault(self._uf.find(e.id), []).append(e.id)

    # -- classes ------------------------------------------------------------

    def root(self, extent: int) -> int:
        return self._uf.find(extent)

    def static(self, extent: int) -> int | None:
        """The static size of ``extent``'s class, if any member has one."""
        for m in self._members[self.root(extent)]:
            if self.extents[m].static is not None:
                return self.extents[m].static
        return None

    def input_dims(self, extent: int) -> list[tuple[int, int]]:
        """The (input index, dim) pairs in ``extent``'s class, sorted."""
        return sorted(self.extents[m].input_dim for m in self._members[self.root(extent)] if self.extents[m].input_dim is not None)

    def expression(self, extent: int) -> tuple:
        """How to compute ``extent``'s size: ``("static", n)``, ``("input", k, d)`` or ``("derived", Product)``.

        Prefers a static size, then the first input dim of the class, then the
        class's earliest derived member (whose factors are older extents, so
        expressions never refer to themselves).
        """
        static = self.static(extent)
        if static is not None:
            return ("static", static)
        inputs = self.input_dims(extent)
        if inputs:
            return ("input", *inputs[0])
        first = min(m for m in self._members[self.root(extent)] if self.extents[m].derived is not None)
        return ("derived", self.extents[first].derived)

    def size_classes(self) -> list[set[tuple[int, int]]]:
        """Sets of (input index, dim) that must have one size at run time (two or more members)."""
        classes = []
        for root in sorted(self._members):
            dims = self.input_dims(root)
            if len(dims) > 1:
                classes.append(set(dims))
        return classes

    # -- evaluation ---------------------------------------------------------

    def evaluator(self, input_shapes: Sequence[Sequence[int] | None]) -> "SizeEvaluator":
        return SizeEvaluator(self, input_shapes)

    def check(self, input_shapes: Sequence[Sequence[int] | None]) -> None:
        """Raise InputError if ``input_shapes`` break an equality or a reshape of the definition."""
        sizes = self.evaluator(input_shapes)
        for root in sorted(self._members):
            self._check_inputs_of_class(root, sizes)
        for reshape in self.reshapes:
            _check_reshape(reshape, sizes)
        for root in sorted(self._members):
            self._check_derived_of_class(root, sizes)
        for reduction in self.nonempty:
            self._check_nonempty(reduction, sizes)

    def _check_inputs_of_class(self, root: int, sizes: "SizeEvaluator") -> None:
        dims = self.input_dims(root)
        static = self.static(root)
        if static is not None:
            for k, d in dims:
                if sizes.input_size(k, d) != static:
                    raise InputError(f"input {k} dim {d} has size {sizes.input_size(k, d)}, but the definition needs size {static} there ({self._static_note(root)})")
            return
        if not dims:
            return
        k0, d0 = dims[0]
        first = sizes.input_size(k0, d0)
        for k, d in dims[1:]:
            if sizes.input_size(k, d) != first:
                raise InputError(f"input {k} dim {d} has size {sizes.input_size(k, d)}, but input {k0} dim {d0}, bound to the same size, has {first}")

    def _static_note(self, root: int) -> str:
        for m in self._members[root]:
            e = self.extents[m]
            if e.static is not None and e.input_dim is None:
                return f"the static size of {e.note}" if e.note else "a static size in the definition"
        for m in self._members[root]:
            e = self.extents[m]
            if e.static is not None:
                return f"input {e.input_dim[0]} dim {e.input_dim[1]} is declared with that size"
        return "a static size in the definition"

    def _check_derived_of_class(self, root: int, sizes: "SizeEvaluator") -> None:
        expected = sizes.value(root)
        for m in self._members[root]:
            e = self.extents[m]
            if e.derived is None:
                continue
            got = sizes.product(e.derived)
            if got != expected:
                raise InputError(f"{e.note} has size {got}, but {self._describe_class(root)}, bound to the same size, has {expected}")

    def _check_nonempty(self, reduction: NonemptyCheck, sizes: "SizeEvaluator") -> None:
        if not any(math.prod(sizes.shape(dims)) for dims in reduction.outputs):
            return
        for extent in reduction.reduced:
            if extent is not None and sizes.value(extent) == 0:
                raise InputError(
                    f"{reduction.where} reduces a dim of size 0 ({self._describe_class(self.root(extent))}): a maximum or minimum "
                    "of no elements has no value (NumPy and torch raise too); give that dim at least one element"
                )

    def _describe_class(self, root: int) -> str:
        dims = self.input_dims(root)
        if dims:
            return f"input {dims[0][0]} dim {dims[0][1]}"
        if self.static(root) is not None:
            return "a static dim"
        return "another dim"


class SizeEvaluator:
    """Concrete sizes of extents for one set of input shapes (memoised per class)."""

    def __init__(self, analysis: ShapeAnalysis, input_shapes: Sequence[Sequence[int] | None]):
        self.analysis = analysis
        self.input_shapes = [tuple(s) if s is not None else () for s in input_shapes]
        self._memo: dict[int, int] = {}

    def input_size(self, k: int, d: int) -> int:
        if k >= len(self.input_shapes) or d >= len(self.input_shapes[k]):
            raise InputError(f"no size given for input {k} dim {d}: got shapes {[list(s) for s in self.input_shapes]}")
        return int(self.input_shapes[k][d])

    def value(self, extent: int) -> int:
        root = self.analysis.root(extent)
        if root in self._memo:
            return self._memo[root]
        kind, *rest = self.analysis.expression(root)
        if kind == "static":
            result = rest[0]
        elif kind == "input":
            result = self.input_size(*rest)
        else:
            result = self.product(rest[0])
        self._memo[root] = result
        return result

    def product(self, p: Product) -> int:
        total = p.scale
        for f in p.factors:
            total *= self.value(f)
        return total // p.divisor

    def shape(self, dims: Dims) -> tuple[int, ...]:
        return tuple(1 if e is None else self.value(e) for e in dims)


def _check_reshape(reshape: ReshapeCheck, sizes: SizeEvaluator) -> None:
    in_shape = sizes.shape(reshape.operand)
    numel = 1
    for s in in_shape:
        numel *= s
    known = 1
    for s in reshape.new_shape:
        known *= s if s != -1 else 1
    fits = numel % known == 0 if -1 in reshape.new_shape else numel == known
    if not fits:
        raise InputError(
            f"{reshape.where} cannot reshape a tensor of shape {format_shape(in_shape)} ({numel} elements) "
            f"into {format_shape(reshape.new_shape)}; the inputs' sizes do not fit this reshape"
        )
