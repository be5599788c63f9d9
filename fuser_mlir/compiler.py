"""compile_fusion: a FusionDefinition to a runnable CompiledFusion.

Stages (each kept as text, ``compiled.ir(stage)``):

``fuser``
    the definition in the fuser dialect, verified (``fuser-verify``);
``segmented``
    ops annotated with their segment (``fuser-segment``);
``outlined``
    one private ``func.func`` per segment and a host function of calls
    (``fuser-outline-segments``);
``cpu``
    the segment functions lowered to the LLVM dialect (``fuser-cpu-pipeline``).

The host function becomes a :class:`~fuser_mlir.runtime.plan.LaunchPlan`
(plain data); the segment functions become kernels. A failed compile raises
:class:`~fuser_mlir.errors.CompileError` with the diagnostics, the pipeline
and the path of the saved input IR.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from fuser_mlir import config
from fuser_mlir._mlir import ir
from fuser_mlir.dialect import make_context
from fuser_mlir.dialect import ops as O
from fuser_mlir.dialect import types as T
from fuser_mlir.errors import CompileError, PipelineError
from fuser_mlir.pipeline import run_pipeline
from fuser_mlir.runtime.plan import Buffer, LaunchPlan, MemoryStats, Step, execute

STAGES = ("fuser", "segmented", "outlined", "cpu")

_NUMPY_DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "i1": "bool",
}


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a plan dtype name (``bfloat16`` from ml_dtypes)."""
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def allocate(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.empty(shape, dtype=numpy_dtype(dtype))


@dataclass
class Segment:
    """One kernel of a compiled fusion, for introspection."""

    name: str
    ops: list[str]  # op names in program order
    inputs: list[int]  # plan buffer ids (tensors) it reads
    outputs: list[int]  # plan buffer ids it writes


@dataclass
class CompiledFusion:
    """A fusion compiled for one signature: launch plan + kernels."""

    name: str
    device: str
    plan: LaunchPlan
    segments: list[Segment]
    stages: dict[str, str]
    program: object = None  # keeps the JIT engine (and so the kernels) alive
    kernels: dict[str, object] = field(default_factory=dict)

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def ir(self, stage: str = "fuser") -> str:
        """The IR after ``stage`` (one of STAGES)."""
        if stage not in self.stages:
            raise KeyError(f"unknown stage '{stage}'; stages: {', '.join(self.stages)}")
        return self.stages[stage]

    def execute(self, args: Sequence[object], given: dict[int, object], *, memory: MemoryStats | None = None) -> list:
        """Run on validated arguments (see FusionExecutorCache.run)."""
        return execute(self.plan, self.kernels, args, given, allocate, memory)

    def to_dot(self) -> str:
        from fuser_mlir.visualize import plan_to_dot

        return plan_to_dot(self)


def _save_reproducer(text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = config.reproducer_dir() / f"fuser-reproducer-{digest}.mlir"
    path.write_text(text)
    return str(path)


def _run_stage(module: ir.Module, pipeline: str) -> None:
    before = str(module)
    try:
        run_pipeline(module, pipeline, print_ir_after_all=config.dump_ir())
    except PipelineError as err:
        raise CompileError(
            "compiling the fusion failed", pipeline=pipeline, diagnostics=err.diagnostics, reproducer=_save_reproducer(before)
        ) from None


def compile_fusion(fusion, *, given_outputs: tuple[bool, ...] | None = None, device: str = "cpu") -> CompiledFusion:
    """Compile ``fusion`` for one set of given outputs, on ``device``."""
    context = make_context()
    stages: dict[str, str] = {}
    with context, ir.Location.unknown():
        module = fusion.build_module(context, given_outputs=given_outputs)
        _run_stage(module, "fuser-verify")
        stages["fuser"] = str(module)
        _run_stage(module, "fuser-segment")
        stages["segmented"] = str(module)
        _run_stage(module, "fuser-outline-segments,fuser-verify")
        stages["outlined"] = str(module)
        host = _host_function(module, fusion.name)
        given_positions = [i for i, g in enumerate(given_outputs or ()) if g]
        plan, segments = build_plan(host, module, given_positions)
        kernel_module = _segment_module(module, fusion.name)
    program, kernels = _compile_kernels(kernel_module, stages)
    return CompiledFusion(
        name=fusion.name, device=device, plan=plan, segments=segments, stages=stages, program=program, kernels=kernels
    )


def _host_function(module: ir.Module, name: str) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    raise CompileError(f"outlining left no host function '@{name}'")


def _segment_module(module: ir.Module, name: str) -> str:
    """The segment functions alone (public), as text for the CPU pipeline."""
    pieces = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or ir.StringAttr(op.attributes["sym_name"]).value == name:
            continue
        pieces.append(str(op))
    return "module {\n" + "\n".join(pieces) + "\n}\n"


def _compile_kernels(text: str, stages: dict[str, str]):
    from fuser_mlir.lowering.cpu import compile_cpu

    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(text)
        try:
            program = compile_cpu(module)
        except PipelineError as err:
            raise CompileError(
                "lowering the fusion to the CPU failed", pipeline=err.pipeline, diagnostics=err.diagnostics, reproducer=_save_reproducer(text)
            ) from None
        stages["cpu"] = str(module)
    return program, dict(program.kernels)


# -- launch plan from the host function ------------------------------------------


class _PlanBuilder:
    """Walks the host function once, turning it into buffers and steps."""

    def __init__(self, host: ir.Operation, module: ir.Module):
        self.host = host
        self.block = host.regions[0].blocks[0]
        self.num_inputs = ir.IntegerAttr(host.attributes["fuser.num_inputs"]).value
        self.callees = {
            ir.StringAttr(op.attributes["sym_name"]).value: op.operation
            for op in module.body.operations
            if op.operation.name == "func.func"
        }
        self.buffers: list[Buffer] = []
        self.steps: list[Step] = []
        self.segments: list[Segment] = []
        self.value_buffer: dict[ir.Value, int] = {}
        self.value_size: dict[ir.Value, list] = {}
        self.scalar_input: dict[ir.Value, int] = {}
        self.dest_order: list[int] = []

    def new_buffer(self, kind: str, t: ir.Type, shape: list, index: int | None = None) -> int:
        buf = Buffer(id=len(self.buffers), kind=kind, dtype=_NUMPY_DTYPES[T.element_name(t)], shape=shape, index=index)
        self.buffers.append(buf)
        return buf.id

    def arguments(self, given_positions: list[int]) -> None:
        dest_index = 0
        for i, arg in enumerate(self.block.arguments):
            if i >= self.num_inputs:
                t = arg.type
                self.value_buffer[arg] = self.new_buffer("given", t, [], index=given_positions[dest_index])
                dest_index += 1
            elif T.is_tensor(arg.type):
                shape = [["dim", i, d] for d in range(T.rank(arg.type))]
                self.value_buffer[arg] = self.new_buffer("input", arg.type, shape, index=i)
            else:
                self.scalar_input[arg] = i

    def size_expr(self, value: ir.Value) -> list:
        if value in self.value_size:
            return self.value_size[value]
        raise CompileError(f"the host computes a size with '{value.owner.name}', which the launch plan cannot express")

    def host_scalar(self, op: ir.Operation, name: str) -> None:
        result = op.results[0]
        if name == "size":
            source = op.operands[0]
            buf = self.buffers[self.value_buffer[source]]
            dim = ir.IntegerAttr(op.attributes["dim"]).value
            self.value_size[result] = buf.shape[dim] if buf.shape else ["dim", buf.index, dim]
        elif name == "constant":
            self.value_size[result] = ["const", ir.IntegerAttr(op.attributes["value"]).value]
        elif name in ("add", "sub", "mul", "div"):
            self.value_size[result] = [name, self.size_expr(op.operands[0]), self.size_expr(op.operands[1])]
        else:
            raise CompileError(f"the host function has a '{op.name}' the launch plan cannot express")

    def empty(self, op: ir.Operation) -> None:
        t = op.results[0].type
        sizes = iter(op.operands)
        shape = [self.size_expr(next(sizes)) if s is None else ["const", s] for s in T.shape(t)]
        self.value_buffer[op.results[0]] = self.new_buffer("intermediate", t, shape)

    def call(self, op: ir.Operation) -> None:
        callee_name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        callee = self.callees[callee_name]
        k = ir.IntegerAttr(callee.attributes["fuser.num_inputs"]).value
        args, writes, reads = [], [], []
        for position, operand in enumerate(op.operands):
            if operand in self.scalar_input:
                args.append(["scalar", self.scalar_input[operand]])
                continue
            buffer_id = self.value_buffer[operand]
            args.append(["buffer", buffer_id])
            (writes if position >= k else reads).append(buffer_id)
        for result, buffer_id in zip(op.results, writes):
            self.value_buffer[result] = buffer_id
        step_index = len(self.steps)
        for buffer_id in writes + reads:
            self.buffers[buffer_id].last_use = step_index
        self.steps.append(Step(kernel=callee_name, args=args, writes=writes))
        ops = [o.operation.name for o in callee.regions[0].blocks[0].operations if O.short_name(o.operation.name) not in (None, "store")]
        self.segments.append(Segment(name=callee_name, ops=ops, inputs=reads, outputs=writes))

    def build(self, given_positions: list[int]) -> LaunchPlan:
        self.arguments(given_positions)
        outputs: list[int] = []
        for op in self.block.operations:
            op = op.operation
            name = O.short_name(op.name)
            if name == "empty":
                self.empty(op)
            elif name is not None:
                self.host_scalar(op, name)
            elif op.name == "func.call":
                self.call(op)
            elif op.name == "func.return":
                outputs = [self.value_buffer[v] for v in op.operands]
        for position, buffer_id in enumerate(outputs):
            buf = self.buffers[buffer_id]
            if buf.kind == "intermediate":
                buf.kind, buf.index = "output", position
        return LaunchPlan(num_inputs=self.num_inputs, buffers=self.buffers, steps=self.steps, outputs=outputs)


def build_plan(host: ir.Operation, module: ir.Module, given_positions: list[int] | None = None) -> tuple[LaunchPlan, list[Segment]]:
    """The launch plan and segment list of an outlined fusion."""
    builder = _PlanBuilder(host, module)
    plan = builder.build(given_positions or [])
    return plan, builder.segments
