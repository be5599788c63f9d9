"""Pointwise fusions that read a weight (an input indexed by the row's last
dim alone, broadcast along the rows, like a scale or a bias: bench/run.py's
scale_bias), at rows of each of the row scheme's variants (the tensor's flat
16-byte vectors, FLAT_WHOLE_ROWS, or where the row is not a whole number of
them FLAT_SCALAR_ROWS; a warp a row, or a block a piece of a row,
ROW_PIECE_CHUNKS, in vectors or scalars; rows below ROW_POINTWISE_MIN in the
grid-stride loop), with operands of every kind around them, and updating an
input in place; and write-only broadcasts (a column plus a row) at each of
their row variants (WRITE_ONLY_BLOCK). Against float64
NumPy computed from the same inputs, given outputs poisoned with NaN,
inputs checked unchanged."""

import ml_dtypes
import numpy as np
import pytest

from bench_scripts import load as load_bench
from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.lowering import gpu_schedule
from test_row_kernels import run_checked

RNG = np.random.default_rng(20261130)
NUMPY = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
#: The bench's fusions (bench/run.py): what it measures is what is checked here.
BENCH = load_bench("run")

#: (rows, columns): one row; rows of whole vectors (the flat scheme,
#: FLAT_WHOLE_ROWS; with it off, test_whole_rows_on_the_row_variants: warps
#: for rows shorter than a block's chunk, 4096 columns of float32 vectors,
#: 8192 of bfloat16, and blocks a piece of a row: 4096 is one float32 piece,
#: a bfloat16 warp; 32776 8 whole float32 pieces and 8 columns, 4 bfloat16
#: pieces of 8192 and 8); rows that are not whole vectors (1001, 5001: the
#: flat scheme; test_rows_that_are_not_whole_vectors has the scalar row
#: variants too); rows below ROW_POINTWISE_MIN (the grid-stride loop).
SHAPES = [(1, 128), (3, 1000), (6, 1001), (37, 4096), (1000, 520), (5, 32776), (3, 5001), (130, 127)]
#: The rows of SHAPES that are whole vectors in both dtypes.
WHOLE_ROWS = [(1, 128), (37, 4096), (1000, 520), (5, 32776)]


def bench_fusion(name, dtype):
    """bench/run.py's fusion of case ``name`` in ``dtype``."""
    return BENCH.fusion_for(next(c for c in BENCH.CASES if c.name == name), dtype)


def scale_and_bias(shape, dtype, device):
    """bench/run.py's scale_bias of ``shape`` on fresh inputs, checked (run_checked) against float64."""
    x, w, b = (RNG.standard_normal(s).astype(NUMPY[dtype]) for s in (shape, shape[1:], shape[1:]))
    expected = x.astype(np.float64) * w.astype(np.float64) + b.astype(np.float64)
    fd = bench_fusion("scale_bias", dtype)
    tolerance = 1e-5 if dtype == "float32" else 1e-2
    run_checked(FusionExecutorCache(fd), [x, w, b], expected, NUMPY[dtype], device, (tolerance, tolerance), 1.0, f"{dtype} {shape}")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_scale_and_bias_at_every_variant(shape, dtype, device):
    scale_and_bias(shape, dtype, device)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_whole_rows_on_the_row_variants(dtype, constants):
    """Rows of whole vectors with FLAT_WHOLE_ROWS off: the warp and piece
    variants (which write-only broadcasts and inputs that are not dense
    still take) with weights, among other operands, and in place."""
    constants.setattr(gpu_schedule, "FLAT_WHOLE_ROWS", False)
    for shape in WHOLE_ROWS:
        scale_and_bias(shape, dtype, "cuda")
    if dtype == "float32":
        for cols in (1032, 9000):
            mixed_operands(cols, "cuda")
        for shape in ((203, 2048), (7, 10000)):
            affine_in_place(shape, "cuda")


