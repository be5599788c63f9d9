"""Compile segment functions for NVIDIA GPUs: PTX kernels and a JIT-compiled host.

:func:`compile_gpu` lowers each segment function like the CPU path down to
loops on memrefs, then maps the loops to the GPU:

1. ``fuser-lower-to-cpu`` and bufferization, as ``fuser-cpu-pipeline`` does,
   then ``convert-linalg-to-parallel-loops``: one ``scf.parallel`` nest per
   linalg op, reductions as sequential ``scf.for`` inside.
2. Python rewrites (:func:`prepare_for_gpu`): every ``scf.parallel`` is
   collapsed to one dimension (so consecutive threads touch consecutive
   innermost elements), ``scf.parallel``s that store nothing are erased, the
   loop-free body of a 0-d op gets a one-thread loop,
   libm calls become libdevice calls (``expf`` -> ``__nv_expf``), and
   ``memref.alloc``/``dealloc`` of intermediates become ``gpu.alloc``/``dealloc``.
3. Tiling by :data:`THREADS` and ``convert-parallel-loops-to-gpu``: a 1-D grid
   of 1-D blocks per loop nest, outlined into ``gpu.module``s, lowered through
   ``convert-gpu-to-nvvm`` and linked with libdevice, serialised to PTX
   (``gpu-module-to-binary{format=isa}``) or, where ``ptxas`` is on PATH, to a
   cubin (``format=bin``: no driver JIT when the module loads), and the host
   side to the LLVM dialect with ``gpu-to-llvm``.

The host side of each segment (sizes, grid formulas, the launches) is
JIT-compiled on the CPU with ExecutionEngine; its calls to MLIR's GPU runtime
(``mgpuLaunchKernel``, ...) are served by :mod:`fuser_mlir.runtime.cuda`. A
segment is then called like a CPU kernel, with device buffers
(:class:`~fuser_mlir.runtime.cpu.CpuKernel` builds the memref descriptors).

This is the correct, simple baseline: one thread per element of a loop nest
(one per output row for reductions). Schedulers that reach the bandwidth limit
are the GPU performance work.
"""

from __future__ import annotations

import ctypes
import re
import shutil
from dataclasses import dataclass, field

from fuser_mlir import config
from fuser_mlir._mlir import ExecutionEngine, arith, ir, scf
from fuser_mlir.errors import CompileError, PipelineError
from fuser_mlir.lowering.cpu import copies_as_linalg, drop_unsigned_wrap_flags, external_symbols, segments_only
from fuser_mlir.pipeline import PIPELINES, run_pipeline, save_reproducer
from fuser_mlir.runtime import cuda
from fuser_mlir.runtime.cpu import CpuKernel

#: Threads per block of the baseline kernels.
THREADS = 256
#: The GPU architecture compiled for when no device says otherwise.
DEFAULT_ARCH = "sm_90"

#: Segments to linalg on memrefs (the CPU pipeline's front half).
BUFFERS_PIPELINE = (
    "fuser-verify, fuser-lower-to-cpu, canonicalize, linalg-fuse-elementwise-ops, eliminate-empty-tensors, "
    "empty-tensor-to-alloc-tensor, one-shot-bufferize{buffer-alignment=0}, buffer-deallocation-pipeline, "
    "canonicalize, convert-bufferization-to-memref"
)
#: linalg on memrefs to parallel loops (after :func:`copies_as_linalg`).
PARALLEL_LOOPS_PIPELINE = "convert-linalg-to-parallel-loops, canonicalize"
LOOPS_PIPELINE = f"{BUFFERS_PIPELINE}, {PARALLEL_LOOPS_PIPELINE}"


def kernels_pipeline(arch: str, libdevice: str, binary_format: str = "isa") -> str:
    """Loops on memrefs to kernels (``isa``: PTX, ``bin``: a cubin made by
    ``ptxas``) and an LLVM-dialect host."""
    link = f" l={libdevice}" if libdevice else ""
    return (
        f"func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={THREADS} no-min-max-bounds=true}}, "
        "gpu-map-parallel-loops, convert-parallel-loops-to-gpu), gpu-kernel-outlining, canonicalize, "
        "lower-affine, convert-scf-to-cf, gpu.module(convert-gpu-to-nvvm), "
        f"nvvm-attach-target{{chip={arch}{link}}}, reconcile-unrealized-casts, gpu-module-to-binary{{format={binary_format}}}, "
        "expand-strided-metadata, lower-affine, finalize-memref-to-llvm, gpu-to-llvm, convert-math-to-llvm, "
        "convert-arith-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts"
    )


