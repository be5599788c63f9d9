"""GPU lowering without a GPU: segments become kernels chosen by the
schedulers, PTX that ptxas accepts, and launch programs (plain data)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench_scripts import load as load_bench
from test_executor import cast_then_reshaped
from fuser_mlir import CompileError, DataType, FusionDefinition, config
from fuser_mlir._mlir import ir
from fuser_mlir.dialect import make_context
from fuser_mlir.lowering import gpu, gpu_schedule
from fuser_mlir.lowering.gpu import compile_gpu, lower_to_gpu
from fuser_mlir.lowering.gpu_schedule import bulk_prefetch
from fuser_mlir.pipeline import ptx_features
from fuser_mlir.runtime.launch import SegmentProgram, evaluate
from fuser_mlir.pipeline import run_pipeline


def outlined(fd):
    context = make_context()
    with context, ir.Location.unknown():
        module = fd.build_module(context)
        run_pipeline(module, "fuser-verify,fuser-segment,fuser-resolve-alias-hazards,fuser-outline-segments")
    return context, module


def softmax_bf16():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def mixed_math():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[1, -1, 1], dtype=DataType.Double)
        t = fd.ops.erf(x) * fd.ops.tanh(y) + fd.ops.expm1(x)
        fd.add_output(fd.ops.sum(t, dims=[0, 2]))
        fd.add_output(fd.ops.where(x > 0.0, fd.ops.log1p(fd.ops.abs(x)), x))
    return fd


CASES = {"softmax_bf16": softmax_bf16, "mixed_math": mixed_math}
#: A plain (coherent) vector load in PTX, with or without its L2 policy (gpu.hint_loads).
VECTOR_LOAD = r"ld\.global(\.L2::cache_hint)?\.v4"


def sums(dims):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=dims))
    return fd


CASES = {"softmax_bf16": softmax_bf16, "mixed_math": mixed_math}
#: A plain (coherent) vector load in PTX, with or without its L2 policy (gpu.hint_loads).
VECTOR_LOAD = r"ld\.global(\.L2::cache_hint)?\.v4"


def needs_libdevice():
    if config.libdevice_path() is None:
        pytest.skip("no libdevice here (no CUDA toolkit); the error case is tested above")


def test_math_without_libdevice_is_a_clear_error(monkeypatch):
    monkeypatch.setattr("fuser_mlir.lowering.gpu.config.libdevice_path", lambda: None)
    context, module = outlined(mixed_math())
    with context, ir.Location.unknown(), pytest.raises(CompileError, match=r"the kernels call libdevice math functions \(__nv_erff, .*\), but libdevice was not found"):
        compile_gpu(module, arch="sm_90", load=False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_segments_lower_to_ptx_that_ptxas_accepts(case):
    needs_libdevice()
    context, module = outlined(CASES[case]())
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False)
    assert ".target sm_90" in program.ptx and ".entry" in program.ptx
    assert ".extern .func" not in program.ptx, "a function is not linked in (libdevice missing?)"
    launched = {launch.kernel for p in program.programs.values() for launch in p.launches}
    assert launched == set(re.findall(r"\.entry (\w+)\(", program.ptx))
    if shutil.which("ptxas"):  # compile_gpu ran ptxas on the PTX; a rejection raises
        assert program.cubin[:4] == b"\x7fELF"
    else:
        assert program.cubin is None


def trig_in_two_kernels():
    """Two segments that call libdevice's sinf, which reads the table
    ``__cudart_i2opi_f``: each kernel module holds a copy of it."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.sin(x), dims=[1]))
        fd.add_output(fd.ops.sin(x) * fd.ops.cos(x))
    return fd


def disassembly(cubin: bytes, tmp_path, sass) -> str:
    """nvdisasm's listing of ``cubin`` (``sass``: scripts/kernel_sass.py, which finds nvdisasm)."""
    path = tmp_path / "kernels.cubin"
    path.write_bytes(cubin)
    return subprocess.run([sass.nvdisasm(), "-c", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit or the cuda extra) is not on PATH")
def test_kernels_compiled_one_module_each_are_the_kernels_of_one_module(monkeypatch, tmp_path):
    """SEPARATE_KERNEL_MODULES: each kernel compiled in a module of its own
    and the PTX merged gives every kernel the SASS it has when all are one
    module, and the libdevice table both read is defined once."""
    needs_libdevice()
    programs = {}
    for separate in (True, False):
        monkeypatch.setattr(gpu, "SEPARATE_KERNEL_MODULES", separate)
        context, module = outlined(trig_in_two_kernels())
        with context, ir.Location.unknown():
            programs[separate] = compile_gpu(module, arch="sm_90", load=False)
    merged, whole = programs[True], programs[False]
    assert merged.ptx.count(".global .align 4 .b8 __cudart_i2opi_f[24]") == whole.ptx.count(".global .align 4 .b8 __cudart_i2opi_f[24]") == 1
    kernels = re.findall(r"\.entry (\w+)\(", whole.ptx)
    assert len(kernels) >= 2 and re.findall(r"\.entry (\w+)\(", merged.ptx) == kernels
    from bench_scripts import load_script

    sass = load_script("kernel_sass", monkeypatch)
    separate, together = disassembly(merged.cubin, tmp_path, sass), disassembly(whole.cubin, tmp_path, sass)
    for kernel in kernels:
        code = sass.kernel_section(together, kernel)
        assert any("EXIT" in line for line in code) and sass.kernel_section(separate, kernel) == code, f"{kernel} differs"


def one_value_kernel(name: str, op: str) -> str:
    """A gpu.func that loads one float, computes ``%r`` from ``%v`` by ``op``, and stores it."""
    return f"""
    gpu.func @{name}(%arg0: memref<?xf32>) kernel {{
      %c0 = arith.constant 0 : index
      %v = memref.load %arg0[%c0] : memref<?xf32>
      {op}
      memref.store %r, %arg0[%c0] : memref<?xf32>
      gpu.return
    }}"""


#: Three kernels, the last two of which convert-gpu-to-nvvm cannot lower (lines 14 and 21).
KERNELS_TWO_CANNOT_LOWER = (
    "\nmodule attributes {gpu.container_module} {\n  gpu.module @fuser_kernels {"
    + one_value_kernel("fine", "%r = arith.addf %v, %v : f32")
    + one_value_kernel("sums", "%r = gpu.subgroup_reduce add %v : (f32) -> f32")
    + one_value_kernel("products", "%r = gpu.subgroup_reduce mul %v : (f32) -> f32")
    + "\n  }\n}\n"
)


def test_kernels_that_fail_to_lower_side_by_side_are_one_compile_error_in_their_order():
    """Kernels lowered in modules of their own, side by side: the two that
    cannot lower (a float gpu.subgroup_reduce, which convert-gpu-to-nvvm does
    not take) are reported with their source lines, in kernel order, in one
    CompileError with the pipeline and a reproducer; the process lives on."""
    with make_context() as context, ir.Location.unknown():
        kernels = ir.Module.parse(KERNELS_TWO_CANNOT_LOWER, context)
        with pytest.raises(CompileError) as failure:
            gpu.to_ptx(kernels, "sm_90")
    message = str(failure.value)
    assert "builtin.module(builtin.module(symbol-dce, canonicalize" in message and "reproducer saved to" in message
    sums = message.index("-:14:12: error: failed to legalize operation 'gpu.subgroup_reduce'")
    assert sums < message.index("-:21:12: error: failed to legalize operation 'gpu.subgroup_reduce'")


def schedule(fd):
    context, module = outlined(fd)
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module)
        return str(scheduled.module), scheduled.programs


def test_integer_abs_lowers_to_ptx_abs():
    """math.absi (abs of an integer tensor) is not among convert-gpu-to-nvvm's
    patterns; convert-math-to-llvm after it makes it llvm.intr.abs, which
    PTX has as abs.s32 / abs.s64 (before, translation to LLVM IR failed)."""
    needs_libdevice()
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        fd.add_output(fd.ops.abs(a))
        fd.add_output(fd.ops.abs(b))
    context, module = outlined(fd)
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False)
    assert re.search(r"\babs\.s32\b", program.ptx) and re.search(r"\babs\.s64\b", program.ptx)


def test_a_reshape_to_a_static_shape_views_its_copy_with_constant_sizes():
    """A reshape whose target sizes are all constants gets its shape buffer
    from a constant global (bufferization folds the stored sizes into one):
    the schedulers read the global's values as the view's sizes."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2, 3], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [3, 2]) * 2.0)
    context, module = outlined(fd)
    with context, ir.Location.unknown():
        assert "memref.get_global" in str(gpu_buffers(module))
        scheduled = lower_to_gpu(module)
    (program,) = scheduled.programs.values()
    views = [launch.args[0] for launch in program.launches if launch.args[0][0] == "view"]
    assert views and all(view == ["view", 0, [["const", 3], ["const", 2]]] for view in views)
    assert program.temps[0].shape == [["const", 2], ["const", 3]]


def test_a_buffer_more_static_than_the_reshape_of_it_is_taken_without_its_cast():
    """Canonicalization gives ``w``'s buffer the static shape [3, 1, 3] and
    casts it to [3, 1, ?] for the reshape that flattens it: the schedulers
    take the buffer itself (:func:`gpu.fold_size_casts`), as the reshape's
    view of the temporary; before, the segment was refused ("cannot run
    'memref.cast'": gpu_compile_fuzz.py, sweep 64)."""
    context, module = outlined(cast_then_reshaped())
    with context, ir.Location.unknown():
        assert "memref.cast" in str(gpu_buffers(module))
        scheduled = lower_to_gpu(module)
    (program,) = scheduled.programs.values()
    assert program.temps[0].shape == [["const", 3], ["const", 1], ["const", 3]]
    assert any(arg[:2] == ["view", 0] for launch in program.launches for arg in launch.args)


def gpu_buffers(module):
    """The segments of ``module`` on memrefs, as the schedulers take them."""
    lowered, _ = gpu.segments_only(module)
    run_pipeline(lowered, gpu.BUFFERS_PIPELINE)
    return lowered


def test_inner_reduction_is_a_warp_per_short_row_and_a_block_per_long_row():
    text, programs = schedule(sums([2]))
    (program,) = programs.values()
    warp, block = program.launches  # the fill is folded into both kernels
    assert not program.temps
    assert "gpu.shuffle  xor" in text and re.search(r"gpu.all_reduce +add", text)
    short, long = [(3, 5, 7), (3, 5)], [(3, 5, 5000), (3, 5)]
    assert evaluate(warp.when, short, []) == 1 and evaluate(block.when, short, []) == 0
    assert evaluate(warp.when, long, []) == 0 and evaluate(block.when, long, []) == 1
    # 8 warps of a 256-thread block take 8 rows; a block takes one: rows = d0 * d1
    assert evaluate(warp.grid[0], short, []) == 2 and evaluate(block.grid[0], short, []) == 15
    assert warp.block == block.block == [256, 1, 1]


def test_a_softmax_is_one_persistent_kernel_per_scheme():
    text, programs = schedule(softmax_bf16())
    (program,) = programs.values()  # one segment (rule 2b)
    assert len(program.launches) == 2 and not program.temps  # row values stay in registers
    for launch in program.launches:  # reads the input, writes the output, nothing else
        assert launch.args == [["arg", 0], ["arg", 1]]
    assert "gpu.shuffle  xor" in text and "gpu.all_reduce" in text


def test_outer_reduction_splits_rows_into_partials_then_combines_them():
    """Kernel A writes each split's partial results to a [splits, columns]
    temporary; kernel B combines them, in tiles of a block's warps (each
    every 8th split) from OUTER_COMBINE_TILES splits, else a thread a column
    over all splits."""
    text, programs = schedule(sums([0]))
    (program,) = programs.values()
    assert [len(t.shape) for t in program.temps] == [2]
    first, tiled, second = program.launches
    tall, short = [(100000, 4, 8), (4, 8)], [(40, 4, 8), (4, 8)]
    splits = evaluate(program.temps[0].shape[0], tall, [], sms=132)
    assert evaluate(program.temps[0].shape[1], tall, [], sms=132) == 32
    assert splits == 132 * gpu_schedule.OUTER_BLOCKS_PER_SM and evaluate(first.grid[1], tall, [], sms=132) == splits  # one wave
    assert evaluate(program.temps[0].shape[0], tall, [], sms=2) == 2 * gpu_schedule.OUTER_BLOCKS_PER_SM
    assert first.args[-1] == ["temp", 0] and tiled.args[-1] == second.args[-1] == ["arg", 1]
    assert evaluate(program.temps[0].shape[0], short, [], sms=132) == 2
    assert evaluate(tiled.when, tall, [], sms=132) == 1 and evaluate(second.when, tall, [], sms=132) == 0
    assert evaluate(tiled.when, short, [], sms=132) == 0 and evaluate(second.when, short, [], sms=132) == 1
    assert evaluate(tiled.grid[0], tall, []) == 1 and kernel_text(text, tiled.kernel).count("gpu.barrier") == 1
    assert "gpu.all_reduce" not in text
    assert evaluate(program.temps[0].shape[0], [(0, 4, 8), (4, 8)], [], sms=132) == 1  # empty reductions still write the identity


def outer_sum(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), dims=[0]))
    return fd


