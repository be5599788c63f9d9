"""FusionExecutorCache: one compilation per signature, symbolic sizes, input
validation before anything runs, and given (preallocated) outputs."""

import ml_dtypes
import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache, InputError

RNG = np.random.default_rng(20261130)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def exp_add_sum():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        t = fd.ops.exp(x + y) * s
        fd.add_output(fd.ops.sum(t, dims=[1]))
        fd.add_output(t)
    return fd


def reference(x, y, s):
    t = np.exp(x.astype(np.float64) + y) * s
    return [t.sum(axis=1), t]


def check(outs, refs, rtol=1e-5, atol=1e-5):
    assert len(outs) == len(refs)
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(to_host(out), ref, rtol=rtol, atol=atol)


def test_compiles_once_per_signature_and_sizes_are_symbolic(device):
    fec = FusionExecutorCache(exp_add_sum())
    for shape in [(8, 16), (5, 7), (1, 33), (8, 16)]:
        x, y = rand(*shape), rand(1, shape[1])
        x0, y0 = x.copy(), y.copy()
        x, y = to_device(x, device), to_device(y, device)
        check(fec.run([x, y, 0.5]), reference(x0, y0, 0.5))
        np.testing.assert_array_equal(to_host(x), x0)
        np.testing.assert_array_equal(to_host(y), y0)
    # a size-1 dim where a symbolic one is declared is a new signature (broadcast dims are keyed)
    assert fec.stats.misses == 2
    assert fec.stats.misses == 2 and fec.stats.hits == 2


def test_non_contiguous_inputs_are_a_new_signature_and_read_through_strides(device):
    fec = FusionExecutorCache(exp_add_sum())
    base, wide = rand(16, 8), rand(1, 32)
    x = base.T  # (8, 16), column-major
    y = wide[:, ::2]
    check(fec.run([to_device(base, device).T, to_device(wide, device)[:, ::2], 2.0]), reference(x, y, 2.0))
    contiguous = [to_device(np.ascontiguousarray(x), device), to_device(np.ascontiguousarray(y), device)]
    check(fec.run([*contiguous, 2.0]), reference(x, y, 2.0))
    assert fec.stats.misses == 2


def test_given_outputs_are_written_in_place_and_returned(device):
    fd = exp_add_sum()
    x, y = rand(6, 10), rand(1, 10)
    out0 = to_device(np.full(6, np.nan, np.float32), device)
    wide = to_device(np.full((6, 20), np.nan, np.float32), device)
    out1 = wide[:, ::2]  # strided destination
    res = fd.execute([to_device(x, device), to_device(y, device), 1.5], outputs=[out0, out1])
    assert res[0] is out0 and res[1] is out1
    check([out0, out1], reference(x, y, 1.5))
    assert np.isnan(to_host(wide)[:, 1::2]).all()  # nothing written between the strides


@pytest.mark.parametrize(
    "inputs, message",
    [
        (lambda: [rand(4, 5), rand(1, 5)], "the fusion takes 3 inputs (2 tensors, 1 scalar), got 2"),
        (lambda: [rand(4, 5), rand(1, 5), rand(3)], "input 2 is a scalar (Double) of the definition"),
        (lambda: [1.0, rand(1, 5), 1.0], "input 0 is a tensor of the definition (shape [-1, -1]), but got builtins.float 1.0; pass a NumPy array of dtype float32 and rank 2"),
        (lambda: [rand(4, 5, dtype=np.float64), rand(1, 5), 1.0], "input 0 has dtype float64, but the definition declares Float (float32)"),
        (lambda: [rand(4, 5, 2), rand(1, 5), 1.0], "input 0 has rank 3 (shape [4, 5, 2]), but the definition declares rank 2"),
        (lambda: [rand(4, 5), rand(2, 5), 1.0], "input 1 dim 0 has size 2, but the definition declares a broadcast dim of size 1"),
        (lambda: [rand(4, 5), rand(1, 6), 1.0], "input 1 dim 1 has size 6, but input 0 dim 1, bound to the same size, has 5"),
        (lambda: [[1, 2], rand(1, 5), 1.0], "input 0 must be a NumPy array of dtype float32, got builtins.list [1, 2]; convert it with numpy.asarray(value, dtype=float32)"),
        (lambda: [[[0.5] * 100] * 100, rand(1, 5), 1.0], "got builtins.list [[0.5, 0.5, 0.5, ...], [0.5, 0.5, 0.5, ...], [0.5, 0.5, 0.5, ...], ...]; convert it"),
    ],
)
def test_bad_inputs_are_rejected_before_running(inputs, message):
    fec = FusionExecutorCache(exp_add_sum())
    with pytest.raises(InputError) as err:
        fec.run(inputs())
    assert message in str(err.value)
    assert fec.stats.misses == 0


