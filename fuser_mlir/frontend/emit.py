"""Emit a FusionDefinition's records as a fuser-dialect ``func.func``.

Preconditions: the definition's records follow the frontend's rules (every
cast explicit, operands of one element type, tensors of one rank).
Effect: one function in a new module, in destination-passing style:

    func.func @fusion(%t0: tensor<?x?xf32>, %s: f64, %out0: tensor<?xf32>) -> (tensor<?xf32>)
        attributes {fuser.num_inputs = 2 : i64} {
      ...                                            // one fuser op per live record
      %r0 = "fuser.store"(%sum, %out0)               // a given output
      %e = "fuser.empty"(%n) : (i64) -> tensor<?x?xf32>
      %r1 = "fuser.store"(%relu, %e)                 // an output the executor allocates
      %r2 = "fuser.store"(%t1, %t0)                  // a hidden in-place update of %t0
      return %r0, %r1 : ...
    }

Arguments are the inputs in definition order, then one destination per given
(preallocated) visible output, in output order. Only records that reach an
output are emitted. Every dynamic size an op needs (``fuser.empty``,
``fuser.reshape``, the element count of ``mean``) is computed from
``fuser.size`` ops of *input arguments* and i64 arithmetic, so a launch plan
can size every buffer from the input shapes alone. A size that needs an exact
division (a reshape's inferred dim) is computed as ``f64`` division and cast
back, since the dialect has no integer division (exact below 2**53).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fuser_mlir._mlir import func, ir
from fuser_mlir.dialect import load_dialect, make_context
from fuser_mlir.dialect.ops import create
from fuser_mlir.errors import InputError, counted
from fuser_mlir.frontend.datatype import DataType
from fuser_mlir.frontend.shapes import Product, ShapeAnalysis
from fuser_mlir.frontend.values import Loc, Tensor, Value

if TYPE_CHECKING:
    from fuser_mlir.frontend.definition import FusionDefinition, Record

_REDUCTIONS = frozenset({"sum", "prod", "max", "min"})


def element_type(dtype: DataType) -> ir.Type:
    """The MLIR element type of ``dtype`` (needs an active Context)."""
    return ir.Type.parse(dtype.mlir)


def value_type(value: Value) -> ir.Type:
    """``tensor<?x1x4xf32>`` for a tensor (-1 -> ?), the element type for a scalar."""
    elem = element_type(value.dtype)
    if not isinstance(value, Tensor):
        return elem
    dynamic = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dynamic if s == -1 else s for s in value.shape], elem)


def location(loc: Loc) -> ir.Location:
    return ir.Location.file(loc.filename, loc.line, loc.col)


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def constant_attr(value, dtype: DataType) -> ir.Attribute:
    elem = element_type(dtype)
    if dtype.is_float:
        return ir.FloatAttr.get(elem, float(value))
    if dtype.is_bool:
        return ir.BoolAttr.get(bool(value))
    return ir.IntegerAttr.get(elem, int(value))


class SizeEmitter:
    """Emits i64 sizes from input-argument ``fuser.size`` ops, each expression once."""

    def __init__(self, analysis: ShapeAnalysis, args: Sequence[ir.Value]):
        self.analysis = analysis
        self.args = args
        self._cache: dict[tuple, ir.Value] = {}

    def constant(self, n: int, *, loc: ir.Location) -> ir.Value:
        key = ("const", n)
        if key not in self._cache:
            self._cache[key] = create("constant", [], _i64(), {"value": ir.IntegerAttr.get(_i64(), n)}, loc=loc)
        return self._cache[key]

    def extent(self, extent: int, *, loc: ir.Location) -> ir.Value | int:
        """The size of ``extent``: an int when static, else an i64 value."""
        kind, *rest = self.analysis.expression(extent)
        if kind == "static":
            return rest[0]
        key = (kind, *rest) if kind == "input" else ("derived", self.analysis.root(extent))
        if key not in self._cache:
            if kind == "input":
                k, d = rest
                attrs = {"dim": ir.IntegerAttr.get(_i64(), d)}
                self._cache[key] = create("size", [self.args[k]], _i64(), attrs, loc=loc)
            else:
                self._cache[key] = self.product(rest[0], loc=loc)
        return self._cache[key]

    def extent_value(self, extent: int, *, loc: ir.Location) -> ir.Value:
        size = self.extent(extent, loc=loc)
        return self.constant(size, loc=loc) if isinstance(size, int) else size

    def product(self, p: Product, *, loc: ir.Location) -> ir.Value:
        """``scale * prod(factors) / divisor`` as an i64 value."""
        scale, values = p.scale, []
        for f in p.factors:
            size = self.extent(f, loc=loc)
            if isinstance(size, int):
                scale *= size
            else:
                values.append(size)
        if not values:
            return self.constant(scale // p.divisor, loc=loc)
        total = values[0]
        for v in values[1:]:
            total = self._cached(("mul", id(total), id(v)), lambda a=total, b=v: create("mul", [a, b], _i64(), loc=loc))
        if scale != 1:
            factor = self.constant(scale, loc=loc)
            total = self._cached(("mul", id(total), id(factor)), lambda a=total: create("mul", [a, factor], _i64(), loc=loc))
        if p.divisor != 1:
            total = self._cached(("div", id(total), p.divisor), lambda a=total: self._exact_divide(a, p.divisor, loc=loc))
        return total

    def _cached(self, key: tuple, build) -> ir.Value:
        """The value cached under ``key`` (ids of cached values, which the cache keeps alive)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def _exact_divide(self, value: ir.Value, divisor: int, *, loc: ir.Location) -> ir.Value:
        f64 = ir.F64Type.get()
        num = create("cast", [value], f64, loc=loc)
        den = create("constant", [], f64, {"value": ir.FloatAttr.get(f64, float(divisor))}, loc=loc)
        quotient = create("div", [num, den], f64, loc=loc)
        return create("cast", [quotient], _i64(), loc=loc)

    def dynamic_sizes(self, tensor: Tensor, *, loc: ir.Location) -> list[ir.Value]:
        """One i64 per dynamic (-1) dim of ``tensor``."""
        return [self.extent_value(e, loc=loc) for s, e in zip(tensor.shape, tensor.dims) if s == -1]