@pytest.mark.parametrize("dtype, lanes", [(DataType.Float, 4), (DataType.BFloat16, 8), (DataType.Bool, 16)])
def test_outer_reductions_of_whole_vector_columns_read_vectors_in_tiles(dtype, lanes):
    """Dense, aligned columns that are whole 16-byte vectors take the tiles
    (gpu_schedule.OUTER_VECTORS): a lane a vector of columns, a warp 32
    vectors of a row, the block's 8 warps every 8th row of the split, their
    results combined through shared memory after a barrier, every column of
    the tile (a Boolean tile of 512 columns takes the block's 256 threads
    twice); other column counts a column a thread, as before. Each variant
    sizes the one scratch by its own splits (equal for bfloat16, whose tile
    is 256 columns wide, the column kernel's block)."""
    context, module = outlined(outer_sum(dtype))
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16), (True, 16)]})
    text = str(scheduled.module)
    (program,) = scheduled.programs.values()
    tiles, columns, combine_tiles, combine = program.launches
    whole, odd = [(65536, 1024), (1024,)], [(65536, 1023), (1023,)]
    assert evaluate(tiles.when, whole, []) == 1 and evaluate(columns.when, whole, []) == 0
    assert evaluate(combine_tiles.when, whole, [], sms=132) == 1 and evaluate(combine.when, whole, [], sms=132) == 0
    assert evaluate(tiles.when, odd, []) == 0 and evaluate(columns.when, odd, []) == 1
    assert evaluate(tiles.grid[0], whole, []) == -(-1024 // (32 * lanes)) and evaluate(columns.grid[0], odd, []) == 4
    splits, wave = program.temps[0].shape[0], 132 * gpu_schedule.OUTER_BLOCKS_PER_SM  # blocks: at most one wave
    assert evaluate(splits, whole, [], sms=132) == wave // (1024 // (32 * lanes)) and evaluate(splits, odd, [], sms=132) == wave // 4
    assert evaluate(tiles.grid[1], whole, [], sms=132) == evaluate(splits, whole, [], sms=132)
    assert evaluate(splits, [(0, 1024), (1024,)], [], sms=132) == 1  # empty reductions still write the identity
    tile = kernel_text(text, tiles.kernel)
    element = {4: "f32", 8: "bf16", 16: "i8"}[lanes]
    assert len(re.findall(rf"memref\.load .*memref<\?xvector<{lanes}x{element}>>", tile)) == 4 + 1  # OUTER_UNROLL rows, then the rest one by one
    shared = f"memref<{8 * 32 * lanes}xf32, #gpu.address_space<workgroup>>"
    assert tile.count("gpu.barrier") == 1 and shared in text
    passes = -(-32 * lanes // gpu_schedule.THREADS)  # of the block's threads over the tile's columns
    assert len(re.findall(rf"memref\.load .* : {re.escape(shared)}", tile)) == 8 * passes  # each column's 8 warps
    assert "vector<" not in kernel_text(text, columns.kernel)


@pytest.mark.parametrize("epilogues", [True, False])
def test_a_pointwise_generic_after_an_outer_reduction_runs_in_its_combining_kernels(monkeypatch, epilogues):
    """The cast of a bfloat16 outer sum back to bfloat16 runs where each
    column's total is combined (gpu_schedule.OUTER_EPILOGUES), in both
    combining kernels: no kernel of its own, and no float32 temporary of
    the totals, only the partials. Off, the cast is a kernel reading that
    temporary."""
    monkeypatch.setattr(gpu_schedule, "OUTER_EPILOGUES", epilogues)
    bench = load_bench("run")  # its outer sum of bfloat16: summed in float32, cast back
    context, module = outlined(bench.fusion_for(next(c for c in bench.CASES if c.name == "outer_sum"), "bfloat16"))
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"outer_sum_bfloat16_seg0": [(True, 16), (True, 16)]})
    text = str(scheduled.module)
    (program,) = scheduled.programs.values()
    shapes = [(65536, 1024), (1024,)]
    assert [len(t.shape) for t in program.temps] == ([2] if epilogues else [2, 1])
    tiles, columns, combine_tiles, combine, *cast = program.launches
    assert len(cast) == (0 if epilogues else 1)
    for launch in (combine_tiles, combine):
        assert ("arith.truncf" in kernel_text(text, launch.kernel)) == epilogues
        assert (["arg", 1] in launch.args) == epilogues  # the bfloat16 output
    assert evaluate(combine_tiles.when, shapes, [], sms=132) == 1 and evaluate(combine.when, shapes, [], sms=132) == 0


SUM_READ_TWICE = """
func.func @seg(%x: memref<?x?xf32>, %a: memref<?xf32>, %b: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  %t = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%zero : f32) outs(%t : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%t : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%t : memref<?xf32>) outs(%a : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%t : memref<?xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  }
  memref.dealloc %t : memref<?xf32>
  return
}
"""


def test_an_outer_reductions_temporary_read_after_its_epilogue_is_still_written():
    """Totals that a later generic of the segment reads too are stored
    (and that generic runs in a kernel of its own); only the first generic
    after the reduction runs in the combining kernels."""
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(SUM_READ_TWICE, context)
        kernels = ir.Module.create()
        with ir.InsertionPoint(kernels.body):
            holder = ir.Operation.create("gpu.module", regions=1, attributes={"sym_name": ir.StringAttr.get("k")})
        body = holder.regions[0].blocks.append()
        program = gpu_schedule.schedule_segment(module.body.operations[0].operation, body, "seg")
    # the column kernel, both combining kernels (with the exp), the negation
    assert [len(t.shape) for t in program.temps] == [2, 1]
    _, combine_tiles, combine, negation = program.launches
    for launch in (combine_tiles, combine):
        assert ["temp", 1] in launch.args and ["arg", 1] in launch.args and ["arg", 2] not in launch.args
    assert negation.args == [["temp", 1], ["arg", 2]]
    assert "math.exp" in str(kernels) and "arith.negf" in str(kernels)


def test_reductions_of_non_adjacent_dims_run_one_thread_per_output():
    _, programs = schedule(sums([0, 2]))
    (program,) = programs.values()
    fill, reduction = program.launches  # the serial scheme reads its initial value from the filled output
    assert fill.args == [["arg", 1]] and ["arg", 0] in reduction.args


def test_launch_programs_round_trip_through_json():
    _, programs = schedule(softmax_bf16())
    for program in programs.values():
        again = SegmentProgram.from_dict(json.loads(json.dumps(program.to_dict())))
        assert again == program
        assert again.describe() == program.describe()


def test_formulas():
    shapes = [(6, 10), ()]
    assert evaluate(["ceildiv", ["argdim", 0, 1], ["const", 4]], shapes, [None, 3]) == 3
    assert evaluate(["min", ["mul", ["argdim", 0, 0], ["arg", 1]], ["const", 7]], shapes, [None, 3]) == 7
    assert evaluate(["div", ["const", 7], ["const", 2]], shapes, []) == 3
    assert evaluate(["max", ["sub", ["const", 1], ["const", 2]], ["const", 0]], shapes, []) == 0


def test_row_kernels_read_16_byte_vectors_where_rows_divide_and_layouts_allow():
    context, module = outlined(softmax_bf16())
    with context, ir.Location.unknown():
        dense = lower_to_gpu(module, {"fusion_seg0": [(True, 16), (True, 16)]})
        strided = lower_to_gpu(module, {"fusion_seg0": [(False, 16), (True, 16)]})
    (program,) = dense.programs.values()
    lanes = [{b[2] for b in launch.args if b[0] == "flat"} for launch in program.launches]
    vector = [launch for launch, n in zip(program.launches, lanes) if n == {8}]  # bf16: 8 per 16 bytes
    flat = [launch for launch, n in zip(program.launches, lanes) if n == {8, 1}]  # and elements past the tensor's last whole vector
    # groups of a warp's lanes a row (SPAN_ROWS), two warps and four blocks with the row in registers (a fifth would
    # need more registers), a block reading it per pass; the same for rows that are not whole vectors, over the
    # tensor's flat vectors (FLAT_ROWS; their groups of lanes: FLAT_SPAN_ROWS), and for rows of 16K columns or fewer
    # within a vector of a cached variant's columns, that variant with an edge slot (FLAT_EDGE_SLOTS)
    assert len(vector) == 8 and len(flat) == 8 + 5
    edge = flat[8:]
    lengths = {4096: "vector", 4100: "flat", 9000: "vector", 9009: "flat", 32768: "vector", 32770: "flat", 40000: "vector", 40007: "flat"}
    lengths |= {7: "scalar", 9: "flat", 77: "flat", 1015: "flat", 1017: "edge", 1023: "edge", 1025: "flat", 16383: "edge", 32767: "flat"}
    for cols, scheme in lengths.items():
        chosen = [launch for launch in program.launches if evaluate(launch.when, [(3, cols), (3, cols)], [])]
        kinds = {"vector": chosen[0] in vector, "flat": chosen[0] in flat[:8], "edge": chosen[0] in edge}
        assert len(chosen) == 1 and kinds.get(scheme, chosen[0] not in vector + flat), cols
    # the edge slot: a lane's slots of the warp that takes rows of up to 1016 columns, and one more
    text = str(dense.module)

    def kernel_for(cols):
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, [(3, cols), (3, cols)], [])]
        return kernel_text(text, launch.kernel)

    assert [len(re.findall(r"memref\.load .*memref<\?xvector<8xbf16>>", kernel_for(cols))) for cols in (1015, 1023)] == [4, 4 + 1]

    def capped(cols):
        return "nvvm.maxnreg = 128" in kernel_for(cols)

    # the edge copy of the warp of the most slots keeps two blocks an SM (EDGE_MAX_REGISTERS); the others are uncapped
    assert capped(2047) and not any(capped(cols) for cols in (1023, 2048, 2039, 16383))
    (program,) = strided.programs.values()
    assert not any(b[0] == "flat" for launch in program.launches for b in launch.args)  # a strided input: scalar loads


