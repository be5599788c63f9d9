"""Lower segment functions to linalg on tensors over strided memref arguments.

Preconditions: ``fuser-verify`` holds. A *segment* is a ``func.func`` with the
``fuser.num_inputs`` attribute whose body holds only fuser ops (and scalar ops
of other dialects) and whose every ``fuser.store``/``fuser.copy`` writes into
a function argument. No other function may call a segment (the compiler turns
the host function into a launch plan and hands this pass the segments only).
Functions that are not segments are left untouched; with option
``segments-only`` (``fuser-cpu-pipeline`` sets it) a whole fusion, one that
stores into buffers it makes as ``fd.fusion_ir()`` prints it, is an error
that names the passes to run first.

Effect: each segment becomes a public ``func.func`` of the same name with the
``llvm.emit_c_interface`` attribute that returns nothing. Tensor arguments
become ``memref<..., strided<[?, ...], offset: ?>>`` (so NumPy views with any
strides, negative ones too, are read and written in place); inputs are read
through ``bufferization.to_tensor ... restrict``; each fuser op becomes
linalg/tensor/arith/math ops (:mod:`fuser_mlir.lowering.linalg`); each store
or copy becomes ``bufferization.materialize_in_destination ... in restrict
writable`` into its destination memref (through ``linalg.copy`` when the
value is not a fresh linalg result, so that no ``memref.copy`` of a strided
buffer is ever needed: its lowering calls ``memrefCopy`` from MLIR's
runner-utils library, which the JIT does not have). Boolean tensors are
``i8`` in memory (NumPy's layout). Every libm function the code calls is
declared (``llvm.readnone``); with option ``vector-library``
(``libmvec-avx2``, ``libmvec-sse``) the calls go to wrappers that compute
every element with one SIMD variant of the function, whatever the loop
(:mod:`fuser_mlir.lowering.vector_library`). Option ``float-extremum``
(``order-keys``, the default, or ``maximumf``) says how float max/min
reductions combine (:data:`FLOAT_EXTREMA`; the GPU pipeline takes
``maximumf``). ``fuser-cpu-pipeline`` continues from here to the LLVM dialect.

    func.func private @f_seg0(%a: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32>
        attributes {fuser.num_inputs = 1 : i64} {
      %e = "fuser.exp"(%a) : (tensor<?xf32>) -> tensor<?xf32>
      %r = "fuser.store"(%e, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
    ==>
    func.func @f_seg0(%a: memref<?xf32, strided<[?], offset: ?>>,
                      %out: memref<?xf32, strided<[?], offset: ?>>)
        attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
      %0 = bufferization.to_tensor %a restrict : ... to tensor<?xf32>
      %1 = linalg.generic {...} ins(%0 : tensor<?xf32>) outs(...) { func.call @expf ... }
      bufferization.materialize_in_destination %1 in restrict writable %out : ...
      return
    }
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fuser_mlir._mlir import arith, bufferization, func, ir
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.lowering import linalg as L
from fuser_mlir.lowering import scalar as S
from fuser_mlir.lowering import vector_library as VL
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error, op_label

NUM_INPUTS_ATTR = "fuser.num_inputs"


# -- which functions are segments ---------------------------------------------


def _body_ops(function: ir.Operation) -> list[ir.Operation]:
    """The ops of a function body, in order."""
    return [op.operation for block in function.regions[0].blocks for op in block.operations]


def is_segment(function: ir.Operation) -> bool:
    """A ``func.func`` with ``fuser.num_inputs`` that stores at least one
    output, whose stores and copies all write into function arguments, and
    that calls nothing. (A lowered segment stores nothing: the pass is
    idempotent.)"""
    if function.name != "func.func" or NUM_INPUTS_ATTR not in function.attributes:
        return False
    if not function.regions[0].blocks:
        return False
    writes = 0
    for op in _body_ops(function):
        if op.name == "func.call":
            return False
        if O.short_name(op.name) in O.DESTINATION_WRITES:
            if not isinstance(op.operands[1].owner, ir.Block):
                return False
            writes += 1
    return writes > 0


def unsegmented_errors(module: ir.Operation, pass_name: str) -> bool:
    """Emit an error on each whole fusion in ``module`` (a ``func.func``
    with ``fuser.num_inputs`` that calls nothing and stores into a buffer it
    makes, as ``fd.fusion_ir()`` prints it): the lowering passes take
    segment functions, which write into their arguments only. True if any."""
    found = False
    for op in module.regions[0].blocks[0].operations:
        function = op.operation
        if function.name != "func.func" or NUM_INPUTS_ATTR not in function.attributes or not function.regions[0].blocks:
            continue
        body = list(_body_ops(function))
        if any(o.name == "func.call" for o in body):
            continue
        if any(O.short_name(o.name) in O.DESTINATION_WRITES and not isinstance(o.operands[1].owner, ir.Block) for o in body):
            emit_error(
                function,
                f"{pass_name}: @{symbol_name(function)} stores into buffers it makes (fuser.empty): it is a whole fusion, not a "
                "segment function; run -p fuser-segment,fuser-outline-segments first and hand this pass the segment functions "
                "(fd.compile and fuser-mlir compile run the whole pipeline from a definition)",
            )
            found = True
    return found


def segment_functions(module: ir.Operation) -> list[ir.Operation]:
    """The segment functions at the top level of ``module``, in order."""
    return [op.operation for op in module.regions[0].blocks[0].operations if is_segment(op.operation)]


def symbol_name(function: ir.Operation) -> str:
    return ir.StringAttr(function.attributes["sym_name"]).value


def _callers(module: ir.Operation, names: set[str]) -> list[tuple[ir.Operation, str]]:
    """``(call op, callee)`` for every ``func.call`` to one of ``names``."""
    found: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee in names:
                found.append((op, callee))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


# -- types --------------------------------------------------------------------


def strided_memref_type(tensor_type: ir.Type) -> ir.MemRefType:
    """``tensor<?x4xf32>`` -> ``memref<?x4xf32, strided<[?, ?], offset: ?>>``
    (``i1`` elements are stored as ``i8``)."""
    tensor = T.as_tensor(L.storage_type(tensor_type))
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dynamic, [dynamic] * tensor.rank)
    return ir.MemRefType.get(list(tensor.shape), tensor.element_type, layout)


def lowered_argument_type(type_: ir.Type) -> ir.Type:
    """Tensors become strided memrefs; a ``bf16`` scalar becomes its bits as
    ``i16`` (see :func:`lower_segment`); other scalars stay."""
    if T.is_tensor(type_):
        return strided_memref_type(type_)
    return ir.IntegerType.get_signless(16) if str(type_) == "bf16" else type_


# -- op lowering --------------------------------------------------------------


def _dense(op: ir.Operation, name: str) -> list[int]:
    """An ``array<i64: ...>`` attribute as a list."""
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _int(op: ir.Operation, name: str) -> int:
    """An integer attribute's value."""
    return ir.IntegerAttr(op.attributes[name]).value


