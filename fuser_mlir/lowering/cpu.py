"""Compile segment functions for the CPU: ``fuser-cpu-pipeline`` and the JIT.

:func:`compile_cpu` takes a module holding segment functions (see
``fuser-lower-to-cpu`` for what a segment is), lowers a copy of it to the LLVM
dialect with the named pipeline ``fuser-cpu-pipeline`` and JIT-compiles it with
MLIR's ``ExecutionEngine`` (LLVM ``-O3``). Functions that are not segments
(the host function) are dropped from the copy: the compiler runs the host
function as a launch plan. The result holds the engine and one
:class:`~fuser_mlir.runtime.cpu.CpuKernel` per segment.

It also holds a kernel image (:class:`~fuser_mlir.runtime.image.KernelImage`)
for artifacts and the disk cache: the engine is created with
position-independent code, its object file is dumped and linked by the
system C compiler into ``kernels/cpu.so`` (``cc -shared -nostartfiles``,
see :mod:`fuser_mlir.runtime.cpu` for why and how it is loaded). The
in-process kernels stay the JIT's; the library holds the same machine code.
Linking costs about 20 ms per compile. Without a C compiler (or with
``FUSER_CC=none``) the image is None and ``image_error`` says why.

Why the pipeline (``fuser_mlir/pipeline.py``) looks the way it does:

- ``canonicalize`` right after the lowering folds the ``tensor.dim`` of
  intermediate results, whose extra use would stop
  ``linalg-fuse-elementwise-ops`` (it fuses single-use producers only).
- ``eliminate-empty-tensors`` lets the last generic of a chain write straight
  into the destination memref: a fused pointwise chain allocates nothing.
- ``one-shot-bufferize{buffer-alignment=0}``: an aligned ``memref.alloc``
  lowers to pointer arithmetic through ``inttoptr``, which hides from LLVM
  that the buffer is fresh ``malloc`` memory; LLVM then cannot keep a
  reduction's accumulator in a register, and the loop does not vectorise.
- ``buffer-deallocation-pipeline`` frees the buffers bufferization allocates
  for intermediates inside a segment (e.g. a row max feeding a subtraction);
  ``convert-bufferization-to-memref`` lowers what it leaves.
- ``fuser-erase-dead-generics`` erases the producers that
  ``linalg-fuse-elementwise-ops`` fused into every consumer but could not
  erase (their bodies call libm), so that nothing after it counts them as
  loop nests; ``fuser-block-rows`` then runs a segment whose loop nests
  share a buffer (a row softmax, a layer norm) block by block of rows, so
  that the later nests find the rows in cache; ``fuser-share-call-results``
  then has a libm call that two nests compute run once an element: a
  later nest reads the values an earlier one stored (a softmax over
  columns sums the ``exp`` values its middle segment stores) or, in a
  block, kept in a buffer of the block's size (a row softmax's quotients
  read the sum's ``exp`` values).
- ``fuser-block-sums`` right after ``convert-linalg-to-loops`` sums a
  float32 reduction over the last dim (rows longer than 2048 elements, a
  full sum) block by block into a float64 total, and carries a full sum's
  total through the loops around it: a long sum comes within float32
  rounding of the exact one (it was 3e-5 off for a full sum of 400000x10,
  13% for 5e6x10).
- ``convert-math-to-llvm{approximate-log1p=false}`` keeps ``log1p`` for libm
  (the approximation loses precision near 0); ``convert-math-to-libm`` takes
  what has no LLVM intrinsic (``erf``, ``expm1``, ...). The JIT resolves libm
  and malloc/free from the process.
- ``arith-expand{include-bf16=true}`` turns ``bf16`` conversions into integer
  code (round to nearest even). It runs right after ``fuser-lower-to-cpu`` as
  well: ``canonicalize`` folds ``truncf(sitofp(i) : f32) : bf16`` into a
  ``sitofp`` straight to ``bf16``, which LLVM lowers on x86-64 to a call of
  ``__truncsfbf2``, and libgcc exports that only from GCC 13 on (Debian 12
  has GCC 12). For the same reason a ``bf16`` scalar argument reaches the
  segment as ``i16``. ``f16`` conversions use the host's F16C
  instructions. Without F16C, LLVM calls ``__extendhfsf2``/``__truncsfhf2``;
  :func:`compile_cpu` loads ``libgcc_s.so.1`` (GCC 12 and newer export them)
  into the process so that the JIT finds them. The lowering never converts
  ``f64`` to ``f16`` directly (``__truncdfhf2``).

What :func:`compile_cpu` adds to the named pipeline:

- ``fuser-lower-to-cpu{vector-library=...}`` with the host's libmvec variant
  (:func:`~fuser_mlir.lowering.vector_library.host_vector_library`), so that
  loops calling ``expf``/``tanhf``/... vectorise.
- Between bufferization and ``fuser-block-rows`` (after
  ``fuser-erase-dead-generics``) it reads, per segment, along which dims its
  calls may be cut into blocks that run on several threads, and along
  which others when those are shorter than the threads (the inner split;
  :mod:`fuser_mlir.lowering.cpu_split`); the kernels and the image carry
  the answer.
- After the pipeline, it drops the ``nuw`` flags that ``finalize-memref-to-llvm``
  (MLIR 22) puts on the index arithmetic of every load and store: they promise
  ``index * stride`` never wraps as an unsigned number, which a negative
  stride (a reversed NumPy view) breaks, making the address poison. Upstream
  fixed it later (llvm-project PR 204309). The flags are properties the Python
  bindings cannot edit, so this is a textual rewrite of the LLVM dialect.
- Then it marks inner loops where a libm call reads another's result to be
  interleaved four vectors at a time (:func:`interleave_libm_chains`):
  LLVM's cost model leaves them one vector at a time, and their calls wait
  on each other.
"""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from dataclasses import dataclass, field

