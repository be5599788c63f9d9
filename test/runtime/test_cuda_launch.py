"""Kernel parameters of GPU launches, packed without a GPU: memref
descriptors as MLIR's gpu.func lowering expects them, scalars in the low
bytes of their slot."""

import struct

import numpy as np
import pytest

from fuser_mlir.runtime.arrays import DeviceArray
from fuser_mlir.runtime.cpu import ArgKind
from fuser_mlir.runtime.cuda import CudaSegment
from fuser_mlir.runtime.launch import KernelLaunch, SegmentProgram, Temp


def program():
    return SegmentProgram(
        temps=[Temp("f32", [["argdim", 0, 0], ["const", 4]]), Temp("i8", [["const", 6]])],
        launches=[
            KernelLaunch("k0", [["const", 1]] * 3, [256, 1, 1], [["arg", 0], ["arg", 1], ["temp", 0], ["arg", 2]]),
            KernelLaunch("k1", [["const", 1]] * 3, [256, 1, 1], [["view", 1, [["const", 2], ["const", 3]]], ["arg", 3]]),
        ],
    )


def test_memref_descriptors_and_scalars_fill_one_slot_each():
    kinds = [ArgKind.tensor("float32", 2), ArgKind.scalar("float32"), ArgKind.scalar("float64"), ArgKind.scalar("bfloat16")]
    segment = CudaSegment("seg", program(), None, kinds, device=0)
    first, second = segment.launches
    x = DeviceArray(0x1000, (5, 3), (4, 20), np.float32)  # transposed: strides 1 and 5 elements
    temp = DeviceArray(0x2000, (5, 4), (16, 4), np.float32)
    byte_temp = DeviceArray(0x3000, (6,), (1,), np.int8)
    first.pack([x, 1.5, -2.25, 1.0], [temp, byte_temp])
    assert first.count == (3 + 4) + 1 + (3 + 4) + 1
    assert list(first.slots[:7]) == [0x1000, 0x1000, 0, 5, 3, 1, 5]
    assert struct.pack("<q", first.slots[7])[:4] == struct.pack("<f", 1.5)
    assert list(first.slots[8:15]) == [0x2000, 0x2000, 0, 5, 4, 4, 1]
    assert struct.pack("<q", first.slots[15]) == struct.pack("<d", -2.25)
    # the parameter array points at consecutive 8-byte slots
    assert [p - first.pointers[0] for p in first.pointers] == [8 * i for i in range(first.count)]

    second.pack([x, 1.5, -2.25, 1.0], [temp, byte_temp])
    assert list(second.slots[:7]) == [0x3000, 0x3000, 0, 2, 3, 3, 1]  # a contiguous view of the temporary
    assert second.slots[7] == 0x3F80  # bfloat16 1.0


def test_flat_views_describe_dense_buffers_as_one_dimensional_vectors():
    program = SegmentProgram(launches=[KernelLaunch("k", [["const", 1]] * 3, [256, 1, 1], [["flat", ["arg", 0], 4], ["flat", ["arg", 0], 1]])])
    segment = CudaSegment("seg", program, None, [ArgKind.tensor("float32", 3)], device=0)
    (launch,) = segment.launches
    x = DeviceArray(0x4000, (2, 3, 8), (96, 32, 4), np.float32)
    launch.pack([x], [])
    assert list(launch.slots[:10]) == [0x4000, 0x4000, 0, 12, 1, 0x4000, 0x4000, 0, 48, 1]


def test_compiled_formulas_agree_with_the_evaluator():
    from fuser_mlir.runtime.launch import compile_formula, evaluate

    expr = ["max", ["const", 1], ["min", ["ceildiv", ["argdim", 0, 0], ["const", 32]], ["ceildiv", ["const", 1056], ["ceildiv", ["argdim", 0, 1], ["const", 256]]]]]
    for shape in [(0, 5), (31, 7), (100000, 1024), (5, 300000)]:
        assert compile_formula(expr)([shape], []) == evaluate(expr, [shape], [])


