"""Column-major arguments of elementwise fusions run as row-major views
(fuser_mlir.executor.row_major_views): the kernels walk the dims in
row-major order, so over column-major arrays neighbouring threads touched
addresses a column apart (a tenth of the row-major speed, sweep 51c). New
outputs stay new in the views, so they take the inputs' order in the
caller's dims, as NumPy's and torch's do, and a column-major call does not
transpose into a row-major output. First which definitions are elementwise
and which calls are permuted, on addresses alone; then the calls
themselves, on the CPU and the GPU."""

import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.errors import InputError
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
    (x, y, s), (out,), order = views
    assert order == (1, 0)
    assert s == 2.5 and [(a.ptr, a.shape, a.strides) for a in (x, y, out)] == [(c.ptr, (n, n), (4 * n, 4)) for c in column]
    batch = device_array(0x1000_0000, (2, 3, 4), (1, 2, 6))  # column-major over three dims
    ((view,), (same,), order) = row_major_views((0,), [batch], [batch])
    assert order == (2, 1, 0)
    assert view.shape == (4, 3, 2) and view.strides == (24, 8, 4) and same.strides == view.strides
    # new outputs stay new: the call makes them row-major in the views' dims, the inputs' order in the caller's
    assert row_major_views((0, 1), [column[0], column[1], 1.0], [None])[1:] == ([None], (1, 0))
    assert row_major_views((0, 1), [column[0], column[1], 1.0], None)[1:] == (None, (1, 0))
    permuted = np.zeros((4, 3, 2), np.float32).transpose(1, 2, 0)  # NumPy: strides rank the dims (2, 0, 1)
    ((view, _, _), outputs, order) = row_major_views((0, 1), [permuted, permuted, 1.0], [None])
    assert order == (2, 0, 1) and view.flags.c_contiguous and view.base is permuted.base and outputs == [None]
    one = np.zeros((5, 1, 3), np.float32).transpose(2, 1, 0)  # a dim of one element amid a reversed order
    assert row_major_views((0, 1), [one, one, 1.0], None)[2] == (1, 2, 0)
    fortran = np.zeros((n, n), np.float32, order="F")
    for label, inputs, outputs in [
        ("row-major already", [row, row, 1.0], [row]),
        ("row-major NumPy arrays", [np.zeros((n, n), np.float32)] * 2 + [1.0], None),
        ("a dim of one element, row-major aside from it", [device_array(0x1000_0000, (n, 1), (1, 1))] * 2 + [1.0], [device_array(0x2000_0000, (n, 1), (1, 1))]),
        ("the arguments in different orders", [column[0], row, 1.0], [column[2]]),
        ("a given output in another order", [column[0], column[1], 1.0], [row]),
        ("another shape", [column[0], device_array(0x2000_0000, (n, n - 1), (1, n)), 1.0], [column[2]]),
        ("NumPy and CUDA arrays mixed", [fortran, column[1], 1.0], None),
        ("too few inputs", [column[0]], [column[2]]),
        ("inputs not a list", column[0], None),
        ("outputs not a list (the full validation names it)", [column[0], column[1], 1.0], column[2]),
    ]:
        assert row_major_views((0, 1), inputs, outputs) is None, label


def column_major(values: np.ndarray, device: str):
    """``values`` on ``device`` as a column-major (Fortran-order) array."""
    return to_device(np.ascontiguousarray(values.T), device).T


def test_column_major_arguments_run_on_the_row_major_kernels(device):
    fd = axpy_in_place()
    fec = FusionExecutorCache(fd)
    shape = (300, 200)
    for layout in ("row-major", "column-major", "column-major"):  # a miss, then a hit of the same kernels
        x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
        place = column_major if layout == "column-major" else to_device
        x64, y64 = x.astype(np.float64), y.astype(np.float64)  # before the call: on the CPU, dx is x itself
        dx, dy, out = place(x, device), place(y, device), place(np.full(shape, np.nan, np.float32), device)
        (result,) = fec.run([dx, dy, 1.5], outputs=[out])
        assert result is out, layout
        expected = np.where(x64 > y64, x64 * 1.5, y.astype(np.float16).astype(np.float64))
        np.testing.assert_allclose(to_host(out), expected, rtol=1e-6, atol=1e-6, err_msg=layout)
        np.testing.assert_allclose(to_host(dx), x64 * 2.0, rtol=1e-6, err_msg=layout)  # updated in place
        np.testing.assert_array_equal(to_host(dy), y, err_msg=layout)
    assert fec.stats.compilations == 1