from fuser_mlir import config
from fuser_mlir._mlir import ExecutionEngine, ir
from fuser_mlir.dialect import types as T
from fuser_mlir.errors import CompileError, PipelineError
from fuser_mlir.passes.lower_to_cpu import is_segment, symbol_name
from fuser_mlir.lowering.cpu_split import inner_split_dims, split_dims, why_not_elementwise
from fuser_mlir.lowering.vector_library import host_vector_library, wrapper_callee
from fuser_mlir.pipeline import PIPELINES, run_pipeline, save_reproducer
from fuser_mlir.runtime.cpu import DTYPE_OF_ELEMENT, ArgKind, CpuKernel, check_library, host_target, image_spec
from fuser_mlir.runtime.image import KernelImage

CPU_PIPELINE = "fuser-cpu-pipeline"


@dataclass
class CpuProgram:
    """JIT-compiled segments: ``program.kernels[name](*args)`` runs one.

    Holds the ExecutionEngine (the kernels' code lives as long as it does);
    ``llvm_dialect`` is the lowered module's text, for inspection.
    """

    engine: object
    kernels: dict[str, CpuKernel] = field(default_factory=dict)
    llvm_dialect: str = ""
    image: KernelImage | None = None  # the kernels as a shared library (None: see image_error)
    image_error: str = ""

    def __getitem__(self, name: str) -> CpuKernel:
        return self.kernels[name]


def argument_kinds(function: ir.Operation) -> list[ArgKind]:
    """The runtime description of each argument of a segment function."""
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    kinds = []
    for type_ in function_type.inputs:
        dtype = DTYPE_OF_ELEMENT[T.element_name(type_)]
        kinds.append(ArgKind.tensor(dtype, T.rank(type_)) if T.is_tensor(type_) else ArgKind.scalar(dtype))
    return kinds


def segments_only(module: ir.Module) -> tuple[ir.Module, dict[str, list[ArgKind]]]:
    """A copy of ``module`` without its non-segment functions, and each
    segment's argument kinds."""
    text = module.operation.get_asm(enable_debug_info=True)
    copy = ir.Module.parse(text, context=module.context)
    kinds: dict[str, list[ArgKind]] = {}
    for op in list(copy.body.operations):
        op = op.operation
        if is_segment(op):
            kinds[symbol_name(op)] = argument_kinds(op)
        elif op.name == "func.func":
            op.erase()
    return copy, kinds


