"""Pointwise fusions that read a weight (an input indexed by the row's last
dim alone, broadcast along the rows, like a scale or a bias: bench/run.py's
scale_bias), at rows of each of the row scheme's variants (a warp or a block
a row, 16-byte vectors or scalars where the row is not a whole number of
them, rows below ROW_POINTWISE_MIN in the grid-stride loop), with operands
of every kind around them, and updating an input in place. Against float64
NumPy computed from the same inputs, given outputs poisoned with NaN,
inputs checked unchanged."""

import ml_dtypes
import numpy as np
import pytest

from bench_scripts import load as load_bench
from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from test_row_kernels import run_checked

RNG = np.random.default_rng(20261130)
NUMPY = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
#: The bench's fusions (bench/run.py): what it measures is what is checked here.
BENCH = load_bench("run")

#: (rows, columns): one row; columns not a multiple of the vector (the
#: scalar variant); warps (rows up to WARP_ROW_LIMIT) and blocks a row; rows
#: below ROW_POINTWISE_MIN (the grid-stride loop).
SHAPES = [(1, 128), (3, 1000), (37, 4096), (1000, 520), (5, 32776), (130, 127)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_scale_and_bias_at_every_variant(shape, dtype, device):
    _, cols = shape
    x, w, b = (RNG.standard_normal(s).astype(NUMPY[dtype]) for s in (shape, (cols,), (cols,)))
    expected = x.astype(np.float64) * w.astype(np.float64) + b.astype(np.float64)
    fd = BENCH.fusion_for(next(c for c in BENCH.CASES if c.name == "scale_bias"), dtype)
    tolerance = 1e-5 if dtype == "float32" else 1e-2
    run_checked(FusionExecutorCache(fd), [x, w, b], expected, NUMPY[dtype], device, (tolerance, tolerance), 1.0, f"{dtype} {shape}")


def test_weights_among_row_column_and_scalar_operands(device):
    """A rank-3 fusion: ``x[B, R, C] * w[C] + y[R, C] * col[B, R, 1] + s``,
    only ``w`` a weight (``y`` varies along a leading dim, ``col`` is one
    value a row, ``s`` a scalar input)."""
    with FusionDefinition(name="mixed_operands") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        col = fd.define_tensor(shape=[-1, -1, 1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        fd.add_output(x * w + y * col + s)
    batch, rows, cols = 3, 7, 1032
    x, w, y, col = (RNG.standard_normal(s).astype(np.float32) for s in ((batch, rows, cols), (cols,), (rows, cols), (batch, rows, 1)))
    f64 = [a.astype(np.float64) for a in (x, w, y, col)]
    expected = f64[0] * f64[1] + f64[2] * f64[3] + 0.5
    before = [a.copy() for a in (x, w, y, col)]
    out = to_device(np.full(expected.shape, np.nan, np.float32), device)
    (got,) = fd.execute([to_device(a, device) for a in (x, w, y, col)] + [0.5], outputs=[out])
    np.testing.assert_allclose(to_host(got), expected, rtol=1e-5, atol=1e-5)
    for array, original in zip((x, w, y, col), before):
        np.testing.assert_array_equal(array, original)


def test_weighted_update_in_place(device):
    """``x`` updated in place with ``x * w + b`` (203 rows of 2048 columns:
    warps, each reading its slots of a row before writing them)."""
    with FusionDefinition(name="affine_in_place") as fd:
        x, w, b = (fd.define_tensor(shape=shape, dtype=DataType.Float) for shape in ([-1, -1], [-1], [-1]))
        fd.add_output(x * w + b, x)
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((203, 2048), (2048,), (2048,)))
    expected = x.astype(np.float64) * w + b
    weights = (w.copy(), b.copy())
    arguments = [to_device(a, device) for a in (x, w, b)]
    assert fd.execute(arguments) == []
    np.testing.assert_allclose(to_host(arguments[0]), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(to_host(arguments[1]), weights[0])
    np.testing.assert_array_equal(to_host(arguments[2]), weights[1])