@pytest.mark.parametrize("flat", [True, False])
def test_rows_that_are_not_whole_vectors_run_on_the_tensors_flat_vectors(flat, monkeypatch):
    """A scale and bias (bench/run.py's scale_bias) of rows that are not a
    whole number of 16-byte vectors, dense and aligned: with
    FLAT_SCALAR_ROWS one kernel over the tensor's flat vectors (x loaded and
    the output stored as vector<4xf32>, each element's column from a
    division a vector, the weights loaded an element at a time), a thread a
    vector; without it, the scalar row variants (a warp a row, a block a
    piece). Rows of whole vectors take a flat kernel of their own
    (FLAT_WHOLE_ROWS)."""
    monkeypatch.setattr(gpu_schedule, "FLAT_SCALAR_ROWS", flat)
    text, chosen = bench_rows("scale_bias", "float32")
    whole = chosen(4096)
    assert ["flat", ["arg", 0], 4] in whole.args
    kernels = {chosen(cols).kernel for cols in (129, 1001, 4095, 5001, 32767)}
    if not flat:
        assert len(kernels) == 2 and all("vector<4xf32>" not in kernel_text(text, name) for name in kernels)
        return
    (name,) = kernels
    launch, kernel = chosen(4095), kernel_text(text, name)
    assert name != whole.kernel and launch.block == [256, 1, 1]
    assert evaluate(launch.grid[0], [(3, 4095), (4095,), (4095,), (3, 4095)], []) == -(-3 * 4095 // 1024)
    assert ["flat", ["arg", 0], 4] in launch.args and ["flat", ["arg", 3], 4] in launch.args
    assert kernel.count("memref.load") == 1 + 2 * 4 + 3 and kernel.count("vector<4xf32>") >= 2  # x, 4 columns of w and b; the tail's 3
    body = kernel.split("scf.for")[1]  # the loop over vectors (then the tail's)
    assert body.count("arith.divui") == 1 and "arith.remui" not in body  # a vector's row; its columns by adding


@pytest.mark.parametrize("flat", [True, False])
def test_rows_of_whole_vectors_that_read_a_full_size_input_run_on_the_tensors_flat_vectors(flat, monkeypatch):
    """A scale and bias of rows of whole 16-byte vectors, dense and aligned:
    with FLAT_WHOLE_ROWS one kernel over the tensor's flat vectors for every
    such row length, a thread a vector (its row and column by one
    division), x, w and b each one vector load, no select between rows;
    without it a warp a row and a block a piece. A column plus a row (a
    write-only broadcast) keeps its row variants either way (rows of 512
    float32 columns a warp each; test_write_only_broadcast_rows_take_small_blocks)."""
    monkeypatch.setattr(gpu_schedule, "FLAT_WHOLE_ROWS", flat)
    text, chosen = bench_rows("scale_bias", "float32")
    kernels = {chosen(cols).kernel for cols in (128, 1024, 4096, 32768)}
    if not flat:
        assert len(kernels) == 2 and chosen(1024).kernel != chosen(32768).kernel
    else:
        (name,) = kernels
        launch, kernel = chosen(4096), kernel_text(text, name)
        assert launch.block == [256, 1, 1] and evaluate(launch.grid[0], [(3, 4096), (4096,), (4096,), (3, 4096)], []) == 3 * 4096 // 1024
        assert all(["flat", ["arg", i], 4] in launch.args for i in range(4))  # x, w, b and the output as vectors
        body = kernel.split("scf.for")[1]  # the loop over vectors
        assert len(re.findall(r"memref\.load .*memref<\?xvector<4xf32>>", body)) == 3
        assert body.count("arith.divui") == 3 and "arith.select" not in body  # the vector's row; w's and b's vector index (by 4)
    text, chosen = bench_rows("broadcast_add", "float32")
    warp = chosen(512)
    assert warp.block == [32 * 8, 1, 1] and evaluate(warp.grid[0], [(3, 1), (1, 512), (3, 512)], []) == 1  # 3 rows, a warp each: one block
    assert len(re.findall(r"memref\.load .*memref<\?xvector<4xf32>>", kernel_text(text, warp.kernel))) >= 4  # the row's vectors, unrolled


@pytest.mark.parametrize("dtype, lanes", [("float32", 4), ("bfloat16", 8)])
def test_write_only_broadcast_rows_take_small_blocks(dtype, lanes):
    """A column plus a row (no full-size input) whose rows are at least
    WRITE_ONLY_BLOCK's 128 x 2 vectors and shorter than a block's chunk (256
    threads x 4 vectors) run a block of 128 threads a row, 2 vector loads
    and stores a lane a chunk; shorter rows a warp a row (8 warps a block),
    longer ones a block of 256 threads a piece."""
    text, chosen = bench_rows("broadcast_add", dtype)
    least, chunk = 256 * lanes, 1024 * lanes
    shapes = lambda cols: [(3, 1), (1, cols), (3, cols)]  # noqa: E731
    warp, block, piece = chosen(least - lanes), chosen(least), chosen(chunk)
    assert len({warp.kernel, block.kernel, piece.kernel}) == 3
    assert {chosen(cols).kernel for cols in (least + lanes, chunk - lanes)} == {block.kernel}
    assert chosen(chunk + lanes).kernel == piece.kernel
    assert warp.block == [256, 1, 1] and evaluate(warp.grid[0], shapes(least - lanes), []) == 1  # 3 rows, a warp each
    assert block.block == [128, 1, 1] and evaluate(block.grid[0], shapes(least), []) == 3  # a block a row
    assert piece.block == [256, 1, 1]
    kernel = kernel_text(text, block.kernel)
    vector = f"memref<\\?xvector<{lanes}x{'f32' if dtype == 'float32' else 'bf16'}>>"
    assert len(re.findall(rf"memref\.load .*{vector}", kernel)) == 2 and len(re.findall(rf"memref\.store .*{vector}", kernel)) == 2
    assert kernel.count("scf.for") == 2  # the pieces (a row one piece), and the piece's chunks


def kernel_text(text: str, name: str) -> str:
    """The kernel's gpu.func, up to the next kernel or the next kernel's shared buffers (declared before it)."""
    start = text.index(f"gpu.func @{name}(")
    ends = [at for at in (text.find("gpu.func @", start + 1), text.find("memref.global", start)) if at >= 0]
    return text[start : min(ends, default=len(text))]


def test_rows_that_fit_in_registers_are_read_once_and_longer_rows_in_unrolled_chunks():
    context, module = outlined(softmax_bf16())
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16), (True, 16)]})
    text = str(scheduled.module)
    (program,) = scheduled.programs.values()

    def chosen(cols):
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, [(3, cols), (3, cols)], [])]
        return launch

    def vector_loads(launch):
        # from memory, or from the shared memory that a 1024-thread block's rows arrive in (BUFFER_NEXT_ROW)
        return len(re.findall(r"memref\.(?:load|store) .*memref<\?xvector<8xbf16>(?:, #gpu.address_space<workgroup>)?>", kernel_text(text, launch.kernel)))

    cached = [chosen(1024), chosen(2048), chosen(4096), chosen(8192), chosen(16384), chosen(32768)]
    long = chosen(32776)
    assert len({launch.kernel for launch in [*cached, long]}) == 7
    assert [launch.block[0] for launch in [*cached, long]] == [32, 32, 256, 256, 512, 1024, 256]  # warps (a block of one: WARP_BLOCK_THREADS), then blocks
    # loaded once for the max, the sum and the quotient: a warp's lanes 4 or 8 vectors of 8 bf16, a block's 2 or 4
    for launch, slots in zip(cached, [4, 8, 2, 4, 4, 4]):
        assert vector_loads(launch) == slots + slots  # loads, stores
    # longer rows: each of the 3 passes loads 4 vectors per chunk (and the last one stores them)
    assert vector_loads(long) == 3 * 4 + 4
    # loads and stores guarded by the row length; in the cached variants only the stores (loads clamped into the row: CLAMPED_LOADS)
    for launch, guarded in zip([*cached, long], [4, 8, 2, 4, 4, 4, 8]):
        assert kernel_text(text, launch.kernel).count("scf.if") >= guarded
    assert vector_loads(chosen(0)) == 0  # rows of no columns: the scalar variant (a clamped load needs a vector to clamp to)


#: bench_rows' compiled programs by (case, dtype, arch, the lowering's settings): several tests read the same.
_BENCH_ROWS: dict = {}


def bench_rows(case: str, dtype: str, arch: str | None = None, alignment: int = 16):
    """A normalization of bench/run.py for dense arguments aligned to
    ``alignment`` bytes: scheduled (the kernel module's text), or with
    ``arch`` compiled for it (the GpuProgram, PTX and all), and a function
    from a row length to the launch that runs rows of it. Compiled once for
    each set of the lowering's constants (what the tests monkeypatch) and
    libdevice."""
    settings = tuple((name, repr(value)) for module in (gpu_schedule, gpu) for name, value in sorted(vars(module).items()) if name.isupper())
    key = (case, dtype, arch, alignment, settings, config.libdevice_path())
    if key not in _BENCH_ROWS:
        _BENCH_ROWS[key] = _bench_rows(case, dtype, arch, alignment)
    return _BENCH_ROWS[key]


def _bench_rows(case: str, dtype: str, arch: str | None, alignment: int):
    bench = load_bench("run")
    bench_case = next(c for c in bench.CASES if c.name == case)
    shapes_of = bench_case.shapes
    context, module = outlined(bench.fusion_for(bench_case, dtype))
    layouts = {f"{case}_{dtype}_seg0": [(True, alignment)] * (len(shapes_of(1 << 20, 1024)) + 1)}
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, layouts) if arch is None else compile_gpu(module, arch=arch, load=False, layouts=layouts)
    (program,) = scheduled.programs.values()

    def chosen(cols):
        shapes = [*shapes_of(3 * cols, cols), (3, cols)]  # three rows, and the output
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
        return launch

    return (str(scheduled.module) if arch is None else scheduled), chosen


def test_cached_blocks_reduce_with_one_barrier_each():
    """A cached block variant combines its warps' results with one barrier a
    reduction: lane 0 of each warp writes the warp's word to the kernel's
    workgroup buffer of partials, and every warp reads them all after the
    barrier. A softmax's two reductions take two barriers, an RMS norm's one
    takes one; blocks whose rows arrive in shared memory have one more, before
    their row loop. Blocks that read the row per generic keep gpu.all_reduce."""
    for case, dtype, reductions, lengths in [("softmax", "bfloat16", 2, (4096, 8192, 16384, 32768)), ("rms_norm", "float32", 1, (2048, 4096, 8192, 16384))]:
        text, chosen = bench_rows(case, dtype)
        for cols in lengths:
            launch = chosen(cols)
            kernel = kernel_text(text, launch.kernel)
            assert launch.block[0] >= 256 and kernel.count("gpu.barrier") == reductions + bool(launch.shared_bytes), (case, cols)
            assert "gpu.all_reduce" not in kernel and f"memref.get_global @{launch.kernel}_partials0 " in kernel
            declared = f'memref.global "private" @{launch.kernel}_partials0 : memref<64xi32, #gpu.address_space<workgroup>>'
            assert declared in text
        long = kernel_text(text, chosen(65536).kernel)
        assert len(re.findall(r"gpu.all_reduce +(max|add)", long)) == reductions and "_partials" not in long


def layer_norm_f32(x_dtype=DataType.Float):
    """A float32 layer norm; ``x_dtype``: of its input x (converted to float32)."""
    with FusionDefinition() as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=x_dtype), DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        centered = x - fd.ops.mean(x, dims=[1], keepdim=True)
        var = fd.ops.mean(centered * centered, dims=[1], keepdim=True)
        fd.add_output(centered * fd.ops.rsqrt(var + 1e-5) * w + b)
    return fd


def layer_norm_bf16():
    """A layer norm of bfloat16 tensors computed in float32."""
    with FusionDefinition() as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), dtype=DataType.Float)
        w = fd.ops.cast(fd.define_tensor(shape=[-1], dtype=DataType.BFloat16), dtype=DataType.Float)
        b = fd.ops.cast(fd.define_tensor(shape=[-1], dtype=DataType.BFloat16), dtype=DataType.Float)
        centered = x - fd.ops.mean(x, dims=[1], keepdim=True)
        normed = centered * fd.ops.rsqrt(fd.ops.mean(centered * centered, dims=[1], keepdim=True))
        fd.add_output(fd.ops.cast(normed * w + b, dtype=DataType.BFloat16))
    return fd