def external_symbols(module: ir.Module) -> list[str]:
    """Names of the ``llvm.func`` declarations the JIT must resolve."""
    names = []
    for op in module.body.operations:
        op = op.operation
        if op.name == "llvm.func" and not op.regions[0].blocks:
            names.append(ir.StringAttr(op.attributes["sym_name"]).value)
    return names


def _check_symbols(module: ir.Module, source: str) -> None:
    """Fail with a clear message before the JIT does, on an unknown symbol."""
    process = ctypes.CDLL(None)
    missing = [name for name in external_symbols(module) if not hasattr(process, name)]
    if missing:
        raise CompileError(
            "compile_cpu: the lowered code calls functions this process does not provide: "
            + ", ".join(missing)
            + "; the CPU lowering must expand them in IR",
            pipeline=CPU_PIPELINE,
            reproducer=save_reproducer(source, "fuser-cpu"),
        )


def segment_cuts(module: ir.Module, kinds: dict[str, list[ArgKind]]) -> dict[str, dict]:
    """Per segment of ``module`` (at the memref level), how the runtime may
    cut and reshape its calls, as :class:`CpuKernel`'s keyword arguments:
    ``split``, the dims along which its calls may be cut into blocks that
    run side by side, or None (:func:`fuser_mlir.lowering.cpu_split.split_dims`);
    ``inner_split``, the same for its inner split
    (:func:`~fuser_mlir.lowering.cpu_split.inner_split_dims`); ``elementwise``,
    whether its calls may merge dims (:func:`~fuser_mlir.lowering.cpu_split.why_not_elementwise`)."""
    cuts: dict[str, dict] = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and symbol_name(op) in kinds:
            split = split_dims(op)
            cuts[symbol_name(op)] = {
                "split": split, "inner_split": inner_split_dims(op, split), "elementwise": why_not_elementwise(op) is None,
            }
    return cuts


def cpu_pipeline(vector_library: str = "") -> str:
    """``fuser-cpu-pipeline``'s text, with a vector library for libm calls."""
    text = PIPELINES[CPU_PIPELINE]
    if not vector_library:
        return text
    return text.replace("fuser-lower-to-cpu{segments-only=true},", f"fuser-lower-to-cpu{{segments-only=true vector-library={vector_library}}},", 1)


#: The first pass of ``fuser-cpu-pipeline`` after the point where
#: :func:`compile_cpu` reads the segments' splits (linalg on memrefs).
SPLITS_READ_BEFORE = "fuser-block-rows"


def split_pipeline(text: str) -> tuple[str, str]:
    """``fuser-cpu-pipeline``'s ``text`` cut where :func:`compile_cpu` reads
    the splits: (the passes before, the passes from :data:`SPLITS_READ_BEFORE` on)."""
    before, found, after = text.partition(", " + SPLITS_READ_BEFORE)
    if not found:
        raise ValueError(f"the CPU pipeline has no '{SPLITS_READ_BEFORE}' to read the splits before: {text}")
    return before, SPLITS_READ_BEFORE + after


UNSIGNED_WRAP_FLAGS = (
    (re.compile(r"overflow<nsw, nuw>"), "overflow<nsw>"),
    (re.compile(r" overflow<nuw>"), ""),
    (re.compile(r"getelementptr (inbounds|nusw)\|nuw "), r"getelementptr \1 "),
    (re.compile(r"getelementptr nuw "), "getelementptr "),
)


_MEMREF_COPY = re.compile(r"memref\.copy (%[\w#]+), (%[\w#]+) : (.+) to (.+?)( loc\(#?\w+\))?$", re.MULTILINE)


def copies_as_linalg(module: ir.Module) -> ir.Module:
    """``memref.copy`` -> ``linalg.copy``. A ``memref.copy`` lowers to a call
    of ``memrefCopy`` (MLIR's C runner library, which the JIT does not have,
    and which would run on the host for GPU buffers); ``linalg.copy`` becomes
    a loop (a parallel loop on the GPU)."""
    text = module.operation.get_asm(enable_debug_info=True)
    text = _MEMREF_COPY.sub(r"linalg.copy ins(\1 : \3) outs(\2 : \4)\5", text)
    return ir.Module.parse(text, context=module.context)