def _lower_scalar_op(op: ir.Operation, name: str, operands: list[ir.Value]) -> ir.Value:
    """``fuser.constant`` -> ``arith.constant``; ``fuser.size`` -> ``tensor.dim`` as i64."""
    if name == "constant":
        return arith.ConstantOp(op.results[0].type, op.attributes["value"]).result
    size = L.dim_size(operands[0], _int(op, "dim"))
    return arith.IndexCastOp(ir.IntegerType.get_signless(64), size).result


def lower_op(op: ir.Operation, operands: list[ir.Value], float_extremum: str = "order-keys") -> ir.Value:
    """The lowered value of one fuser op's result (not for stores and copies),
    built at the current insertion point and location; ``float_extremum``:
    how float max/min reductions combine (see :data:`FLOAT_EXTREMA`)."""
    name = O.short_name(op.name)
    result_type = op.results[0].type
    category = O.CATEGORY[name]
    if category in ("unary", "binary", "ternary"):
        return L.pointwise(name, operands, result_type)
    if category == "cast":
        return L.cast(operands[0], result_type)
    if category == "copy":
        return operands[0]
    if category == "reduction":
        order_keys = float_extremum == "order-keys"
        return L.reduction(name, operands[0], result_type, _dense(op, "dims"), bool(_int(op, "keepdim")), order_keys=order_keys)
    if name == "broadcast_in_dim":
        return L.broadcast_in_dim(operands[0], result_type, _dense(op, "broadcast_dims"))
    if name == "permute":
        return L.permute(operands[0], result_type, _dense(op, "dims"))
    if name == "reshape":
        return L.reshape(operands[0], result_type, operands[1:])
    if category == "scalar":
        return _lower_scalar_op(op, name, operands)
    raise NotImplementedError(f"fuser-lower-to-cpu has no lowering for '{op.name}' (_check_op should have rejected it)")