def softmax_f32():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


@pytest.mark.parametrize("register_room", [1, gpu_schedule.REGISTER_ROOM])
def test_block_variants_hold_rows_in_registers_only_as_far_as_they_fit(register_room, monkeypatch):
    """A softmax keeps one value per column, so 1024 threads take rows of up
    to 32768 float32 columns in registers (32 a lane), and 512 threads rows
    of 16384 (32 a lane: half of what each may take with two blocks an SM).
    A layer norm also reads a weight and a bias per column (40 words a lane
    on 8 slots): by the register rule alone, 512 threads take its rows only
    to 8 columns a lane (8192), 1024 threads to 16 (16384), and longer ones
    are staged in shared memory by 1024 threads (see the next test); the
    rule's room of 1.25 times the registers (REGISTER_ROOM) lets 512
    threads take rows to 16384 and 1024 threads to 32768. The
    512-thread blocks ask ptxas for room for two blocks per SM; blocks other
    than 256 threads are declared to ptxas, but for the warps' blocks of one."""
    monkeypatch.setattr(gpu_schedule, "REGISTER_ROOM", register_room)
    extra = register_room > 1
    for build, inputs, blocks_16k in [(softmax_f32, 1, 512), (layer_norm_f32, 3, 512 if extra else 1024)]:
        context, module = outlined(build())
        with context, ir.Location.unknown():
            scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (inputs + 1)})
        (program,) = scheduled.programs.values()
        text = str(scheduled.module)
        blocks = []
        for cols in (1024, 4096, 8192, 16384, 32768):
            shapes = [(3, cols)] + [(cols,)] * (inputs - 1) + [(3, cols)]
            (launch,) = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
            blocks.append(launch.block[0])
            kernel = kernel_text(text, launch.kernel)
            declared = re.search(r"nvvm.maxntid = array<i32: (\d+), 1, 1>", kernel)
            assert (declared is None) == (launch.block[0] in (32, 256)) and (declared is None or int(declared[1]) == launch.block[0])
            assert ("nvvm.minctasm = 2" in kernel) == (launch.block[0] == 512)
        assert blocks == [32, 256, 512, blocks_16k, 1024]  # a warp a row in blocks of one (WARP_BLOCK_THREADS), undeclared


def test_rows_past_the_register_variants_are_staged_in_shared_memory(monkeypatch):
    """A float32 layer norm of 16K to 32K columns, by the register rule alone
    (REGISTER_ROOM 1): one 1024-thread
    block per row loads its lane's 8 vectors at once into shared memory
    (dynamic: x's 4 bytes a column, padded to 16 columns); later passes read
    them there in chunks. Longer rows, and bfloat16 ones (2 bytes a column:
    too few to keep memory busy from one block per SM), read the row per
    pass. The PTX declares the dynamic buffer external, apart from the static
    buffers of gpu.all_reduce."""
    needs_libdevice()
    program, segment, chosen = layer_norm_f32_by_the_register_rule(monkeypatch)
    staged = [launch for launch in segment.launches if launch.shared_bytes and "_rows" not in kernel_ptx(program.ptx, launch.kernel)]
    staged, flat = sorted(staged, key=lambda launch: any(b[0] == "flat" and b[2] == 1 for b in launch.args))
    assert staged.block == flat.block == [1024, 1, 1]
    assert [chosen(cols) is staged for cols in (16384, 16388, 32768, 32772)] == [False, True, True, False]
    for cols in (16388, 20000, 32768):
        assert evaluate(staged.shared_bytes, [(3, cols)], []) == -(-cols // 16) * 16 * 4
    # rows that are not whole vectors (FLAT_ROWS): a vector less, each padded for one more
    assert [chosen(cols) is flat for cols in (16383, 16385, 32763, 32765)] == [False, True, True, False]
    assert evaluate(flat.shared_bytes, [(3, 20001)], []) == -(-20005 // 16) * 16 * 4
    assert re.search(r"\.extern \.shared \.align 16 \.b8 __dynamic_shmem__\w*\[\];", program.ptx)
    kernel = kernel_ptx(program.ptx, staged.kernel)
    assert kernel.count("st.shared.v4") == 8 and kernel.count("ld.shared.v4") == 2 * 4  # x kept; 2 passes read it by 4 slots
    context, module = outlined(layer_norm_bf16())
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * 4})
    (segment,) = scheduled.programs.values()
    shared = [launch for launch in segment.launches if launch.shared_bytes]  # the 1024-thread cached block's row buffer only
    assert [launch.block[0] for launch in shared] == [1024] and "_rows" in kernel_text(str(scheduled.module), shared[0].kernel)


def layer_norm_f32_by_the_register_rule(monkeypatch):
    """A float32 layer norm compiled for sm_90, its rows held in registers as
    far as the register rule alone allows (REGISTER_ROOM 1), so
    that rows of 16K-32K columns are staged: (the program, its segment's
    launch program, a function from a row length to the one launch that
    runs rows of it)."""
    monkeypatch.setattr(gpu_schedule, "REGISTER_ROOM", 1)
    context, module = outlined(layer_norm_f32())
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False, layouts={"fusion_seg0": [(True, 16)] * 4})
    (segment,) = program.programs.values()

    def chosen(cols):
        (launch,) = [launch for launch in segment.launches if evaluate(launch.when, [(3, cols), (cols,), (cols,), (3, cols)], [])]
        return launch

    return program, segment, chosen


def kernel_ptx(ptx: str, name: str) -> str:
    kernel = ptx[ptx.index(f".entry {name}(") :]
    return kernel[: kernel.find(".entry", 1) if ".entry" in kernel[1:] else len(kernel)]


def test_blocks_of_rows_past_the_registers_prefetch_their_next_row_into_l2(monkeypatch):
    """The staged and the read-per-generic vector variants of a layer norm
    (staged by the register rule alone: REGISTER_ROOM 1) ask the
    L2 for the block's next row of x: one bulk prefetch per kernel (x is the
    one input that varies along rows; the weights are not prefetched). The
    register-cached and the scalar variants do not. Bulk prefetches need
    PTX 8.0."""
    needs_libdevice()
    program, segment, chosen = layer_norm_f32_by_the_register_rule(monkeypatch)
    assert re.search(r"^\.version 8\.0$", program.ptx, re.M)

    def kernel(name):
        return kernel_ptx(program.ptx, name)

    prefetching = {launch.kernel for launch in segment.launches if "cp.async.bulk.prefetch.L2.global" in kernel(launch.kernel)}
    staged, per_generic, cached = chosen(32768), chosen(65536), chosen(8192)
    scalar = chosen(65537)  # rows not a whole number of vectors: no 16-byte alignment to prefetch from
    assert prefetching == {staged.kernel, per_generic.kernel}
    assert staged.shared_bytes and not cached.shared_bytes and scalar.kernel not in prefetching
    for name in prefetching:
        assert kernel(name).count("cp.async.bulk.prefetch.L2.global") == 1
    # bfloat16 x among float32 weights and output: vectors of 4 columns, 8 bytes of x, so x's rows need not
    # start or end on the 16 bytes a bulk prefetch needs: x is not prefetched
    context, module = outlined(layer_norm_f32(DataType.BFloat16))
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False, layouts={"fusion_seg0": [(True, 16)] * 4})
    assert "cp.async.bulk" not in program.ptx and "memref<?xvector<4xbf16>>" in program.kernel_ir


def test_every_bench_fusion_compiles_for_each_target_family():
    """cp.async.bulk.prefetch is sm_90's: asked for it on an older target,
    LLVM aborts the process ("Cannot select"), so the scheduler leaves it out
    there. sm_90 needs PTX 8.0 for it (MLIR's default there is 7.8); sm_100
    keeps its default (8.6 or later: forcing 8.0 aborts too). Every fusion
    of bench/run.py, in float32 and bfloat16, is compiled for sm_80, sm_90
    and sm_100, each in a child process of its own, the three side by side
    (an abort fails this test instead of killing the test run), without
    ptxas (the LLVM side is what differs by target; ptxas's acceptance of
    sm_90 PTX is tested above)."""
    needs_libdevice()
    assert [bulk_prefetch(a) for a in ("sm_70", "sm_80", "sm_89", "sm_90", "sm_90a", "sm_100")] == [False] * 3 + [True] * 3
    assert [ptx_features(a) for a in ("sm_80", "sm_90", "sm_90a", "sm_100", "sm_120")] == ["", "+ptx80", "+ptx80", "", ""]
    code = (
        "import os, re, sys\n"
        "sys.path.insert(0, 'test')\n"
        "from bench_scripts import load\n"
        "from fuser_mlir.compiler import compile_fusion\n"
        "from fuser_mlir.runtime import cuda\n"
        "cuda.available = lambda: False  # compile only\n"
        "bench = load('run')\n"
        "arch = os.environ['FUSER_CUDA_ARCH']\n"
        "versions, prefetches, kernels = set(), 0, 0\n"
        "for case in bench.CASES:\n"
        "    for dtype in ('float32', 'bfloat16'):\n"
        "        n = len(case.shapes(1 << 20, 1024))\n"
        "        layouts = {'input': [(True, 256)] * n, 'given': {0: (True, 256)}}\n"
        "        compiled = compile_fusion(bench.fusion_for(case, dtype), given_outputs=(True,), device='cuda:0', layouts=layouts)\n"
        "        ptx = compiled.program.ptx\n"
        "        versions.add(re.search(r'^\\.version (\\S+)$', ptx, re.M).group(1))\n"
        "        prefetches += ptx.count('cp.async.bulk.prefetch')\n"
        "        kernels += ptx.count('.entry')\n"
        "print(arch, *sorted(versions), prefetches, kernels)\n"
    )
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "ptxas").exists())
    children = {
        arch: subprocess.Popen(
            [sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PATH": path, "FUSER_CACHE": "0", "FUSER_CUDA_ARCH": arch},
        )
        for arch in ("sm_80", "sm_90", "sm_100")
    }
    lines = {}
    for arch, child in children.items():
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, (arch, err[-2000:])
        lines.update({line.split()[0]: line.split()[1:] for line in out.splitlines()})
    assert set(lines) == {"sm_80", "sm_90", "sm_100"}, lines
    (_, p80, k80), (v90, p90, k90), (v100, p100, k100) = lines["sm_80"], lines["sm_90"], lines["sm_100"]
    assert k80 == k90 == k100 and int(k90) > 50
    assert int(p80) == 0 and int(p90) == int(p100) > 0
    assert v90 == "8.0" and tuple(map(int, v100.split("."))) >= (8, 6)


@pytest.mark.parametrize("halve", [True, False], ids=["halved", "capped"])
def test_row_variants_that_rows_fill_and_register_caps(monkeypatch, halve):
    """Rows take the variant whose lanes' slots they fill: bfloat16 rows of 1K
    and 2K columns a warp of 4 and of 8 slots, rows of 4K a 256-thread block
    of 2 slots, 8K one of 4. A 256-thread cached block whose row values need
    many registers (a layer norm's x, weight and bias: 48 a lane) runs as 128
    threads of 8 slots, declared to ptxas and uncapped (HALVE_CAPPED_BLOCKS),
    or with that off is capped at 80 registers; a softmax's (32) is neither
    (the directive alone changes ptxas's code)."""
    monkeypatch.setattr(gpu_schedule, "HALVE_CAPPED_BLOCKS", halve)
    for build, inputs, capped in [(softmax_bf16, 1, False), (layer_norm_bf16, 3, True)]:
        context, module = outlined(build())
        with context, ir.Location.unknown():
            scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (inputs + 1)})
        (program,) = scheduled.programs.values()
        text = str(scheduled.module)
        chosen = {}
        for cols in (1024, 2048, 4096, 8192):
            shapes = [(3, cols)] + [(cols,)] * (inputs - 1) + [(3, cols)]
            (launch,) = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
            chosen[cols] = launch
        assert [chosen[c].block[0] for c in (1024, 2048)] == [32, 32]  # a warp a row, a block of one (WARP_BLOCK_THREADS)
        assert len({launch.kernel for launch in chosen.values()}) == 4
        halved = capped and halve
        assert [chosen[c].block[0] for c in (4096, 8192)] == [256, 128 if halved else 256]
        vectors = len(re.findall(r"memref\.load .*memref<\?xvector<8xbf16>>", kernel_text(text, chosen[8192].kernel)))
        assert vectors == (8 if halved else 4) * (3 if capped else 1)  # each slot of the row (and of each weight) loaded once
        for cols, launch in chosen.items():
            kernel = kernel_text(text, launch.kernel)
            assert ("nvvm.maxnreg = 80" in kernel) == (capped and not halve and cols == 8192)
            assert ("nvvm.maxntid = array<i32: 128, 1, 1>" in kernel) == (halved and cols == 8192)


