"""Compile segment functions for NVIDIA GPUs: kernels as PTX/cubin, launches as data.

:func:`lower_to_gpu` lowers the segments of an outlined fusion:

1. Each segment to linalg on memrefs, as the CPU path does (``fuser-lower-to-cpu``
   and bufferization, :data:`BUFFERS_PIPELINE`; float max/min reductions
   combine with ``maximumf``, one ``max.NaN`` instruction, instead of the
   CPU's order keys), then
   ``linalg-generalize-named-ops`` (fills and copies become generics); each
   segment's casts that only restate a buffer's sizes are folded away
   (:func:`fold_size_casts`) as it comes to its scheduler.
2. The schedulers (:mod:`fuser_mlir.lowering.gpu_schedule`) write one or
   more ``gpu.func`` kernels per segment into one ``gpu.module`` and return a
   :class:`~fuser_mlir.runtime.launch.SegmentProgram` per segment (temporaries
   and launches as data). Calls of libm functions (``@expf``) become calls of
   their libdevice versions (``@__nv_expf``).

:func:`compile_gpu` then lowers the kernel module (:func:`kernels_pipeline`:
``convert-gpu-to-nvvm``, ``nvvm-attach-target`` with libdevice linked in,
``gpu-module-to-binary{format=isa}``) to PTX for the target architecture
(:func:`target_arch`: ``FUSER_CUDA_ARCH``, else the current device, else
sm_90), each kernel in a module of its own on MLIR's threads and the PTX
merged into one module (:func:`to_ptx`), and to a cubin with ``ptxas``
where it is on PATH (the driver then does not JIT the PTX at load). The result is a
:class:`~fuser_mlir.runtime.image.KernelImage`: the binaries plus the launch
programs, which :func:`fuser_mlir.runtime.cuda.load_kernels` runs with the
CUDA driver, here or in a process without MLIR.

MLIR 22's ``memref`` lowering marks index arithmetic ``nuw``, which negative
strides break; the flags are dropped from the kernels' LLVM dialect before
serialisation, as on the CPU path
(:data:`~fuser_mlir.lowering.cpu.UNSIGNED_WRAP_FLAGS`). Its
``gpu.dynamic_shared_memory`` lowering declares the dynamic shared memory an
*internal* zero-length global, which PTX makes a one-byte static variable:
the kernel's static shared memory (``gpu.all_reduce``'s buffers) then lies
inside the dynamic buffer. The global is made external in the same text
rewrite (:data:`EXTERN_DYNAMIC_SHARED`), so PTX declares ``.extern .shared ... []``.

Float multiplies, adds and subtracts in kernels may contract to fused
multiply-adds (:data:`CONTRACT_FMA`), as CUDA C++ compiles by default
(``-fmad=true``) and Triton and nvFuser do; the CPU path keeps them apart.
Bfloat16 vector elements widen to float32 by a shift or a mask of their
32-bit word (:data:`WIDEN_BFLOAT16_WORDS`), exactly as ``extf`` does.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fuser_mlir import config
from fuser_mlir._mlir import arith, ir, vector
from fuser_mlir.errors import CompileError, PipelineError
from fuser_mlir.lowering.cpu import UNSIGNED_WRAP_FLAGS, copies_as_linalg, rewrite_text, segments_only
from fuser_mlir.lowering.gpu_schedule import EVICT_LAST_ATTRIBUTE, schedule_segment
from fuser_mlir.lowering.ptx import FUNCTION, PtxMergeError, merge_ptx
from fuser_mlir.passes.lower_to_cpu import symbol_name
from fuser_mlir.pipeline import GPU_NVVM_PIPELINE, attach_target, run_pipeline, save_reproducer
from fuser_mlir.runtime import cuda
from fuser_mlir.runtime.cpu import ArgKind
from fuser_mlir.runtime.image import KernelImage
from fuser_mlir.runtime.launch import SegmentProgram

#: The GPU architecture compiled for when no device says otherwise.
DEFAULT_ARCH = "sm_90"
#: The name of the ``gpu.module`` holding a fusion's kernels.
KERNEL_MODULE = "fuser_kernels"

#: Segments to linalg on memrefs (the CPU pipeline's front half), generalised.
#: ``fuse-shared``: an elementwise value read twice is computed in registers
#: inside each reader's generic rather than through a full-size temporary
#: (README, "Where it stands on the GPU").
BUFFERS_PIPELINE = (
    "fuser-verify, fuser-lower-to-cpu{float-extremum=maximumf fuse-shared=true}, canonicalize, linalg-fuse-elementwise-ops, "
    "eliminate-empty-tensors, empty-tensor-to-alloc-tensor, one-shot-bufferize{buffer-alignment=0}, buffer-deallocation-pipeline, "
    "canonicalize, convert-bufferization-to-memref"
)
GENERALIZE_PIPELINE = "linalg-generalize-named-ops"
#: The LLVM-dialect rewrite that makes the dynamic shared memory an external
#: (``.extern .shared``) PTX array instead of a static byte (module docstring).
EXTERN_DYNAMIC_SHARED = ((re.compile(r"llvm\.mlir\.global internal (@__dynamic_shmem__\w*)"), r"llvm.mlir.global external \1"),)


#: Mark the kernels' float ``mulf``/``addf``/``subf`` ``fastmath<contract>``
#: (:func:`allow_contraction`), so that LLVM fuses a multiply feeding an add
#: into one ``fma.rn`` (rounded once: never less accurate than the two
#: operations). Without it the PTX holds ``mul.rn``/``add.rn``, which ptxas
#: may not fuse: a layer norm bfloat16 kernel of 8K columns took no ``fma``
#: among 700 instructions.
CONTRACT_FMA = True
_CONTRACTED = ("arith.mulf", "arith.addf", "arith.subf")


def allow_contraction(module: ir.Module) -> None:
    """Add ``contract`` to the fastmath flags of every float multiply, add
    and subtract in ``module`` (in place; see :data:`CONTRACT_FMA`)."""
    rewrite_kernels(module, contract=True, widen=False)


def _contract(op: ir.Operation, made: dict) -> None:
    """:func:`allow_contraction` of one multiply, add or subtract (``made``:
    the flags given so far, by the flags they replace)."""
    old = str(op.attributes["fastmath"]) if "fastmath" in op.attributes else "#arith.fastmath<none>"
    if old not in made:
        flags = [f.strip() for f in old[len("#arith.fastmath<") : -1].split(",") if f.strip() not in ("", "none")]
        contracted = "contract" in flags or "fast" in flags
        made[old] = None if contracted else ir.Attribute.parse(f"#arith.fastmath<{','.join([*flags, 'contract'])}>")
    if made[old] is not None:
        op.attributes["fastmath"] = made[old]


def rewrite_kernels(module: ir.Module, *, contract: bool, widen: bool) -> None:
    """:func:`allow_contraction` (``contract``) and :func:`widen_bfloat16`
    (``widen``) of ``module``, in place, in one walk of its ops (a walk
    visits every op through Python: 55K of them, about 0.07 s on a 2-CPU
    host, for a layer norm's kernels)."""
    found, made = [], {}

    def visit(op):
        name = op.name
        if contract and name in _CONTRACTED:
            _contract(op, made)
        elif widen and name == "arith.extf":
            widened = _bfloat16_word_extract(op)
            if widened is not None:
                found.append(widened)
        return ir.WalkResult.ADVANCE

    with module.context:
        if contract or widen:
            module.operation.walk(visit)
        _widen_words(found)


#: Widen bfloat16 vector elements to float32 by bit operations on their
#: 32-bit words (:func:`widen_bfloat16`) instead of ``cvt.f32.bf16``. The
#: layer norm bfloat16 of 32K columns is bound by instruction issue, not by
#: memory (ncu: 75M warp instructions, issue active 59%, warps ready but not
#: selected 3.3 a cycle issued); this takes 48 of the 580 SASS instructions
#: of its row loop away. On the H200, 256 MB / 1 GB, back to back: layer
#: norm bfloat16 32K 0.82 -> 0.84 / 0.86 -> 0.87 of copy, 16K 0.87 -> 0.90 /
#: 0.93 -> 0.95; the other bfloat16 rows within 0.01 (sweep 15c).
WIDEN_BFLOAT16_WORDS = True


def widen_bfloat16(module: ir.Module) -> None:
    """Rewrite each ``arith.extf`` of an element of a ``vector<N x bf16>``
    (N even) to float32 as a bit operation on the 32-bit word holding it: the
    low element is ``word << 16``, the high one ``word & 0xffff0000``, each a
    float32 with the same bits as the bfloat16 widened (exact, as ``extf``).
    LLVM gives ``extf`` of an extracted element as ``cvt.f32.bf16`` of a
    16-bit half, which ptxas issues as two instructions for a high half
    (``PRMT`` then a shift) and one for a low half; these are one each. A
    bfloat16 layer norm widens three operands a column."""
    rewrite_kernels(module, contract=False, widen=True)


def _bfloat16_word_extract(op: ir.Operation) -> tuple | None:
    """(``op``, the vector, the element's place) where ``op`` is an
    ``arith.extf`` to float32 of a ``vector.extract`` of an element of a
    ``vector<N x bf16>`` (N even), which :func:`widen_bfloat16` rewrites; else None."""
    if not isinstance(op.results[0].type, ir.F32Type):
        return None
    source = op.operands[0].owner  # an op, or a block for a block argument
    source = getattr(source, "operation", source)
    if isinstance(source, ir.Operation) and source.name == "vector.extract" and len(source.operands) == 1:
        vtype = source.operands[0].type
        position = list(ir.DenseI64ArrayAttr(source.attributes["static_position"]))
        pairs = isinstance(vtype, ir.VectorType) and vtype.rank == 1 and vtype.shape[0] % 2 == 0
        if pairs and isinstance(vtype.element_type, ir.BF16Type):
            return op, source.operands[0], position[0]
    return None


def _widen_words(found: list[tuple]) -> None:
    """Rewrite each (``extf``, vector, place) of ``found`` as :func:`widen_bfloat16` says (in the ops' context)."""
    i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
    for extf, vec, j in found:
        with ir.InsertionPoint(extf), extf.location:
            words = vector.BitCastOp(ir.VectorType.get([ir.VectorType(vec.type).shape[0] // 2], i32), vec).result
            word = vector.ExtractOp(words, [], [j // 2]).result
            if j % 2 == 0:
                bits = arith.ShLIOp(word, arith.ConstantOp(i32, 16).result).result
            else:
                bits = arith.AndIOp(word, arith.ConstantOp(i32, -65536).result).result
            widened = arith.BitcastOp(f32, bits).result
        extf.results[0].replace_all_uses_with(widened)
        extf.erase()


#: The 64-bit register holding a function's policy (:func:`hint_loads`).
L2_POLICY_REGISTER = "%fuser_l2_evict_last"
#: A global load (plain or ``.nc``, predicated or not) of one register or a
#: vector of them from one address, without a cache hint yet.
_GLOBAL_LOAD = re.compile(r"^(\s*(?:@!?%p\d+\s+)?ld\.global(?:\.nc)?)((?:\.(?!L2::cache_hint)[\w:]+)+)(\s+)([^;\[]+), \[([^\]]+)\];$")


def evict_last_kernels(module: ir.Module) -> set[str]:
    """The names of the kernels of ``module`` marked :data:`EVICT_LAST_ATTRIBUTE`,
    the mark removed (it is not a dialect's: the lowering must not see it)."""
    names = set()
    with module.context:
        for op in _gpu_module_ops(module):
            if op.name == "gpu.func" and EVICT_LAST_ATTRIBUTE in op.attributes:
                names.add(ir.StringAttr(op.attributes["sym_name"]).value)
                del op.attributes[EVICT_LAST_ATTRIBUTE]
    return names


def _gpu_module_ops(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    """The ops at the top of the ``gpu.module`` ops at the top of ``module``
    (kernels, workgroup buffers, declarations: a walk of every op would
    visit each kernel's ops too)."""
    found = []
    for outer in module.operation.regions[0].blocks[0].operations:
        if outer.operation.name == "gpu.module":
            found += [op.operation for op in outer.operation.regions[0].blocks[0].operations]
    return found


def _has_cache_hints(ptx: str) -> bool:
    """Whether ``ptx`` may hold ``createpolicy`` and ``.L2::cache_hint``: PTX ISA 7.4 and sm_80 or later."""
    version = re.search(r"^\.version (\d+)\.(\d+)", ptx, re.M)
    target = re.search(r"^\.target sm_(\d+)", ptx, re.M)
    return bool(version and target) and (int(version.group(1)), int(version.group(2))) >= (7, 4) and int(target.group(1)) >= 80


def hint_loads(ptx: str, functions: set[str]) -> str:
    """``ptx`` with each global load of the named ``functions`` given the L2
    eviction priority ``evict_last`` (``.L2::cache_hint`` with a
    ``createpolicy.fractional.L2::evict_last`` policy, which each of them
    creates once in :data:`L2_POLICY_REGISTER`, at the top of its body; a
    body runs from a ``{`` to a ``}`` at the start of a line, as LLVM prints
    PTX). LLVM has no load with a cache hint, and inline asm would hide the
    loads from its optimisations: the PTX is the place for a qualifier that
    changes no value. Triton gives the loads of values it reads again the
    same priority. PTX below ISA 7.4 or for a target before sm_80 has no
    cache hints: it is left as it is (measured on the H200, sm_90, only)."""
    if not functions or not _has_cache_hints(ptx):
        return ptx
    out, name, body, hinted = [], None, None, False
    for line in ptx.split("\n"):
        if body is None:
            found = FUNCTION.match(line)
            name = found.group(1) if found else name
            out.append(line)
            if line == "{" and name in functions:
                body, hinted = len(out), False
            continue
        if line == "}":
            if hinted:
                out[body:body] = [f"\t.reg .b64 \t{L2_POLICY_REGISTER};", f"\tcreatepolicy.fractional.L2::evict_last.b64 \t{L2_POLICY_REGISTER}, 1.0;"]
            out.append(line)
            body = None
            continue
        rewritten = _GLOBAL_LOAD.sub(rf"\1.L2::cache_hint\2\3\4, [\5], {L2_POLICY_REGISTER};", line)
        hinted = hinted or rewritten != line
        out.append(rewritten)
    return "\n".join(out)


def nvvm_pipeline() -> str:
    """Kernel module (gpu dialect) to the NVVM/LLVM dialects."""
    return GPU_NVVM_PIPELINE


def binary_pipeline(arch: str, libdevice: str) -> str:
    """NVVM kernels to PTX (``gpu.binary`` holding the PTX text)."""
    return f"{attach_target(arch, libdevice)}, gpu-module-to-binary{{format=isa}}"


def kernels_pipeline(arch: str, libdevice: str) -> str:
    """The whole kernel pipeline, for ``fuser-opt`` and reproducers."""
    return f"{nvvm_pipeline()}, {binary_pipeline(arch, libdevice)}"




def target_arch() -> str:
    """``FUSER_CUDA_ARCH``, else the current device's ``sm_XY``, else sm_90."""
    explicit = config.cuda_arch()
    if explicit:
        return explicit
    if cuda.available():
        major, minor = cuda.compute_capability()
        return f"sm_{major}{minor}"
    return DEFAULT_ARCH


# -- segments to kernels ------------------------------------------------------------


def _libm_declarations(module: ir.Module) -> list[ir.Operation]:
    return [
        op.operation
        for op in module.body.operations
        if op.operation.name == "func.func" and not op.operation.regions[0].blocks
    ]


def _use_libdevice(text: str, declarations: list[str]) -> str:
    """``func.call @expf`` -> ``llvm.call @__nv_expf``, declared as a private
    ``llvm.func`` (the func-to-llvm patterns inside convert-gpu-to-nvvm would
    call them through C-interface wrappers; private, so that ``symbol-dce``
    drops it from the modules of kernels that do not call it: :func:`kernel_modules`)."""
    for name in declarations:
        text = re.sub(
            rf"func\.func private @{name}\(([^)]*)\) -> (\w+)( attributes \{{[^}}]*\}})?",
            rf'llvm.func @__nv_{name}(\1) -> \2 attributes {{sym_visibility = "private"}}',
            text,
        )
        text = re.sub(rf"func\.call @{name}\(", f"llvm.call @__nv_{name}(", text)
    return text


@dataclass
class GpuKernels:
    """The scheduled kernels of a fusion, before PTX."""

    module: ir.Module  # gpu.container_module with one gpu.module of kernels
    programs: dict[str, SegmentProgram]
    arg_kinds: dict[str, list[ArgKind]]
    text: str  # the text ``module`` was parsed from (what printing it would give, without printing it again)


def lower_to_gpu(module: ir.Module | ir.Operation, layouts: dict[str, list] | None = None, arch: str = "sm_90") -> GpuKernels:
    """Schedule the segments of ``module`` (left unchanged) into kernels for
    ``arch``. ``layouts`` gives per segment the (dense, alignment) of each
    tensor argument (see :func:`fuser_mlir.compiler.segment_layouts`);
    without it the kernels assume strided, unaligned arguments."""
    source = module.operation.get_asm(enable_debug_info=True)
    lowered, kinds = segments_only(module)
    try:
        run_pipeline(lowered, BUFFERS_PIPELINE)
        lowered = copies_as_linalg(lowered)
        run_pipeline(lowered, GENERALIZE_PIPELINE)
    except PipelineError as err:
        raise _failed(err, source) from None
    with lowered.context, ir.Location.unknown():
        kernels = ir.Module.create()
        kernels.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(kernels.body):
            gpu_module = ir.Operation.create("gpu.module", regions=1, attributes={"sym_name": ir.StringAttr.get(KERNEL_MODULE)})
        body = gpu_module.regions[0].blocks.append()
        declarations = _libm_declarations(lowered)
        with ir.InsertionPoint(body):
            for declaration in declarations:
                declaration.clone()
        programs = {}
        for op in lowered.body.operations:
            op = op.operation
            if op.name == "func.func" and op.regions[0].blocks:  # segments_only kept segments alone
                name = symbol_name(op)
                fold_size_casts(op)
                programs[name] = schedule_segment(op, body, name, (layouts or {}).get(name), arch)
        # Through text also where there are no libm calls: a pipeline run on
        # the module the schedulers built in place (verify() passes, its text
        # is the same) crashed the process (a segfault in the NVVM pipeline).
        text = _use_libdevice(str(kernels), [symbol_name(d) for d in declarations])
    return GpuKernels(ir.Module.parse(text, context=lowered.context), programs, kinds, text)


def fold_size_casts(segment: ir.Operation) -> None:
    """Each ``memref.cast`` in ``segment`` (a func on buffers) that changes
    only which sizes its type states (same element type, layout and memory
    space) replaced by its operand. Canonicalization leaves such casts where
    it made a buffer's type more static than its readers': before a
    ``memref.reshape``, when a fusion's ``?`` dim was bound to a static size
    by a broadcast. The schedulers take a buffer by what it is, so they need
    no cast."""
    for op in list(segment.regions[0].blocks[0].operations):
        op = op.operation
        if op.name != "memref.cast":
            continue
        source, result = ir.MemRefType(op.operands[0].type), ir.MemRefType(op.results[0].type)
        if (source.element_type, source.layout, source.memory_space) == (result.element_type, result.layout, result.memory_space):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()


def _failed(err: PipelineError, source: str) -> CompileError:
    return CompileError(
        "compile_gpu: lowering the segments to GPU kernels failed",
        pipeline=err.pipeline,
        diagnostics=err.diagnostics,
        reproducer=save_reproducer(source, "fuser-gpu"),
    )


def _libdevice_calls(modules: ir.Module) -> list[str]:
    """The libdevice functions (``__nv_*``) that the lowered kernels of
    ``modules`` (:func:`kernel_modules`) declare, sorted."""
    ops = (op for module in modules.body.operations for op in _gpu_module_ops(module))
    names = {symbol_name(op) for op in ops if op.name == "llvm.func"}
    return sorted(name for name in names if name.startswith("__nv_"))


def _require_libdevice(modules: ir.Module, libdevice) -> None:
    needed = _libdevice_calls(modules)
    if needed and libdevice is None:
        raise CompileError(
            f"compile_gpu: the kernels call libdevice math functions ({', '.join(needed)}), but libdevice was not found; "
            "install the CUDA toolkit or pip install 'fuser-mlir[cuda]' (nvidia-cuda-nvcc), or set FUSER_LIBDEVICE"
        )


#: Compile each kernel of a fusion in an LLVM module of its own, the
#: modules side by side on the MLIR Context's threads, and merge their PTX
#: into one module (:func:`to_ptx`, :func:`fuser_mlir.lowering.ptx.merge_ptx`);
#: False: all kernels in one module, as before. The SASS of every kernel of
#: the 16 bench fusions is the same either way (nvdisasm). On 2 cores LLVM's
#: NVPTX code generation of a layer norm bfloat16's 31 kernels took 1.7 s as
#: one module and 0.9 s as 31, its whole compile 4.69 s and 3.39 s
#: (``python bench/compile_time.py``, which times both side by side).
SEPARATE_KERNEL_MODULES = True


def kernel_modules(kernels: ir.Module, separate: bool = True) -> ir.Module:
    """A module of modules holding copies of the kernels of ``kernels`` (a
    ``gpu.container_module`` with one ``gpu.module``), in their order: one
    module per kernel (``separate``), else one for all. Each is a
    ``gpu.container_module`` whose ``gpu.module`` (the same name and
    attributes) holds its kernels and a copy of every other op of the
    ``gpu.module`` (workgroup buffers, libdevice declarations: all private,
    so ``symbol-dce`` drops those its kernels do not use). ``kernels`` is
    left as it is.

    MLIR runs a pass pipeline nested on ``builtin.module`` on these modules
    side by side, on the Context's threads: :func:`to_ptx`."""
    with kernels.context, ir.Location.unknown():
        (source,) = [op.operation for op in kernels.body.operations if op.operation.name == "gpu.module"]
        ops = [op.operation for op in source.regions[0].blocks[0].operations]
        shared = [op for op in ops if op.name != "gpu.func"]
        kernel_ops = [op for op in ops if op.name == "gpu.func"]
        attributes = {name: source.attributes[name] for name in source.attributes}
        split = ir.Module.create()
        for group in [[kernel] for kernel in kernel_ops] if separate else [kernel_ops]:
            with ir.InsertionPoint(split.body):
                module = ir.Operation.create("builtin.module", regions=1, attributes={"gpu.container_module": ir.UnitAttr.get()})
            with ir.InsertionPoint(module.regions[0].blocks.append()):
                gpu_module = ir.Operation.create("gpu.module", regions=1, attributes=attributes)
            with ir.InsertionPoint(gpu_module.regions[0].blocks.append()):
                for op in [*shared, *group]:
                    op.clone()
    return split


def to_ptx(kernels: ir.Module, arch: str, source: str = "") -> str:
    """The PTX of a scheduled kernel module (rewritten in place on the way).

    The kernels are compiled in modules of their own
    (:data:`SEPARATE_KERNEL_MODULES`, :func:`kernel_modules`) and their PTX
    merged into one module (:func:`fuser_mlir.lowering.ptx.merge_ptx`). The
    binary pipeline runs without the verifier (its input was verified after
    the NVVM pipeline; it turns each ``gpu.module`` into a ``gpu.binary``):
    with it, the verifier's own parallel walk of each module, on the same
    threads, kept the modules' code generation from running side by side
    most of the time (2 of 5 runs did, on 2 cores)."""
    libdevice = config.libdevice_path()
    evict_last = evict_last_kernels(kernels)
    rewrite_kernels(kernels, contract=CONTRACT_FMA, widen=WIDEN_BFLOAT16_WORDS)
    modules = kernel_modules(kernels, SEPARATE_KERNEL_MODULES)
    try:
        run_pipeline(modules, f"builtin.module(builtin.module(symbol-dce, {nvvm_pipeline()}))")
    except PipelineError as err:
        raise _failed(err, source or str(kernels)) from None
    _require_libdevice(modules, libdevice)
    lowered = rewrite_text(modules, (*UNSIGNED_WRAP_FLAGS, *EXTERN_DYNAMIC_SHARED), locations=False)  # (the PTX has no line info)
    try:
        run_pipeline(lowered, f"builtin.module(builtin.module({binary_pipeline(arch, str(libdevice) if libdevice else '')}))", verify=False)
    except PipelineError as err:
        raise _failed(err, source or str(kernels)) from None
    try:
        ptx = merge_ptx(ptx_of(lowered))
    except PtxMergeError as err:
        raise CompileError(
            f"compile_gpu: {err}; fuser_mlir.lowering.gpu.SEPARATE_KERNEL_MODULES = False compiles the kernels as one module",
            reproducer=save_reproducer(source or str(kernels), "fuser-gpu"),
        ) from None
    return hint_loads(ptx, evict_last)


def ptx_of(module: ir.Module | ir.Operation) -> list[str]:
    """The PTX text of every ``gpu.binary`` of a lowered module, and of the
    modules it holds (:func:`kernel_modules`), in their order."""
    from fuser_mlir._mlir import gpu

    found = []
    for op in module.operation.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "builtin.module":
            found += ptx_of(op)
        elif op.name == "gpu.binary":
            data = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0]).object
            found.append(data.decode() if isinstance(data, bytes) else str(data))
    return found


#: What a ptxas older than the PTX says (CUDA 11.8's ptxas reads PTX up to
#: 7.8; sm_90 kernels are 8.0): no cubin then, the driver compiles the PTX.
_PTX_TOO_NEW = re.compile(r"Unsupported \.version")


def assemble(ptx: str, arch: str) -> bytes | None:
    """A cubin of ``ptx`` made by ``ptxas``: None where ptxas is not on PATH,
    or is older than the PTX's version (the driver then compiles the PTX at
    load, as it does without ptxas); CompileError where it rejects the PTX
    for any other reason. The kernels are assembled on as many threads as
    this process has CPUs, where ptxas can (:func:`split_compile`)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    threads = ["--split-compile", str(len(os.sched_getaffinity(0)))] if split_compile(ptxas) else []
    with tempfile.TemporaryDirectory(prefix="fuser-ptxas-") as tmp:
        source, target = Path(tmp) / "kernels.ptx", Path(tmp) / "kernels.cubin"
        source.write_text(ptx)
        result = subprocess.run([ptxas, f"-arch={arch}", *threads, str(source), "-o", str(target)], capture_output=True, text=True)
        if result.returncode != 0:
            if _PTX_TOO_NEW.search(result.stderr):
                return None
            raise CompileError(f"compile_gpu: ptxas rejected the generated PTX for {arch}:\n{result.stderr.strip()}")
        return target.read_bytes()


@functools.cache
def split_compile(ptxas: str) -> bool:
    """Whether ``ptxas`` takes ``--split-compile N`` (its ``--help`` lists
    it): the kernels of a module assembled on N threads, the same code (the
    SASS of the 16 bench fusions is identical; the cubin records the option
    among its build flags). A layer norm bfloat16's 31 kernels: 1.95 s on
    one thread, 1.15 s on two (ptxas 13.0, a 2-core host)."""
    try:
        result = subprocess.run([ptxas, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--split-compile" in result.stdout


@dataclass
class GpuProgram:
    """A fusion's compiled GPU kernels: binaries, launch programs and the
    kernel IR before NVVM (the ``gpu`` stage of a compiled fusion)."""

    arch: str
    kernel_ir: str
    ptx: str
    cubin: bytes | None
    programs: dict[str, SegmentProgram]
    arg_kinds: dict[str, list[ArgKind]]
    kernels: dict[str, object] = field(default_factory=dict)  # loaded, where a GPU is present

    def image(self, name: str) -> KernelImage:
        """The kernels as files + launch data (see runtime.cuda.load_kernels)."""
        files = {f"kernels/{name}.ptx": self.ptx.encode()}
        if self.cubin is not None:
            files[f"kernels/{name}.{self.arch}.cubin"] = self.cubin
        spec = {
            "arch": self.arch,
            "ptx": f"kernels/{name}.ptx",
            "cubin": {self.arch: f"kernels/{name}.{self.arch}.cubin"} if self.cubin is not None else {},
            "segments": {
                segment: {
                    "program": program.to_dict(),
                    "args": [[k.dtype, k.rank] for k in self.arg_kinds[segment]],
                }
                for segment, program in self.programs.items()
            },
        }
        return KernelImage(backend="cuda", spec=spec, files=files)


def compile_gpu(
    module: ir.Module, *, arch: str | None = None, load: bool | None = None, device: int = 0, layouts: dict | None = None
) -> GpuProgram:
    """Compile the segments of ``module`` (left unchanged) for ``arch``; needs
    CUDA only to load (``load``: default where a GPU is present). See
    :func:`lower_to_gpu` for ``layouts``."""
    arch = arch or target_arch()
    source = module.operation.get_asm(enable_debug_info=True)
    scheduled = lower_to_gpu(module, layouts, arch)
    kernel_ir = scheduled.text
    ptx = to_ptx(scheduled.module, arch, source)
    cubin = assemble(ptx, arch)
    program = GpuProgram(arch, kernel_ir, ptx, cubin, scheduled.programs, scheduled.arg_kinds)
    if load if load is not None else cuda.available():
        program.kernels = cuda.load_program(ptx, cubin, arch, program.programs, program.arg_kinds, device=device)
    return program
