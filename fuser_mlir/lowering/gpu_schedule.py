"""GPU schedulers: segment functions (linalg on memrefs) to ``gpu.func`` kernels
and launch programs.

:func:`schedule_segment` takes one segment function after bufferization
(``linalg.generic`` ops on memrefs, ``linalg.fill``/``linalg.copy`` generalised,
intermediate ``memref.alloc``\\ s, index arithmetic on sizes) and writes one
or more ``gpu.func`` kernels into a ``gpu.module``. What the host must do to
run the segment, it returns as data, a
:class:`~fuser_mlir.runtime.launch.SegmentProgram`: the temporary buffers to
allocate (with size formulas in terms of the segment's argument sizes) and
the kernel launches in order (grid formula, block size, argument bindings).
No host code is compiled: the runtime evaluates the formulas and launches the
kernels with the CUDA driver, so a compiled fusion runs without MLIR.

Each kernel argument is a memref (the launch passes the memref descriptor:
allocated and aligned pointer, offset, sizes, strides, as separate 64-bit
parameters) or a scalar. Values the kernel body needs from the segment
function (constants, sizes, scalar arithmetic on scalar inputs) are
recomputed inside the kernel from its arguments.

Schedulers, one per linalg op (a generic's iteration space is split into its
parallel dims P and reduction dims R):

pointwise (R empty)
    a grid-stride loop over the P space collapsed to 1-D; the grid is sized
    to the problem, capped at :data:`MAX_BLOCKS`.
inner reduction (R dims after the P dims)
    one block of :data:`THREADS` threads per output row (rows in a
    grid-stride loop): each thread accumulates a strided slice of the row in
    registers, then ``gpu.all_reduce`` combines the block's partial results
    (warp shuffles and shared memory) and thread 0 stores the row's result.
outer reduction (R dims before the P dims, a full reduction included)
    a column scheme in two kernels: threads own consecutive output columns
    (coalesced reads), the R space is split into ``S`` chunks along
    ``blockIdx.y`` so that tall inputs still fill the GPU, each writing a
    partial result to a ``[S, columns]`` temporary; a second kernel combines
    the ``S`` partials of each column.
serial (any other reduction)
    one thread per output element looping over the whole R space.

The block-level schemes need the combining operation of each accumulator: the
generic's body must yield ``combine(acc, f(inputs))`` where ``combine`` is an
associative and commutative arith op (:data:`ALL_REDUCE_OPS`) and ``acc`` is
used nowhere else, and the preceding ``linalg.fill`` of the output must be
the identity of ``combine`` (or ``combine`` idempotent, like max). Otherwise
the serial scheme runs (correct, slow). The fill is folded into the
reduction kernel's initial value; a fill that is not folded is a pointwise
kernel of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fuser_mlir._mlir import arith, gpu, ir, memref, scf, vector
from fuser_mlir.errors import CompileError
from fuser_mlir.runtime.launch import KernelLaunch, SegmentProgram, Temp

#: Threads per block of every kernel.
THREADS = 256
#: Grid cap of grid-stride loops (about 8 blocks per SM on an H200).
MAX_BLOCKS = 1056
#: Blocks the outer-reduction scheme aims for (split count × column blocks).
OUTER_TARGET_BLOCKS = 1056
#: Fewest reduced rows per split of the outer-reduction scheme.
OUTER_MIN_ROWS = 32

#: Bytes per vector load/store of the flat pointwise scheme.
VECTOR_BYTES = 16
#: (dense, alignment) of the buffers the runtime allocates.
FRESH_LAYOUT = (True, 256)

#: Reduction combiner (arith op) -> ``gpu.all_reduce`` operation.
ALL_REDUCE_OPS = {
    "arith.addf": "add",
    "arith.addi": "add",
    "arith.mulf": "mul",
    "arith.muli": "mul",
    "arith.maxsi": "maxsi",
    "arith.minsi": "minsi",
    "arith.maxui": "maxui",
    "arith.minui": "minui",
    "arith.maximumf": "maximumf",
    "arith.minimumf": "minimumf",
    "arith.maxnumf": "maxnumf",
    "arith.minnumf": "minnumf",
    "arith.ori": "or",
    "arith.andi": "and",
    "arith.xori": "xor",
}
#: Combiners for which a repeated initial value does not change the result.
_IDEMPOTENT = {"maxsi", "minsi", "maxui", "minui", "maximumf", "minimumf", "maxnumf", "minnumf", "or", "and"}
#: Identity element of the non-idempotent combiners.
_IDENTITY = {"add": 0, "mul": 1, "xor": 0}

#: Host ops that only compute sizes or scalars: recomputed where needed.
_PURE_PREFIXES = ("arith.", "math.", "index.")


def _element_bytes(element: ir.Type) -> int:
    if isinstance(element, ir.IndexType):
        return 8
    width = ir.FloatType(element).width if isinstance(element, ir.FloatType) else ir.IntegerType(element).width
    return max(1, width // 8)


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _dimension(name: str) -> ir.Attribute:
    return ir.Attribute.parse(f"#gpu<dim {name}>")


# -- host-side formulas ---------------------------------------------------------------


def _product(exprs: Sequence[list]) -> list:
    result: list = ["const", 1]
    for e in exprs:
        result = e if result == ["const", 1] else ["mul", result, e]
    return result


def _ceildiv(a: list, b: int | list) -> list:
    return ["ceildiv", a, ["const", b] if isinstance(b, int) else b]


_FORMULA_OPS = {
    "arith.addi": "add",
    "arith.subi": "sub",
    "arith.muli": "mul",
    "arith.divui": "div",
    "arith.divsi": "div",
    "arith.floordivsi": "div",
    "arith.divf": "div",  # reshape sizes are divided in f64 (exact)
    "arith.ceildivui": "ceildiv",
    "arith.ceildivsi": "ceildiv",
    "arith.mulf": "mul",
    "arith.addf": "add",
    "arith.subf": "sub",
    "arith.minui": "min",
    "arith.minsi": "min",
    "arith.maxui": "max",
    "arith.maxsi": "max",
}
_FORMULA_CASTS = ("arith.index_cast", "arith.index_castui", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci")


# -- the structure of one linalg.generic ---------------------------------------------


@dataclass
class _Generic:
    """A ``linalg.generic`` as the schedulers see it."""

    op: ir.Operation
    inputs: list[ir.Value]
    outputs: list[ir.Value]
    maps: list[ir.AffineMap]
    iterators: list[str]

    @classmethod
    def of(cls, op: ir.Operation) -> "_Generic":
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = list(op.operands)
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        iterators = [str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        return cls(op, operands[: segments[0]], operands[segments[0] :], maps, iterators)

    @property
    def body(self) -> ir.Block:
        return self.op.regions[0].blocks[0]

    @property
    def parallel(self) -> list[int]:
        return [d for d, kind in enumerate(self.iterators) if kind == "parallel"]

    @property
    def reduction(self) -> list[int]:
        return [d for d, kind in enumerate(self.iterators) if kind != "parallel"]

    def fill_value(self) -> ir.Value | None:
        """The scalar a fill-like generic (all parallel, one scalar input,
        body ``yield %in``) writes; None for any other generic."""
        if self.reduction or len(self.inputs) != 1 or isinstance(self.inputs[0].type, ir.ShapedType):
            return None
        ops = list(self.body.operations)
        if len(ops) != 1 or list(ops[0].operands) != [self.body.arguments[0]]:
            return None
        return self.inputs[0]

    def combiners(self) -> list[str] | None:
        """The ``gpu.all_reduce`` op of each accumulator, or None when the body
        is not ``yield combine(acc, f(inputs))`` for every output."""
        block = self.body
        yielded = list(list(block.operations)[-1].operands)
        accumulators = list(block.arguments)[len(self.inputs) :]
        found = []
        for acc, value in zip(accumulators, yielded):
            owner = value.owner
            if isinstance(owner, ir.Block) or owner.name not in ALL_REDUCE_OPS:
                return None
            operands = list(owner.operands)
            uses = list(acc.uses)
            if len(operands) != 2 or acc not in operands or len(uses) != 1 or operands[0] == operands[1]:
                return None
            found.append(ALL_REDUCE_OPS[owner.name])
        return found


def _constant_number(value: ir.Value):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, (ir.FloatAttr, ir.IntegerAttr)):
        return attr.value
    return None


# -- building one kernel -------------------------------------------------------------


class _Kernel:
    """One ``gpu.func`` under construction.

    Arguments are added on demand (:meth:`value`), each bound to a host value
    of the segment function; values the body needs from the host are cloned
    into the kernel's prologue when they are pure arithmetic.
    """

    def __init__(self, segment: "_SegmentScheduler", name: str):
        self.segment = segment
        self.name = name
        with ir.InsertionPoint(segment.gpu_module_body), segment.location:
            self.func = gpu.GPUFuncOp(ir.TypeAttr.get(ir.FunctionType.get([], [])), sym_name=name, kernel=True)
            self.entry = self.func.body.blocks.append()
        with ir.InsertionPoint(self.entry), segment.location:
            self.anchor = _index(0)  # prologue clones go before it
            self.zero = self.anchor
        self.bindings: list[list] = []
        self.mapping: dict[ir.Value, ir.Value] = {}
        self.views: dict[tuple, ir.Value] = {}

    # -- arguments and host values ---------------------------------------------------

    def argument(self, host: ir.Value) -> ir.Value:
        if host not in self.mapping:
            self.mapping[host] = self.entry.add_argument(host.type, self.segment.location)
            self.bindings.append(self.segment.binding(host))
        return self.mapping[host]

    def view_argument(self, host: ir.Value, lanes: int) -> ir.Value:
        """``host`` (a dense buffer) as a 1-D kernel argument of its elements
        (``lanes`` 1) or of vectors of ``lanes`` elements."""
        key = (host, lanes)
        if key not in self.views:
            element = ir.MemRefType(host.type).element_type
            if lanes > 1:
                element = ir.VectorType.get([lanes], element)
            mtype = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], element)
            self.views[key] = self.entry.add_argument(mtype, self.segment.location)
            self.bindings.append(["flat", self.segment.binding(host), lanes])
        return self.views[key]

    def value(self, host: ir.Value) -> ir.Value:
        """``host`` (a value of the segment function) inside this kernel."""
        if host in self.mapping:
            return self.mapping[host]
        owner = host.owner
        if isinstance(owner, ir.Block) or isinstance(host.type, ir.ShapedType):
            return self.argument(host)  # an argument, a temporary or a view
        if owner.name == "memref.dim" or owner.name.startswith(_PURE_PREFIXES):
            if owner.regions:
                raise CompileError(f"the GPU schedulers cannot recompute '{owner.name}' (it has regions) inside a kernel")
            operands = [self.value(v) for v in owner.operands]
            clone = owner.clone(ip=ir.InsertionPoint(self.anchor.owner))
            for i, v in enumerate(operands):
                clone.operands[i] = v
            for old, new in zip(owner.results, clone.results):
                self.mapping[old] = new
            return self.mapping[host]
        raise CompileError(f"a kernel needs a value that '{owner.name}' computes on the host; the GPU schedulers cannot pass it")

    def finish(self, grid: list, block: Sequence[int] = (THREADS, 1, 1)) -> None:
        with ir.InsertionPoint(self.entry), self.segment.location:
            gpu.ReturnOp([])
        types = [a.type for a in self.entry.arguments]
        self.func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(types, []))
        self.segment.launches.append(KernelLaunch(kernel=self.name, grid=grid, block=list(block), args=self.bindings))

    # -- indices --------------------------------------------------------------------

    def special(self, kind: str, dim: str = "x") -> ir.Value:
        op = {"thread": gpu.ThreadIdOp, "block": gpu.BlockIdOp, "block_dim": gpu.BlockDimOp, "grid_dim": gpu.GridDimOp}[kind]
        return op(_dimension(dim)).result

    def loop_sizes(self, g: _Generic) -> list[ir.Value]:
        """The size of every iteration dim, from the operand shapes."""
        sizes = []
        for d in range(len(g.iterators)):
            operand, position = self.segment.operand_for_dim(g, d)
            sizes.append(memref.DimOp(self.value(operand), _index(position)).result)
        return sizes

    @staticmethod
    def product(values: Sequence[ir.Value]) -> ir.Value:
        if not values:
            return _index(1)
        total = values[0]
        for v in values[1:]:
            total = arith.MulIOp(total, v).result
        return total

    @staticmethod
    def delinearize(linear: ir.Value, sizes: Sequence[ir.Value]) -> list[ir.Value]:
        """Indices of ``linear`` in a row-major space of ``sizes`` (last fastest)."""
        indices: list[ir.Value] = [None] * len(sizes)
        remaining = linear
        for d in range(len(sizes) - 1, 0, -1):
            indices[d] = arith.RemUIOp(remaining, sizes[d]).result
            remaining = arith.DivUIOp(remaining, sizes[d]).result
        if sizes:
            indices[0] = remaining
        return indices

    # -- the generic's body -----------------------------------------------------------

    def indices(self, amap: ir.AffineMap, ivs: Sequence[ir.Value]) -> list[ir.Value]:
        result = []
        for expr in amap.results:
            if isinstance(expr, ir.AffineDimExpr):
                result.append(ivs[ir.AffineDimExpr(expr).position])
            elif isinstance(expr, ir.AffineConstantExpr):
                result.append(_index(ir.AffineConstantExpr(expr).value))
            else:
                raise CompileError(f"the GPU schedulers take only dims and constants in indexing maps, not {expr}")
        return result

    def load(self, operand: ir.Value, amap: ir.AffineMap, ivs: Sequence[ir.Value]) -> ir.Value:
        if not isinstance(operand.type, ir.ShapedType):
            return self.value(operand)
        return memref.LoadOp(self.value(operand), self.indices(amap, ivs)).result

    def body(self, g: _Generic, ivs: Sequence[ir.Value], outs: Sequence[ir.Value] | None) -> list[ir.Value]:
        """Clone the generic's body at ``ivs``; ``outs`` are the values of its
        output block arguments (accumulators), loaded from the outputs when
        None and used by the body. Returns the yielded values."""
        arguments = list(g.body.arguments)
        values: list[ir.Value | None] = []
        for arg, operand, amap in zip(arguments, g.inputs, g.maps):
            values.append(self.load(operand, amap, ivs) if list(arg.uses) else None)
        for i, arg in enumerate(arguments[len(g.inputs) :]):
            if outs is not None:
                values.append(outs[i])
            else:
                values.append(self.load(g.outputs[i], g.maps[len(g.inputs) + i], ivs) if list(arg.uses) else None)
        return self.apply(g, values, ivs)

    def apply(self, g: _Generic, values: Sequence[ir.Value | None], ivs: Sequence[ir.Value] | None = None) -> list[ir.Value]:
        """Clone the generic's body with ``values`` for its block arguments
        (None for unused ones); returns the yielded values."""
        block = g.body
        local: dict[ir.Value, ir.Value] = {arg: v for arg, v in zip(block.arguments, values) if v is not None}
        ops = list(block.operations)
        for op in ops[:-1]:
            if op.name == "linalg.index":
                if ivs is None:
                    raise CompileError("a generic that reads its iteration indices was given no indices")
                local[op.results[0]] = ivs[ir.IntegerAttr(op.attributes["dim"]).value]
                continue
            if op.regions:
                raise CompileError(f"the GPU schedulers cannot clone '{op.name}' (it has regions) into a kernel")
            operands = [local[v] if v in local else self.value(v) for v in op.operands]
            clone = op.clone()
            for i, v in enumerate(operands):
                clone.operands[i] = v
            for old, new in zip(op.results, clone.results):
                local[old] = new
        return [local[v] if v in local else self.value(v) for v in ops[-1].operands]

    def store(self, g: _Generic, values: Sequence[ir.Value], ivs: Sequence[ir.Value]) -> None:
        for i, (value, output) in enumerate(zip(values, g.outputs)):
            amap = g.maps[len(g.inputs) + i]
            memref.StoreOp(value, self.value(output), self.indices(amap, ivs))


# -- one segment ----------------------------------------------------------------------


class _SegmentScheduler:
    """Schedules the linalg ops of one segment function into kernels."""

    def __init__(self, func: ir.Operation, gpu_module_body: ir.Block, prefix: str, layouts: Sequence | None = None):
        self.func = func
        self.layouts = list(layouts or [])
        self.gpu_module_body = gpu_module_body
        self.prefix = prefix
        self.location = func.location
        self.arguments = list(func.regions[0].blocks[0].arguments)
        self.temps: list[Temp] = []
        self.launches: list[KernelLaunch] = []
        self.temp_of: dict[ir.Value, int] = {}
        self.views: dict[ir.Value, list] = {}  # memref.reshape result -> binding
        self.stored: dict[tuple, ir.Value] = {}  # (shape buffer, position) -> stored value
        self.pending_fills: dict[ir.Value, ir.Value] = {}  # output buffer -> fill scalar
        self._holder: ir.Block | None = None

    # -- host values as data -----------------------------------------------------------

    def binding(self, host: ir.Value) -> list:
        if host in self.temp_of:
            return ["temp", self.temp_of[host]]
        if isinstance(host.owner, ir.Block):
            return ["arg", self.arguments.index(host)]
        if host in self.views:
            return self.views[host]
        raise CompileError(f"a kernel takes a buffer made by '{host.owner.name}', which the GPU launch program cannot express")

    def dim_formula(self, buffer: ir.Value, position: int) -> list:
        static = ir.ShapedType(buffer.type).get_dim_size(position) if not ir.ShapedType(buffer.type).is_dynamic_dim(position) else None
        if static is not None:
            return ["const", static]
        binding = self.binding(buffer)
        if binding[0] == "arg":
            return ["argdim", binding[1], position]
        if binding[0] == "temp":
            return self.temps[binding[1]].shape[position]
        return binding[2][position]  # a view's shape

    def formula(self, value: ir.Value) -> list:
        """A host size (index or integer value) as a formula of argument sizes."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            return ["arg", self.arguments.index(value)]
        number = _constant_number(value)
        if number is not None:
            return ["const", number]
        if owner.name == "memref.dim":
            position = _constant_number(owner.operands[1])
            if position is None:
                raise CompileError("a memref.dim with a dynamic dim index on the host")
            return self.dim_formula(owner.operands[0], int(position))
        if owner.name in _FORMULA_CASTS:
            return self.formula(owner.operands[0])
        if owner.name in _FORMULA_OPS:
            return [_FORMULA_OPS[owner.name], self.formula(owner.operands[0]), self.formula(owner.operands[1])]
        raise CompileError(f"a buffer size is computed by '{owner.name}', which the GPU launch program cannot express")

    def operand_for_dim(self, g: _Generic, d: int) -> tuple[ir.Value, int]:
        for operand, amap in zip([*g.inputs, *g.outputs], g.maps):
            if not isinstance(operand.type, ir.ShapedType):
                continue
            for position, expr in enumerate(amap.results):
                if isinstance(expr, ir.AffineDimExpr) and ir.AffineDimExpr(expr).position == d:
                    return operand, position
        raise CompileError(f"no operand of '{g.op.name}' has iteration dim {d}")

    def size_formulas(self, g: _Generic) -> list[list]:
        return [self.dim_formula(*self.operand_for_dim(g, d)) for d in range(len(g.iterators))]

    def layout(self, buffer: ir.Value) -> tuple[bool, int]:
        """(dense, alignment in bytes) of a buffer the kernels read or write."""
        binding = self.binding(buffer)
        if binding[0] == "arg":
            known = self.layouts[binding[1]] if binding[1] < len(self.layouts) else None
            return tuple(known) if known else (False, 1)
        return FRESH_LAYOUT  # temporaries and views of them: allocated by the runtime

    def kernel(self) -> _Kernel:
        return _Kernel(self, f"{self.prefix}_k{len(self.launches)}")

    # -- the walk -----------------------------------------------------------------------

    def run(self) -> SegmentProgram:
        for op in list(self.func.regions[0].blocks[0].operations):
            op = op.operation
            name = op.name
            if name == "memref.alloc":
                self.allocate(op)
            elif name == "memref.store":
                self.stored[(op.operands[1], tuple(_constant_number(v) for v in list(op.operands)[2:]))] = op.operands[0]
            elif name == "memref.reshape":
                self.reshape(op)
            elif name == "linalg.generic":
                self.generic(_Generic.of(op))
            elif name in ("memref.dealloc", "func.return", "memref.dim") or name.startswith(_PURE_PREFIXES):
                continue
            else:
                raise CompileError(f"the GPU schedulers cannot run '{name}' in segment @{self.prefix}")
        for buffer in list(self.pending_fills):
            self.flush_fill(buffer)
        return SegmentProgram(temps=self.temps, launches=self.launches)

    def allocate(self, op: ir.Operation) -> None:
        result = op.results[0]
        mtype = ir.MemRefType(result.type)
        if isinstance(mtype.element_type, ir.IndexType):
            return  # a shape buffer of memref.reshape: its stores are read as formulas
        dynamic = iter(op.operands)
        shape = []
        for position in range(mtype.rank):
            shape.append(["const", mtype.get_dim_size(position)] if not mtype.is_dynamic_dim(position) else self.formula(next(dynamic)))
        self.temp_of[result] = len(self.temps)
        self.temps.append(Temp(dtype=str(mtype.element_type), shape=shape))

    def reshape(self, op: ir.Operation) -> None:
        source, shape_buffer = op.operands[0], op.operands[1]
        binding = self.binding(source)
        if binding[0] != "temp":
            raise CompileError("memref.reshape of a buffer that is not a fresh contiguous temporary")
        rank = ir.MemRefType(op.results[0].type).rank
        shape = []
        for position in range(rank):
            stored = self.stored.get((shape_buffer, (position,)))
            if stored is None:
                raise CompileError("memref.reshape with a shape that is not stored element by element on the host")
            shape.append(self.formula(stored))
        self.views[op.results[0]] = ["view", binding[1], shape]

    # -- scheduling ---------------------------------------------------------------------

    def base(self, buffer: ir.Value) -> object:
        binding = self.binding(buffer) if isinstance(buffer.type, ir.ShapedType) else None
        if binding is None:
            return None
        return ("temp", binding[1]) if binding[0] == "view" else tuple(binding[:2])

    def generic(self, g: _Generic) -> None:
        if not g.outputs:
            return  # computes nothing that is kept
        fill = g.fill_value()
        if fill is not None and len(g.outputs) == 1:
            for buffer in [b for b in self.pending_fills if self.base(b) == self.base(g.outputs[0])]:
                del self.pending_fills[buffer]
            self.pending_fills[g.outputs[0]] = fill
            return
        inits = self.take_fills(g) if g.reduction else None
        touched = {self.base(v) for v in [*g.inputs, *g.outputs]}
        for buffer in [b for b in self.pending_fills if self.base(b) in touched]:
            self.flush_fill(buffer)
        if not g.reduction:
            self.pointwise(g)
            return
        combiners = g.combiners()
        ps, rs = g.parallel, g.reduction
        if inits is not None and combiners is not None:
            if ps == list(range(len(ps))) and ps:
                self.inner_reduction(g, inits, combiners)
                return
            if rs == list(range(len(rs))):
                self.outer_reduction(g, inits, combiners)
                return
        if inits is not None:
            for buffer, value in zip(g.outputs, inits):
                self.fill_kernel(buffer, value)
        self.serial_reduction(g)

    def take_fills(self, g: _Generic) -> list[ir.Value] | None:
        """The fill scalars of all of ``g``'s outputs, removed from the pending
        fills, if each output was just filled with a value the combiner allows."""
        combiners = g.combiners()
        if combiners is None or any(o not in self.pending_fills for o in g.outputs):
            return None
        values = [self.pending_fills[o] for o in g.outputs]
        for value, combiner in zip(values, combiners):
            if combiner in _IDEMPOTENT:
                continue
            number = _constant_number(value)
            if number is None or number != _IDENTITY[combiner]:
                return None
        for o in g.outputs:
            del self.pending_fills[o]
        return values

    def flush_fill(self, buffer: ir.Value) -> None:
        self.fill_kernel(buffer, self.pending_fills.pop(buffer))

    def fill_kernel(self, buffer: ir.Value, value: ir.Value) -> None:
        k = self.kernel()
        rank = ir.MemRefType(buffer.type).rank
        with ir.InsertionPoint(k.entry), self.location:
            out = k.value(buffer)
            sizes = [memref.DimOp(out, _index(d)).result for d in range(rank)]
            loop = self._grid_stride_loop(k, k.product(sizes))
            with ir.InsertionPoint(loop.body):
                memref.StoreOp(k.value(value), out, k.delinearize(loop.induction_variable, sizes))
                scf.YieldOp([])
        count = _product([self.dim_formula(buffer, d) for d in range(rank)])
        k.finish([self._capped_blocks(count), ["const", 1], ["const", 1]])

    @staticmethod
    def _capped_blocks(count: list) -> list:
        return ["min", _ceildiv(count, THREADS), ["const", MAX_BLOCKS]]

    @staticmethod
    def _grid_stride_loop(k: _Kernel, count: ir.Value) -> scf.ForOp:
        start = arith.AddIOp(arith.MulIOp(k.special("block"), k.special("block_dim")).result, k.special("thread")).result
        step = arith.MulIOp(k.special("grid_dim"), k.special("block_dim")).result
        return scf.ForOp(start, count, step)

    def flat_lanes(self, g: _Generic) -> int | None:
        """Vector lanes of the flat pointwise scheme for ``g`` (1: scalar), or
        None when it does not apply: every tensor operand must be read and
        written at the same (identity) index and be dense, and the body must
        not read the outputs or the iteration indices."""
        rank = len(g.iterators)
        identity = ir.AffineMap.get_identity(rank)
        tensors = [(v, m) for v, m in zip([*g.inputs, *g.outputs], g.maps) if isinstance(v.type, ir.ShapedType)]
        if any(m != identity for _, m in tensors) or any(not self.layout(v)[0] for v, _ in tensors):
            return None
        outs = list(g.body.arguments)[len(g.inputs) :]
        if any(list(a.uses) for a in outs) or any(op.name == "linalg.index" for op in g.body.operations):
            return None
        sizes = [_element_bytes(ir.MemRefType(v.type).element_type) for v, _ in tensors]
        lanes = VECTOR_BYTES // max(sizes)
        while lanes > 1 and any(self.layout(v)[1] % (lanes * size) for (v, _), size in zip(tensors, sizes)):
            lanes //= 2
        return lanes

    def flat_pointwise(self, g: _Generic, lanes: int) -> None:
        """Dense operands read at a flat index, ``lanes`` elements per load and
        store (16-byte vectors where the alignment allows); the last
        ``size % lanes`` elements in a scalar tail loop."""
        k = self.kernel()
        shaped = [isinstance(v.type, ir.ShapedType) for v in g.inputs]
        with ir.InsertionPoint(k.entry), self.location:
            count = k.product(k.loop_sizes(g))
            start = arith.AddIOp(arith.MulIOp(k.special("block"), k.special("block_dim")).result, k.special("thread")).result
            step = arith.MulIOp(k.special("grid_dim"), k.special("block_dim")).result
            done = _index(0)
            if lanes > 1:
                width = _index(lanes)
                vectors = arith.DivUIOp(count, width).result
                loop = scf.ForOp(start, vectors, step)
                with ir.InsertionPoint(loop.body):
                    j = loop.induction_variable
                    loaded = [memref.LoadOp(k.view_argument(v, lanes), [j]).result if t else None for v, t in zip(g.inputs, shaped)]
                    results = []
                    for lane in range(lanes):
                        values = [vector.ExtractOp(x, [], [lane]).result if t else k.value(v) for x, v, t in zip(loaded, g.inputs, shaped)]
                        results.append(k.apply(g, values + [None] * len(g.outputs)))
                    for i, output in enumerate(g.outputs):
                        element = ir.MemRefType(output.type).element_type
                        packed = vector.FromElementsOp(ir.VectorType.get([lanes], element), [r[i] for r in results]).result
                        memref.StoreOp(packed, k.view_argument(output, lanes), [j])
                    scf.YieldOp([])
                done = arith.MulIOp(vectors, width).result
            tail = scf.ForOp(arith.AddIOp(done, start).result, count, step)
            with ir.InsertionPoint(tail.body):
                i = tail.induction_variable
                values = [memref.LoadOp(k.view_argument(v, 1), [i]).result if t else k.value(v) for v, t in zip(g.inputs, shaped)]
                for value, output in zip(k.apply(g, values + [None] * len(g.outputs)), g.outputs):
                    memref.StoreOp(value, k.view_argument(output, 1), [i])
                scf.YieldOp([])
        k.finish([["min", _ceildiv(_product(self.size_formulas(g)), THREADS * lanes), ["const", MAX_BLOCKS]], ["const", 1], ["const", 1]])

    def pointwise(self, g: _Generic) -> None:
        lanes = self.flat_lanes(g)
        if lanes is not None:
            self.flat_pointwise(g, lanes)
            return
        k = self.kernel()
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            loop = self._grid_stride_loop(k, k.product(sizes))
            with ir.InsertionPoint(loop.body):
                ivs = k.delinearize(loop.induction_variable, sizes)
                k.store(g, k.body(g, ivs, None), ivs)
                scf.YieldOp([])
        k.finish([self._capped_blocks(_product(self.size_formulas(g))), ["const", 1], ["const", 1]])

    def _accumulate(self, k: _Kernel, g: _Generic, start, stop, step, inits, ivs_at) -> list[ir.Value]:
        """``for i in range(start, stop, step): accs = body(ivs_at(i), accs)``."""
        loop = scf.ForOp(start, stop, step, inits)
        with ir.InsertionPoint(loop.body):
            values = k.body(g, ivs_at(loop.induction_variable), list(loop.inner_iter_args))
            scf.YieldOp(values)
        return list(loop.results)

    def inner_reduction(self, g: _Generic, inits: list[ir.Value], combiners: list[str]) -> None:
        k = self.kernel()
        ps, rs = g.parallel, g.reduction
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            rows, cols = k.product([sizes[d] for d in ps]), k.product([sizes[d] for d in rs])
            tid, threads = k.special("thread"), k.special("block_dim")
            row_loop = scf.ForOp(k.special("block"), rows, k.special("grid_dim"))
            with ir.InsertionPoint(row_loop.body):
                row_ivs = k.delinearize(row_loop.induction_variable, [sizes[d] for d in ps])

                def ivs_at(col):
                    return row_ivs + k.delinearize(col, [sizes[d] for d in rs])

                accs = self._accumulate(k, g, tid, cols, threads, [k.value(v) for v in inits], ivs_at)
                totals = [
                    gpu.AllReduceOp(acc, op=ir.Attribute.parse(f"#gpu<all_reduce_op {c}>"), uniform=True).result
                    for acc, c in zip(accs, combiners)
                ]
                first = arith.CmpIOp(arith.CmpIPredicate.eq, tid, _index(0)).result
                branch = scf.IfOp(first)
                with ir.InsertionPoint(branch.then_block):
                    k.store(g, totals, row_ivs + [k.zero] * len(rs))
                    scf.YieldOp([])
                scf.YieldOp([])
        size = self.size_formulas(g)
        rows_f = _product([size[d] for d in ps])
        k.finish([["min", rows_f, ["const", MAX_BLOCKS * 8]], ["const", 1], ["const", 1]])

    def outer_reduction(self, g: _Generic, inits: list[ir.Value], combiners: list[str]) -> None:
        ps, rs = g.parallel, g.reduction
        size = self.size_formulas(g)
        cols_f, rows_f = _product([size[d] for d in ps]), _product([size[d] for d in rs])
        column_blocks = _ceildiv(cols_f, THREADS)
        splits = ["max", ["const", 1], ["min", _ceildiv(rows_f, OUTER_MIN_ROWS), _ceildiv(["const", OUTER_TARGET_BLOCKS], column_blocks)]]
        partials = []
        for output in g.outputs:
            element = ir.MemRefType(output.type).element_type
            partials.append(self.scratch(element, [splits, cols_f]))

        # kernel A: partial results of each split of the reduced rows
        k = self.kernel()
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            cols, rows = k.product([sizes[d] for d in ps]), k.product([sizes[d] for d in rs])
            buffers = [k.value(p) for p in partials]
            count = memref.DimOp(buffers[0], _index(0)).result
            col = arith.AddIOp(arith.MulIOp(k.special("block"), k.special("block_dim")).result, k.special("thread")).result
            split = k.special("block", "y")
            inside = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.ult, col, cols).result)
            with ir.InsertionPoint(inside.then_block):
                chunk = arith.CeilDivUIOp(rows, count).result
                start = arith.MulIOp(split, chunk).result
                stop = arith.MinUIOp(rows, arith.AddIOp(start, chunk).result).result
                col_ivs = k.delinearize(col, [sizes[d] for d in ps])
                accs = self._accumulate(
                    k, g, start, stop, _index(1), [k.value(v) for v in inits],
                    lambda row: k.delinearize(row, [sizes[d] for d in rs]) + col_ivs,
                )
                for acc, buffer in zip(accs, buffers):
                    memref.StoreOp(acc, buffer, [split, col])
                scf.YieldOp([])
        k.finish([column_blocks, splits, ["const", 1]])

        # kernel B: combine the splits of each column
        k = self.kernel()
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            cols = k.product([sizes[d] for d in ps])
            buffers = [k.value(p) for p in partials]
            count = memref.DimOp(buffers[0], _index(0)).result
            loop = self._grid_stride_loop(k, cols)
            with ir.InsertionPoint(loop.body):
                col = loop.induction_variable
                combine = scf.ForOp(_index(0), count, _index(1), [k.value(v) for v in inits])
                with ir.InsertionPoint(combine.body):
                    values = []
                    for acc, buffer, combiner_op in zip(combine.inner_iter_args, buffers, self._combiner_ops(g)):
                        partial = memref.LoadOp(buffer, [combine.induction_variable, col]).result
                        values.append(ir.Operation.create(combiner_op, results=[acc.type], operands=[acc, partial]).result)
                    scf.YieldOp(values)
                ivs = [k.zero] * len(rs) + k.delinearize(col, [sizes[d] for d in ps])
                k.store(g, list(combine.results), ivs)
                scf.YieldOp([])
        k.finish([self._capped_blocks(cols_f), ["const", 1], ["const", 1]])

    @staticmethod
    def _combiner_ops(g: _Generic) -> list[str]:
        yielded = list(list(g.body.operations)[-1].operands)
        return [v.owner.name for v in yielded]

    def scratch(self, element: ir.Type, shape: list[list]) -> ir.Value:
        """A new temporary, as a host value: an argument of a scratch block
        that only kernels of this segment use."""
        mtype = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * len(shape), element)
        holder = self._scratch_holder()
        value = holder.add_argument(mtype, self.location)
        self.temp_of[value] = len(self.temps)
        self.temps.append(Temp(dtype=str(element), shape=shape))
        return value

    def _scratch_holder(self) -> ir.Block:
        """A detached block whose arguments stand for the scratch temporaries."""
        if self._holder is None:
            self._holder_op = ir.Operation.create("scf.execute_region", results=[], regions=1, loc=self.location)
            self._holder = self._holder_op.regions[0].blocks.append()
        return self._holder

    def serial_reduction(self, g: _Generic) -> None:
        """One thread per output element, looping over the whole reduction space
        (the outputs hold the initial values)."""
        k = self.kernel()
        ps, rs = g.parallel, g.reduction
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            loop = self._grid_stride_loop(k, k.product([sizes[d] for d in ps]))
            with ir.InsertionPoint(loop.body):
                p_ivs = k.delinearize(loop.induction_variable, [sizes[d] for d in ps])

                def ivs_at(r):
                    ivs = [None] * len(g.iterators)
                    for d, v in zip(ps, p_ivs):
                        ivs[d] = v
                    for d, v in zip(rs, k.delinearize(r, [sizes[d] for d in rs])):
                        ivs[d] = v
                    return ivs

                at_zero = ivs_at(k.zero)
                first = [k.load(o, g.maps[len(g.inputs) + i], at_zero) for i, o in enumerate(g.outputs)]
                accs = self._accumulate(k, g, k.zero, k.product([sizes[d] for d in rs]), _index(1), first, ivs_at)
                k.store(g, accs, at_zero)
                scf.YieldOp([])
        size = self.size_formulas(g)
        k.finish([self._capped_blocks(_product([size[d] for d in ps])), ["const", 1], ["const", 1]])


def schedule_segment(func: ir.Operation, gpu_module_body: ir.Block, prefix: str, layouts: Sequence | None = None) -> SegmentProgram:
    """Kernels for the segment function ``func`` (linalg on memrefs, generalised)
    appended to ``gpu_module_body``; returns its launch program. ``layouts``
    has the (dense, alignment) of each argument (None: unknown, strided)."""
    return _SegmentScheduler(func, gpu_module_body, prefix, layouts).run()