def rms_norm_bf16():
    """An RMS norm of bfloat16 tensors computed in float32 (40 row values a lane on (256, 4))."""
    with FusionDefinition() as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), dtype=DataType.Float)
        w = fd.ops.cast(fd.define_tensor(shape=[-1], dtype=DataType.BFloat16), dtype=DataType.Float)
        normed = x * fd.ops.rsqrt(fd.ops.mean(x * x, dims=[1], keepdim=True) + 1e-6)
        fd.add_output(fd.ops.cast(normed * w, dtype=DataType.BFloat16))
    return fd


@pytest.mark.parametrize("cap", [(0, 0), (32, 48)], ids=["off", "on"])
def test_the_occupancy_cap_of_moderate_block_rows(monkeypatch, cap):
    """BLOCK_OCCUPANCY_CAP (above, registers) gives ``.maxnreg`` to the
    256-thread cached block variant whose row values take more than ``above``
    registers a lane and are not capped otherwise: the RMS norm bfloat16's
    rows of 8K columns (40 a lane); not the softmax's (32), nor the layer
    norm's (48: halved to 128 threads, HALVE_CAPPED_BLOCKS). Off, none."""
    monkeypatch.setattr(gpu_schedule, "BLOCK_OCCUPANCY_CAP", cap)
    for build, inputs, takes in [(rms_norm_bf16, 2, True), (softmax_bf16, 1, False), (layer_norm_bf16, 3, False)]:
        context, module = outlined(build())
        with context, ir.Location.unknown():
            scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (inputs + 1)})
        (program,) = scheduled.programs.values()
        text = str(scheduled.module)
        shapes = [(3, 8192)] + [(8192,)] * (inputs - 1) + [(3, 8192)]
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
        kernel = kernel_text(text, launch.kernel)
        assert launch.block[0] == (128 if build is layer_norm_bf16 else 256), build.__name__
        assert ("nvvm.maxnreg = 48" in kernel) == (takes and cap != (0, 0)), build.__name__
        assert "nvvm.maxnreg" not in kernel or (takes and cap != (0, 0)), build.__name__


def test_streamed_rows_run_their_warps_in_blocks_of_two():
    """A row plan whose row one generic reads (a bfloat16 sum, a sum of
    products) holds no row values, so its cached warp variants run in blocks
    of two warps (STREAMED_WARP_THREADS; an SM holds at most 32 blocks); a
    softmax, whose warps keep the row for three generics, in blocks of one
    (WARP_BLOCK_THREADS). Longer rows take the same blocks either way."""

    def row_sum(products: bool):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
            t = fd.ops.cast(x, dtype=DataType.Float)
            if products:
                t = t * fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), dtype=DataType.Float)
            fd.add_output(fd.ops.cast(fd.ops.sum(t, dims=[1]), dtype=DataType.BFloat16))
        return fd, 1 + products

    def blocks(fd, inputs, rows_out: bool):
        context, module = outlined(fd)
        with context, ir.Location.unknown():
            scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (inputs + 1)})
        (program,) = scheduled.programs.values()
        chosen = []
        for cols in (1024, 2048, 4096):
            shapes = [(5, cols)] * inputs + [(5, cols) if rows_out else (5,)]
            (launch,) = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
            chosen.append(launch.block[0])
        return chosen

    assert blocks(*row_sum(False), False) == [64, 64, 256]
    assert blocks(*row_sum(True), False) == [64, 64, 256]
    assert blocks(softmax_bf16(), 1, True) == [32, 32, 256]


def softmax_spans(spans_by_length: dict[int, int], spans: bool) -> dict[int, str]:
    """The kernel a bfloat16 softmax's launch program picks for 33 rows of
    each length, whose grid of one-warp blocks must give each row
    ``spans_by_length[length]`` lanes where ``spans`` (32 / span rows a
    block), else a warp (a block a row)."""
    context, module = outlined(softmax_bf16())
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16), (True, 16)]})
    (program,) = scheduled.programs.values()
    kernels = {}
    for cols, span in spans_by_length.items():
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, [(33, cols), (33, cols)], [])]
        kernels[cols] = launch.kernel
        grid = [evaluate(g, [(33, cols), (33, cols)], []) for g in launch.grid]
        assert grid == [-(-33 // (32 // span)) if spans else 33, 1, 1], (cols, grid)
    return kernels


@pytest.mark.parametrize("spans", [True, False])
def test_short_rows_take_groups_of_a_warps_lanes(monkeypatch, spans):
    """SPAN_ROWS: rows that half a warp's lanes hold in 4 slots each take a
    variant that splits a warp into groups of the fewest lanes (a power of
    two) whose slots hold the row, a row each: a bfloat16 softmax (32
    columns a lane) of rows of 8 columns takes 1 lane a row, of 64 2, of
    128 4, of 512 16, and its grid of one-warp blocks covers 33 rows with
    32 / span rows a block, one kernel for every span (it works the span out
    from the row length the same way; test/test_row_kernels.py checks its
    results); longer rows a warp each, in the variant as it was. Off, a
    warp a row."""
    monkeypatch.setattr(gpu_schedule, "SPAN_ROWS", spans)
    kernels = softmax_spans({8: 1, 64: 2, 128: 4, 512: 16, 520: 32, 1024: 32}, spans)
    assert len({kernels[c] for c in (8, 64, 128, 512)}) == 1  # one kernel for every span
    assert kernels[520] == kernels[1024] and (kernels[512] != kernels[1024]) == spans  # a warp a row: the variant as it was


@pytest.mark.parametrize("on", [True, "short", False], ids=["row-plans", "short-rows", "inner-reductions"])
def test_plain_reductions_as_row_plans(monkeypatch, on):
    """ROW_PLAN_REDUCTIONS ("short" by default): plain reductions over rows run as
    row plans. A float32 sum, its row read by one generic, takes the
    streamed warps' blocks of two (STREAMED_WARP_THREADS), a sum and a max
    of the same rows one kernel that reads them once, in blocks of one
    warp; short rows take a group of a warp's lanes each (SPAN_ROWS: 16
    columns 1 lane, 64 4 lanes, 257 and more a warp), so 33 rows of 16, 64
    and 1024 columns take 1, 3 and 17 blocks of two warps, or 2, 5 and 33
    of one (test/test_row_kernels.py checks their results on the GPU).
    "short": the groups of lanes alone (rows of up to 256 columns), longer
    rows inner reductions. Off, all are inner reductions: a warp a row in
    256-thread blocks (33 rows, 5 blocks), a kernel each."""
    monkeypatch.setattr(gpu_schedule, "ROW_PLAN_REDUCTIONS", on)
    for both, threads, blocks in [(False, 64, (1, 3, 17)), (True, 32, (2, 5, 33))]:
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
            fd.add_output(fd.ops.sum(x, dims=[1]))
            if both:
                fd.add_output(fd.ops.max(x, dims=[1]))
        context, module = outlined(fd)
        with context, ir.Location.unknown():
            scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (2 + both)})
        (program,) = scheduled.programs.values()
        for cols, row_blocks in zip((16, 64, 1024), blocks):
            shapes = [(33, cols)] + [(33,)] * (1 + both)
            chosen = [launch for launch in program.launches if evaluate(launch.when, shapes, [])]
            grids = [[evaluate(g, shapes, []) for g in launch.grid] for launch in chosen]
            if on is True or (on == "short" and cols <= 256):
                assert [launch.block[0] for launch in chosen] == [threads] and grids == [[row_blocks, 1, 1]], (both, cols)
            else:
                assert [launch.block[0] for launch in chosen] == [256] * (1 + both) and grids == [[5, 1, 1]] * (1 + both), (both, cols)
        if on == "short":  # the groups of lanes (vector, flat and scalar), and each reduction's warps and blocks (vector and scalar)
            assert [launch.block[0] for launch in program.launches] == [threads] * 3 + [256] * 4 * (1 + both), both


@pytest.mark.parametrize("spans", [True, False])
def test_short_rows_that_are_not_whole_vectors_take_groups_of_lanes(monkeypatch, spans):
    """FLAT_SPAN_ROWS (on by default): rows that are not whole vectors, and
    that half a warp's lanes hold less a vector (bfloat16, 8 columns a
    vector, 32 a lane: up to 504 columns), take groups of a warp's lanes as
    whole-vector rows do, each group a vector short of its slots: a
    bfloat16 softmax's rows of 10, 30, 77, 202 and 500 columns take 1, 2,
    4, 8 and 16 lanes, all in one kernel; rows of 505 a warp each
    (test/test_row_kernels.py checks their results on the GPU). Off, a warp
    a row."""
    monkeypatch.setattr(gpu_schedule, "FLAT_SPAN_ROWS", spans)
    kernels = softmax_spans({10: 1, 30: 2, 77: 4, 202: 8, 500: 16, 505: 32}, spans)
    assert len({kernels[c] for c in (10, 30, 77, 202, 500)}) == 1  # one kernel for every span
    assert (kernels[500] != kernels[505]) == spans


@pytest.mark.parametrize("short", [0, 256])
def test_short_rows_that_are_not_whole_vectors_may_take_the_scalar_variants(monkeypatch, short):
    """SCALAR_SHORT_ROWS (0, off, by default): rows that are not whole
    vectors and at most that many columns long take the scalar variants (a
    column a load: no flat vector arguments) instead of a flat walk, in
    groups of a warp's lanes as the flat walk's short rows do (a bfloat16
    softmax's scalar lanes hold 8 columns: rows of 10 take 2 lanes, of 77
    16, of 250 a warp); longer ones, and rows of whole vectors, as before."""
    monkeypatch.setattr(gpu_schedule, "SCALAR_SHORT_ROWS", short)
    context, module = outlined(softmax_bf16())
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16), (True, 16)]})
    (program,) = scheduled.programs.values()

    def scheme(cols):
        (launch,) = [launch for launch in program.launches if evaluate(launch.when, [(33, cols), (33, cols)], [])]
        lanes = {b[2] for b in launch.args if b[0] == "flat"}
        grid = evaluate(launch.grid[0], [(33, cols), (33, cols)], [])
        return {frozenset({8}): "vector", frozenset({8, 1}): "flat"}.get(frozenset(lanes), "scalar"), grid

    scalar = {10: ("scalar", 3), 77: ("scalar", 17), 250: ("scalar", 33)}  # (kind, one-warp blocks for 33 rows)
    flat = {10: ("flat", 2), 77: ("flat", 5), 250: ("flat", 17)}  # 1, 4 and 16 lanes of 32 columns
    expected = (scalar if short else flat) | {80: ("vector", 5), 300: ("flat", 17), 1001: ("flat", 33)}
    assert {cols: scheme(cols) for cols in expected} == expected