def test_grids_of_a_block_an_sm_read_the_device_sm_count():
    """``["sms"]`` is the SM count of the device a program is loaded on: a
    CudaSegment binds it when it compiles its formulas (a stand-in number
    where there is no module); a formula that reads it cannot be evaluated
    without one, and it is not a scalar's value (the hit path may replay it)."""
    from fuser_mlir.runtime.launch import compile_formula, describe, evaluate, reads_scalars

    grid = ["min", ["ceildiv", ["argdim", 0, 0], ["const", 1]], ["sms"]]
    assert [evaluate(grid, [(rows, 8)], [], sms=132) for rows in (5, 132, 4096)] == [5, 132, 132]
    assert compile_formula(grid, 114)([(4096, 8)], []) == 114
    assert describe(grid) == "min(ceildiv(arg0.d0, 1), sms)" and not reads_scalars(grid)
    with pytest.raises(ValueError, match="SM count"):
        compile_formula(grid)
    program = SegmentProgram(launches=[KernelLaunch("rows", [grid, ["const", 1], ["const", 1]], [1024, 1, 1], [["arg", 0]])])
    segment = CudaSegment("seg", program, None, [ArgKind.tensor("float32", 2)], device=0, sms=78)
    assert [g([(4096, 8)], []) for g in segment.launches[0].grid] == [78, 1, 1]


def test_a_launch_runs_only_where_its_condition_holds():
    from fuser_mlir.runtime.launch import compile_formula

    program = SegmentProgram(
        launches=[
            KernelLaunch("short", [["const", 1]] * 3, [256, 1, 1], [["arg", 0]], when=["le", ["argdim", 0, 1], ["const", 4096]]),
            KernelLaunch("long", [["const", 1]] * 3, [256, 1, 1], [["arg", 0]], when=["gt", ["argdim", 0, 1], ["const", 4096]]),
        ]
    )
    segment = CudaSegment("seg", program, None, [ArgKind.tensor("float32", 2)], device=0)
    chosen = lambda shape: [l.launch.kernel for l in segment.launches if l.when([shape], [])]  # noqa: E731
    assert chosen((8, 4096)) == ["short"] and chosen((8, 4097)) == ["long"]
    assert compile_formula(["le", ["const", 3], ["const", 3]])([], []) == 1


def test_a_quotient_by_an_empty_dim_is_zero_so_empty_tensors_launch_nothing_over_it():
    """An outer sum of 0 columns splits its rows by ``(sms * 4) // ceildiv(cols, 128)``:
    a ZeroDivisionError on the GPU host (test_executor's empty batch, run there) before
    quotients by 0 were defined as 0. Its programs, compiled here without a GPU, now
    evaluate for empty shapes: no block over the 0 columns, and a 0-row tensor's
    column sums keep their blocks (they write the zeros)."""
    from fuser_mlir import DataType, FusionDefinition
    from fuser_mlir.compiler import compile_fusion
    from fuser_mlir.runtime import cuda
    from fuser_mlir.runtime.launch import compile_formula, evaluate

    for op in ("div", "ceildiv", "mod"):
        expr = [op, ["const", 7], ["argdim", 0, 1]]
        assert evaluate(expr, [(3, 0)], []) == compile_formula(expr)([(3, 0)], []) == 0
        assert evaluate(expr, [(3, 2)], []) == {"div": 3, "ceildiv": 4, "mod": 1}[op]
    with FusionDefinition(name="sums") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[1], keepdim=True))
        fd.add_output(fd.ops.sum(x, dims=[0], keepdim=True))
    available, cuda.available = cuda.available, lambda: False  # compile only
    try:
        compiled = compile_fusion(fd, device="cuda:0", layouts={"input": [(True, 256)], "given": {}})
    finally:
        cuda.available = available
    (outer,) = [p for p in compiled.program.programs.values() if p.temps]  # the outer sum's splits
    for shape in [(5, 0), (0, 0), (0, 37)]:
        shapes = [list(shape), [1, shape[1]]]
        running = [launch for launch in outer.launches if launch.when is None or evaluate(launch.when, shapes, [], 132)]
        blocks = [evaluate(launch.grid[0], shapes, [], 132) for launch in running]
        assert running and all(blocks) == bool(shape[1])
        assert all(evaluate(d, shapes, [], 132) >= 0 for t in outer.temps for d in t.shape)