def test_a_number_for_a_0d_tensor_input_is_told_how_to_make_one(device):
    with FusionDefinition() as fd:
        step = fd.define_tensor(shape=[], dtype=DataType.Float)
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x * step)
    x = to_device(rand(5), device)
    made = "numpy.asarray(value, dtype=float32)" if device == "cpu" else "torch.tensor(value, dtype=torch.float32, device='cuda')"
    for number in (2.0, np.float32(2.0)):
        with pytest.raises(InputError) as err:
            fd.execute([number, x])
        said = str(err.value)
        assert "input 0 is a tensor of the definition (shape [])" in said and made in said, said
        assert said.endswith("or declare the input with fd.define_scalar to pass a number"), said


def test_arguments_of_which_none_is_an_array_are_told_of_cuda_arrays_too():
    # No argument says which device is meant, so the CPU is assumed; a caller meaning the GPU learns what to pass.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
    for value, said in [([1.0, 2.0], "convert it with numpy.asarray(value, dtype=float32) (or a CUDA array"), (None, "got builtins.NoneType None (or a CUDA array")]:
        with pytest.raises(InputError) as err:
            fd.execute([value])
        assert said in str(err.value) and "such as a torch CUDA tensor, to run on the GPU)" in str(err.value)
    named = [  # the device is named: by another input, by a given output, by the cache
        lambda: exp_add_sum().execute([[1.0], rand(1, 5), 1.0]),
        lambda: fd.execute([[1.0]], outputs=[np.empty(1, np.float32)]),
        lambda: FusionExecutorCache(fd, device="cpu").run([[1.0]]),
    ]
    for call in named:
        with pytest.raises(InputError) as err:
            call()
        assert "must be a NumPy array" in str(err.value) and "CUDA" not in str(err.value)


def test_declared_contiguity_is_checked():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
    with pytest.raises(InputError, match=r"input 0 is not contiguous in dim 0 .* in stride order \[1, 0\]; pass numpy.ascontiguousarray\(x\)"):
        fd.execute([rand(8, 6).T])
    (out,) = fd.execute([rand(6, 8)[:, :]])
    assert out.shape == (6, 8)
    with FusionDefinition() as fd:  # column-major: the hint was ascontiguousarray, the very layout refused
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], stride_order=[0, 1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
    with pytest.raises(InputError, match=r"in stride order \[0, 1\]; pass numpy.asfortranarray\(x\) or declare contiguity False"):
        fd.execute([rand(6, 8)])
    x = np.asfortranarray(rand(6, 8))
    (out,) = fd.execute([x])
    np.testing.assert_array_equal(out, -x)
    with FusionDefinition() as fd:  # stride_order[d] ranks dim d's stride: [1, 2, 0] is dims (2, 0, 1) innermost first
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], stride_order=[1, 2, 0], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
    with pytest.raises(InputError, match=r"in stride order \[1, 2, 0\]; pass a dense copy whose dims' strides rank as that stride order gives"):
        fd.execute([rand(2, 3, 4)])
    x = np.transpose(rand(3, 2, 4), (1, 0, 2))  # dim 1 slowest, then dim 0, then dim 2: strides rank 1, 2, 0
    (out,) = fd.execute([x])
    np.testing.assert_array_equal(out, -x)


@pytest.mark.parametrize(
    "make_outputs, message",
    [
        (lambda x: [None], "the fusion has 2 outputs, but outputs has 1 entry"),
        (lambda x: [np.empty(5, np.float32), None], "output 0 has shape [5], but the fusion produces shape [6] for these inputs; pass a buffer of shape [6], or None to have it allocated"),
        (lambda x: [np.empty(6, np.float64), None], "output 0 has dtype float64, but the fusion produces Float (float32); pass a float32 buffer, or None to have it allocated"),
        (lambda x: [_read_only(np.empty(6, np.float32)), None], "output 0 is read-only"),
        (lambda x: [None, x], "output 1 overlaps input 0, which is not its declared alias"),
        (lambda x: ["not an array", None], "output 0 must be a NumPy array or None, got builtins.str"),
        (lambda x: np.empty(6, np.float32), "outputs must be None or a list with one entry (a buffer or None) per output, got ndarray"),
        (lambda x: [np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(6,), strides=(0,)), None],
         "output 0 has elements that share memory (shape [6], byte strides [0]"),
        # read-only too: what no writable copy of that layout would mend is named first
        (lambda x: [np.broadcast_to(np.zeros(1, np.float32), (6,)), None], "output 0 has elements that share memory (shape [6], byte strides [0]"),
    ],
)
def test_bad_outputs_are_rejected_and_nothing_is_written(make_outputs, message):
    fd = exp_add_sum()
    x, y = rand(6, 10), rand(1, 10)
    x0 = x.copy()
    with pytest.raises(InputError) as err:
        fd.execute([x, y, 1.0], outputs=make_outputs(x))
    assert message in str(err.value)
    np.testing.assert_array_equal(x, x0)