def test_loaded_bfloat16_columns_count_half_a_register(monkeypatch):
    """Whether a row fits a cached block variant counts the words its loaded
    columns take (a bfloat16 column half a word), but at least a register a
    column for the float32 values computed from them: by the register rule
    alone (REGISTER_ROOM 1), an RMS norm bfloat16 row of 32K columns (32
    values a lane) is held by 1024 threads, a float32 one (32 values and 4
    of the weight's) is staged in shared memory, and a bfloat16 softmax row
    of 64K (64 values a lane) is read per generic."""
    monkeypatch.setattr(gpu_schedule, "REGISTER_ROOM", 1)
    for case, dtype, cols, threads, staged in [
        ("rms_norm", "bfloat16", 32768, 1024, False),
        ("rms_norm", "float32", 32768, 1024, True),
        ("softmax", "bfloat16", 65536, 256, False),
    ]:
        text, chosen = bench_rows(case, dtype)
        launch = chosen(cols)
        cached = "_partials0" in kernel_text(text, launch.kernel)  # one-barrier reductions: cached blocks only
        assert (launch.block[0], cached) == (threads, threads == 1024 and not staged), case
        assert bool(launch.shared_bytes) == (staged or cached), case  # a 1024-thread cached block's rows arrive in shared memory


@pytest.mark.parametrize("contract", [True, False])
def test_kernels_fuse_multiplies_into_adds_unless_told_not_to(monkeypatch, contract):
    """CONTRACT_FMA marks the kernels' float mulf/addf/subf fastmath<contract>:
    a layer norm's (x - mean)^2 sums and its scale and shift become fma.rn
    (rounded once); without it the PTX keeps mul.rn and add.rn, which
    ptxas may not fuse. The reassoc flags of sums are kept."""
    needs_libdevice()
    monkeypatch.setattr(gpu, "CONTRACT_FMA", contract)
    context, module = outlined(layer_norm_bf16())
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False, layouts={"fusion_seg0": [(True, 16)] * 4})
    fused = len(re.findall(r"\bfma\.rn\.f32\b", program.ptx))
    unfusable = len(re.findall(r"\bmul\.rn\.f32\b", program.ptx))  # .rn: ptxas may not fuse it either
    assert (fused > 100, unfusable > 100) == ((True, False) if contract else (False, True)), (fused, unfusable)
    assert fused == 0 or contract
    with context:
        marked = ir.Module.parse("func.func @f(%a: f32, %b: f32) -> f32 {\n"
                                 "  %0 = arith.mulf %a, %b : f32\n"
                                 "  %1 = arith.addf %0, %b fastmath<reassoc> : f32\n"
                                 "  return %1 : f32\n}")
        gpu.allow_contraction(marked)
    assert "arith.mulf %arg0, %arg1 fastmath<contract>" in str(marked)
    assert "arith.addf %0, %arg1 fastmath<reassoc,contract>" in str(marked)


@pytest.mark.parametrize("words", [True, False])
def test_bfloat16_columns_widen_by_bit_operations_on_their_words(monkeypatch, words):
    """WIDEN_BFLOAT16_WORDS: a bfloat16 layer norm's loaded columns (x, weight
    and bias, 16-byte vectors) widen to float32 by a shift or a mask of the
    32-bit word holding them, not by cvt.f32.bf16 of a 16-bit half (which
    ptxas issues as two instructions for a high half). (The flat walks of
    rows that are not whole vectors load their weights an element at a time:
    those convert halves.)"""
    needs_libdevice()
    monkeypatch.setattr(gpu, "WIDEN_BFLOAT16_WORDS", words)
    context, module = outlined(layer_norm_bf16())
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90", load=False, layouts={"fusion_seg0": [(True, 16)] * 4})
    entries = re.split(r"(?=\.visible \.entry)", program.ptx)[1:]
    vector_kernels = [e for e in entries if re.search(VECTOR_LOAD, e) and not re.search(r"ld\.global(\.nc)?(\.L2::cache_hint)?\.[bu]16", e)]
    assert vector_kernels
    for entry in vector_kernels:
        masks = len(re.findall(r"\band\.b32\s+%r\d+, %r\d+, -65536;", entry))
        shifts = len(re.findall(r"\bshl\.b32\s+%r\d+, %r\d+, 16;", entry))
        converts = len(re.findall(r"\bcvt\.f32\.bf16\b", entry))
        assert (masks > 0, shifts > 0, converts > 0) == (words, words, not words), (masks, shifts, converts)


def test_bfloat16_vector_indices_divide_exactly_float32_ones_plainly():
    """EXACT_VECTOR_LANES: the vector index of a bfloat16 row's 8-lane
    accesses is an exact division (LLVM then drops the shift and mask), that
    of a float32 row's 4-lane accesses a plain one."""
    for build, inputs, exact in [(layer_norm_bf16, 3, True), (softmax_bf16, 1, True), (softmax_f32, 1, False)]:
        context, module = outlined(build())
        with context, ir.Location.unknown():
            text = str(lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * (inputs + 1)}).module)
        lanes = 8 if exact else 4
        divisions = re.findall(rf"arith\.divui %\w+, %c{lanes}(\w*)( exact)? : index", text)
        assert divisions, build.__name__
        assert any(marked for _, marked in divisions) == exact, build.__name__


def test_widened_bfloat16_words_give_the_float32_of_every_bfloat16():
    """widen_bfloat16's rewrite is exact: run on the CPU over all 65536
    bfloat16 bit patterns (NaNs, infinities, subnormals and -0 among them),
    each vector element widens to the float32 whose high half it is."""
    import ctypes

    import numpy as np

    from fuser_mlir._mlir import ExecutionEngine, get_ranked_memref_descriptor

    widened = "\n".join(
        f"    %e{j} = vector.extract %v[{j}] : bf16 from vector<8xbf16>\n"
        f"    %f{j} = arith.extf %e{j} : bf16 to f32\n"
        f"    %i{j} = arith.addi %i, %c{j} : index\n"
        f"    memref.store %f{j}, %dst[%i{j}] : memref<65536xf32>"
        for j in range(8)
    )
    constants = "\n".join(f"  %c{j} = arith.constant {j} : index" for j in range(8))
    with make_context():
        module = ir.Module.parse(
            "func.func @widen(%src: memref<65536xbf16>, %dst: memref<65536xf32>) attributes {llvm.emit_c_interface} {\n"
            f"{constants}\n  %c8 = arith.constant 8 : index\n  %n = arith.constant 65536 : index\n"
            "  scf.for %i = %c0 to %n step %c8 {\n"
            "    %v = vector.load %src[%i] : memref<65536xbf16>, vector<8xbf16>\n"
            f"{widened}\n  }}\n  return\n}}"
        )
        gpu.widen_bfloat16(module)
        assert "arith.extf" not in str(module) and str(module).count("vector.bitcast") == 8
        run_pipeline(
            module,
            "builtin.module(convert-scf-to-cf, convert-vector-to-llvm, expand-strided-metadata, finalize-memref-to-llvm, "
            "convert-arith-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, reconcile-unrealized-casts)",
        )
        engine = ExecutionEngine(module, opt_level=2)
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    out = np.full(65536, np.nan, dtype=np.float32)
    src = get_ranked_memref_descriptor(bits)
    dst = get_ranked_memref_descriptor(out)
    engine.invoke("widen", ctypes.pointer(ctypes.pointer(src)), ctypes.pointer(ctypes.pointer(dst)))
    assert np.array_equal(out.view(np.uint32), bits.astype(np.uint32) << 16)


@pytest.mark.parametrize(
    "stderr, outcome",
    [
        ("ptxas kernels.ptx, line 5; fatal   : Unsupported .version 8.0; current version is '7.8'", None),
        ("ptxas kernels.ptx, line 9; error   : Illegal instruction", CompileError),
    ],
    ids=["older than the PTX", "a real rejection"],
)
def test_a_ptxas_older_than_the_ptx_leaves_the_ptx_to_the_driver(tmp_path, monkeypatch, stderr, outcome):
    """An old ptxas on PATH (CUDA 11.8's reads PTX up to 7.8; sm_90 kernels
    are 8.0) means no cubin: the driver compiles the PTX at load, as without
    ptxas. Any other rejection is a CompileError that quotes ptxas."""
    fake = tmp_path / "ptxas"
    fake.write_text(f"#!/bin/sh\necho \"{stderr}\" >&2\nexit 255\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
    if outcome is None:
        assert gpu.assemble(ptx, "sm_90") is None
    else:
        with pytest.raises(CompileError, match="ptxas rejected the generated PTX for sm_90:\n.*Illegal instruction"):
            gpu.assemble(ptx, "sm_90")


@pytest.mark.parametrize("splits", [True, False], ids=["split-compile", "one-thread"])
def test_ptxas_assembles_on_every_cpu_where_it_can(tmp_path, monkeypatch, splits):
    """A ptxas whose --help lists --split-compile assembles the kernels on
    as many threads as the process has CPUs; one that does not (older
    ones) is called as before, without it."""
    fake, calls = tmp_path / "ptxas", tmp_path / "calls"
    help_text = "--split-compile <N>  (-split-compile)" if splits else "--maxrregcount <N>"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --help ]; then echo "{help_text}"; exit 0; fi\n'
        f'echo "$@" >> {calls}\nwhile [ "$1" != -o ]; do shift; done\nprintf cubin > "$2"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert gpu.assemble(".version 8.0\n.target sm_90\n.address_size 64\n", "sm_90") == b"cubin"
    (call,) = calls.read_text().splitlines()
    threads = f"--split-compile {len(os.sched_getaffinity(0))} " if splits else ""
    assert re.fullmatch(rf"-arch=sm_90 {threads}\S+/kernels\.ptx -o \S+/kernels\.cubin", call), call