class _Emitter:
    """Emits the body of one fusion function."""

    def __init__(self, fd: "FusionDefinition", args: Sequence[ir.Value]):
        self.fd = fd
        self.sizes = SizeEmitter(fd.shape_analysis(), args)
        self.values: dict[int, ir.Value] = {}
        for spec, arg in zip(fd.inputs, args):
            self.values[spec.value_id] = arg

    def record(self, r: "Record") -> None:
        result = self.fd.value(r.result)
        loc = location(r.loc)
        operands = [self.values[v] for v in r.operands]
        rtype = value_type(result)
        if r.op == "size_expr":
            self.values[r.result] = self.sizes.product(r.attrs["product"], loc=loc)
            return
        attrs = self._attributes(r, result)
        if r.op == "reshape":
            operands += self.sizes.dynamic_sizes(result, loc=loc)
        self.values[r.result] = create(r.op, operands, rtype, attrs, loc=loc)

    def _attributes(self, r: "Record", result: Value) -> dict[str, ir.Attribute]:
        if r.op == "constant":
            return {"value": constant_attr(r.attrs["value"], result.dtype)}
        if r.op == "broadcast_in_dim":
            return {"broadcast_dims": ir.DenseI64ArrayAttr.get(list(r.attrs["broadcast_dims"]))}
        if r.op == "permute":
            return {"dims": ir.DenseI64ArrayAttr.get(list(r.attrs["dims"]))}
        if r.op in _REDUCTIONS:
            return {"dims": ir.DenseI64ArrayAttr.get(list(r.attrs["dims"])), "keepdim": ir.BoolAttr.get(r.attrs["keepdim"])}
        return {}


def _given_mask(fd: "FusionDefinition", given_outputs) -> tuple[bool, ...]:
    visible = [o for o in fd.outputs if o.visible]
    if given_outputs is None:
        return (False,) * len(visible)
    mask = tuple(bool(g) for g in given_outputs)
    if len(mask) != len(visible):
        raise InputError(f"given_outputs has {counted(len(mask), 'entry')}, but fusion {fd.name!r} has {counted(len(visible), 'visible output')}; give one bool per visible output")
    return mask


def build_module(fd: "FusionDefinition", context: ir.Context, given_outputs: Sequence[bool] | None = None) -> ir.Module:
    """A module holding ``func.func @<fd.symbol>`` (see the module docstring)."""
    load_dialect(context)
    mask = _given_mask(fd, given_outputs)
    outputs = fd.outputs
    visible = [o for o in outputs if o.visible]
    given = [o for o, g in zip(visible, mask) if g]
    with context, location(fd.loc):
        inputs = [fd.value(spec.value_id) for spec in fd.inputs]
        arg_types = [value_type(v) for v in inputs] + [value_type(fd.value(o.tensor)) for o in given]
        result_types = [value_type(fd.value(o.tensor)) for o in visible]
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp(fd.symbol, (arg_types, result_types))
        function.attributes["fuser.num_inputs"] = ir.IntegerAttr.get(_i64(), len(inputs))
        arg_locs = [location(v.loc) for v in inputs] + [location(fd._outputs[o.position].loc) for o in given]
        block = function.add_entry_block(arg_locs=arg_locs)
        with ir.InsertionPoint(block):
            _emit_body(fd, block.arguments, outputs, mask)
    return module


def _emit_body(fd: "FusionDefinition", args, outputs, mask) -> None:
    num_inputs = len(fd.inputs)
    emitter = _Emitter(fd, list(args)[:num_inputs])
    for record in fd.live_records():
        emitter.record(record)
    dests = iter(list(args)[num_inputs:])
    given = iter(mask)
    returned = []
    for spec in outputs:
        loc = location(fd._outputs[spec.position].loc)
        value = emitter.values[spec.tensor]
        rtype = value_type(fd.value(spec.tensor))
        stored = None
        if spec.alias_input is not None:
            stored = create("store", [value, args[spec.alias_input]], rtype, loc=loc)
        if spec.visible and next(given):
            stored = create("store", [value, next(dests)], rtype, loc=loc)
        elif stored is None:
            empty = create("empty", emitter.sizes.dynamic_sizes(fd.value(spec.tensor), loc=loc), rtype, loc=loc)
            stored = create("store", [value, empty], rtype, loc=loc)
        if spec.visible:
            returned.append(stored)
    func.ReturnOp(returned, loc=location(fd.loc))


def fusion_ir(fd: "FusionDefinition", given_outputs: Sequence[bool] | None = None, *, locations: bool = False) -> str:
    """The text of :func:`build_module` in a fresh Context."""
    module = build_module(fd, make_context(), given_outputs)
    return module.operation.get_asm(enable_debug_info=locations)