@dataclass
class _SegmentLowering:
    """Builds the lowered body of one segment function, op by op."""

    values: dict  # old ir.Value -> new ir.Value
    memrefs: dict  # old block argument -> new memref argument
    float_extremum: str = "order-keys"
    fuse_shared: bool = False  # elementwise cones as one generic each (:meth:`cone`)
    positions: dict = dataclasses.field(default_factory=dict)  # old ir.Value -> where its op stands in the body (:meth:`cone`)
    kept: set = dataclasses.field(default_factory=set)  # old values computed once into a buffer of their own (:meth:`keeps`)
    stored: set = dataclasses.field(default_factory=set)  # lowered values already stored

    def operand(self, value: ir.Value) -> ir.Value:
        """The lowered value of an old operand (reads memref args lazily)."""
        if value in self.values:
            return self.values[value]
        memref = self.memrefs[value]
        tensor = bufferization.ToTensorOp(L.storage_type(value.type), memref, restrict=True).result
        self.values[value] = tensor
        return tensor

    def store(self, op: ir.Operation) -> None:
        source = self.operand(op.operands[0])
        dest = self.memrefs[op.operands[1]]
        if not self.claim(source):
            source = L.copy(source)
        bufferization.MaterializeInDestinationOp(None, source, dest, restrict=True, writable=True)
        self.values[op.results[0]] = source

    def claim(self, value: ir.Value) -> bool:
        """Whether ``value`` is a linalg result not yet stored anywhere, so that
        bufferization can compute it straight into a destination; marks it."""
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.name not in ("linalg.generic", "linalg.fill", "linalg.copy"):
            return False
        if value in self.stored:
            return False
        self.stored.add(value)
        return True

    def clone_other(self, op: ir.Operation) -> None:
        """Copy a non-fuser scalar op (e.g. ``arith.constant``) with remapped
        operands (:func:`_check_op` has rejected any other)."""
        clone = op.clone()
        for index, value in enumerate(op.operands):
            clone.operands[index] = self.operand(value)
        for old, new in zip(op.results, clone.results):
            self.values[old] = new

    def recompute(self, value: ir.Value, memo: dict) -> ir.Value:
        """``value`` lowered afresh, with its cone of elementwise producers
        (stopping at values that are not elementwise tensors)."""
        if value in memo:
            return memo[value]
        owner = value.owner
        if isinstance(owner, ir.Block) or not _is_elementwise(owner):
            return self.operand(value)
        with owner.location:
            memo[value] = lower_op(owner, [self.recompute(v, memo) for v in owner.operands], self.float_extremum)
        return memo[value]

    def lower(self, op: ir.Operation) -> None:
        name = O.short_name(op.name)
        if op.name == "func.return":
            return
        if name is None:
            self.clone_other(op)
        elif name in O.DESTINATION_WRITES:
            self.store(op)
        elif O.CATEGORY[name] == "reduction":
            # A private copy of the producers: linalg-fuse-elementwise-ops
            # fuses single-use producers only, and a producer shared with a
            # later pointwise op (exp(x - max) in a softmax) would otherwise
            # be written to a full-size intermediate buffer.
            memo: dict = {}
            value = op.operands[0]
            if value in self.kept:
                operand = self.operand(value)
            elif self.fuse_shared and _in_cone(value.owner):
                operand = self.cone(value, lambda leaf: self.recompute(leaf, memo))
            else:
                operand = self.recompute(value, memo)
            self.values[op.results[0]] = lower_op(op, [operand], self.float_extremum)
        elif self.fuse_shared and _in_cone(op):
            if all(_in_cone(use.owner) for use in op.results[0].uses):
                return  # each consumer computes it in its own cone
            self.values[op.results[0]] = self.cone(op.results[0], self.shared_or_recomputed)
            if self.keeps(op.results[0]):
                self.kept.add(op.results[0])
        else:
            operands = [self.shared_or_recomputed(v) if _is_elementwise(op) else self.operand(v) for v in op.operands]
            self.values[op.results[0]] = lower_op(op, operands, self.float_extremum)

    def cone(self, root: ir.Value, leaf) -> ir.Value:
        """``root`` as one all-parallel generic that computes its whole cone
        of :func:`_in_cone` ops element by element, each value of the cone
        once however many ops of it read it; ``leaf(value)`` lowers each
        value the cone reads (a tensor through its broadcast map, a scalar
        captured). Built op by op, a value read twice would be written to a
        full-size buffer (linalg-fuse-elementwise-ops fuses single-use
        producers only)."""
        ops, leaves, stack = {}, {}, [root]
        while stack:
            value = stack.pop()
            if value in ops or value in leaves:
                continue
            if not _in_cone(value.owner) or value in self.kept:
                leaves[value] = None
                continue
            ops[value] = value.owner
            stack.extend(value.owner.operands)
        program = sorted(ops.items(), key=lambda item: self.positions[item[0]])
        reads = list(dict.fromkeys(v for _, op in program for v in op.operands if v in leaves))  # in the order the program reads them

        def body(elements: list[ir.Value]) -> ir.Value:
            element = dict(zip(reads, elements))
            for value, op in program:
                element[value] = _element(op, [element[v] for v in op.operands])
            return element[root]

        return L.elementwise([leaf(v) for v in reads], root.type, body)

    def keeps(self, value: ir.Value) -> bool:
        """Whether the cone root ``value`` is computed once into a buffer of
        its own, which later cones and reductions read, rather than again in
        each: where a reduction and other ops read it and its cone has more
        than :data:`SHARE_LIMIT` ops. A long pointwise chain ending in a row
        max taken away from it (``y - max(y)``) then computes the chain once
        and keeps it for the subtraction; recomputed, the GPU row kernel
        computed it twice, and each of its launch variants held it twice
        (30 steps: 61 MB of PTX). Small cones (``exp(x - max)`` of a softmax)
        are still recomputed: a full-size buffer costs more than they do."""
        users = [use.owner for use in value.uses]
        if len(users) < 2 or not any(O.CATEGORY.get(O.short_name(user.name)) == "reduction" for user in users):
            return False
        return len(_cone_ops(value, SHARE_LIMIT + 1)) > SHARE_LIMIT

    def shared_or_recomputed(self, value: ir.Value) -> ir.Value:
        """The operand of an elementwise op: recomputed privately when it is a
        small elementwise cone with several uses (the upcast of a bfloat16
        input read twice), so that linalg-fuse-elementwise-ops, which fuses
        single-use producers only, fuses it instead of writing it to a
        full-size intermediate buffer; else the shared lowered value."""
        owner = value.owner
        if isinstance(owner, ir.Block) or not _is_elementwise(owner) or len(list(value.uses)) < 2:
            return self.operand(value)
        if _cone_size(value, RECOMPUTE_LIMIT + 1) > RECOMPUTE_LIMIT:
            return self.operand(value)
        return self.recompute(value, {})


