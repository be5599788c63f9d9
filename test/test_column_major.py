"""Column-major CUDA arguments of elementwise fusions run as row-major views
(fuser_mlir.executor.row_major_views): the kernels walk the dims in
row-major order, so over column-major arrays neighbouring threads touched
addresses a column apart (a tenth of the row-major speed, sweep 51c). First
which definitions are elementwise and which calls are permuted, on device
addresses alone; then the calls themselves on the GPU."""

import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.executor import row_major_views
from fuser_mlir.runtime.arrays import DeviceArray

RNG = np.random.default_rng(51)


def axpy_in_place():
    """out = where(x > y, x * s, y) in float32, and x <- x * 2 in place."""
    with FusionDefinition(name="axpy") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        y = fd.define_tensor([-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        fd.add_output(fd.ops.where(x > y, x * s, fd.ops.cast(fd.ops.cast(y, DataType.Half), DataType.Float)))
        fd.add_output(x * 2.0, x)
    return fd


def definition(build) -> FusionDefinition:
    with FusionDefinition() as fd:
        build(fd)
    return fd


ELEMENTWISE = {
    "pointwise ops, casts, a select and an in-place update": (lambda fd: axpy_in_place(), True),
    "a segment boundary": (lambda fd: fd.add_output(fd.ops.segment_set(fd.define_tensor([-1, -1])) + 1.0), True),
    "a permute": (lambda fd: fd.add_output(fd.ops.permute(fd.define_tensor([-1, -1]), [1, 0]) * 2.0), False),
    "a broadcast": (lambda fd: fd.add_output(fd.define_tensor([-1, -1]) + fd.define_tensor([1, -1])), False),
    "a reduction": (lambda fd: fd.add_output(fd.ops.sum(fd.define_tensor([-1, -1]), [1])), False),
    "a declared contiguity": (lambda fd: fd.add_output(fd.define_tensor([-1, -1], contiguity=[True, True]) + 1.0), False),
    "a static size": (lambda fd: fd.add_output(fd.define_tensor([-1, 3]) + 1.0), False),
    "one dim": (lambda fd: fd.add_output(fd.define_tensor([-1]) + 1.0), False),
}


@pytest.mark.parametrize("case", ELEMENTWISE)
def test_which_definitions_are_elementwise(case):
    build, expected = ELEMENTWISE[case]
    fd = axpy_in_place() if case.startswith("pointwise") else definition(build)
    assert fd.is_elementwise() == expected


def device_array(ptr: int, shape, strides) -> DeviceArray:
    return DeviceArray(ptr, shape, [4 * s for s in strides], np.dtype(np.float32))


def test_which_calls_run_as_row_major_views():
    n = 8
    column = [device_array(base, (n, n), (1, n)) for base in (0x1000_0000, 0x2000_0000, 0x3000_0000)]
    row = device_array(0x4000_0000, (n, n), (n, 1))
    views = row_major_views((0, 1), [column[0], column[1], 2.5], [column[2]])
    assert views is not None
    (x, y, s), (out,) = views
    assert s == 2.5 and [(a.ptr, a.shape, a.strides) for a in (x, y, out)] == [(c.ptr, (n, n), (4 * n, 4)) for c in column]
    batch = device_array(0x1000_0000, (2, 3, 4), (1, 2, 6))  # column-major over three dims
    ((view,), (same,)) = row_major_views((0,), [batch], [batch])
    assert view.shape == (4, 3, 2) and view.strides == (24, 8, 4) and same.strides == view.strides
    for label, inputs, outputs in [
        ("row-major already", [row, row, 1.0], [row]),
        ("a dim of one element, row-major aside from it", [device_array(0x1000_0000, (n, 1), (1, 1))] * 2 + [1.0], [device_array(0x2000_0000, (n, 1), (1, 1))]),
        ("the arguments in different orders", [column[0], row, 1.0], [column[2]]),
        ("a new output", [column[0], column[1], 1.0], [None]),
        ("another shape", [column[0], device_array(0x2000_0000, (n, n - 1), (1, n)), 1.0], [column[2]]),
        ("NumPy arrays (the CPU runtime orders their dims itself)", [np.zeros((n, n), np.float32, order="F")] * 2 + [1.0], [np.zeros((n, n), np.float32, order="F")]),
        ("too few inputs", [column[0]], [column[2]]),
    ]:
        assert row_major_views((0, 1), inputs, outputs) is None, label


def column_major(values: np.ndarray, device: str):
    """``values`` on ``device`` as a column-major (Fortran-order) array."""
    return to_device(np.ascontiguousarray(values.T), device).T


def test_column_major_arguments_give_row_major_results_on_the_row_major_kernels(device):
    if device == "cpu":
        pytest.skip("the CPU runtime orders an elementwise call's dims itself (test_cpu_split.py)")
    fd = axpy_in_place()
    fec = FusionExecutorCache(fd)
    shape = (300, 200)
    for layout in ("row-major", "column-major", "column-major"):  # a miss, then a hit of the same kernels
        x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
        place = column_major if layout == "column-major" else to_device
        dx, dy, out = place(x, device), place(y, device), place(np.full(shape, np.nan, np.float32), device)
        (result,) = fec.run([dx, dy, 1.5], outputs=[out])
        assert result is out, layout
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        expected = np.where(x64 > y64, x64 * 1.5, y.astype(np.float16).astype(np.float64))
        np.testing.assert_allclose(to_host(out), expected, rtol=1e-6, atol=1e-6, err_msg=layout)
        np.testing.assert_allclose(to_host(dx), x64 * 2.0, rtol=1e-6, err_msg=layout)  # updated in place
        np.testing.assert_array_equal(to_host(dy), y, err_msg=layout)
    assert fec.stats.compilations == 1