def test_one_buffer_given_bare_for_the_one_output_is_told_to_wrap_it():
    # It once failed inside device inference with NumPy's "truth value of an array ... is ambiguous".
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x * 2.0)
    buf = np.full(8, np.nan, np.float32)
    with pytest.raises(InputError, match=r"got ndarray; to give the one output, wrap it: outputs=\[buf\]"):
        fd.execute([rand(8)], outputs=buf)
    assert np.isnan(buf).all()


def test_buffers_written_whose_elements_share_memory_are_rejected():
    # A stride of 0 (np.broadcast_to made writable, torch's expand) or interleaved strides: each write
    # would land on elements others write too, last writer winning on the CPU, racing on a GPU.
    # Only written buffers: a broadcast input that is only read is fine.
    from fuser_mlir.outputs import overlaps_itself
    from fuser_mlir.runtime.arrays import DeviceArray

    def strided(shape, strides, size=64):
        return np.lib.stride_tricks.as_strided(np.zeros(size, np.float32), shape=shape, strides=strides)

    assert overlaps_itself(strided((4, 5), (0, 4))) and overlaps_itself(strided((4, 5), (12, 4)))
    assert overlaps_itself(DeviceArray(0x1000, (4, 5), (4, 0), np.float32))  # judged from its geometry, no GPU read
    assert not overlaps_itself(np.empty((5, 4), np.float32).T) and not overlaps_itself(np.empty((4, 10), np.float32)[:, ::2])
    assert not overlaps_itself(strided((1, 5), (0, 4))) and not overlaps_itself(strided((0, 5), (0, 0)))
    assert not overlaps_itself(DeviceArray(0x1000, (4, 5), (-20, 4), np.float32))
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(x * w, x)  # x <- x * w in place
    shared = strided((4, 5), (0, 4))
    with pytest.raises(InputError, match=r"input 0 has elements that share memory \(shape \[4, 5\], byte strides \[0, 4\].*updates it in place; pass a copy"):
        fd.execute([shared, rand(4, 5)])
    assert not shared.any()
    with pytest.raises(InputError, match=r"input 0 has elements that share memory"):  # read-only too: the repeats are named first
        fd.execute([np.broadcast_to(rand(5), (4, 5)), rand(4, 5)])
    x, row = rand(4, 5), rand(5)
    x0, row0 = x.copy(), row.copy()
    fd.execute([x, np.lib.stride_tricks.as_strided(row, shape=(4, 5), strides=(0, 4))])  # read, not written: fine
    np.testing.assert_allclose(x, x0.astype(np.float64) * row0, rtol=1e-6)
    np.testing.assert_array_equal(row, row0)


def test_given_outputs_that_overlap_each_other_are_rejected():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x + 1.0)
        fd.add_output(x * 2.0)
    x = rand(8)
    buf = np.full(12, np.nan, np.float32)
    with pytest.raises(InputError, match="output 0 overlaps output 1"):
        fd.execute([x], outputs=[buf[:8], buf[4:]])
    assert np.isnan(buf).all()


def _read_only(a):
    a.flags.writeable = False
    return a


def test_reshape_whose_inferred_size_needs_a_division(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 6, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(x, [-1, 4]) * 2.0)
    fec = FusionExecutorCache(fd)
    for n, m in [(2, 2), (3, 6)]:
        x = rand(n, 6, m)
        (out,) = fec.run([to_device(x, device)])
        np.testing.assert_allclose(to_host(out), x.astype(np.float64).reshape(-1, 4) * 2.0, rtol=1e-6)
    assert fec.stats.misses == 1
    with pytest.raises(InputError, match="reshape"):
        fec.run([to_device(rand(1, 6, 1), device)])  # 6 elements cannot form rows of 4