PIPELINES["fuser-gpu-loops-pipeline"] = LOOPS_PIPELINE

# -- Python rewrites between the pipelines ---------------------------------------------


def _walk(op: ir.Operation, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(child):
        if child.name == name:
            found.append(child)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def _index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def collapse_parallel(loop: ir.Operation) -> None:
    """Rewrite an ``scf.parallel`` with zero lower bounds and unit steps into a
    1-D loop over the product of its bounds, recovering each index by division
    (the last index varies fastest)."""
    rank = len(loop.regions[0].blocks[0].arguments)
    bounds = list(loop.operands)[rank : 2 * rank]
    with ir.InsertionPoint(loop), loop.location:
        total = bounds[0]
        for bound in bounds[1:]:
            total = arith.MulIOp(total, bound).result
        new = scf.ParallelOp([], [_index_constant(0)], [total], [_index_constant(1)], [])
        block = new.region.blocks.append(ir.IndexType.get())
    old = loop.regions[0].blocks[0]
    first = list(old.operations)[0]
    with ir.InsertionPoint(first), loop.location:
        remaining = block.arguments[0]
        indices = [None] * rank
        for d in range(rank - 1, 0, -1):
            indices[d] = arith.RemUIOp(remaining, bounds[d]).result
            remaining = arith.DivUIOp(remaining, bounds[d]).result
        indices[0] = remaining
    for argument, value in zip(old.arguments, indices):
        argument.replace_all_uses_with(value)
    for op in list(old.operations):
        block.append(op)
    loop.erase()


def _is_collapsible(loop: ir.Operation) -> bool:
    rank = len(loop.regions[0].blocks[0].arguments)
    operands = list(loop.operands)
    if len(operands) != 3 * rank or loop.results:
        return False  # has reductions
    lower, steps = operands[:rank], operands[2 * rank :]
    return all(_constant_value(v) == 0 for v in lower) and all(_constant_value(v) == 1 for v in steps)


def _constant_value(value: ir.Value):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def _top_level_loops(func: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in func.regions[0].blocks[0].operations if op.operation.name == "scf.parallel"]


def _rename_libm_calls(module: ir.Module) -> ir.Module:
    """``@expf`` -> ``@__nv_expf``: libdevice implements the libm functions
    under the same names with a ``__nv_`` prefix."""
    text = module.operation.get_asm(enable_debug_info=True)
    names = [
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.body.operations
        if op.operation.name == "func.func" and not op.operation.regions[0].blocks
    ]
    for name in names:
        # As LLVM-dialect declarations and calls: the func-to-llvm patterns inside
        # convert-gpu-to-nvvm would call them through C-interface wrappers.
        text = re.sub(rf"func\.func private @{name}\(([^)]*)\) -> (\w+) attributes \{{[^}}]*\}}", rf"llvm.func @__nv_{name}(\1) -> \2", text)
        text = re.sub(rf"func\.call @{name}\(", f"llvm.call @__nv_{name}(", text)
    return ir.Module.parse(text, context=module.context)


def _token() -> ir.Type:
    return ir.Type.parse("!gpu.async.token")


def _wait(tokens: list[ir.Value], *, asynchronous: bool) -> ir.Value | None:
    """``gpu.wait async [tokens]`` (a new token) or ``gpu.wait [tokens]``."""
    op = ir.Operation.create("gpu.wait", results=[_token()] if asynchronous else [], operands=tokens)
    return op.results[0] if asynchronous else None


def _host_accessed(alloc: ir.Operation) -> bool:
    """Whether the host code itself reads or writes the buffer: the shape
    operand of a ``memref.reshape`` (a memref of ``index``). Such a buffer
    stays in host memory; every other buffer is device memory."""
    element = ir.MemRefType(alloc.results[0].type).element_type
    return isinstance(element, ir.IndexType) or any(
        use.owner.name == "memref.reshape" and use.operand_number == 1 for use in alloc.results[0].uses
    )


def _device_allocations(func: ir.Operation) -> None:
    """``memref.alloc``/``dealloc`` of intermediates in a segment's host code ->
    stream-ordered ``gpu.alloc``/``dealloc`` (gpu-to-llvm lowers only their
    async forms; the runtime's streams make the waits free). Buffers the host
    code accesses itself stay host allocations."""
    for alloc in _walk(func, "memref.alloc"):
        if _host_accessed(alloc):
            continue
        with ir.InsertionPoint(alloc), alloc.location:
            start = _wait([], asynchronous=True)
            new = ir.Operation.create(
                "gpu.alloc",
                results=[alloc.results[0].type, _token()],
                operands=[start, *alloc.operands],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, len(alloc.operands), 0])},
            )
            _wait([new.results[1]], asynchronous=False)
        alloc.results[0].replace_all_uses_with(new.results[0])
        alloc.erase()
    for dealloc in _walk(func, "memref.dealloc"):
        if dealloc.operands[0].owner.name == "memref.alloc":
            continue  # a host buffer (see _host_accessed)
        with ir.InsertionPoint(dealloc), dealloc.location:
            start = _wait([], asynchronous=True)
            done = ir.Operation.create(
                "gpu.dealloc",
                results=[_token()],
                operands=[start, *dealloc.operands],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])},
            )
            _wait([done.results[0]], asynchronous=False)
        dealloc.erase()