def broadcast_add(rows, cols, dtype, device):
    """bench/run.py's broadcast_add (a column plus a row: a write-only
    broadcast, no full-size input) of ``rows`` x ``cols`` on fresh inputs,
    checked (run_checked) against float64."""
    fd = bench_fusion("broadcast_add", dtype)
    column, row = RNG.standard_normal((rows, 1)).astype(NUMPY[dtype]), RNG.standard_normal((1, cols)).astype(NUMPY[dtype])
    expected = column.astype(np.float64) + row.astype(np.float64)
    tolerance = 1e-6 if dtype == "float32" else 1e-2
    run_checked(FusionExecutorCache(fd), [column, row], expected, NUMPY[dtype], device, (tolerance, tolerance), 1.0, f"{dtype} broadcast_add {rows}x{cols}")


#: Row lengths of a write-only broadcast around its variants' limits, by
#: dtype: a warp a row below WRITE_ONLY_BLOCK's 256 vectors (1020 float32
#: columns, 2040 bfloat16), a block of 128 threads a row from there (one
#: chunk; one and a part, its last slots outside the row) to a block's chunk
#: (4092, 8184), and pieces of 4096 / 8192 columns past it.
WRITE_ONLY_COLUMNS = {"float32": [1020, 1024, 1028, 4092, 4096, 4100], "bfloat16": [2040, 2048, 2056, 8184, 8192, 8200]}


