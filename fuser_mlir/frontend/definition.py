"""FusionDefinition: the builder users write fusions with (nvFuser's API).

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)      # a runtime scalar input
        t1 = fd.ops.exp(t0) * s
        fd.add_output(fd.ops.sum(t1, dims=[1]))
        fd.add_output(t1, alias_input=t0)                # t0's buffer receives t1

The definition is a *recording*: every ``fd.ops`` call appends primitive
:class:`Record` s (one per fuser-dialect op) with the user's source location.
Nothing touches MLIR until :meth:`FusionDefinition.build_module`, which
emits the records of the ops that reach an output (see
:mod:`fuser_mlir.frontend.emit`). The executor reads plain-Python metadata:
:attr:`~FusionDefinition.inputs`, :attr:`~FusionDefinition.outputs`,
:attr:`~FusionDefinition.size_classes`, :meth:`~FusionDefinition.output_shape`
and :meth:`~FusionDefinition.check_input_shapes`.

Outputs: ``add_output(t)`` adds a visible output (returned by execute, in
``add_output`` order). ``add_output(t, alias_input=x)`` writes ``t`` into the
buffer of input ``x`` and hides it from the returned list; adding the same
``t`` plainly as well makes that aliased output visible (stored once, into
``x``, at the position of the plain call). An input holds at most one output.

Pure Python: MLIR is imported only by ``build_module``.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fuser_mlir.errors import DefinitionError, counted
from fuser_mlir.frontend.datatype import DataType, is_python_number
from fuser_mlir.frontend.ops import Ops
from fuser_mlir.frontend.shapes import Extent, NonemptyCheck, Product, ReshapeCheck, ShapeAnalysis, UnionFind, format_shape
from fuser_mlir.frontend.specs import InputSpec, OutputSpec
from fuser_mlir.frontend.values import Loc, Scalar, Tensor, Value, user_location


@dataclass(frozen=True)
class Record:
    """One recorded op: ``result = op(operands...)``, ids into the definition's values.

    ``op`` is a fuser-dialect op name without the prefix (``"add"``, ``"cast"``,
    ``"broadcast_in_dim"``, ``"constant"``, ...), or ``"size_expr"``: an i64
    scalar holding ``attrs["product"]`` (a :class:`~fuser_mlir.frontend.shapes.Product`
    of symbolic sizes), which the IR builder emits as ``fuser.size`` ops of
    inputs and i64 arithmetic. ``unify`` lists the extent pairs the op makes equal.
    A ``reshape`` whose ``new_shape`` is None only refines the static type of
    an output stored into an alias input of the same runtime shape.
    """

    index: int
    op: str
    operands: tuple[int, ...]
    result: int
    attrs: Mapping = field(default_factory=dict)
    loc: Loc = Loc("<unknown>", 0, 0)
    unify: tuple[tuple[int, int], ...] = ()


@dataclass
class _OutputEntry:
    source: int  # the handle the user passed
    value: int  # the value stored (source, or its alias-typed reshape)
    alias: int | None
    visible: bool
    loc: Loc
    unify: tuple[tuple[int, int], ...] = ()


class FusionDefinition:
    """A fusion being defined (inside ``with``) or defined (after it)."""

    def __init__(self, name: str = "fusion"):
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"FusionDefinition: name must be a non-empty string, got {name!r}")
        self.name = name
        self.loc = user_location()
        self.ops = Ops(self)
        self._active = False
        self._finished = False
        self._failed = ""  # the exception that ended the with block, if one did
        self._values: list[Value] = []
        self._records: list[Record] = []
        self._producer: dict[int, int] = {}
        self._constants: dict[int, object] = {}
        self._inputs: list[InputSpec] = []
        self._input_of_value: dict[int, int] = {}
        self._outputs: list[_OutputEntry] = []
        self._extents: list[Extent] = []
        self._uf = UnionFind()
        self._uf_static: dict[int, int] = {}
        self._version = 0
        self._analysis_cache: tuple[int, ShapeAnalysis] | None = None
        self._executor = None
        self._keepdim_forms: dict = {}  # (value id, dims) -> its keepdim form, or None (see Ops._keepdim_form)

    def __repr__(self) -> str:
        return f"FusionDefinition({self.name!r}: {len(self._inputs)} inputs, {len(self._records)} ops, {len(self._outputs)} outputs)"

    def __getstate__(self) -> dict:
        """A copy or pickle holds the definition, not the compiled kernels
        (its first execute compiles, or finds them in the disk cache)."""
        return {**self.__dict__, "_executor": None, "_analysis_cache": None}

    @property
    def symbol(self) -> str:
        """The name as the IR's function and kernel names have it: every
        character but ASCII letters, digits and ``_`` made ``_``, and ``f_``
        before a leading digit. Kernel names must be plain identifiers (LLVM's
        NVPTX backend aborts the process on a space; ``@`` is a symbol version
        to the linker; NUL ends a C string)."""
        symbol = re.sub(r"[^A-Za-z0-9_]", "_", self.name)
        return f"f_{symbol}" if symbol[0].isdigit() else symbol

    # ======================================================================
    # the with block
    # ======================================================================

    def __enter__(self) -> "FusionDefinition":
        if self._active or self._finished:
            raise DefinitionError(f"FusionDefinition {self.name!r} was already defined; create a new FusionDefinition for a new fusion")
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._active = False
        self._finished = True
        if exc_type is not None:
            self._failed = f"{exc_type.__name__}: {exc}"
        return False

    def check_finished(self, api: str) -> None:
        """DefinitionError unless the ``with`` block has ended, without an
        exception: what compiling or running the fusion needs (an executor
        made earlier would keep the kernels of a part of it)."""
        if self._active:
            raise DefinitionError(f"{api} called inside the `with` block of {self.name!r}; run the fusion after the block ends")
        if not self._finished:
            raise DefinitionError(f"{api} called before the `with` block of {self.name!r}; define the fusion in `with fd:` first")
        if self._failed:
            raise DefinitionError(
                f"{api}: the `with` block of {self.name!r} ended with {self._failed}, so the definition is incomplete; "
                "define the fusion again in a new FusionDefinition"
            )

    def _check_active(self, api: str) -> None:
        if self._active:
            return
        when = "after" if self._finished else "before"
        raise DefinitionError(
            f"{api} called {when} the `with FusionDefinition() as fd:` block of {self.name!r}; "
            "define inputs, ops and outputs inside the block"
        )

    def _check_own(self, value: Value, api: str, what: str) -> None:
        if value.fd is not self:
            raise DefinitionError(
                f"{api}: {what} belongs to another FusionDefinition ({value.fd.name!r}, defined at {value.fd.loc.short}); "
                "use values defined in this fusion"
            )

    def _as_datatype(self, dtype, api: str) -> DataType:
        if isinstance(dtype, DataType):
            return dtype
        try:
            return DataType.from_numpy(dtype)
        except (ValueError, TypeError):
            raise DefinitionError(f"{api}: dtype must be a DataType (e.g. DataType.Float), got {dtype!r}") from None

    # ======================================================================
    # inputs
    # ======================================================================

    def define_tensor(self, shape: Sequence[int], contiguity=None, dtype: DataType = DataType.Float, stride_order: Sequence[int] | None = None) -> Tensor:
        """A tensor input: ``shape`` entries are -1 (symbolic), 1 (broadcast dim) or N > 1 (static).

        ``contiguity`` (nvFuser's meaning) is None (nothing declared: any strides,
        nvFuser's default False), a bool for every non-broadcast dim, or one
        entry per dim *in allocation order* (outermost first; logical order when
        ``stride_order`` is None), None for broadcast dims. True declares a dim
        dense, and the executor rejects arrays that are not.
        ``stride_order[d]`` is the rank of dim d's stride, 0 = fastest.
        """
        api = "fd.define_tensor"
        self._check_active(api)
        loc = user_location()
        shape = self._input_shape(shape, api)
        dtype = self._as_datatype(dtype, api)
        order = self._stride_order(stride_order, len(shape), api)
        contiguous = self._contiguity(contiguity, shape, order, api)
        index = len(self._inputs)
        dims = tuple(None if s == 1 else self._input_extent(index, d, s) for d, s in enumerate(shape))
        tensor = Tensor(self, len(self._values), dtype, loc, shape, dims)
        self._add_input(tensor, InputSpec(index, "tensor", dtype, shape, contiguous, order, tensor.id))
        return tensor

    def define_scalar(self, value=None, dtype: DataType | None = None) -> Scalar:
        """A runtime scalar input (``value`` None, dtype default Double) or a constant.

        A constant's dtype defaults to the value's (float -> Double, int -> Int,
        bool -> Bool, as nvFuser).
        """
        api = "fd.define_scalar"
        self._check_active(api)
        loc = user_location()
        if dtype is not None:
            dtype = self._as_datatype(dtype, api)
        if value is not None:
            if not is_python_number(value):
                raise DefinitionError(f"{api}: value must be a Python number (or None for a runtime input), got {value!r}")
            value = value.item() if hasattr(value, "item") else value
            return self._constant(value, dtype or DataType.of_python(value), loc)
        scalar = Scalar(self, len(self._values), dtype or DataType.Double, loc)
        self._add_input(scalar, InputSpec(len(self._inputs), "scalar", scalar.dtype, value_id=scalar.id))
        return scalar

    def _add_input(self, value: Value, spec: InputSpec) -> None:
        self._values.append(value)
        self._input_of_value[value.id] = spec.index
        self._inputs.append(spec)
        self._version += 1

    def _input_shape(self, shape, api: str) -> tuple[int, ...]:
        if isinstance(shape, (int, str)) or not isinstance(shape, Sequence):
            raise DefinitionError(f"{api}: shape must be a list of ints (-1 symbolic, 1 broadcast, N static), got {shape!r}")
        out = []
        for d, s in enumerate(shape):
            if isinstance(s, bool) or not is_python_number(s) or int(s) != s or int(s) == 0 or int(s) < -1:
                raise DefinitionError(f"{api}: shape[{d}] is {s!r}; sizes are -1 (symbolic), 1 (broadcast dim) or a static size > 1")
            out.append(int(s))
        return tuple(out)

    def _stride_order(self, stride_order, rank: int, api: str) -> tuple[int, ...]:
        if stride_order is None or len(stride_order) == 0:
            return tuple(range(rank - 1, -1, -1))
        order = tuple(int(s) for s in stride_order)
        if sorted(order) != list(range(rank)):
            raise DefinitionError(f"{api}: stride_order {list(stride_order)} must be a permutation of 0..{rank - 1} (0 = the fastest dim)")
        return order

    def _contiguity(self, contiguity, shape: tuple[int, ...], order: tuple[int, ...], api: str) -> tuple[bool | None, ...]:
        """Per-logical-dim contiguity from nvFuser's allocation-ordered argument."""
        rank = len(shape)
        if contiguity is None or isinstance(contiguity, bool):
            flag = bool(contiguity)  # None: nothing declared, any strides (nvFuser's default False)
            return tuple(None if s == 1 else flag for s in shape)
        if len(contiguity) != rank:
            raise DefinitionError(f"{api}: contiguity has {counted(len(contiguity), 'entry')}, but shape {list(shape)} has {counted(rank, 'dim')}; give one per dim (None for broadcast dims)")
        allocation = sorted(range(rank), key=lambda d: -order[d])
        out: list[bool | None] = [None] * rank
        for position, (dim, flag) in enumerate(zip(allocation, contiguity)):
            if shape[dim] == 1:
                continue
            if flag is None:
                where = f"dim {dim}" if position == dim else f"dim {dim} (entry {position} in allocation order)"
                raise DefinitionError(f"{api}: contiguity[{position}] is None, but {where} has size {shape[dim]}, not a broadcast dim; pass True or False")
            out[dim] = bool(flag)
        return tuple(out)

    # ======================================================================
    # outputs
    # ======================================================================

    def add_output(self, output, alias_input=None) -> None:
        """Add ``output`` as a fusion output, or write it into input ``alias_input``'s buffer."""
        api = "fd.add_output"
        self._check_active(api)
        loc = user_location()
        tensor = self._output_tensor(output, api, "the output")
        if alias_input is None:
            self._add_plain_output(tensor, loc)
        else:
            self._add_alias_output(tensor, alias_input, api, loc)
        self._version += 1

    def _output_tensor(self, output, api: str, what: str) -> Tensor:
        if isinstance(output, Scalar):
            raise DefinitionError(
                f"{api}: {what} is a Scalar, but fusion outputs are tensors; "
                "make it one with fd.ops.broadcast_in_dim(s, shape=[1], broadcast_dims=[])"
            )
        if not isinstance(output, Tensor):
            raise DefinitionError(f"{api}: {what} must be a Tensor of this fusion (from fd.define_tensor or fd.ops), got {type(output).__name__}")
        self._check_own(output, api, what)
        return output

    def _add_plain_output(self, tensor: Tensor, loc: Loc) -> None:
        for i, entry in enumerate(self._outputs):
            if entry.source == tensor.id and entry.alias is not None and not entry.visible:
                entry.visible = True
                self._outputs.append(self._outputs.pop(i))
                return
        self._outputs.append(_OutputEntry(tensor.id, tensor.id, None, True, loc))

    def _add_alias_output(self, tensor: Tensor, alias_input, api: str, loc: Loc) -> None:
        if not isinstance(alias_input, Tensor):
            got = "a Scalar" if isinstance(alias_input, Scalar) else type(alias_input).__name__
            raise DefinitionError(f"{api}: alias_input must be a tensor input of this fusion (from fd.define_tensor), got {got}")
        self._check_own(alias_input, api, "alias_input")
        target = alias_input
        index = self._input_of_value.get(target.id)
        if index is None:
            raise DefinitionError(f"{api}: alias_input must be an input of this fusion (from fd.define_tensor), but it is the result of an op defined at {target.loc.short}")
        for position, entry in enumerate(self._outputs):
            if entry.alias == index:
                raise DefinitionError(f"{api}: input {index} already receives output {position}; an input buffer holds one output, so alias another input or add a plain output")
        with self._sizes_undone_on_error():
            unify = self._alias_unifications(tensor, target, index, api)
        value = tensor if tensor.shape == target.shape else self._alias_typed(tensor, target, loc)
        for entry in self._outputs:
            if entry.source == tensor.id and entry.alias is None and entry.visible:
                entry.alias, entry.value, entry.unify = index, value.id, unify
                return
        self._outputs.append(_OutputEntry(tensor.id, value.id, index, False, loc, unify))

    def _alias_unifications(self, tensor: Tensor, target: Tensor, index: int, api: str) -> tuple:
        """The extent pairs that make ``tensor`` fit input ``target``; errors for a mismatch."""
        if tensor.dtype is not target.dtype:
            raise DefinitionError(
                f"{api}: the output has dtype {tensor.dtype.name}, but alias input {index} has {target.dtype.name}; "
                f"cast it first with fd.ops.cast(t, DataType.{target.dtype.name})"
            )
        mismatch = f"{api}: the output has shape {format_shape(tensor.shape)}, but alias input {index} has shape {format_shape(target.shape)}"
        if tensor.ndim != target.ndim:
            raise DefinitionError(f"{mismatch}; an in-place output must have its input's shape")
        pairs = []
        for d, (out_size, in_size) in enumerate(zip(tensor.shape, target.shape)):
            if (out_size == 1) != (in_size == 1):
                raise DefinitionError(f"{mismatch}; dim {d} is a broadcast dim (size 1) in only one of them")
            if out_size == 1:
                continue
            if out_size > 1 and in_size > 1 and out_size != in_size:
                raise DefinitionError(f"{mismatch}; dim {d} differs")
            conflict = self._unify(tensor.dims[d], target.dims[d])
            if conflict is not None:
                raise DefinitionError(f"{mismatch}; dim {d} is bound to size {conflict[0]} in the output and {conflict[1]} in the input")
            pairs.append((tensor.dims[d], target.dims[d]))
        return tuple(pairs)

    def _alias_typed(self, tensor: Tensor, target: Tensor, loc: Loc) -> Tensor:
        """``tensor`` retyped to its alias input's static shape (a size-preserving reshape)."""
        return self._record_tensor("reshape", [tensor], tensor.dtype, target.shape, target.dims, loc, attrs={"new_shape": None})

    # ======================================================================
    # recording (used by fd.ops)
    # ======================================================================

    def _record(self, op: str, operands: Sequence[Value], result: Value, loc: Loc, attrs=None, unify=()) -> Value:
        self._values.append(result)
        record = Record(len(self._records), op, tuple(v.id for v in operands), result.id, dict(attrs or {}), loc, tuple(unify))
        self._records.append(record)
        self._producer[result.id] = record.index
        self._version += 1
        return result

    def _record_tensor(self, op: str, operands, dtype: DataType, shape, dims, loc: Loc, attrs=None, unify=()) -> Tensor:
        result = Tensor(self, len(self._values), dtype, loc, tuple(shape), tuple(dims))
        return self._record(op, operands, result, loc, attrs, unify)

    def _record_scalar(self, op: str, operands, dtype: DataType, loc: Loc, attrs=None) -> Scalar:
        return self._record(op, operands, Scalar(self, len(self._values), dtype, loc), loc, attrs)

    def _record_like(self, op: str, operands, like: Value, dtype: DataType, loc: Loc) -> Value:
        if isinstance(like, Tensor):
            return self._record_tensor(op, operands, dtype, like.shape, like.dims, loc)
        return self._record_scalar(op, operands, dtype, loc)

    def _constant(self, value, dtype: DataType, loc: Loc, *, cast: bool = False) -> Scalar:
        """A constant scalar of ``dtype``: ``value`` rounded to it. ``cast``:
        convert as a cast of a value would at run time (a float truncated to
        an integer, an integer wrapped into a narrower one), not as a literal
        (which must be exactly an integer of the type's range)."""
        value = _cast_constant(value, dtype, loc) if cast else _convert_constant(value, dtype, loc)
        scalar = self._record_scalar("constant", [], dtype, loc, attrs={"value": value})
        self._constants[scalar.id] = value
        return scalar

    def _constant_value(self, value: Value):
        """The Python value of a constant scalar, else None."""
        return self._constants.get(value.id)

    def _size_expr(self, product: Product, loc: Loc) -> Scalar:
        return self._record_scalar("size_expr", [], DataType.Int, loc, attrs={"product": product})

    # -- extents ------------------------------------------------------------------

    def _new_extent(self, **fields) -> int:
        extent = Extent(id=len(self._extents), **fields)
        self._extents.append(extent)
        self._uf.add()
        if extent.static is not None:
            self._uf_static[extent.id] = extent.static
        return extent.id

    def _input_extent(self, index: int, dim: int, size: int) -> int:
        return self._new_extent(static=size if size > 1 else None, input_dim=(index, dim), note=f"input {index} dim {dim}")

    def _static_extent(self, size: int, note: str) -> int:
        return self._new_extent(static=size, note=note)

    def _derived_extent(self, product: Product, note: str) -> int:
        return self._new_extent(derived=product, note=note)

    def _class_static(self, extent: int) -> int | None:
        return self._uf_static.get(self._uf.find(extent))

    @contextlib.contextmanager
    def _sizes_undone_on_error(self):
        """Undo the size bindings and new extents of an op that raises a
        DefinitionError: it binds dim after dim, and a failed op must leave
        nothing behind that a later valid op would conflict with."""
        parent, static, extents = list(self._uf.parent), dict(self._uf_static), len(self._extents)
        try:
            yield
        except DefinitionError:
            self._uf.parent[:] = parent
            self._uf_static = static
            del self._extents[extents:]
            raise

    def _unify(self, a: int, b: int) -> tuple[int, int] | None:
        """Make extents ``a`` and ``b`` one size; return their static sizes if those conflict."""
        static_a, static_b = self._class_static(a), self._class_static(b)
        if static_a is not None and static_b is not None and static_a != static_b:
            return static_a, static_b
        root = self._uf.union(a, b)
        static = static_a if static_a is not None else static_b
        if static is not None:
            self._uf_static[root] = static
        return None

    # ======================================================================
    # what the executor and the IR builder read
    # ======================================================================

    @property
    def inputs(self) -> list[InputSpec]:
        """The fusion's inputs, in definition order (tensors and runtime scalars)."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[OutputSpec]:
        """Every output, hidden aliases included, in ``add_output`` order."""
        specs = []
        for position, entry in enumerate(self._outputs):
            value = self._values[entry.value]
            specs.append(OutputSpec(position, value.id, value.dtype, value.ndim, value.shape, entry.alias, entry.visible))
        return specs

    @property
    def records(self) -> tuple[Record, ...]:
        """Every recorded op, in definition order."""
        return tuple(self._records)

    def value(self, value_id: int) -> Value:
        """The handle with id ``value_id``."""
        return self._values[value_id]

    def input_index(self, value_id: int) -> int | None:
        """The input index of a value defined by define_tensor/define_scalar, else None."""
        return self._input_of_value.get(value_id)

    def live_records(self) -> list[Record]:
        """The records that some output depends on, in definition order."""
        live: set[int] = set()
        stack = [entry.value for entry in self._outputs]
        while stack:
            index = self._producer.get(stack.pop())
            if index is None or index in live:
                continue
            live.add(index)
            stack.extend(self._records[index].operands)
        return [r for r in self._records if r.index in live]

    def shape_analysis(self) -> ShapeAnalysis:
        """Size classes of the live ops (cached until the definition changes)."""
        if self._analysis_cache is not None and self._analysis_cache[0] == self._version:
            return self._analysis_cache[1]
        live = self.live_records()
        unify = [pair for r in live for pair in r.unify]
        unify += [pair for entry in self._outputs for pair in entry.unify]
        reshapes = [
            ReshapeCheck(self._values[r.operands[0]].dims, self._values[r.result].dims, r.attrs["new_shape"], f"'reshape' at {r.loc.short}")
            for r in live
            if r.op == "reshape" and r.attrs["new_shape"] is not None
        ]
        nonempty = [
            NonemptyCheck(tuple(self._values[r.operands[0]].dims[d] for d in r.attrs["dims"]),
                          tuple(self._values[v].dims for v in self._outputs_reached(r.result, live)), f"'{r.op}' at {r.loc.short}")
            for r in live
            if r.op in ("max", "min")
        ]
        analysis = ShapeAnalysis(self._extents, unify, reshapes, nonempty)
        self._analysis_cache = (self._version, analysis)
        return analysis

    def _outputs_reached(self, value: int, live: list) -> list[int]:
        """The output values that depend on ``value`` (it included, if an output)."""
        reached = {value}
        for r in live:  # in definition order: operands come before their consumers
            if reached.intersection(r.operands):
                reached.add(r.result)
        return [e.value for e in self._outputs if e.value in reached]

    def is_elementwise(self) -> bool:
        """Whether the fusion computes each element of every output from the
        elements at the same index of its inputs alone: every tensor
        (inputs, intermediates, outputs) has the same rank, at least 2, and
        symbolic dims, dim d of each bound to the others' dim d and to no
        other dim; the inputs declare no contiguity or stride order; and every
        op on tensors is pointwise (unary, binary and ternary ops, casts,
        copies). Any permutation of the dims, the same for every tensor
        argument, then gives the same elements: FusionExecutorCache runs
        column-major arguments as row-major views of them."""
        from fuser_mlir.frontend.ops import BINARY, TERNARY, UNARY

        self.check_finished("is_elementwise")
        pointwise = {*UNARY, *BINARY, *TERNARY, "cast", "set", "segment_set"}
        tensors = [v for v in self._values if isinstance(v, Tensor)]
        if not tensors or tensors[0].ndim < 2:
            return False
        rank = tensors[0].ndim
        classes = [self._uf.find(e) for e in tensors[0].dims if e is not None]
        if len(set(classes)) != rank:
            return False  # a dim without an extent (a broadcast), or two dims bound together
        for t in tensors:
            if t.ndim != rank or any(size != -1 for size in t.shape) or None in t.dims:
                return False
            if [self._uf.find(e) for e in t.dims] != classes:
                return False
        for spec in self._inputs:
            if spec.kind == "tensor" and (any(c is not False for c in spec.contiguity) or spec.stride_order != tuple(range(rank - 1, -1, -1))):
                return False
        return all(r.op in pointwise for r in self._records if isinstance(self._values[r.result], Tensor))

    @property
    def size_classes(self) -> list[set[tuple[int, int]]]:
        """Sets of (input index, dim) that must have equal sizes at run time."""
        return self.shape_analysis().size_classes()

    def check_input_shapes(self, input_shapes: Sequence[Sequence[int] | None]) -> None:
        """Raise InputError unless ``input_shapes`` (one per input; () or None for scalars)
        satisfy every size equality, static size and reshape of the definition."""
        self.shape_analysis().check(input_shapes)

    def output_shape(self, position: int, input_shapes: Sequence[Sequence[int] | None]) -> tuple[int, ...]:
        """The concrete shape of ``fd.outputs[position]`` for the given input shapes.

        Checks the shapes first (:meth:`check_input_shapes`), so a reshape that
        cannot apply raises InputError instead of giving a wrong size.
        """
        if not 0 <= position < len(self._outputs):
            raise IndexError(f"output position {position} is out of range: the fusion has {counted(len(self._outputs), 'output')}")
        analysis = self.shape_analysis()
        analysis.check(input_shapes)
        tensor = self._values[self._outputs[position].value]
        return analysis.evaluator(input_shapes).shape(tensor.dims)

    def fingerprint(self) -> str:
        """sha256 of everything that determines this fusion's IR, without
        source locations: name, inputs, live ops, values' types and extents,
        outputs. Equal fingerprints give equal fuser IR (the disk cache keys
        on it; see :mod:`fuser_mlir.runtime.cache`)."""
        import hashlib

        live = self.live_records()
        used = {v for r in live for v in (*r.operands, r.result)} | {e.value for e in self._outputs}
        used |= {s.value_id for s in self._inputs}
        values = [(v.id, type(v).__name__, v.dtype.value, getattr(v, "shape", None), getattr(v, "dims", None)) for v in self._values if v.id in used]
        extents = [(e.id, e.static, e.input_dim, e.derived) for e in self._extents]
        records = [(r.op, r.operands, r.result, sorted((k, repr(v)) for k, v in r.attrs.items()), r.unify) for r in live]
        outputs = [(e.source, e.value, e.alias, e.visible, e.unify) for e in self._outputs]
        text = repr((self.name, self._inputs, values, extents, records, outputs))
        return hashlib.sha256(text.encode()).hexdigest()

    # ======================================================================
    # IR and execution
    # ======================================================================

    def build_module(self, context, given_outputs: Sequence[bool] | None = None):
        """The fuser-dialect ``ir.Module`` of this fusion, built in ``context``.

        ``given_outputs`` has one bool per visible output; True makes that
        output's buffer a destination argument after the inputs.
        """
        from fuser_mlir.frontend.emit import build_module

        return build_module(self, context, given_outputs)

    def fusion_ir(self, given_outputs: Sequence[bool] | None = None, *, locations: bool = False) -> str:
        """The fuser-dialect IR as text (``locations=True`` prints the source locations)."""
        from fuser_mlir.frontend.emit import fusion_ir

        return fusion_ir(self, given_outputs, locations=locations)

    def execute(self, inputs: Sequence[object], outputs=None, *, cuda_graph: bool = False) -> list:
        """Run the fusion through a FusionExecutorCache kept on this definition
        (see :meth:`FusionExecutorCache.run`; ``cuda_graph=True`` replays the
        launches of a cache hit as one CUDA graph)."""
        self.check_finished("fd.execute")
        executor = self._executor
        if executor is None or executor.device is not None:  # none yet, or one compile(device=...) made
            executor = self._executor_cache()
        return executor.run(inputs, outputs, cuda_graph=cuda_graph)

    def compile(self, inputs: Sequence[object], outputs=None, device: str | None = None):
        """The CompiledFusion of these arguments as they are laid out
        (compiled on first use; its ``run`` takes them); inspect it with
        ``.ir(stage)``, ``.plan``, ``.segments``, ``.to_dot()``. ``device``
        defaults to where the inputs live. Column-major arguments that
        ``fd.execute`` runs on row-major views (FusionExecutorCache.run) get
        the strided kernels here, not those views': for an elementwise
        fusion ``fd.compile`` of the views (``[x.T, y.T]``) shows what runs,
        for any other the compile of the definition written again in their
        order (``fuser_mlir.frontend.relayout.relayout(fd, order).fusion``)."""
        self.check_finished("fd.compile")
        compiled, _, _ = self._executor_cache(device).compiled_for(inputs, outputs)
        return compiled

    def _executor_cache(self, device: str | None = None):
        from fuser_mlir.executor import FusionExecutorCache, parse_device

        wanted = None if device is None else parse_device(device)
        if self._executor is None or self._executor.device != wanted:
            self._executor = FusionExecutorCache(self, device=wanted)
        return self._executor


def _round_float(value, dtype: DataType) -> float:
    """``value`` rounded to the float ``dtype`` (to inf beyond its range), as
    the constant's MLIR attribute holds it: folds of casts of constants see
    the rounded value, as a run-time cast of the same scalar would."""
    try:
        wide = float(value)
    except OverflowError:  # an int beyond every float type's range
        wide = math.inf if value > 0 else -math.inf
    with np.errstate(over="ignore"):
        return float(np.asarray(wide, np.float64).astype(dtype.numpy))


def _convert_constant(value, dtype: DataType, loc: Loc):
    """A literal (``define_scalar(value)``, a Python number in an op) as a
    constant of ``dtype``; DefinitionError where an integer type cannot hold it."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return _round_float(value, dtype)
    if isinstance(value, float) and not value.is_integer():
        raise DefinitionError(f"the constant {value!r} at {loc.short} is not an integer, so it cannot be {dtype.name}; pass an int or a float DataType")
    low, high = dtype.int_range
    if not low <= int(value) <= high:
        raise DefinitionError(f"the constant {value!r} at {loc.short} does not fit in {dtype.name} ({low} to {high})")
    return int(value)


def _cast_constant(value, dtype: DataType, loc: Loc):
    """A constant cast to ``dtype`` with a cast's semantics: floats truncate
    toward zero into integers, integers wrap into narrower ones (two's
    complement), anything is a Bool as ``value != 0``. A float that is NaN,
    infinite or out of the integer type's range has no defined cast (devices
    differ), so it is a DefinitionError."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return _round_float(value, dtype)
    low, high = dtype.int_range
    if isinstance(value, float):
        if not math.isfinite(value) or not low <= math.trunc(value) <= high:
            raise DefinitionError(
                f"the cast at {loc.short} of the constant {value!r} to {dtype.name} has no defined value ({dtype.name} holds "
                f"{low} to {high}); cast a value in that range"
            )
        return math.trunc(value)
    span = high - low + 1
    return (int(value) - low) % span + low