def cast_then_reshaped():
    """An int32 ``x`` of shape [3, 1, ?]; ``w = where(x > 0, x, 1.5)``;
    outputs ``w`` flattened and ``where(x > 0, permute(w), 1.5)``, whose
    broadcast of [3, 1, ?] with [?, 1, 3] binds ``?`` to 3."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[3, 1, -1], dtype=DataType.Int32)
        w = fd.ops.where(x > 0, x, 1.5)
        fd.add_output(fd.ops.reshape(w, [-1]))
        fd.add_output(fd.ops.where(x > 0, fd.ops.permute(w, [2, 1, 0]), 1.5))
    return fd


def test_reshape_of_a_value_a_broadcast_made_static(device):
    """The GPU's lowering gives ``w`` a buffer of the static shape the
    broadcast binds and casts it for the reshape (test_gpu.py: the
    schedulers refused the cast before). Both outputs against NumPy, into
    NaN-poisoned given outputs; the input unchanged."""
    x = np.random.default_rng().integers(-5, 5, (3, 1, 3)).astype(np.int32)
    before = x.copy()
    w = np.where(x > 0, x, 1.5)
    want = [w.ravel(), np.where(x > 0, w.transpose(2, 1, 0), 1.5)]
    given = [to_device(np.full(v.shape, np.nan, np.float32), device) for v in want]
    xd = to_device(x, device)
    got = FusionExecutorCache(cast_then_reshaped()).run([xd], outputs=given)
    for g, v in zip(got, want):
        np.testing.assert_array_equal(to_host(g), v.astype(np.float32))
    np.testing.assert_array_equal(to_host(xd), before)


@pytest.mark.parametrize("shape, new_shape", [((2, 3), (3, 2)), ((1, 3), (-1,)), ((6,), (2, 3)), ((2, 3, 4), (4, -1))])
def test_reshape_of_static_shapes(device, shape, new_shape):
    """A reshape whose sizes are all known when the fusion is defined (its
    target shape a constant; on the GPU the launch program's view sizes are
    constants), then a pointwise op and a sum of the result's last dim, into
    NaN-poisoned given outputs; the input unchanged."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=list(shape), dtype=DataType.Float)
        t = fd.ops.reshape(x, list(new_shape)) * 2.0
        fd.add_output(t)
        fd.add_output(fd.ops.sum(t, dims=[len(new_shape) - 1]))
    x = rand(*shape)
    before = x.copy()
    want = x.astype(np.float64).reshape(new_shape) * 2.0
    given = [to_device(np.full(want.shape, np.nan, np.float32), device), to_device(np.full(want.shape[:-1], np.nan, np.float32), device)]
    xd = to_device(x, device)
    out, total = FusionExecutorCache(fd).run([xd], outputs=given)
    np.testing.assert_allclose(to_host(out), want, rtol=1e-6)
    np.testing.assert_allclose(to_host(total), want.sum(axis=-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(to_host(xd), before)


def test_integer_absolute_values(device):
    """abs of int32 and int64 tensors (math.absi, which the GPU's libdevice
    patterns leave to convert-math-to-llvm), elementwise and summed, the
    most negative values included (they stay negative, as in NumPy), into
    poisoned given outputs; the inputs unchanged."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        fd.add_output(fd.ops.abs(a))
        fd.add_output(fd.ops.abs(b) + fd.ops.sum(fd.ops.abs(b)))
    a = RNG.integers(-1000, 1000, 257).astype(np.int32)
    b = RNG.integers(-(10**12), 10**12, 257).astype(np.int64)
    a[3], b[5] = np.iinfo(np.int32).min, -7
    inputs = [a.copy(), b.copy()]
    given = [to_device(np.full(257, -1, np.int32), device), to_device(np.full(257, -1, np.int64), device)]
    devices = [to_device(x, device) for x in inputs]
    got = FusionExecutorCache(fd).run(devices, outputs=given)
    np.testing.assert_array_equal(to_host(got[0]), np.abs(a))
    np.testing.assert_array_equal(to_host(got[1]), np.abs(b) + np.abs(b).sum())
    for x, original in zip(devices, (a, b)):
        np.testing.assert_array_equal(to_host(x), original)


class _FakeCudaArray:
    """Speaks __cuda_array_interface__ without any GPU behind it."""

    def __init__(self, shape):
        self.shape = shape
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (1 << 20, False), "version": 3, "strides": None}


def test_host_and_device_inputs_cannot_be_mixed():
    from fuser_mlir.errors import DeviceError

    fd = exp_add_sum()
    with pytest.raises(DeviceError, match=r"input 0 is a NumPy array \(host memory\) but input 1 is a CUDA array; pass all tensors on one device"):
        FusionExecutorCache(fd).run([rand(4, 5), _FakeCudaArray((1, 5)), 1.0])


def test_arguments_on_another_device_than_the_cache_is_for_are_rejected():
    from fuser_mlir.errors import DeviceError

    fd = exp_add_sum()
    with pytest.raises(DeviceError, match="the arguments live on cpu, but this FusionExecutorCache runs on cuda:0"):
        FusionExecutorCache(fd, device="cuda").run([rand(4, 5), rand(1, 5), 1.0])
    with pytest.raises(InputError, match="device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        FusionExecutorCache(fd, device="gpu")


def test_a_full_reduction_feeding_pointwise_ops_in_one_segment(device):
    """The 0-d sum is an intermediate inside the segment: on the GPU it lives
    in device memory and the 0-d ops run in a one-thread loop."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t = fd.ops.sum(x, dims=[0, 1])
        fd.add_output(t * t + 1.0)
        fd.add_output(x * 2.0)
    x = rand(7, 9)
    x64 = x.astype(np.float64)
    compiled = fd.compile([to_device(x, device)])
    assert compiled.num_segments == 1
    squared, doubled = fd.execute([to_device(x, device)])
    np.testing.assert_allclose(to_host(squared), x64.sum() ** 2 + 1.0, rtol=1e-5)
    np.testing.assert_allclose(to_host(doubled), x64 * 2.0, rtol=1e-6)


def test_layouts_say_which_tensors_kernels_may_read_at_a_flat_index():
    from fuser_mlir.executor import layout_of, tensor_signature

    base = np.zeros((4, 6), np.float32)
    assert layout_of(tensor_signature(base)) == (True, 16) or layout_of(tensor_signature(base))[0]
    assert layout_of(tensor_signature(base[:, 1:]))[0] is False  # gaps between rows
    assert layout_of(tensor_signature(base.T))[0] is False  # column-major
    assert layout_of(tensor_signature(base[::-1]))[0] is False  # negative stride
    assert layout_of(tensor_signature(base[:1]))[0] is True  # a size-1 dim has no stride to honour
    assert layout_of(tensor_signature(np.zeros((3, 1, 5), np.float32)[:, :, :]))[0] is True
    assert layout_of(tensor_signature(base.reshape(-1)[1:]))[1] == 4  # 4-byte aligned, not 16


def test_division_by_a_value_per_row_of_any_magnitude(device):
    """GPU row kernels divide by a value that is the same along the row by
    multiplying with its reciprocal (gpu_schedule._divided): divisors near
    both ends of the float32 range, zeros, infinities and NaN must still give
    what an IEEE division gives, within 1.5 ulp. Two kernels: a row broadcast
    (x / d) and a persistent row (x / max|x| of the row)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        d = fd.define_tensor(shape=[-1, 1], dtype=DataType.Float)
        fd.add_output(x / d)
    with FusionDefinition() as scaled:
        x_ = scaled.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        scaled.add_output(x_ / scaled.ops.max(scaled.ops.abs(x_), dims=[1], keepdim=True))
    divisors = np.array([1.0, 3e-39, 2.0**-127, 1e-30, 3e38, 2.0**126 * 1.5, 0.0, -0.0, np.inf, np.nan, -7.0], np.float32)
    x = rand(len(divisors), 256)
    magnitudes = np.array([1.0, 1e-39, 2.0**-140, 1e-30, 1e38, 2.0**126, 0.0, 1.0, 1.0, 1.0, 3e-39], np.float32)
    rows = (x * magnitudes[:, None]).astype(np.float32)  # subnormal, huge and all-zero rows
    rows[6] = 0.0
    before = [rows.copy(), divisors.copy()]
    wide = rows.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        by_column = (wide / divisors[:, None].astype(np.float64)).astype(np.float32)
        by_max = (wide / np.abs(wide).max(axis=1, keepdims=True)).astype(np.float32)
    for fusion, inputs, expected in [(fd, [rows, divisors[:, None]], by_column), (scaled, [rows], by_max)]:
        out = to_device(np.full(rows.shape, np.nan, np.float32), device)
        (got,) = fusion.execute([to_device(a, device) for a in inputs], outputs=[out])
        np.testing.assert_allclose(to_host(got), expected, rtol=2.0**-22, atol=2.0**-148, equal_nan=True)
    np.testing.assert_array_equal(rows, before[0])
    np.testing.assert_array_equal(divisors, before[1])


@pytest.mark.parametrize("rows, cols", [(2113, 2047), (2113, 1024), (37, 2048), (3, 2047), (9, 40)])
def test_outer_reductions_whose_last_splits_start_past_the_rows(device, rows, cols):
    """The GPU's outer reduction gives each of S splits ceil(rows / S) rows
    (gpu_schedule.outer_reduction), the last ones maybe starting past the
    rows, where they must read nothing (each split also reads 4 rows per
    iteration, then the rest one by one). On a GPU of 132 SMs (the H200),
    2113 rows take 66 splits of 33 (528 blocks: 8 column blocks of either
    kind), the 65th from row 2112 (one row), the last from row 2145: a
    column a thread for 2047 columns, tiles of 16-byte vectors for 1024
    (outer_tiles; each warp every 8th row of its split); 40 columns leave
    most of a tile's lanes outside. 66 splits are combined in tiles too
    (combine_tiles), 1 and 2 a thread a column. A max and a sum, against
    float64."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
        fd.add_output(fd.ops.max(x, dims=[0]))
    x = rand(rows, cols)
    before = x.copy()
    outs = [to_device(np.full(cols, np.nan, np.float32), device) for _ in range(2)]
    total, largest = fd.execute([to_device(x, device)], outputs=outs)
    np.testing.assert_allclose(to_host(total), x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(to_host(largest), x.max(axis=0))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("rows, cols", [(3, 1024), (300, 4096), (37, 528), (5, 1021)])
def test_outer_reductions_of_booleans_total_every_column(device, rows, cols):
    """Booleans are one byte: the GPU's outer tiles read 16 columns a lane,
    512 a tile, twice the block's threads, which must then each combine two
    of the tile's columns (528 columns: a whole tile and one of 16; 1021 a
    column a thread). The count and the mean of each column, and the count
    of each row of the transpose laid out column-major (its row-major view's
    columns, relaid), against exact counts, the input unchanged."""
    with FusionDefinition() as fd:
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Bool)
        fd.add_output(fd.ops.sum(b, dims=[0]))
        fd.add_output(fd.ops.mean(b, dims=[0]))
    with FusionDefinition() as by_rows:
        b = by_rows.define_tensor(shape=[-1, -1], dtype=DataType.Bool)
        by_rows.add_output(by_rows.ops.sum(b, dims=[1]))
    flags = RNG.random((rows, cols)) < 0.5
    before = flags.copy()
    counts = flags.sum(axis=0)
    total, mean = fd.execute([to_device(flags, device)], outputs=[None, to_device(np.full(cols, np.nan, np.float32), device)])
    np.testing.assert_array_equal(to_host(total), counts)
    np.testing.assert_array_equal(to_host(mean), (counts / rows).astype(np.float32))
    transposed = to_device(flags, device).transpose((1, 0))  # (cols, rows), column-major
    (per_row,) = by_rows.execute([transposed])
    np.testing.assert_array_equal(to_host(per_row), counts)
    np.testing.assert_array_equal(flags, before)
    np.testing.assert_array_equal(to_host(transposed), before.T)


@pytest.mark.parametrize("rows, cols", [(4096, 1024), (40, 1024), (300, 1021)])
def test_pointwise_work_after_an_outer_reduction_sees_each_columns_total(device, rows, cols):
    """On the GPU the pointwise generic after an outer reduction runs in
    its combining kernel, at each column's total (gpu_schedule.OUTER_EPILOGUES):
    in tiles for many splits (4096 rows), a thread a column for few (40);
    1021 columns are read a column a thread. A bfloat16 sum cast back to
    bfloat16; a float32 sum that is an output too, scaled by a runtime scalar
    plus a column weight; against float64, the inputs unchanged."""
    with FusionDefinition() as cast_back:
        x = cast_back.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        cast_back.add_output(cast_back.ops.cast(cast_back.ops.sum(cast_back.ops.cast(x, DataType.Float), dims=[0]), DataType.BFloat16))
    with FusionDefinition() as scaled:
        x = scaled.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        w = scaled.define_tensor(shape=[-1], dtype=DataType.Float)
        s = scaled.define_scalar(dtype=DataType.Float)
        total = scaled.ops.sum(x, dims=[0])
        scaled.add_output(total * s + w)
        scaled.add_output(total)
    bf16 = np.dtype(ml_dtypes.bfloat16)
    narrow = rand(rows, cols).astype(bf16)
    before = narrow.copy()
    out = to_device(np.full(cols, np.nan, bf16), device)
    (got,) = cast_back.execute([to_device(narrow, device)], outputs=[out])
    exact = narrow.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(to_host(got).astype(np.float64), exact, rtol=2.0**-7, atol=1e-4 * np.sqrt(rows))
    np.testing.assert_array_equal(narrow, before)

    x, w = rand(rows, cols), rand(cols)
    before = [x.copy(), w.copy()]
    outs = [to_device(np.full(cols, np.nan, np.float32), device) for _ in range(2)]
    got, total = scaled.execute([to_device(x, device), to_device(w, device), 0.5], outputs=outs)
    exact = x.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(to_host(total), exact, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(to_host(got), exact * 0.5 + w, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(w, before[1])

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_outer_reductions_read_columns_and_rows_of_other_inputs(device, dtype):
    """An outer reduction of x * w * r (w along the columns, r along the
    rows; bfloat16 or float32, computed in float32) and the max of x, over
    rows: in tiles of vectors where the columns are whole 16-byte vectors
    (1024 and 1016 columns; 1020 only in float32), else a column a thread
    (1020 bfloat16, 1021); against float64, the inputs unchanged."""
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float32)
    kind = DataType.BFloat16 if dtype == "bfloat16" else DataType.Float
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=kind)
        w = fd.define_tensor(shape=[-1], dtype=kind)
        r = fd.define_tensor(shape=[-1, 1], dtype=kind)
        up = [fd.ops.cast(t, DataType.Float) for t in (x, w, r)]
        fd.add_output(fd.ops.sum(up[0] * up[1] * up[2], dims=[0]))
        fd.add_output(fd.ops.max(up[0], dims=[0]))
    for cols in (1024, 1016, 1020, 1021):
        inputs = [rand(300, cols).astype(np_dtype), rand(cols).astype(np_dtype), rand(300, 1).astype(np_dtype)]
        before = [a.copy() for a in inputs]
        outs = [to_device(np.full(cols, np.nan, np.float32), device) for _ in range(2)]
        total, largest = fd.execute([to_device(a, device) for a in inputs], outputs=outs)
        wide = [a.astype(np.float64) for a in inputs]
        np.testing.assert_allclose(to_host(total), (wide[0] * wide[1] * wide[2]).sum(axis=0), rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(to_host(largest), wide[0].max(axis=0))
        for a, b in zip(inputs, before):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(0, 37), (5, 0), (0, 0)])
def test_an_empty_batch_runs_on_the_kernels_of_the_full_ones(device, shape):
    """NumPy gives an empty array zero strides, which read as column-major and
    not contiguous: an empty batch compiled a fusion of its own, failed an input
    declared contiguous, and a loaded artifact rejected it (stride order (0, 1)).
    Now it takes the full batches' key: no compile, and its reductions' outputs
    hold the identities (sums of nothing are 0)."""
    with FusionDefinition(name="scaled") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float, contiguity=[True, True])
        w = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        y = fd.ops.exp(x) * w
        fd.add_output(y)
        fd.add_output(fd.ops.sum(y, dims=[1], keepdim=True))
        fd.add_output(fd.ops.sum(y, dims=[0], keepdim=True))

    def reference(x, w):
        y = np.exp(x.astype(np.float64)) * w
        return [y, y.sum(1, keepdims=True), y.sum(0, keepdims=True)]

    full = [rand(4, shape[1] or 3), rand(1, shape[1] or 3)]
    full_outputs = [np.full(e.shape, np.nan, np.float32) for e in reference(*full)]
    fd.execute([to_device(a, device) for a in full], outputs=[to_device(o, device) for o in full_outputs])
    x, w = np.empty(shape, np.float32), rand(1, shape[1])
    assert x.strides == (0, 0)
    w0 = w.copy()
    expected = reference(x, w)
    given = [to_device(np.full(e.shape, np.nan, np.float32), device) for e in expected]
    outs = fd.execute([to_device(x, device), to_device(w, device)], outputs=given)
    for got, want in zip(outs, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(to_host(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w, w0)
    if shape[1]:  # the full batch had these columns: the empty one took its kernels
        assert fd._executor.stats.compilations == 1 and fd._executor.stats.hits == 1


def test_a_max_or_min_over_an_empty_dim_is_an_input_error_where_its_value_would_show(device, tmp_path):
    """A maximum of no elements has no value (NumPy and torch raise); it gave
    -inf. Where the result reaches no element of an output, as a softmax over
    an empty dim, the call runs, as torch.softmax does."""
    with FusionDefinition(name="extremes") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.max(x, dims=[1]))
        fd.add_output(fd.ops.min(x, dims=[0]))
    good = rand(4, 3)
    outs = fd.execute([to_device(good, device)])
    np.testing.assert_array_equal(to_host(outs[0]), good.max(1))
    np.testing.assert_array_equal(to_host(outs[1]), good.min(0))
    given = [to_device(np.full(4, np.nan, np.float32), device), to_device(np.full(0, np.nan, np.float32), device)]
    with pytest.raises(InputError, match=r"'max' at .*test_executor.py:\d+ reduces a dim of size 0 \(input 0 dim 1\): a maximum or "
                                         r"minimum of no elements has no value .*; give that dim at least one element"):
        fd.execute([to_device(np.empty((4, 0), np.float32), device)], outputs=given)
    assert np.isnan(to_host(given[0])).all()  # nothing written
    with pytest.raises(InputError, match=r"'min' at .* reduces a dim of size 0 \(input 0 dim 0\)"):
        fd.execute([to_device(np.empty((0, 3), np.float32), device)])
    loaded = fd.compile([to_device(good, device)])  # an artifact checks it too, from its stored signature
    loaded.export(tmp_path / "extremes.fsn")
    import fuser_mlir

    with pytest.raises(InputError, match=r"'max' at .* reduces a dim of size 0"):
        fuser_mlir.load(tmp_path / "extremes.fsn", device=device).run([to_device(np.empty((4, 0), np.float32), device)])
    outs = fd.execute([to_device(np.empty((0, 0), np.float32), device)])  # both results empty: nothing to show
    assert [to_host(o).shape for o in outs] == [(0,), (0,)]

    with FusionDefinition(name="softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    (out,) = fd.execute([to_device(np.empty((5, 0), np.float32), device)])
    assert to_host(out).shape == (5, 0)


def test_casts_of_constants_fold_to_what_the_same_casts_of_run_time_scalars_give(device):
    """A constant's cast was folded on the unrounded Python value: 0.1 cast to
    Float and back to Double stayed 0.1, 70000 through Half stayed finite,
    and cast(2.7, Int32) was an error where a run-time cast truncates."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=DataType.Double)
        i = fd.define_tensor([-1], dtype=DataType.Int)
        s = fd.define_scalar(dtype=DataType.Double)  # the same chains on a run-time scalar
        cast = fd.ops.cast
        for value in (fd.define_scalar(0.1), s):
            fd.add_output(x + cast(cast(value, DataType.Float), DataType.Double))
            fd.add_output(x + cast(cast(value, DataType.Half), DataType.Double))
            fd.add_output(x + cast(cast(value, DataType.BFloat16), DataType.Double))
        fd.add_output(x + cast(cast(fd.define_scalar(70000.0), DataType.Half), DataType.Double))
        fd.add_output(i + cast(cast(fd.define_scalar(16777217), DataType.Float), DataType.Int))
        fd.add_output(i + cast(2.7, DataType.Int32))
        fd.add_output(i + cast(-2.7, DataType.Int))
        fd.add_output(i + cast(fd.define_scalar(2**40 + 5), DataType.Int32))  # wraps, as torch's .to(torch.int32)
        fd.add_output(x + fd.define_scalar(0.1, dtype=DataType.Float))
        fd.add_output(x + fd.define_scalar(-(10**400), dtype=DataType.Double))  # past every float: -inf (it raised OverflowError)
    xs, ints = RNG.standard_normal(6), RNG.integers(-9, 9, 6)
    outs = [to_host(o) for o in fd.execute([to_device(xs, device), to_device(ints, device), 0.1])]
    rounded = [float(np.float32(0.1)), float(np.float16(0.1)), float(ml_dtypes.bfloat16(0.1))]
    assert rounded[0] != 0.1 and rounded[1] != rounded[0]
    for k, r in enumerate(rounded):
        np.testing.assert_array_equal(outs[k], xs + r)  # the constant
        np.testing.assert_array_equal(outs[3 + k], xs + r)  # the run-time scalar
    assert np.isinf(outs[6]).all()
    np.testing.assert_array_equal(outs[7], ints + 16777216)
    np.testing.assert_array_equal(outs[8], ints + 2)
    np.testing.assert_array_equal(outs[9], ints - 2)
    np.testing.assert_array_equal(outs[10], ints + 5)
    np.testing.assert_array_equal(outs[11], xs + float(np.float32(0.1)))
    assert (outs[12] == -np.inf).all()


def test_a_masked_array_input_is_an_input_error():
    # Its mask was ignored: the sum of [1, 2, masked 1000] came out 1003.
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    masked = np.ma.array(np.array([1, 2, 1000], np.float32), mask=[False, False, True])
    with pytest.raises(InputError, match=r"input 0 is a numpy.ma.MaskedArray; .* pass x.filled\(value\) or x.data"):
        fd.execute([masked])
    (total,) = fd.execute([masked.filled(0)])
    assert total == 3.0
    out = np.ma.array(np.full((), np.nan, np.float32), mask=True)
    with pytest.raises(InputError, match=r"output 0 is a numpy.ma.MaskedArray, whose mask the fusion would keep .*; pass its .data"):
        fd.execute([masked.filled(0)], outputs=[out])
    assert np.isnan(out.data)


def test_lerp_at_infinite_ends_and_sign_of_nan_are_pytorchs_in_the_kernels_and_the_reference(device):
    """The kernels compute PyTorch's two-sided lerp and sign(NaN) = 0; the
    reference had a + w*(b-a) and NumPy's sign(NaN) = NaN, so random tests
    that met inf or NaN there flagged correct results."""
    from reference import evaluate

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        fd.add_output(fd.ops.lerp(a, b, 0.5))
        fd.add_output(fd.ops.lerp(a, b, 0.25))
        fd.add_output(fd.ops.sign(a - b))
    ins = [np.array([1.0, 1.0, np.inf, 2.0, np.nan]), np.array([-np.inf, np.inf, 2.0, 6.0, 1.0])]
    expected = [np.array([np.nan, np.nan, np.inf, 4.0, np.nan]), np.array([-np.inf, np.inf, np.nan, 3.0, np.nan]),
                np.array([1.0, -1.0, 1.0, -1.0, 0.0])]
    got = [to_host(o) for o in fd.execute([to_device(x, device) for x in ins])]
    for g, r, e in zip(got, evaluate(fd, ins), expected):
        np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(r, e)