#: The ways a float max/min reduction can combine its elements (option
#: ``float-extremum``): ``order-keys``, an integer max/min of order keys and an
#: ``or`` of NaN flags, which LLVM vectorises on the CPU (see
#: :func:`fuser_mlir.lowering.linalg.reduction`); ``maximumf``, one
#: NaN-propagating ``arith.maximumf``/``minimumf`` per element, a single
#: instruction on a GPU (``max.NaN.f32``), where the keys cost six.
FLOAT_EXTREMA = ("order-keys", "maximumf")

#: Largest elementwise cone recomputed per use instead of shared (ops).
RECOMPUTE_LIMIT = 2
#: With ``fuse-shared``: largest cone read by a reduction and other ops that
#: each of them computes again rather than reading it from a buffer of its
#: own (:meth:`_SegmentLowering.keeps`).
SHARE_LIMIT = 16


def _cone_size(value: ir.Value, limit: int) -> int:
    """Elementwise ops in the cone of ``value`` (counting stops at ``limit``)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or not _is_elementwise(owner):
        return 0
    total = 1
    for operand in owner.operands:
        if total >= limit:
            break
        total += _cone_size(operand, limit - total)
    return total


def _cone_ops(value: ir.Value, limit: int) -> set:
    """The distinct elementwise ops of the cone of ``value``, up to ``limit`` of them."""
    ops, stack = set(), [value]
    while stack and len(ops) < limit:
        owner = stack.pop().owner
        if isinstance(owner, ir.Block) or not _is_elementwise(owner) or owner in ops:
            continue
        ops.add(owner)
        stack.extend(owner.operands)
    return ops


#: The categories of fuser ops that map each element of their (broadcast)
#: operands to one element of their result.
_CONE_CATEGORIES = ("unary", "binary", "ternary", "cast", "copy")


def _in_cone(op) -> bool:
    """A fuser op that maps each element of its broadcast tensor operands to
    one element of its tensor result: pointwise ops, casts and copies."""
    if isinstance(op, ir.Block):
        return False
    name = O.short_name(op.name)
    return name is not None and len(op.results) == 1 and T.is_tensor(op.results[0].type) and O.CATEGORY[name] in _CONE_CATEGORIES


def _element(op: ir.Operation, elements: list[ir.Value]) -> ir.Value:
    """One element of an :func:`_in_cone` op's result from its operands' elements."""
    name = O.short_name(op.name)
    element_type = T.element_type(op.results[0].type)
    category = O.CATEGORY[name]
    if category == "cast":
        return S.cast(elements[0], element_type)
    if category == "copy":
        return elements[0]
    return S.pointwise(name, elements, element_type)


def _is_elementwise(op: ir.Operation) -> bool:
    """A fuser op with a tensor result that lowers to an all-parallel generic
    (or to nothing), so that recomputing it inside a consumer is cheap."""
    name = O.short_name(op.name)
    if name is None or not T.is_tensor(op.results[0].type):
        return False
    return O.CATEGORY[name] in _CONE_CATEGORIES or name in ("broadcast_in_dim", "permute")


def lower_segment(function: ir.Operation, float_extremum: str = "order-keys", fuse_shared: bool = False) -> None:
    """Replace ``function`` by its lowered form (same name, memref arguments);
    ``float_extremum`` as for :func:`lower_op`; ``fuse_shared``: each
    elementwise value one generic of its whole cone (:meth:`_SegmentLowering.cone`,
    :meth:`_SegmentLowering.keeps`)."""
    old_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arg_types = [lowered_argument_type(t) for t in old_type.inputs]
    with function.location, ir.InsertionPoint(function):
        new = func.FuncOp(symbol_name(function), (arg_types, []))
    new.attributes[NUM_INPUTS_ATTR] = function.attributes[NUM_INPUTS_ATTR]
    new.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    entry = new.add_entry_block()
    old_args = list(function.regions[0].blocks[0].arguments)
    memrefs = {old: new_arg for old, new_arg in zip(old_args, entry.arguments) if T.is_tensor(old.type)}
    with ir.InsertionPoint(entry):
        # A bf16 scalar arrives as i16: x86-64 has no bf16 registers, and LLVM
        # passes a bfloat argument between functions (the C-interface wrapper
        # calls the segment) through __truncsfbf2, which libgcc has only from
        # GCC 13 on. The runtime packs it as its 16 bits either way.
        values = {
            old: new_arg if new_arg.type == old.type else arith.BitcastOp(old.type, new_arg).result
            for old, new_arg in zip(old_args, entry.arguments)
            if not T.is_tensor(old.type)
        }
        body = _body_ops(function)
        positions = {op.results[0]: i for i, op in enumerate(body) if fuse_shared and len(op.results) == 1}
        state = _SegmentLowering(values, memrefs, float_extremum=float_extremum, fuse_shared=fuse_shared, positions=positions)
        for op in body:
            with op.location:
                state.lower(op)
        func.ReturnOp([])
    function.erase()


def _called_functions(module: ir.Operation) -> dict[str, ir.FunctionType]:
    """Callee name -> type, for every ``func.call`` in the module."""
    found: dict[str, ir.FunctionType] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            found.setdefault(callee, ir.FunctionType.get([v.type for v in op.operands], [v.type for v in op.results]))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def declare_callees(module: ir.Operation, vector_library: str = "") -> None:
    """Declare every libm function the lowered code calls and the module does
    not define: ``func.func private @expf(f32) -> f32`` with ``llvm.readnone``
    (errno is ignored, as with ``-fno-math-errno``), ``no_unwind`` and
    ``will_return``. With a ``vector_library``, the calls of a libm function
    that libmvec vectorises go to its wrapper instead (``@fuser.expf``),
    which computes every element with one SIMD variant and maps the
    vectoriser to it (:mod:`fuser_mlir.lowering.vector_library`)."""
    body = module.regions[0].blocks[0]
    defined = {symbol_name(op.operation) for op in body.operations if "sym_name" in op.operation.attributes}
    called = _called_functions(module)
    wrapped = sorted(name for name in called if vector_library and name not in defined and VL.split_libm_name(name) is not None)
    if wrapped:
        _call_wrappers(module, set(wrapped))
    with ir.Location.unknown(), ir.InsertionPoint.at_block_begin(body):
        for name, type_ in called.items():
            if name in defined or name in wrapped:
                continue
            declaration = func.FuncOp(name, type_, visibility="private")
            for flag in ("llvm.readnone", "no_unwind", "will_return"):
                declaration.attributes[flag] = ir.UnitAttr.get()
    if wrapped:
        snippet = ir.Module.parse(VL.wrappers_text(wrapped, vector_library))
        anchor = body.operations[0]
        for op in list(snippet.body.operations):
            op.operation.move_before(anchor)


def _call_wrappers(module: ir.Operation, names: set[str]) -> None:
    """Point every ``func.call`` of one of ``names`` at its wrapper."""
    for call, callee in _callers(module, names):
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(VL.wrapper_name(callee))


def _check_op(op: ir.Operation) -> str | None:
    """The diagnostic for an op the lowering cannot take, or None."""
    name = O.short_name(op.name)
    if name is None:
        if op.name in ("func.return",):
            return None
        if any(T.is_tensor(v.type) for v in [*op.operands, *op.results]) or op.regions:
            return f"{op_label(op)} is not supported inside a segment by fuser-lower-to-cpu (only fuser ops and scalar ops)"
        return None
    if name == "empty":
        return f"{op_label(op)} is not supported inside a segment by fuser-lower-to-cpu; outline the segment so that every destination is a function argument"
    if O.CATEGORY[name] == "reduction" and T.is_bool(op.operands[0].type):
        return f"{op_label(op)} reduces i1 values, which fuser-lower-to-cpu does not support; cast to an integer type first"
    return None


@dataclass
class LowerToCpuPass(FuserPass):
    NAME = "fuser-lower-to-cpu"
    SUMMARY = "Lower segment functions to linalg on tensors over strided memref arguments."

    #: SIMD variants for libm calls: "" (none), libmvec-avx2, libmvec-sse.
    vector_library: str = ""
    #: How float max/min reductions combine (see FLOAT_EXTREMA): order-keys or maximumf.
    float_extremum: str = "order-keys"
    #: Refuse whole fusions (see unsegmented_errors) instead of leaving them as they are.
    segments_only: bool = False
    #: Lower each elementwise value as one generic of its whole cone, so that a value
    #: read twice is computed in registers rather than written to a buffer (but a cone
    #: of more than SHARE_LIMIT ops that a reduction and other ops read is computed once).
    fuse_shared: bool = False

    def run(self, module: ir.Operation) -> None:
        if self.vector_library and self.vector_library not in VL.LIBRARIES:
            known = ", ".join(VL.LIBRARIES)
            emit_error(module, f"fuser-lower-to-cpu: unknown vector-library '{self.vector_library}' (known: {known}, or empty for none)")
            raise PassFailure()
        if self.float_extremum not in FLOAT_EXTREMA:
            known = ", ".join(FLOAT_EXTREMA)
            emit_error(module, f"fuser-lower-to-cpu: unknown float-extremum '{self.float_extremum}' (known: {known})")
            raise PassFailure()
        segments = segment_functions(module)
        failed = self.segments_only and unsegmented_errors(module, self.NAME)
        for call, callee in _callers(module, {symbol_name(f) for f in segments}):
            emit_error(
                call,
                f"{op_label(call)} calls segment @{callee}, whose signature fuser-lower-to-cpu rewrites to memrefs; "
                "lower the host function to a launch plan first and hand this pass the segment functions only",
            )
            failed = True
        for function in segments:
            for op in _body_ops(function):
                message = _check_op(op)
                if message is not None:
                    emit_error(op, message)
                    failed = True
        if failed:
            raise PassFailure()
        for function in segments:
            lower_segment(function, self.float_extremum, self.fuse_shared)
        if segments:
            declare_callees(module, self.vector_library)