def rewrite_text(module: ir.Module, rewrites, *, locations: bool = True) -> ir.Module:
    """``module`` with each (pattern, replacement) of ``rewrites`` applied to
    its text (printed with its ops' locations, or without: ``locations``)."""
    text = module.operation.get_asm(enable_debug_info=locations)
    for pattern, replacement in rewrites:
        text = pattern.sub(replacement, text)
    return ir.Module.parse(text, context=module.context)


def drop_unsigned_wrap_flags(module: ir.Module) -> ir.Module:
    """The LLVM-dialect ``module`` without ``nuw`` on its arithmetic and GEPs
    (see the module docstring: negative strides)."""
    return rewrite_text(module, UNSIGNED_WRAP_FLAGS)


#: How many vectors of a loop of chained libm calls LLVM runs side by side
#: (:func:`interleave_libm_chains`).
LIBM_CHAIN_INTERLEAVE = 4


def interleave_libm_chains(module: ir.Module) -> None:
    """Mark ``interleave = LIBM_CHAIN_INTERLEAVE`` on the back edge of each
    inner loop of the LLVM-dialect ``module`` where a libm wrapper call
    (``@fuser.sinf``, :mod:`fuser_mlir.lowering.vector_library`) reads the
    result of another.

    LLVM's loop vectoriser interleaves only loops its cost model counts as
    small, and a loop of several libm calls is not. Where each call reads
    the one before (``tanh(y) - y * 0.5``, then ``y * y + sin(y)``: a
    pointwise chain that ``fuse-shared`` makes one loop), one vector's calls
    then wait on each other: six steps ran 7.0 ms a 1024x1024 float32 call,
    against 3.9 ms interleaved four vectors at a time, as fast as six loops
    through temporaries, which LLVM interleaves (one thread, sweep 58).
    Calls that do not read each other (the ``exp`` calls of eight columns of
    a softmax over its columns, jammed by fuser-unroll-jam-reductions) are
    side by side already, and their loops are left to LLVM."""
    annotation = ir.Attribute.parse("#llvm.loop_annotation<interleave = #llvm.loop_interleave<count = %d : i32>>" % LIBM_CHAIN_INTERLEAVE)
    for function in module.body.operations:
        if function.operation.name != "llvm.func" or not function.regions[0].blocks:
            continue
        blocks = list(function.regions[0].blocks)
        position = {block: i for i, block in enumerate(blocks)}
        back_edges = {}  # (header, latch) block positions -> the latch's branch
        for latch, block in enumerate(blocks):
            branch = block.operations[len(block.operations) - 1]
            for target in branch.successors:
                if position[target] <= latch:
                    back_edges[position[target], latch] = branch
        for (header, latch), branch in back_edges.items():
            inner = not any(header <= h and l <= latch and (h, l) != (header, latch) for h, l in back_edges)
            if inner and _chained_libm_calls(blocks[header : latch + 1]):
                branch.attributes["loop_annotation"] = annotation


def _chained_libm_calls(blocks: list[ir.Block]) -> bool:
    """Whether a libm wrapper call in ``blocks`` reads, through ops of
    ``blocks``, the result of another: one pass in block order, which for
    these loops puts an op's operands from ``blocks`` before it (as
    share_call_results._with_call does for a generic's body)."""
    from_call: set = set()  # values of blocks computed from a wrapper call's result
    for block in blocks:
        for op in block.operations:
            reads_a_call = any(v in from_call for v in op.operands)
            if reads_a_call and _calls_libm_wrapper(op):
                return True
            if reads_a_call or _calls_libm_wrapper(op):
                from_call.update(op.results)
    return False


def _calls_libm_wrapper(op) -> bool:
    return op.name == "llvm.call" and "callee" in op.attributes and wrapper_callee(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)