def test_blocks_of_an_sm_get_their_rows_ahead_by_bulk_copies(monkeypatch):
    """A cached 1024-thread block (one an SM) takes rows in a grid of one
    block an SM (PERSISTENT_BLOCKS) and gets them in shared memory from the
    copy engine: up to 3 row buffers of the inputs its first reduction reads,
    each completing on its own mbarrier, and its weights once where they fit
    with a buffer (one buffer alone is not enough). Before its row loop, thread 0 asks for the weights and a
    row per buffer; each row asks for the row 3 (its buffers) on once it has
    been read. The PTX has the PTX 8.0 forms (shared::cluster) and ptxas
    takes it. Other variants, and targets before sm_90, have none of it.
    Rows with weights are buffered only with BUFFER_WITH_WEIGHTS (set here;
    see the next test), and a float32 RMS norm's rows of 16K by the register
    rule alone (REGISTER_ROOM 1; with the room, (512, 8) takes them)."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "REGISTER_ROOM", 1)
    monkeypatch.setattr(gpu_schedule, "BUFFER_WITH_WEIGHTS", True)
    cases = [  # case, dtype, columns, bytes a column of shared memory, buffers, copies before the row loop
        ("softmax", "bfloat16", 32768, 3 * 2, 3, 3),  # x: 3 buffers of 64 KB
        ("layer_norm", "bfloat16", 32768, 2 + 2 + 2, 1, 3),  # w and b (128 KB) and a buffer of x
        ("rms_norm", "bfloat16", 32768, 2 + 2 * 2, 2, 3),  # w and 2 buffers of x
        ("rms_norm", "float32", 16384, 4 + 2 * 4, 2, 3),  # w and 2 buffers of x
    ]
    for case, dtype, cols, per_column, buffers, copies in cases:
        text, chosen = bench_rows(case, dtype)
        launch = chosen(cols)
        kernel = kernel_text(text, launch.kernel)
        assert launch.block[0] == 1024 and launch.grid[0] == ["min", ["ceildiv", ["argdim", 0, 0], ["const", 1]], ["sms"]], case
        assert evaluate(launch.shared_bytes, [(3, cols)] * 4, []) == cols * per_column, case
        assert f"memref<{buffers}xi64, #gpu.address_space<workgroup>>" in text and kernel.count("nvvm.mbarrier.init") == buffers, case
        assert kernel.count("nvvm.cp.async.bulk.shared.cluster.global") == copies + 1 and "nvvm.mbarrier.try_wait.parity" in kernel, case
        for other in (cols // 2, 2 * cols):  # a 512-thread cached block, rows read per generic or staged: none
            assert "nvvm.mbarrier" not in kernel_text(text, chosen(other).kernel), (case, other)
    text, chosen = bench_rows("softmax", "float32")
    launch = chosen(32768)  # (1024, 8): room for one buffer of x, and no weights to keep with it: not buffered
    assert launch.block[0] == 1024 and not launch.shared_bytes and "nvvm.mbarrier" not in kernel_text(text, launch.kernel)
    for arch in ("sm_80", "sm_90"):
        program, _ = bench_rows("softmax", "bfloat16", arch)
        assert program.ptx.count("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") == (4 if arch == "sm_90" else 0)
        if shutil.which("ptxas"):
            assert program.cubin[:4] == b"\x7fELF"


def test_rows_with_weights_get_no_row_buffers(monkeypatch):
    """By default (BUFFER_WITH_WEIGHTS off) a 1024-thread cached block whose
    rows have weights keeps the weights alone in shared memory, one bulk copy
    each before its row loop on one mbarrier, persistent, and loads its rows
    from memory: bfloat16 layer and RMS norms of 32K columns (the RMS norm's
    weight whole, 64 KB; the layer norm's two whole too, 128 KB, within
    SPLIT_WEIGHTS_BYTES). Both take the
    (1024, 4) block with PACKED_ROWS off (on, a 512-thread block that keeps
    its row packed: test_bfloat16_norms_keep_their_rows_packed_across_their_reductions).
    A softmax's rows (no weights) still arrive in 3 row buffers."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "PACKED_ROWS", False)
    for case, weights in (("layer_norm", 2), ("rms_norm", 1)):
        text, chosen = bench_rows(case, "bfloat16")
        launch = chosen(32768)
        kernel = kernel_text(text, launch.kernel)
        assert launch.block[0] == 1024 and launch.grid[0] == ["min", ["ceildiv", ["argdim", 0, 0], ["const", 1]], ["sms"]], case
        assert evaluate(launch.shared_bytes, [(3, 32768)] * 4, []) == weights * 64 * 1024, case
        assert kernel.count("nvvm.mbarrier.init") == 1 and kernel.count("nvvm.cp.async.bulk.shared.cluster.global") == weights, case
    text, chosen = bench_rows("softmax", "bfloat16")
    assert kernel_text(text, chosen(32768).kernel).count("nvvm.mbarrier.init") == 3


def test_a_block_without_a_row_buffer_keeps_the_weights_that_fit_in_shared_memory(monkeypatch):
    """A float32 layer norm of 32K columns on (1024, 8) (its rows in
    registers; no row buffer fits next to its two weights, 256 KB) keeps
    both weights in part in shared memory (each its first 16K columns, 128
    KB in all: see SPLIT_WEIGHTS_BYTES), copied once per block before the
    row loop on one mbarrier, on a grid of a block an SM (each block takes
    many rows), and reads their other columns from memory. Its lanes' columns come from an opaque
    move of the thread index inside the row loop, as in every cached block
    (OPAQUE_LANE), and ptxas spills at most 24 bytes (72 without the move;
    160 before NARROW_COLUMNS). Its weights have more bytes a column than its
    rows, so neither is read through the non-coherent cache
    (NONCOHERENT_WEIGHTS)."""
    needs_libdevice()
    text, chosen = bench_rows("layer_norm", "float32")
    launch = chosen(32768)
    kernel = kernel_text(text, launch.kernel)
    assert launch.block[0] == 1024 and launch.grid[0] == ["min", ["ceildiv", ["argdim", 0, 0], ["const", 1]], ["sms"]]
    assert evaluate(launch.shared_bytes, [(3, 32768)] * 4, []) == 16384 * 4 * 2
    assert kernel.count("nvvm.mbarrier.init") == 1 and kernel.count("nvvm.cp.async.bulk.shared.cluster.global") == 2
    assert kernel.count("nvvm.mbarrier.try_wait.parity") == 1 and kernel.count("llvm.inline_asm has_side_effects") == 1
    assert not chosen(16384).shared_bytes and chosen(16384).block[0] == 512  # (512, 8): no shared memory
    assert "ld.global.nc" not in kernel
    if not shutil.which("ptxas"):
        return
    for opaque in (True, False):
        monkeypatch.setattr(gpu_schedule, "OPAQUE_LANE", opaque)
        program, _ = bench_rows("layer_norm", "float32", "sm_90")
        spilled = spill_bytes(program.ptx, launch.kernel)
        assert spilled <= 24 if opaque else spilled >= 64, (opaque, spilled)


def test_long_rows_may_keep_more_of_their_weights_in_a_variant_of_their_own(monkeypatch):
    """With LONG_ROW_WEIGHTS (columns, budget) set, the float32 layer norm's
    (1024, 8) block runs its rows of more than ``columns`` columns as a
    second kernel that keeps ``budget`` bytes of its two weights (here 160
    KB: 5 slots a lane of each, 20480 columns) rather than
    SPLIT_WEIGHTS_BYTES (128 KB, 4 slots); shorter rows keep their kernel.
    Off by default: one kernel for both."""
    needs_libdevice()
    text, chosen = bench_rows("layer_norm", "float32")
    assert chosen(24576).kernel == chosen(32768).kernel
    monkeypatch.setattr(gpu_schedule, "LONG_ROW_WEIGHTS", (28672, 160 * 1024))
    text, chosen = bench_rows("layer_norm", "float32")
    short, just, long = chosen(24576), chosen(28672), chosen(28676)
    assert short.kernel == just.kernel != long.kernel and short.block[0] == long.block[0] == 1024
    assert evaluate(short.shared_bytes, [(3, 28672)] * 4, []) == 16384 * 4 * 2
    assert evaluate(long.shared_bytes, [(3, 32768)] * 4, []) == 20480 * 4 * 2
    assert kernel_text(text, long.kernel).count("nvvm.cp.async.bulk.shared.cluster.global") == 2


@pytest.mark.parametrize("clamped", [True, False])
def test_cached_rows_load_every_slot_at_once(monkeypatch, clamped):
    """A cached variant loads each slot of its lane unconditionally, from the
    row's last vector where the slot is past the row's end (CLAMPED_LOADS):
    the 8 vector loads of an RMS norm float32 row of 32K columns on (1024, 8)
    are one straight run of PTX, which ptxas issues together. Guarded (off),
    each load is branched around, and ptxas issues them one at a time."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "CLAMPED_LOADS", clamped)
    program, chosen = bench_rows("rms_norm", "float32", "sm_90")
    launch = chosen(32768)
    assert launch.block == [1024, 1, 1]
    kernel = kernel_ptx(program.ptx, launch.kernel)
    loads = [m.start() for m in re.finditer(VECTOR_LOAD, kernel)][:8]  # x's slots (then its weight's past SHARED_WEIGHT_BYTES)
    assert len(loads) == 8
    assert ("bra" in kernel[loads[0] : loads[-1]]) != clamped


@pytest.mark.parametrize("narrow", [True, False])
def test_cached_blocks_compute_columns_in_32_bits(monkeypatch, narrow):
    """NARROW_COLUMNS: a cached block variant tests its slots against the
    row's end and clamps them in 32 bits (one compare and one unsigned min
    a slot: 8 on (1024, 8); CLAMPED_LOADS), and splits a vector index into the row's first vector
    and the column's, the latter a 32-bit division. An RMS norm float32 of
    32K columns splits every access from memory: its row's 8 loads and 8
    stores and its weight's loads past the shared budget; a layer norm,
    whose row values take all the room the register rule leaves, its
    weights' loads only (its row operands' addresses stay 64-bit), unless
    NARROW_ROW_OPERANDS says otherwise. Off: all 64-bit."""
    monkeypatch.setattr(gpu_schedule, "NARROW_COLUMNS", narrow)

    def counts(case, **settings):
        for name, value in settings.items():
            monkeypatch.setattr(gpu_schedule, name, value)
        text, chosen = bench_rows(case, "float32")
        launch = chosen(32768)
        assert launch.block == [1024, 1, 1]
        kernel = kernel_text(text, launch.kernel)
        patterns = [r"arith\.divui %\w+, %\w+( exact)? : i32", r"arith\.cmpi ult, %\w+, %\w+ : i32", r"arith\.minui %\w+, %\w+ : i32"]
        return [len(re.findall(pattern, kernel)) for pattern in patterns]

    rms, layer, layer_split = counts("rms_norm"), counts("layer_norm"), counts("layer_norm", NARROW_ROW_OPERANDS=True)
    if not narrow:
        assert rms == layer == layer_split == [0, 0, 0]
        return
    assert rms[1:] == layer[1:] == [8, 8]
    weights = layer[0]  # the layer norm's weight loads from memory, all split
    assert 0 < weights and rms[0] >= 16 and layer_split[0] == weights + 16, (rms, layer, layer_split)


@pytest.mark.parametrize("noncoherent", [True, False])
def test_one_weight_past_the_shared_budget_is_read_through_the_noncoherent_cache(monkeypatch, noncoherent):
    """An RMS norm float32 of 32K columns on (1024, 8): its one weight
    (128 KB) does not fit whole in SHARED_WEIGHT_BYTES and has as many bytes
    a column as its rows, so (NONCOHERENT_WEIGHTS) the block keeps none of it
    in shared memory, takes a row a block (no persistent grid, no mbarrier,
    no bulk copy), and reads the weight's 8 slots of each lane through
    ld.global.nc, the row's 8 through plain loads. Off, it keeps the lanes'
    first 4 slots in shared memory on a persistent grid, as a layer norm
    does (see the test above), and reads none through the non-coherent cache."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "NONCOHERENT_WEIGHTS", noncoherent)
    program, chosen = bench_rows("rms_norm", "float32", "sm_90")
    launch = chosen(32768)
    kernel, ptx = kernel_text(program.kernel_ir, launch.kernel), kernel_ptx(program.ptx, launch.kernel)
    assert launch.block[0] == 1024 and launch.grid[0][2] == (["const", gpu_schedule.MAX_GRID_X] if noncoherent else ["sms"])
    assert len(re.findall(r"ld\.global\.nc(\.L2::cache_hint)?\.v4\.b32", ptx)) == (8 if noncoherent else 0)
    assert len(re.findall(VECTOR_LOAD, ptx)) == (8 if noncoherent else 12)  # the row's (and the weight's slots past the kept ones)
    if noncoherent:
        assert not launch.shared_bytes and "nvvm.mbarrier.init" not in kernel and "cp.async.bulk" not in kernel
    else:
        assert evaluate(launch.shared_bytes, [(3, 32768)] * 3, []) == 16384 * 4 and kernel.count("nvvm.cp.async.bulk.shared.cluster.global") == 1


@pytest.mark.parametrize("case, reductions", [("rms_norm", 1), ("layer_norm", 2)])
def test_bfloat16_norms_keep_their_rows_packed_across_their_reductions(case, reductions):
    """PACKED_ROWS: a bfloat16 RMS or layer norm of 32K columns fits the
    register rule on (512, 8) as loaded (32 words a lane) though not as
    float32 values (64), so it runs there, two blocks an SM, and after each
    reduction moves each slot's 4 loaded words through one inline asm (8 a
    reduction) so that the next pass converts them to float32 again: ptxas
    then spills nothing. (Off, the (1024, 4) block takes such rows:
    test_rows_with_weights_get_no_row_buffers.)"""
    needs_libdevice()
    program, chosen = bench_rows(case, "bfloat16", "sm_90")
    launch = chosen(32768)
    ptx = kernel_ptx(program.ptx, launch.kernel)
    moves = re.findall(r"mov\.b32 %r\d+, %r\d+; mov\.b32 %r\d+, %r\d+; mov\.b32 %r\d+, %r\d+; mov\.b32 %r\d+, %r\d+;", ptx)
    assert launch.block == [512, 1, 1]
    assert len(moves) == 8 * reductions
    assert spill_bytes(program.ptx, launch.kernel) == 0