def _is_host_buffer(value: ir.Value) -> bool:
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.name == "memref.alloc"


_RUN_BOUNDARIES = ("scf.parallel", "memref.dim", "memref.alloc", "memref.dealloc", "memref.reshape", "func.return")


def _touches_device(op: ir.Operation) -> bool:
    """A top-level load/store of device memory, or a loop nest (not an
    ``scf.parallel``) that contains one: code the host must not run."""
    if op.name in ("memref.load", "memref.store"):
        return not _is_host_buffer(op.operands[1 if op.name == "memref.store" else 0])
    if op.name == "scf.parallel" or not op.regions:
        return False
    return any(_touches_device(inner) for name in ("memref.load", "memref.store") for inner in _walk(op, name))


def _scalar_runs(func: ir.Operation) -> list[list[ir.Operation]]:
    """Runs of top-level ops that touch device memory outside any parallel
    loop: the body of a 0-d linalg op, or a reduction into a 0-d result, which
    have no parallel loop to map to threads. A run ends at its last op that
    touches device memory."""
    ops = [op.operation for op in func.regions[0].blocks[0].operations]
    runs, i = [], 0
    while i < len(ops):
        if not _touches_device(ops[i]):
            i += 1
            continue
        j, last = i, i
        while j < len(ops) and ops[j].name not in _RUN_BOUNDARIES and not ops[j].name.startswith("gpu."):
            if _touches_device(ops[j]):
                last = j
            j += 1
        runs.append(ops[i : last + 1])
        i = last + 1
    return runs


def wrap_in_single_thread(run: list[ir.Operation]) -> None:
    """Move ``run`` into an ``scf.parallel`` of one iteration, so it runs on
    the GPU (the device memory it touches is not host memory)."""
    with ir.InsertionPoint(run[0]), run[0].location:
        loop = scf.ParallelOp([], [_index_constant(0)], [_index_constant(1)], [_index_constant(1)], [])
        block = loop.region.blocks.append(ir.IndexType.get())
    with ir.InsertionPoint(block), run[0].location:
        terminator = ir.Operation.create("scf.reduce", results=[], operands=[], regions=0)
    for op in run:
        op.move_before(terminator)
    inside = set(run)
    for op in run:
        for result in op.results:
            if any(use.owner not in inside and use.owner.parent != loop.operation for use in result.uses):
                raise CompileError(f"compile_gpu: '{op.name}' of a 0-d computation is used outside it; the GPU lowering cannot map it")


def prepare_for_gpu(module: ir.Module) -> ir.Module:
    """The rewrites of step 2 (see the module docstring)."""
    module = _rename_libm_calls(module)
    for op in module.body.operations:
        func = op.operation
        if func.name != "func.func" or not func.regions[0].blocks:
            continue
        for loop in _top_level_loops(func):
            if not _walk(loop, "memref.store"):
                loop.erase()
            elif _is_collapsible(loop):
                collapse_parallel(loop)
        _device_allocations(func)
        for run in _scalar_runs(func):
            wrap_in_single_thread(run)
    return module


# -- compile --------------------------------------------------------------------------


@dataclass
class GpuProgram:
    """The JIT engine of the segments' host code and one kernel per segment."""

    engine: object
    arch: str
    ptx_module: str  # the IR after the GPU pipeline (PTX embedded in gpu.binary ops)
    kernels: dict[str, CpuKernel] = field(default_factory=dict)


def target_arch() -> str:
    """``FUSER_CUDA_ARCH``, else the current device's ``sm_XY``, else sm_90."""
    explicit = config.cuda_arch()
    if explicit:
        return explicit
    if cuda.available():
        major, minor = cuda.compute_capability()
        return f"sm_{major}{minor}"
    return DEFAULT_ARCH