@functools.cache
def load_runtime_libraries() -> None:
    """Make libgcc's half-precision conversion routines visible to the JIT."""
    try:
        ctypes.CDLL("libgcc_s.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass


def compile_cpu(module: ir.Module, *, opt_level: int = 3, vector_library: str | None = None) -> CpuProgram:
    """Lower the segments of ``module`` (left unchanged) and JIT them.

    ``vector_library`` overrides the host's (``""``: scalar libm calls).
    """
    source = module.operation.get_asm(enable_debug_info=True)
    lowered, kinds = segments_only(module)
    if not kinds:  # the JIT would compile nothing, and its object dump asserts (aborting the process)
        raise CompileError("compile_cpu: the module holds no segment function to compile")
    if vector_library is None:
        vector_library = host_vector_library()
    before_loops, loops = split_pipeline(cpu_pipeline(vector_library))
    try:
        run_pipeline(lowered, before_loops)
        cuts = segment_cuts(lowered, kinds)
        lowered = copies_as_linalg(lowered)
        run_pipeline(lowered, loops)
    except PipelineError as err:
        raise CompileError(
            "compile_cpu: lowering the segments to the LLVM dialect failed",
            pipeline=err.pipeline,
            diagnostics=err.diagnostics,
            reproducer=save_reproducer(source, "fuser-cpu"),
        ) from None
    lowered = drop_unsigned_wrap_flags(lowered)
    interleave_libm_chains(lowered)
    load_runtime_libraries()
    _check_symbols(lowered, source)
    text = str(lowered)
    engine = ExecutionEngine(lowered, opt_level=opt_level, enable_object_dump=True, enable_pic=True)
    program = CpuProgram(engine=engine, llvm_dialect=text)
    for name, arg_kinds in kinds.items():
        address = engine.raw_lookup("_mlir_ciface_" + name)
        if not address:
            raise CompileError(
                f"compile_cpu: the JIT found no entry point for segment @{name} (see the JIT's message on stderr)",
                pipeline=CPU_PIPELINE,
                reproducer=save_reproducer(source, "fuser-cpu"),
            )
        program.kernels[name] = CpuKernel(address, arg_kinds, name=name, keepalive=engine, **cuts[name])
    program.image, program.image_error = kernel_image(engine, kinds, cuts)
    return program


LIBRARY = "kernels/cpu.so"
#: Libraries a kernel library links against (only those it uses are recorded).
_LINK_LIBRARIES = ("-lmvec", "-lm", "-lgcc_s")


def link_shared_library(object_file: Path, output: Path, compiler: str) -> None:
    """Link ``object_file`` (position-independent) into a shared library with
    no start files; every symbol must resolve (``-z defs``)."""
    command = [compiler, "-shared", "-nostartfiles", "-o", str(output), str(object_file),
               "-Wl,-z,defs", "-Wl,-Bsymbolic", "-Wl,--as-needed", *_LINK_LIBRARIES]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(f"linking the CPU kernels failed: {' '.join(command)}", diagnostics=result.stderr)


def kernel_image(engine, kinds: dict[str, list[ArgKind]], cuts: dict | None = None) -> tuple[KernelImage | None, str]:
    """The engine's code as a CPU kernel image, or None and the reason."""
    compiler = config.c_compiler()
    if not compiler:
        return None, "linking CPU kernels is disabled (FUSER_CC=none)"
    if shutil.which(compiler) is None:
        return None, f"no C compiler '{compiler}' on PATH to link the CPU kernels into a shared library (set FUSER_CC)"
    with tempfile.TemporaryDirectory(prefix="fuser-cpu-") as directory:
        object_file, library = Path(directory) / "kernels.o", Path(directory) / "kernels.so"
        engine.dump_to_object_file(str(object_file))
        if not object_file.is_file():
            return None, "the ExecutionEngine wrote no object file"
        link_shared_library(object_file, library, compiler)
        data = library.read_bytes()
    reason = check_library(data)
    if reason is not None:
        raise CompileError(f"the linked CPU kernel library is not loadable: {reason}")
    return KernelImage("cpu", image_spec(LIBRARY, kinds, host_target(), cuts), {LIBRARY: data}), ""