def strides_order(array) -> tuple[int, ...]:
    """The dims of ``array`` by stride, largest first (NumPy, DeviceArray or torch)."""
    strides = array.stride() if type(array).__module__.startswith("torch") else array.strides
    return tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))


def two_outputs():
    """out0 = x * 2 + y (float32), out1 = (x - y) as float16."""
    with FusionDefinition(name="two_outputs") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype=DataType.Float)
        y = fd.define_tensor([-1, -1, -1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + y)
        fd.add_output(fd.ops.cast(x - y, DataType.Half))
    return fd


@pytest.mark.parametrize("order", [(2, 1, 0), (0, 2, 1)], ids=["column-major", "last two dims swapped"])
def test_new_outputs_follow_the_inputs_order(device, order):
    fd = two_outputs()
    fec = FusionExecutorCache(fd)
    shape = (5, 40, 30)
    layouts = {}
    for layout in ("row-major", "permuted", "permuted", "permuted, the first output given", "permuted, the first output given row-major"):
        x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
        entry = [x.copy(), y.copy()]
        back = tuple(np.argsort(order))

        def place(a):  # ``a``'s values on the device, in memory in ``order`` (the same values, other addresses)
            return to_device(np.ascontiguousarray(a.transpose(order)), device).transpose(*back)

        dx, dy = (to_device(a, device) if layout == "row-major" else place(a) for a in (x, y))
        given = None
        if "given" in layout:  # in the inputs' order, or row-major: then the arguments share no order, and new outputs are row-major
            poison = np.full(shape, np.nan, np.float32)
            given = to_device(poison, device) if layout.endswith("row-major") else place(poison)
        before = (fec.memory.allocations, fec.memory.allocated_bytes)
        outs = fec.run([dx, dy], outputs=None if given is None else [given, None])
        layouts[layout] = [strides_order(o) for o in outs]
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        np.testing.assert_allclose(to_host(outs[0]), x64 * 2.0 + y64, rtol=1e-6, atol=1e-6, err_msg=layout)
        np.testing.assert_allclose(to_host(outs[1]).astype(np.float64), x64 - y64, rtol=1e-3, atol=1e-3, err_msg=layout)
        assert to_host(outs[1]).dtype == np.float16
        np.testing.assert_array_equal(to_host(dx), entry[0], err_msg=layout)
        np.testing.assert_array_equal(to_host(dy), entry[1], err_msg=layout)
        new = 1 if given is not None else 2
        assert (fec.memory.allocations - before[0], fec.memory.allocated_bytes - before[1]) == (new, x.size * (4 if new == 2 else 0) + x.size * 2), layout
        if given is not None:
            assert outs[0] is given
    assert layouts["row-major"] == [(0, 1, 2)] * 2
    assert layouts["permuted"] == [order] * 2
    assert layouts["permuted, the first output given"] == [order] * 2
    assert layouts["permuted, the first output given row-major"] == [(0, 1, 2)] * 2


def test_a_bad_call_of_permuted_inputs_is_refused_as_before_and_counts_nothing(device):
    fd = two_outputs()
    fec = FusionExecutorCache(fd)
    x = to_device(np.zeros((5, 4, 3), np.float32), device).transpose(2, 1, 0)
    y = to_device(np.zeros((5, 4, 3), np.float64), device).transpose(2, 1, 0)
    with pytest.raises(InputError, match="input 1"):
        fec.run([x, y])
    assert (fec.memory.allocations, fec.memory.allocated_bytes, fec.stats.compilations) == (0, 0, 0)


def test_torch_column_major_inputs_give_column_major_torch_outputs(cuda):
    torch = pytest.importorskip("torch")
    fd = two_outputs()
    x = torch.randn(30, 40, 5, device="cuda").permute(2, 1, 0)
    y = torch.randn(30, 40, 5, device="cuda").permute(2, 1, 0)
    entry = [x.clone(), y.clone()]
    for _ in range(3):  # the first call, then hits
        out, half = fd.execute([x, y])
        assert isinstance(out, torch.Tensor) and out.device == x.device and out.stride() == x.stride() and half.stride() == x.stride()
        torch.testing.assert_close(out.double(), x.double() * 2 + y.double(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(half.double(), (x.double() - y.double()), rtol=1e-3, atol=1e-3)
        assert half.dtype == torch.float16
    assert torch.equal(x, entry[0]) and torch.equal(y, entry[1])


def test_column_major_calls_replay_as_a_cuda_graph_with_new_outputs_in_their_order(cuda):
    fd = two_outputs()
    fec = FusionExecutorCache(fd)
    shape = (3, 50, 20)
    for call in range(3):  # the first call, the graph's build at the first hit, a replay
        x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
        dx, dy = (to_device(np.ascontiguousarray(a.T), "cuda").T for a in (x, y))
        out, half = fec.run([dx, dy], cuda_graph=True)
        assert strides_order(out) == strides_order(half) == (2, 1, 0), call
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        np.testing.assert_allclose(to_host(out), x64 * 2.0 + y64, rtol=1e-6, atol=1e-6, err_msg=str(call))
        np.testing.assert_allclose(to_host(half).astype(np.float64), x64 - y64, rtol=1e-3, atol=1e-3, err_msg=str(call))
        np.testing.assert_array_equal(to_host(dx), x)
    assert fec.stats.compilations == 1


def test_an_output_given_as_its_in_place_input_itself_comes_back_as_that_input(device):
    with FusionDefinition(name="scaled_in_place") as fd:  # x <- x * s + y in place, and the same as a visible output
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        y = fd.define_tensor([-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        t = x * s + y
        fd.add_output(t, x)
        fd.add_output(t)
    fec = FusionExecutorCache(fd)
    shape = (40, 30)
    for call in range(3):  # the views' miss, then this signature's hits
        x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
        expected = x.astype(np.float64) * 0.5 + y.astype(np.float64)
        dx, dy = column_major(x, device), column_major(y, device)
        (result,) = fec.run([dx, dy, 0.5], outputs=[dx])
        assert result is dx, call
        np.testing.assert_allclose(to_host(dx), expected, rtol=1e-6, atol=1e-6, err_msg=str(call))
        np.testing.assert_array_equal(to_host(dy), y)
    assert fec.stats.compilations == 1 and fec.stats.hits >= 2


def in_place_and_visible():
    """x <- exp(x) in place, and the same values as a visible output."""
    with FusionDefinition(name="exp_in_place") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        t = fd.ops.exp(x)
        fd.add_output(t, x)
        fd.add_output(t)
    return fd


@pytest.mark.parametrize("given", [False, True], ids=["output new", "output given as the input's own elements"])
def test_an_output_in_place_of_a_column_major_input_is_that_input(given):
    fec = FusionExecutorCache(in_place_and_visible())
    for call in ("miss", "hit"):
        values = RNG.standard_normal((30, 20)).astype(np.float32)
        x = np.asfortranarray(values)
        same = x[::-1][::-1]  # another object over x's very elements
        (out,) = fec.run([x], outputs=[same] if given else None)
        assert out is x, call  # as a row-major call returns it (test_inplace.py)
        np.testing.assert_allclose(x, np.exp(values.astype(np.float64)), rtol=1e-6, err_msg=call)


def test_errors_of_a_column_major_call_name_the_callers_dims():
    from numpy.lib.stride_tricks import as_strided

    with FusionDefinition(name="in_place") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        y = fd.define_tensor([-1, -1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + y, x)
        fd.add_output(x - y)
    ones = np.ones((3, 4), np.float32, order="F")
    repeating = as_strided(np.zeros(4, np.float32), shape=(3, 4), strides=(0, 4), writeable=True)
    for inputs, outputs, names in [
        ([np.zeros((3, 4, 5), np.float32, order="F")] * 2, None, "rank 3 (shape [3, 4, 5])"),
        ([ones, ones.copy(order="F")], [repeating], "shape [3, 4], byte strides [0, 4]"),
        ([repeating, ones], None, "shape [3, 4], byte strides [0, 4]"),
    ]:
        with pytest.raises(InputError) as error:
            FusionExecutorCache(fd).run(inputs, outputs)
        assert names in str(error.value)