def default_binary_format() -> str:
    """``bin`` (a cubin, no driver JIT at load) where ``ptxas`` is on PATH, else ``isa`` (PTX)."""
    return "bin" if shutil.which("ptxas") else "isa"


def lower_to_gpu(
    module: ir.Module, arch: str | None = None, binary_format: str = "isa"
) -> tuple[ir.Module, dict, str]:
    """A lowered copy of ``module``'s segments: (LLVM-dialect module with PTX,
    argument kinds per segment, arch)."""
    arch = arch or target_arch()
    libdevice = config.libdevice_path()
    source = module.operation.get_asm(enable_debug_info=True)
    lowered, kinds = segments_only(module)
    try:
        run_pipeline(lowered, BUFFERS_PIPELINE)
        lowered = copies_as_linalg(lowered)
        run_pipeline(lowered, PARALLEL_LOOPS_PIPELINE)
    except PipelineError as err:
        raise _failed(err, source) from None
    lowered = prepare_for_gpu(lowered)
    _require_libdevice(lowered, libdevice)
    try:
        run_pipeline(lowered, kernels_pipeline(arch, str(libdevice) if libdevice else "", binary_format))
    except PipelineError as err:
        raise _failed(err, source) from None
    return drop_unsigned_wrap_flags(lowered), kinds, arch


def _failed(err: PipelineError, source: str) -> CompileError:
    return CompileError(
        "compile_gpu: lowering the segments to GPU kernels failed",
        pipeline=err.pipeline,
        diagnostics=err.diagnostics,
        reproducer=save_reproducer(source, "fuser-gpu"),
    )


def _require_libdevice(module: ir.Module, libdevice) -> None:
    needed = sorted(set(re.findall(r"llvm\.func @(__nv_\w+)", str(module))))
    if needed and libdevice is None:
        raise CompileError(
            f"compile_gpu: the kernels call libdevice math functions ({', '.join(needed)}), but libdevice was not found; "
            "install the CUDA toolkit or pip install 'fuser-mlir[cuda]' (nvidia-cuda-nvcc), or set FUSER_LIBDEVICE"
        )


def ptx_of(module: ir.Module) -> dict[str, str]:
    """The PTX text of every ``gpu.binary`` of a lowered module, by name."""
    found = {}
    for op in module.body.operations:
        op = op.operation
        if op.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        objects = ir.ArrayAttr(op.attributes["objects"])
        found[name] = _object_text(objects[0])
    return found


def _object_text(attr: ir.Attribute) -> str:
    from fuser_mlir._mlir import gpu

    data = gpu.ObjectAttr(attr).object
    return data.decode() if isinstance(data, bytes) else str(data)


def compile_gpu(module: ir.Module, *, opt_level: int = 2, arch: str | None = None) -> GpuProgram:
    """Lower the segments of ``module`` (left unchanged) for the GPU and JIT
    their host code; needs CUDA only to run, not to compile. Where a GPU is
    present, the engine's constructors load the kernels' modules right away."""
    lowered, kinds, arch = lower_to_gpu(module, arch, default_binary_format())
    process = ctypes.CDLL(None)
    served = cuda.mgpu_symbols()
    missing = [
        name
        for name in external_symbols(lowered)
        if name not in served and not name.startswith("__nv_") and not hasattr(process, name)
    ]
    if missing:
        raise CompileError(
            f"compile_gpu: the segments' host code calls functions this process does not provide: {', '.join(missing)}",
            reproducer=save_reproducer(module.operation.get_asm(enable_debug_info=True), "fuser-gpu"),
        )
    text = str(lowered)
    engine = ExecutionEngine(lowered, opt_level=opt_level)
    for name, address in cuda.mgpu_symbols().items():
        engine.raw_register_runtime(name, ctypes.c_void_p(address))
    if cuda.available():
        # The global constructors load the PTX modules (mgpuModuleLoadJIT).
        cuda.ensure_context()
        engine.initialize()
        cuda.raise_pending()
    program = GpuProgram(engine=engine, arch=arch, ptx_module=text)
    for name, arg_kinds in kinds.items():
        address = engine.raw_lookup("_mlir_ciface_" + name)
        if not address:
            raise CompileError(f"compile_gpu: the JIT found no entry point for segment @{name} (see the JIT's message on stderr)")
        program.kernels[name] = CpuKernel(address, arg_kinds, name=name, keepalive=engine)
    return program
