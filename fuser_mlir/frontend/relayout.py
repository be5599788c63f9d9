"""A fusion of pointwise ops, broadcasts and reductions, written again with
its dims in another order, so that arguments of that layout run on row-major
views.

The kernels walk a fusion's dims in row-major order. A call whose arrays are
column-major (``x.t()`` in torch, Fortran order in NumPy) then has
neighbouring threads touch addresses a column apart. For an elementwise
fusion the same definition serves any order of the dims
(:meth:`FusionDefinition.is_elementwise`). A fusion that broadcasts (a bias
added to each row, a column times a row) or reduces does not: permuted, the
bias is broadcast along the other dim, and a sum of each row is a sum of
each column. :func:`relayout` writes the definition again through ``fd.ops``
with every tensor's dims permuted, and says how the caller's arrays become
its arguments.

Each tensor's dims run along the fusion's *iteration dims*, the dims of its
largest tensors: a tensor of full rank along all of them in order, a
reduction's result along its operand's but the reduced ones, a tensor that
is broadcast along those its broadcast maps its dims to. ``order`` permutes
the iteration dims; each tensor's dims then keep their relative order in
it, so a lower-rank input may be transposed too (its broadcast dims must
increase). Fusions with reshapes, permutes or declared input layouts are
not written again (None): their dims do not all run along iteration dims.

Pure Python; no MLIR.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from fuser_mlir.frontend.ops import BINARY, REDUCTIONS, TERNARY, UNARY
from fuser_mlir.frontend.shapes import Product
from fuser_mlir.frontend.values import Tensor

if TYPE_CHECKING:
    from fuser_mlir.frontend.definition import FusionDefinition, Record

#: ops whose tensor operands have their result's rank and dims
_POINTWISE = frozenset({*UNARY, *BINARY, *TERNARY, "cast", "set", "segment_set"})
_REDUCTIONS = frozenset(REDUCTIONS)
#: the other ops a fusion written again may hold
_LAYOUT_FREE = frozenset({"broadcast_in_dim", "constant", "size_expr", *REDUCTIONS})


@dataclasses.dataclass(frozen=True)
class Relayout:
    """``fusion``: the definition with its iteration dims in ``order``.
    ``inputs[i]``: the permutation of input i's dims that makes the caller's
    array its argument (None for a scalar); ``outputs[k]``: likewise for
    visible output k (the caller's output is the result seen with the
    inverse permutation)."""

    fusion: "FusionDefinition"
    order: tuple[int, ...]
    inputs: tuple[tuple[int, ...] | None, ...]
    outputs: tuple[tuple[int, ...], ...]


def iteration_dims(fd: "FusionDefinition") -> dict[int, tuple[int, ...]] | None:
    """``value id -> the iteration dim each of its dims runs along`` for
    every live tensor, inputs and outputs included; None where the fusion
    is not made of pointwise ops, broadcasts and reductions alone (see the
    module docstring), or has no tensor of rank 2 or more."""
    live = _written_records(fd)
    if any(r.op not in _POINTWISE and r.op not in _LAYOUT_FREE for r in live):
        return None
    for spec in fd.inputs:
        if spec.is_tensor and (any(c is True for c in spec.contiguity) or spec.stride_order != tuple(range(spec.rank - 1, -1, -1))):
            return None
    tensors = {v.id: v for v in (fd.value(i) for i in _live_values(fd, live)) if isinstance(v, Tensor)}
    rank = max((t.ndim for t in tensors.values()), default=0)
    if rank < 2:
        return None
    dims = {i: tuple(range(rank)) for i, t in tensors.items() if t.ndim == rank}
    try:
        _propagate(live, tensors, dims)
    except _Conflict:
        return None  # one tensor along two sets of dims (a broadcast of a reduction's result elsewhere than it was)
    if len(dims) != len(tensors):
        return None  # a lower-rank tensor that no broadcast or reduction places
    return dims


class _Conflict(Exception):
    """A tensor placed along two sets of iteration dims."""


def _propagate(live: list, tensors: dict, dims: dict) -> None:
    """Apply the rules over ``live`` until ``dims`` grows no more (forward:
    a reduction's result runs along its operand's dims but the reduced
    ones; backward: a broadcast's operand along the result dims it maps to;
    both ways: a pointwise op's tensors along the same dims)."""
    grew = True

    def place(value: int, along: tuple) -> None:
        nonlocal grew
        known = dims.get(value)
        if known is None:
            dims[value] = along
            grew = True
        elif known != along:
            raise _Conflict

    while grew:
        grew = False
        for r in live:
            if r.op in _REDUCTIONS and r.operands[0] in dims:
                source, reduced = dims[r.operands[0]], r.attrs["dims"]
                place(r.result, source if r.attrs["keepdim"] else tuple(a for k, a in enumerate(source) if k not in reduced))
            elif r.op in _POINTWISE and r.result in tensors:
                known = [dims[v] for v in (r.result, *r.operands) if v in dims and v in tensors]
                for v in (r.result, *r.operands):
                    if known and v in tensors:
                        place(v, known[0])
        for r in reversed(live):  # consumers before producers: a broadcast places its operand
            if r.op == "broadcast_in_dim" and r.result in dims:
                place(r.operands[0], tuple(dims[r.result][d] for d in r.attrs["broadcast_dims"]))


def relayout(fd: "FusionDefinition", order: tuple[int, ...]) -> Relayout | None:
    """``fd`` written again with its iteration dims in ``order`` (new dim j
    is old iteration dim ``order[j]``); None where :func:`iteration_dims`
    is, or where the fusion written again does not record the same ops as
    ``fd`` (checked op by op)."""
    from fuser_mlir.frontend.definition import FusionDefinition

    dims = iteration_dims(fd)
    if dims is None or sorted(order) != list(range(max(len(along) for along in dims.values()))):
        return None
    position = {d: j for j, d in enumerate(order)}

    def permutation(value_id: int) -> tuple[int, ...]:
        along = dims.get(value_id)
        if along is None:  # an input no op reads: passed as it is
            return tuple(range(fd.value(value_id).ndim))
        return tuple(sorted(range(len(along)), key=lambda k: position[along[k]]))

    new = FusionDefinition(fd.name)
    values: dict[int, object] = {}
    with new:
        for spec in fd.inputs:
            if spec.is_tensor:
                perm = permutation(spec.value_id)
                values[spec.value_id] = new.define_tensor([spec.shape[k] for k in perm], dtype=spec.dtype)
            else:
                values[spec.value_id] = new.define_scalar(dtype=spec.dtype)
        for r in _written_records(fd):
            values[r.result] = _record_again(new, r, fd, values, permutation)
        for entry in fd._outputs:
            source = values[entry.source]
            if entry.alias is None or entry.visible:
                new.add_output(source)
            if entry.alias is not None:
                new.add_output(source, alias_input=values[fd.inputs[entry.alias].value_id])
    if not _same_ops(fd, new):
        return None
    _keep_locations(fd, new)
    inputs = tuple(permutation(s.value_id) if s.is_tensor else None for s in fd.inputs)
    outputs = tuple(permutation(o.tensor) for o in fd.outputs if o.visible)
    return Relayout(new, tuple(order), inputs, outputs)


def _record_again(new: "FusionDefinition", r: "Record", fd: "FusionDefinition", values: dict, permutation):
    """Record ``r`` of ``fd`` on ``new`` through its public ops, its tensors' dims permuted."""
    operands = [values[v] for v in r.operands]
    result = fd.value(r.result)
    if r.op == "constant":
        return new.define_scalar(r.attrs["value"], dtype=result.dtype)
    if r.op == "cast":
        return new.ops.cast(operands[0], result.dtype)
    if r.op == "broadcast_in_dim":
        out = permutation(r.result)
        where = {d: j for j, d in enumerate(out)}  # old result dim -> new result dim
        source = permutation(r.operands[0])
        broadcast_dims = [where[r.attrs["broadcast_dims"][k]] for k in source]
        return new.ops.broadcast_in_dim(operands[0], [r.attrs["shape"][d] for d in out], broadcast_dims)
    if r.op in _REDUCTIONS:
        source = permutation(r.operands[0])
        reduced = sorted(j for j, d in enumerate(source) if d in r.attrs["dims"])
        return getattr(new.ops, r.op)(operands[0], dims=reduced, keepdim=r.attrs["keepdim"])
    if r.op == "size_expr":
        product = r.attrs["product"]
        factors = tuple(_extent_in(new, fd, e, permutation) for e in product.factors)
        return new._size_expr(Product(factors, product.scale, product.divisor), r.loc)
    return getattr(new.ops, r.op)(*operands)


def _extent_in(new: "FusionDefinition", fd: "FusionDefinition", extent: int, permutation) -> int:
    """The extent of ``new`` that is ``fd``'s ``extent``: the first input dim
    of its size class, at its place in ``new``'s input. The classes are those
    of the live ops (:meth:`FusionDefinition.shape_analysis`), the ones calls
    are checked against: an op no output needs may have bound two dims that a
    call gives other sizes (a dim of 1 broadcast), so ``fd._uf``'s would not do."""
    dims = fd.shape_analysis().input_dims(extent)
    if not dims:
        raise ValueError(f"extent {extent} is no input's size")  # a size of a reshape: not written again (iteration_dims)
    index, d = dims[0]
    return new.value(new.inputs[index].value_id).dims[permutation(fd.inputs[index].value_id).index(d)]


def _written_records(fd: "FusionDefinition") -> list:
    """The live records written again, in order: all but the reshapes that
    add_output records to retype an in-place output (add_output, called
    again, records them again)."""
    return [r for r in fd.live_records() if not (r.op == "reshape" and r.attrs.get("new_shape", 0) is None)]


def _live_values(fd: "FusionDefinition", live: list) -> set[int]:
    """The values ``live`` records read or make, and the outputs (inputs no op reads are not among them)."""
    found = {o.tensor for o in fd.outputs}
    for r in live:
        found.update(r.operands)
        found.add(r.result)
    return found


def _ops(fd: "FusionDefinition") -> list[tuple[str, str]]:
    return [(r.op, fd.value(r.result).dtype.name) for r in _written_records(fd)]


def _same_ops(fd: "FusionDefinition", new: "FusionDefinition") -> bool:
    """Whether ``new`` records the same ops on the same dtypes as ``fd``, in
    the same order, and the same outputs (the public ops apply promotion
    again: on the recorded dtypes they must add nothing)."""
    outputs = [[(o.dtype, o.rank, o.alias_input, o.visible) for o in f.outputs] for f in (fd, new)]
    return outputs[0] == outputs[1] and _ops(fd) == _ops(new)


def _keep_locations(fd: "FusionDefinition", new: "FusionDefinition") -> None:
    """The user's source locations on ``new``'s records and values, op for
    op (they name the user's lines in IR and errors, not this module's)."""
    for a, b in zip(_written_records(fd), _written_records(new)):
        new._records[b.index] = dataclasses.replace(b, loc=a.loc)
        new.value(b.result).loc = fd.value(a.result).loc
    for a, b in zip(fd.inputs, new.inputs):
        new.value(b.value_id).loc = fd.value(a.value_id).loc
    for a, b in zip(fd._outputs, new._outputs):
        b.loc = a.loc
    new.loc = fd.loc
