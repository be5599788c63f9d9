"""compile_fusion: a FusionDefinition to a runnable CompiledFusion.

Stages (each kept as text, ``compiled.ir(stage)``):

``fuser``
    the definition in the fuser dialect, verified (``fuser-verify``);
``segmented``
    ops annotated with their segment (``fuser-segment``), in-place hazards
    resolved (``fuser-resolve-alias-hazards``);
``outlined``
    one private ``func.func`` per segment and a host function of calls
    (``fuser-outline-segments``);
``cpu``
    the segment functions lowered to the LLVM dialect (``fuser-cpu-pipeline``),
    for ``device="cpu"``;
``gpu``
    for ``device="cuda"``: the segments' kernels in the gpu dialect, as the
    schedulers wrote them (:mod:`fuser_mlir.lowering.gpu_schedule`); their
    launch programs are ``compiled.program.programs``, the PTX
    ``compiled.ptx`` (also of a fusion loaded from the disk cache or an
    artifact, which keeps no ``program``).

The host function becomes a :class:`~fuser_mlir.runtime.plan.LaunchPlan`
(plain data); the segment functions become kernels. A failed compile raises
:class:`~fuser_mlir.errors.CompileError` with the diagnostics, the pipeline
and the path of the saved input IR; a ``hazard_policy`` that refuses the
fusion (``reject``, or ``reorder`` of an update that cannot move) raises one
that names the policy, the hazards and the policy to pass instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fuser_mlir import config
from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import DestRef, EmptyRef, HostPlan, InputRef, ScalarRef, describe_host
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import CompileError, DefinitionError, PipelineError
from fuser_mlir.lowering.cpu import compile_cpu
from fuser_mlir.passes.resolve_alias_hazards import FIXES, resolutions
from fuser_mlir.pipeline import run_pipeline, save_reproducer
from fuser_mlir.runtime.cpu import DTYPE_OF_ELEMENT
from fuser_mlir.runtime.image import KernelImage
from fuser_mlir.runtime.signature import FusionSignature
from fuser_mlir.runtime.plan import Buffer, HazardResolution, Inspectable, LaunchPlan, MemoryStats, Runnable, Segment, Step, execute_on_cpu

STAGES = ("fuser", "segmented", "outlined", "cpu", "gpu")



def device_index(device: str) -> int:
    """``"cuda:1"`` -> 1, ``"cuda"`` -> 0."""
    _, _, index = device.partition(":")
    return int(index or 0)


@dataclass
class CompiledFusion(Inspectable, Runnable):
    """A fusion compiled for one signature: launch plan + kernels. ``run`` /
    ``execute`` take arguments of that signature (validated as by
    ``fd.execute``); ``export`` writes it as an artifact."""

    name: str
    device: str
    plan: LaunchPlan
    segments: list[Segment]
    stages: dict[str, str]
    program: object = None  # keeps the JIT engine (and so the kernels) alive
    kernels: dict[str, object] = field(default_factory=dict)
    #: in-place updates whose hazards were resolved; empty when none needed it
    hazard_report: list[HazardResolution] = field(default_factory=list)
    #: the kernels as files + calling data, for artifacts and the disk cache
    #: (None when the backend made none; ``image_error`` says why)
    image: KernelImage | None = None
    image_error: str = ""
    #: what arguments are validated against (JSON-able; see runtime/signature.py)
    signature: FusionSignature | None = None
    #: the executor cache key this was compiled for (None from compile_fusion directly)
    key: tuple | None = None
    hazard_policy: str = "auto"

    def launch(
        self,
        args: Sequence[object],
        given: dict[int, object],
        *,
        memory: MemoryStats | None = None,
        torch_outputs: bool = False,
        raw: bool = False,
    ) -> list:
        """Run on validated arguments (see FusionExecutorCache.run): NumPy
        arrays on the CPU; on CUDA, device-array views, or with ``raw`` the
        caller's own torch tensors / DeviceArrays (new outputs are then
        returned as torch tensors or DeviceArrays, not views)."""
        if self.device == "cpu":
            return execute_on_cpu(self.plan, self.kernels, args, given, memory)
        from fuser_mlir.runtime import cuda

        return cuda.execute_plan(
            self.plan, self.kernels, args, given, memory, device=device_index(self.device), torch_outputs=torch_outputs, raw=raw
        )

    def export(self, path) -> str:
        """Write this fusion as an artifact: a directory, or one zip file when
        ``path`` ends in ``.fsn`` (see :mod:`fuser_mlir.runtime.artifact`).
        Load it with ``fuser_mlir.load(path)``. Returns the path."""
        from fuser_mlir.runtime.artifact import export

        return export(self, path)


def _run_stage(module: ir.Module, pipeline: str, before: str, refusal: Callable[[str], CompileError | None] | None = None) -> str:
    """Run ``pipeline`` on ``module``; return the IR after it. On failure the
    error carries ``before`` (the stage's input) saved as a reproducer, unless
    ``refusal`` (:func:`_refusal`) makes the diagnostics the caller's choice."""
    try:
        run_pipeline(module, pipeline, print_ir_after_all=config.dump_ir())
    except PipelineError as err:
        refused = refusal(err.diagnostics) if refusal is not None else None
        raise refused or CompileError(
            "compiling the fusion failed", pipeline=pipeline, diagnostics=err.diagnostics, reproducer=save_reproducer(before)
        ) from None
    return str(module)


#: What a policy that may refuse says of a fusion it refuses, and what to pass instead.
_REFUSALS = {
    "reject": ("updates an input in place while other ops read its entry value", 'pass hazard_policy="auto" (the default), which reorders such an update or copies it'),
    "reorder": ("has an in-place update that cannot move after the reads of its input", 'pass hazard_policy="copy" or "auto" (the default), which copy it'),
}


def _refusal(policy: str, name: str) -> Callable[[str], CompileError | None] | None:
    """For :func:`_run_stage` of the hazard pass under ``policy``: its
    refusals (``reject``, or ``reorder`` of an update that cannot move: the
    diagnostics end with the pass's ``FIXES``) are the caller's choice, not
    a failed compile, so their CompileError names ``hazard_policy`` and
    saves no reproducer. None for a policy that never refuses."""
    if policy not in _REFUSALS:
        return None
    what, fix = _REFUSALS[policy]

    def refused(diagnostics: str) -> CompileError | None:
        if FIXES[policy] not in diagnostics:
            return None  # another failure: a failed compile
        found = diagnostics.rstrip().replace(FIXES[policy], "")
        return CompileError(f'hazard_policy="{policy}" refuses fusion {name!r}: it {what}:\n{found}\n{fix}')

    return refused


#: Layout of the buffers the runtime allocates: dense, and aligned far beyond 16 bytes.
FRESH_LAYOUT = (True, 256)


def segment_layouts(plan: LaunchPlan, layouts: dict | None) -> dict[str, list]:
    """(dense, alignment) of every tensor argument of every segment (None for
    scalars), from the layouts of the fusion's inputs and given outputs
    (unknown ones count as strided and unaligned)."""
    layouts = layouts or {}
    found = {}
    for step in plan.steps:
        entry = []
        for kind, ref in step.args:
            if kind == "scalar":
                entry.append(None)
                continue
            buf = plan.buffers[ref]
            if buf.kind == "input":
                known = layouts.get("input", [])
                entry.append(known[buf.index] if buf.index < len(known) and known[buf.index] else (False, 1))
            elif buf.kind == "given":
                entry.append(layouts.get("given", {}).get(buf.index, (False, 1)))
            else:
                entry.append(FRESH_LAYOUT)
        found[step.kernel] = entry
    return found


def compile_fusion(
    fusion,
    *,
    given_outputs: tuple[bool, ...] | None = None,
    device: str = "cpu",
    hazard_policy: str = "auto",
    layouts: dict | None = None,
) -> CompiledFusion:
    """Compile ``fusion`` for one set of given outputs, on ``device``.

    ``hazard_policy`` (``auto``, ``reorder``, ``copy`` or ``reject``) is how in-place alias
    hazards are resolved (see ``fuser-resolve-alias-hazards``). ``layouts``
    says what the GPU kernels may assume of the arguments
    (``{"input": [(dense, alignment) or None per input], "given": {output
    index: (dense, alignment)}}``, from the executor's cache key, which
    holds them); without it, kernels assume nothing."""
    if not fusion.outputs:
        raise DefinitionError(
            f"fusion {fusion.name!r} has no outputs, so it computes nothing; add one with fd.add_output(value) in its `with` block"
        )
    context = make_context()
    stages: dict[str, str] = {}
    with context, ir.Location.unknown():
        module = fusion.build_module(context, given_outputs=given_outputs)
        stages["fuser"] = _run_stage(module, "fuser-verify", str(module))
        stages["segmented"] = _run_stage(
            module, f"fuser-segment,fuser-resolve-alias-hazards{{policy={hazard_policy}}}", stages["fuser"], _refusal(hazard_policy, fusion.name)
        )
        report = [HazardResolution(*entry) for entry in resolutions(module.operation)]
        stages["outlined"] = _run_stage(module, "fuser-outline-segments,fuser-verify", stages["segmented"])
        given_positions = [i for i, g in enumerate(given_outputs or ()) if g]
        plan, segments = build_plan(describe_host(module, fusion.symbol), given_positions)
        image, image_error = None, f"the {device} backend makes no kernel image yet"
        if device == "cpu":
            program = compile_cpu(module)
            stages["cpu"] = program.llvm_dialect
            kernels = dict(program.kernels)
            image, image_error = program.image, program.image_error
        else:
            from fuser_mlir.lowering.gpu import compile_gpu

            program = compile_gpu(module, device=device_index(device), layouts=segment_layouts(plan, layouts))
            stages["gpu"] = program.kernel_ir
            kernels = dict(program.kernels)
            image = program.image(fusion.symbol)
    return CompiledFusion(
        name=fusion.name, device=device, plan=plan, segments=segments, stages=stages, program=program, kernels=kernels,
        hazard_report=report, image=image, image_error="" if image is not None else image_error,
        signature=FusionSignature.from_definition(fusion), hazard_policy=hazard_policy,
    )


# -- launch plan from the host function ------------------------------------------


def _tensor_dtype(type_text: str) -> str:
    """``tensor<?x4xbf16>`` -> ``bfloat16`` (plan dtype names are NumPy's)."""
    match = re.fullmatch(r"tensor<(?:[^>]*x)?(\w+)>", type_text)
    if match is None:
        raise CompileError(f"the host passes a '{type_text}' where the launch plan expects a ranked tensor")
    return DTYPE_OF_ELEMENT[match.group(1)]


class _PlanBuilder:
    """Turns a HostPlan (the outlined host function as data) into a LaunchPlan."""

    def __init__(self, host: HostPlan, given_positions: Sequence[int]):
        self.host = host
        self.buffers: list[Buffer] = []
        self.ids: dict[object, int] = {}
        for i, type_text in enumerate(host.arg_types):
            if not type_text.startswith("tensor<"):
                continue
            if i < host.num_inputs:
                rank = len(_tensor_shape(type_text))
                self._add(InputRef(i), "input", _tensor_dtype(type_text), [["dim", i, d] for d in range(rank)], i)
            else:
                j = i - host.num_inputs
                self._add(DestRef(j), "given", _tensor_dtype(type_text), [], given_positions[j])
        for b, empty in enumerate(host.buffers):
            shape = [["const", d] if isinstance(d, int) else self.size(d) for d in empty.dims]
            self._add(EmptyRef(b), "intermediate", DTYPE_OF_ELEMENT[empty.dtype], shape, None)

    def _add(self, ref, kind: str, dtype: str, shape: list, index: int | None) -> None:
        self.ids[ref] = len(self.buffers)
        last = self.host.last_use(ref)
        self.buffers.append(Buffer(len(self.buffers), kind, dtype, shape, index, -1 if last is None else last))

    def size(self, ref) -> list:
        """The size formula of a host scalar."""
        if not isinstance(ref, ScalarRef):
            raise CompileError(f"a buffer size comes from {ref}, which the launch plan cannot express")
        scalar = self.host.scalars[ref.index]
        if scalar.op == "size" and isinstance(scalar.operands[0], InputRef):
            return ["dim", scalar.operands[0].index, scalar.dim]
        if scalar.op == "cast":  # the frontend divides sizes in f64 and casts back (exact below 2**53)
            return self.size(scalar.operands[0])
        if scalar.op == "constant":
            return ["const", int(scalar.value)]
        if scalar.op in ("add", "sub", "mul", "div"):
            return [scalar.op, self.size(scalar.operands[0]), self.size(scalar.operands[1])]
        raise CompileError(f"the host computes a size with 'fuser.{scalar.op}', which the launch plan cannot express")

    def arg(self, ref) -> list:
        if isinstance(ref, InputRef) and ref not in self.ids:
            return ["scalar", ref.index]
        if isinstance(ref, ScalarRef):
            raise CompileError("a segment takes a scalar the host computes, which the launch plan cannot pass yet")
        return ["buffer", self.ids[self.host.storage(ref)]]

    def build(self) -> tuple[LaunchPlan, list[Segment]]:
        steps, segments = [], []
        for i, step in enumerate(self.host.steps):
            writes = [self.ids[r] for r in self.host.writes(i)]
            steps.append(Step(kernel=step.callee, args=[self.arg(r) for r in step.operands], writes=writes))
            reads = [self.ids[r] for r in self.host.reads(i)]
            segments.append(Segment(name=step.callee, ops=list(step.ops), inputs=reads, outputs=writes))
        outputs = [self.ids[self.host.storage(r)] for r in self.host.returns]
        for position, buffer_id in enumerate(outputs):
            buf = self.buffers[buffer_id]
            if buf.kind == "intermediate":
                buf.kind, buf.index = "output", position
        plan = LaunchPlan(num_inputs=self.host.num_inputs, buffers=self.buffers, steps=steps, outputs=outputs)
        return plan, segments


def _tensor_shape(type_text: str) -> list[str]:
    inner = type_text[len("tensor<") : -1]
    return inner.split("x")[:-1]


def build_plan(host: HostPlan, given_positions: Sequence[int] = ()) -> tuple[LaunchPlan, list[Segment]]:
    """The launch plan and segment list of an outlined fusion's host function."""
    return _PlanBuilder(host, given_positions).build()