@pytest.mark.gpu
@pytest.mark.parametrize("grid", [None, 8], ids=["grid", "8 blocks"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_write_only_broadcasts_at_every_row_variant(dtype, grid, constants):
    """A column plus a row at each row length of WRITE_ONLY_COLUMNS, and
    with a grid of 8 blocks (MAX_GRID_X), each block or warp taking many
    rows or pieces in turn."""
    if grid is not None:
        constants.setattr(gpu_schedule, "MAX_GRID_X", grid)
    for cols in WRITE_ONLY_COLUMNS[dtype]:
        broadcast_add(37, cols, dtype, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("flat", [True, False], ids=["flat", "rows"])
def test_blocks_take_many_pieces(flat, constants):
    """A grid of 8 blocks (MAX_GRID_X 8) for 3 x 12000 columns (with
    FLAT_WHOLE_ROWS 9000 flat vectors, each thread several; without it 3 x 3
    pieces of 4096 columns, each block several pieces of several rows) and
    for 10 x 5001 columns (FLAT_SCALAR_ROWS: 12502 flat vectors, each thread
    several)."""
    constants.setattr(gpu_schedule, "FLAT_WHOLE_ROWS", flat)
    constants.setattr(gpu_schedule, "MAX_GRID_X", 8)
    for shape in ((3, 12000), (10, 5001)):
        scale_and_bias(shape, "float32", "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("flat", [True, False], ids=["flat", "rows"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rows_that_are_not_whole_vectors(flat, dtype, constants):
    """Rows whose length is not a multiple of the vector, with and without
    FLAT_SCALAR_ROWS: the tensor's flat 16-byte vectors (a vector's columns
    cross a row's end; the last elements in the scalar tail; 8 blocks, so
    each thread takes several vectors) or the scalar row variant (warps for
    1001 columns, pieces of 4096 for 5001)."""
    constants.setattr(gpu_schedule, "FLAT_SCALAR_ROWS", flat)
    constants.setattr(gpu_schedule, "MAX_GRID_X", 8)
    for shape in ((6, 1001), (3, 5001), (301, 129)):
        scale_and_bias(shape, dtype, "cuda")
    broadcast_add(37, 1001, dtype, "cuda")  # no input read flat


@pytest.mark.parametrize("cols", [1032, 9000, 1031, 9001])
def test_weights_among_row_column_and_scalar_operands(cols, device):
    """A rank-3 fusion: ``x[B, R, C] * w[C] + y[R, C] * col[B, R, 1] + s``,
    only ``w`` a weight (``y`` varies along a leading dim, ``col`` is one
    value a row, ``s`` a scalar input), on the tensor's flat vectors: rows
    of whole vectors (FLAT_WHOLE_ROWS: ``w`` and ``y`` loaded as a vector at
    the vector's row and column, ``col`` once) and rows that are not
    (FLAT_SCALAR_ROWS: ``y`` and ``col`` read at each element's row and
    column); test_whole_rows_on_the_row_variants runs the whole rows on a
    warp a row and a block a piece."""
    mixed_operands(cols, device)


def mixed_operands(cols, device):
    """The fusion of test_weights_among_row_column_and_scalar_operands, checked."""
    with FusionDefinition(name="mixed_operands") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        col = fd.define_tensor(shape=[-1, -1, 1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        fd.add_output(x * w + y * col + s)
    batch, rows = 3, 7
    x, w, y, col = (RNG.standard_normal(s).astype(np.float32) for s in ((batch, rows, cols), (cols,), (rows, cols), (batch, rows, 1)))
    f64 = [a.astype(np.float64) for a in (x, w, y, col)]
    expected = f64[0] * f64[1] + f64[2] * f64[3] + 0.5
    before = [a.copy() for a in (x, w, y, col)]
    out = to_device(np.full(expected.shape, np.nan, np.float32), device)
    (got,) = fd.execute([to_device(a, device) for a in (x, w, y, col)] + [0.5], outputs=[out])
    np.testing.assert_allclose(to_host(got), expected, rtol=1e-5, atol=1e-5)
    for array, original in zip((x, w, y, col), before):
        np.testing.assert_array_equal(array, original)


@pytest.mark.parametrize("shape", [(203, 2048), (7, 10000), (7, 10001)], ids=["whole", "whole-long", "flat"])
def test_weighted_update_in_place(shape, device):
    """``x`` updated in place with ``x * w + b``: each thread reads its flat
    vector (FLAT_WHOLE_ROWS, FLAT_SCALAR_ROWS) before writing it (with
    FLAT_WHOLE_ROWS off, test_whole_rows_on_the_row_variants: each lane its
    slots of a row, a warp's, or a piece, a block's)."""
    affine_in_place(shape, device)


def affine_in_place(shape, device):
    """The fusion of test_weighted_update_in_place, checked."""
    with FusionDefinition(name="affine_in_place") as fd:
        x, w, b = (fd.define_tensor(shape=dims, dtype=DataType.Float) for dims in ([-1, -1], [-1], [-1]))
        fd.add_output(x * w + b, x)
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in (shape, shape[1:], shape[1:]))
    expected = x.astype(np.float64) * w + b
    weights = (w.copy(), b.copy())
    arguments = [to_device(a, device) for a in (x, w, b)]
    assert fd.execute(arguments) == []
    np.testing.assert_allclose(to_host(arguments[0]), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(to_host(arguments[1]), weights[0])
    np.testing.assert_array_equal(to_host(arguments[2]), weights[1])


@pytest.mark.parametrize("offset", [1, 2], ids=["4-byte", "8-byte"])
@pytest.mark.parametrize("cols", [1024, 1026, 1025])
def test_weights_aligned_to_less_than_a_vector(offset, cols, device):
    """A scale and bias whose weights start ``offset`` float32 elements into
    a buffer (4- or 8-byte aligned where the buffer is 16-byte aligned, as a
    device buffer is): rows of a multiple of the weights' vector (2 lanes at
    8 bytes) on the flat scheme in vectors of that many lanes
    (FLAT_WHOLE_ROWS), the others with the weights read an element at a
    time (FLAT_SCALAR_ROWS). x and the output stay 16-byte aligned."""
    shape = (37, cols)
    x = RNG.standard_normal(shape).astype(np.float32)
    backing = [RNG.standard_normal(cols + offset).astype(np.float32) for _ in range(2)]
    weights = [to_device(b, device)[offset:] for b in backing]
    w, b = (a[offset:] for a in backing)
    expected = x.astype(np.float64) * w + b
    fd = bench_fusion("scale_bias", "float32")
    out = to_device(np.full(shape, np.nan, np.float32), device)
    inputs = [to_device(x, device), *weights]
    before = [a.copy() for a in (x, w, b)]
    (got,) = fd.execute(inputs, outputs=[out])
    np.testing.assert_allclose(to_host(got), expected, rtol=1e-5, atol=1e-5)
    for array, original in zip(inputs, before):
        np.testing.assert_array_equal(to_host(array), original)