@pytest.mark.parametrize("case", ["rms_norm", "layer_norm"])
def test_bfloat16_rows_of_two_columns_a_vector_stay_packed_a_word_a_slot(case):
    """Bfloat16 arguments aligned to 4 bytes (not 8) load two columns a
    vector access, so PACKED_ROWS moves one 32-bit word a slot: an inline
    asm of one output, which LLVM takes as an i32 (as a struct of one i32,
    LLVM's NVPTX codegen aborted the process: gpu_compile_fuzz.py, sweep
    64). The rows of 2K-16K columns run kernels that move their slots so,
    and the module compiles to PTX."""
    needs_libdevice()
    program, chosen = bench_rows(case, "bfloat16", "sm_90", alignment=4)
    assert '"mov.b32 $0, $1;", "=r,r" %' in program.kernel_ir
    for cols in (2048, 4096, 8192, 16384):
        assert re.search(r"mov\.b32 %r\d+, %r\d+;", kernel_ptx(program.ptx, chosen(cols).kernel)), cols


def test_cached_blocks_load_their_weights_with_the_row_where_they_fit(monkeypatch):
    """EARLY_WEIGHTS: a cached block of 4 slots a lane or more whose row and
    weights fit the register rule issues every slot's weight loads before
    the row's first barrier (with the row's own), so its last pass stores
    without an L2 round trip a slot; ptxas spills nothing. Others load a
    slot's weights in the last pass; so do all with EARLY_WEIGHTS off."""
    needs_libdevice()
    expected = {  # (case, dtype): [(columns, block, early, slots a lane)]
        ("rms_norm", "float32"): [(8192, 512, True, 4), (32768, 1024, False, 8)],  # (512, 4) fits; 32K reads its weight through .nc
        ("rms_norm", "bfloat16"): [(8192, 256, True, 4)],  # (256, 4), the row and weight kept packed
        ("layer_norm", "bfloat16"): [(8192, 128, True, 8), (4096, 256, False, 2)],  # (256, 4) halved to (128, 8); 2 slots a lane
        ("layer_norm", "float32"): [(8192, 512, False, 4)],  # (512, 4): two float32 weights do not fit
    }
    for (case, dtype), rows in expected.items():
        weights = {"rms_norm": 1, "layer_norm": 2}[case]
        for on in (True, False) if (case, dtype) == ("rms_norm", "float32") else (True,):
            monkeypatch.setattr(gpu_schedule, "EARLY_WEIGHTS", on)
            program, chosen = bench_rows(case, dtype, "sm_90")
            for cols, block, early, slots in rows:
                launch = chosen(cols)
                ptx = kernel_ptx(program.ptx, launch.kernel)
                loads = len(re.findall(r"ld\.global[.\w:]*\.v4\.", ptx[: ptx.index("bar.sync")]))
                what = (case, dtype, cols, on)
                assert launch.block == [block, 1, 1], what
                assert loads == slots * (1 + weights * (early and on)), what
                assert spill_bytes(program.ptx, launch.kernel) == 0, what


def test_a_softmax_with_an_exponential_in_its_reduction_keeps_no_packed_row():
    """PACKED_ROWS leaves out rows whose reductions call a function (a
    softmax's exponential: converting again lost there, and on (512, 8) it
    spilled): a bfloat16 softmax of 8K or 32K columns moves no loaded words."""
    needs_libdevice()
    program, chosen = bench_rows("softmax", "bfloat16", "sm_90")
    assert chosen(32768).block == [1024, 1, 1]  # (not the (512, 8) block a packed row would take)
    for cols in (8192, 32768):
        assert "mov.b32 %r" not in kernel_ptx(program.ptx, chosen(cols).kernel), cols


def test_weights_past_the_shared_budget_keep_their_lanes_first_slots(monkeypatch):
    """An RMS norm float32 of 32K columns on (1024, 8), with its weight not
    read through the non-coherent cache (NONCOHERENT_WEIGHTS off), keeps its weight
    alone in shared memory, up to SHARED_WEIGHT_BYTES: past it, the
    weight's region holds each lane's first slots that fit (its row's first
    4096 columns a slot), read there, and the lanes read their other slots
    of the weight from memory. The region (the launch's dynamic shared
    memory) holds the row's padded columns where they are fewer."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "NONCOHERENT_WEIGHTS", False)
    for budget, kept in ((64 * 1024, 4), (16 * 1024, 1), (1 << 30, 8)):
        monkeypatch.setattr(gpu_schedule, "SHARED_WEIGHT_BYTES", budget)
        program, chosen = bench_rows("rms_norm", "float32", "sm_90")
        launch = chosen(32768)
        kernel = kernel_ptx(program.ptx, launch.kernel)
        assert len(re.findall(r"ld\.shared\.v4", kernel)) == kept, budget
        assert len(re.findall(VECTOR_LOAD, kernel)) == 8 + 8 - kept, budget  # x's 8 slots and the weight's others
        for cols in (100, 16392, 20000, 32768):  # (the formula alone for 100: the (512, 8) block takes such rows)
            padded = -(-cols // 16) * 16
            assert evaluate(launch.shared_bytes, [(3, cols)] * 3, []) == 4 * min(padded, 4096 * kept), (budget, cols)


def spill_bytes(ptx: str, kernel: str) -> int:
    """The bytes ptxas (sm_90) spills to local memory in ``kernel`` of the module ``ptx``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernels.ptx"
        path.write_text(ptx)
        report = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(path), "-o", os.devnull], capture_output=True, text=True, check=True).stderr
    section = report[report.index(f"Compiling entry function '{kernel}'") :]
    return int(re.search(r"(\d+) bytes spill stores", section)[1])


def test_only_inputs_read_before_the_first_reduction_ride_in_the_row_buffers(monkeypatch):
    """A row buffer is refilled once the row's first reduction has passed its
    barrier, so an input that a later pass reads first (``y`` in softmax(x)
    * y) is read from memory: the bulk copies are x's alone (3 before the
    row loop, one a row), and y is loaded as 16-byte vectors of memory."""
    monkeypatch.setattr(gpu_schedule, "BLOCK_CACHED", ((1024, 2),))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True) * y)
    context, module = outlined(fd)
    with context, ir.Location.unknown():
        scheduled = lower_to_gpu(module, {"fusion_seg0": [(True, 16)] * 3})
    (program,) = scheduled.programs.values()
    (launch,) = [launch for launch in program.launches if evaluate(launch.when, [(3, 8192)] * 3, [])]
    kernel = kernel_text(str(scheduled.module), launch.kernel)
    assert launch.block[0] == 1024 and evaluate(launch.shared_bytes, [(3, 8192)] * 3, []) == 8192 * 4 * 3  # 3 buffers of x
    assert kernel.count("nvvm.cp.async.bulk.shared.cluster.global") == 3 + 1
    assert re.search(r"memref\.load %arg\d+\[.*\] : memref<\?xvector<4xf32>>", kernel)  # y, from memory


PTX_OF_TWO_FUNCTIONS = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry streams(
\t.param .u64 streams_param_0
)
{
\t.reg .b64 \t%rd<4>;
\tld.global.v4.b32 \t{%r1, %r2, %r3, %r4}, [%rd1];
\t@%p1 ld.global.f32 \t%f1, [%rd2+16];
\t@!%p2 ld.global.nc.v4.b32 {%r5, %r6, %r7, %r8}, [%rd3];
\tld.global.L2::cache_hint.b32 \t%r9, [%rd1], %rd3;
\tst.global.v4.b32 \t[%rd1], {%r1, %r2, %r3, %r4};
\tld.shared.b32 \t%r10, [%r11];
}
.visible .entry reduces(
\t.param .u64 reduces_param_0
)
{
\tld.global.f32 \t%f2, [%rd1];
}
"""


def test_marked_kernels_load_with_the_l2_evict_last_policy():
    """hint_loads: every global load of the named functions (plain, .nc,
    predicated, vectors, with an offset) takes .L2::cache_hint with a policy
    the function creates once at the top of its body; a load that already
    has a hint, stores, shared loads and the other functions stay as they were."""
    hinted = gpu.hint_loads(PTX_OF_TWO_FUNCTIONS, {"streams"})
    policy = gpu.L2_POLICY_REGISTER
    streams, reduces = hinted.split(".visible .entry reduces(")
    assert streams.count(f"createpolicy.fractional.L2::evict_last.b64 \t{policy}, 1.0;") == 1
    assert streams.index("createpolicy") < streams.index("ld.global")
    assert f"\tld.global.L2::cache_hint.v4.b32 \t{{%r1, %r2, %r3, %r4}}, [%rd1], {policy};" in streams
    assert f"\t@%p1 ld.global.L2::cache_hint.f32 \t%f1, [%rd2+16], {policy};" in streams
    assert f"\t@!%p2 ld.global.nc.L2::cache_hint.v4.b32 {{%r5, %r6, %r7, %r8}}, [%rd3], {policy};" in streams
    assert "\tld.global.L2::cache_hint.b32 \t%r9, [%rd1], %rd3;" in streams  # its own hint kept
    assert "\tst.global.v4.b32 \t[%rd1], {%r1, %r2, %r3, %r4};" in streams and "\tld.shared.b32 \t%r10, [%r11];" in streams
    assert "cache_hint" not in reduces and "createpolicy" not in reduces
    assert gpu.hint_loads(PTX_OF_TWO_FUNCTIONS, set()) == PTX_OF_TWO_FUNCTIONS
    for old in (PTX_OF_TWO_FUNCTIONS.replace(".version 8.0", ".version 7.0"), PTX_OF_TWO_FUNCTIONS.replace(".target sm_90", ".target sm_75")):
        assert gpu.hint_loads(old, {"streams"}) == old  # no cache hints before PTX ISA 7.4 or sm_80


@pytest.mark.parametrize("enabled", [True, False])
def test_streaming_kernels_load_evict_last_and_reductions_do_not(monkeypatch, enabled):
    """L2_EVICT_LAST: the kernels that write as much as they read (a layer
    norm's, a pointwise one's) load with the L2 eviction priority evict_last,
    every global load of theirs; the inner and outer sums' (reductions to
    fewer values) load as before, and so does every kernel with the setting
    off. The mark never reaches the kernels' lowering, and ptxas takes the
    PTX (compile_gpu runs it where it is on PATH)."""
    needs_libdevice()
    monkeypatch.setattr(gpu_schedule, "L2_EVICT_LAST", enabled)

    def pointwise():
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
            fd.add_output(fd.ops.exp(x) * 2.0)
        return fd

    def inner_sum_bf16():  # a row plan (a cast, then the sum) that writes row values alone
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
            fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.cast(x, dtype=DataType.Float), dims=[1]), dtype=DataType.BFloat16))
        return fd

    cases = [(layer_norm_bf16, 4, True), (pointwise, 2, True), (lambda: sums([2]), 2, False), (lambda: sums([0]), 2, False), (inner_sum_bf16, 2, False)]
    for build, operands, streams in cases:
        context, module = outlined(build())
        with context, ir.Location.unknown():
            program = compile_gpu(module, arch="sm_90", load=False, layouts={"fusion_seg0": [(True, 16)] * operands})
        entries = re.split(r"(?=\.visible \.entry)", program.ptx)[1:]
        loads = [re.findall(r"\bld\.global\S*", e) for e in entries]
        assert all(loads), build
        for entry, found in zip(entries, loads):
            hinted = [op for op in found if ".L2::cache_hint" in op]
            assert len(hinted) == (len(found) if enabled and streams else 0), (build, found)
            assert entry.count("createpolicy.fractional.L2::evict_last.b64") == (1 if enabled and streams else 0)
        assert gpu_schedule.EVICT_LAST_ATTRIBUTE in program.kernel_ir or not (enabled and streams)
