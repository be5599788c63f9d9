"""The cache-hit path (fuser_mlir/hit_cache.py): a call whose arrays have the
raw signature of an earlier valid call skips the full validation, so these
tests check that every check a hit must still make is made there, with the
full path's message, and that anything the raw signature does not cover
falls back to the full path."""

import numpy as np
import pytest

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.errors import DeviceError, InputError

RNG = np.random.default_rng(9)


def aligned(values: np.ndarray) -> np.ndarray:
    """A copy of 1-d float32 ``values`` at a 64-byte aligned address, so
    arrays of one length have one raw signature (the alignment class is in it)."""
    block = np.empty(values.size + 16, np.float32)
    start = (-block.ctypes.data % 64) // 4
    out = block[start : start + values.size]
    out[...] = values
    return out


def rand(n):
    return aligned(RNG.standard_normal(n).astype(np.float32))


def poisoned(n):
    return aligned(np.full(n, np.nan, np.float32))


def scaled(x, s, y):
    """float64 reference of scaled_add (GPU kernels may fuse the multiply
    and add into one fma, rounded once, so float32 NumPy is no reference)."""
    return x.astype(np.float64) * s + y.astype(np.float64)


def scaled_add():
    """out = x * s + y, with an integer scalar s."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(x * s + y)
    return fd


def inplace_and_visible():
    """x <- x * 2 in place, and the same value as a visible output."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t = x * 2.0
        fd.add_output(t, x)
        fd.add_output(t)
    return fd


def test_hits_skip_the_full_validation_and_count_as_hits():
    fec = FusionExecutorCache(scaled_add())
    x, y = rand(8), rand(8)
    for _ in range(3):
        (out,) = fec.run([x, y, 3])
        np.testing.assert_allclose(out, scaled(x, 3, y), rtol=1e-6, atol=1e-5)
    assert fec.stats.misses == 1 and fec.stats.hits == 2
    assert fec._hits.lookup([x, y, 3], None) is not None


def test_scalars_are_converted_and_checked_on_a_hit():
    fec = FusionExecutorCache(scaled_add())
    x, y = rand(8), rand(8)
    fec.run([x, y, 2])
    (out,) = fec.run([x, y, np.int64(5)])  # not a Python int: the full path's conversion
    np.testing.assert_allclose(out, scaled(x, 5, y), rtol=1e-6, atol=1e-5)
    (out,) = fec.run([x, y, 4.0])
    np.testing.assert_allclose(out, scaled(x, 4, y), rtol=1e-6, atol=1e-5)
    with pytest.raises(InputError, match=r"input 2 is an integer scalar \(Int\), but got 2.5; pass an int"):
        fec.run([x, y, 2.5])
    with pytest.raises(InputError, match="input 2 is a scalar"):
        fec.run([x, y, "2"])


def test_new_shapes_strides_and_dtypes_take_the_full_path():
    fec = FusionExecutorCache(scaled_add())
    x, y = rand(8), rand(8)
    fec.run([x, y, 1])
    with pytest.raises(InputError, match="input 1 dim 0 has size 9, but input 0 dim 0, bound to the same size, has 8"):
        fec.run([x, rand(9), 1])
    with pytest.raises(InputError, match="input 0 has dtype float64"):
        fec.run([x.astype(np.float64), y, 1])
    wide = rand(16)
    (out,) = fec.run([wide[::2], y, 1])  # a strided view: another raw signature, read through its strides
    np.testing.assert_allclose(out, wide[::2] + y, rtol=1e-6)
    with pytest.raises(InputError, match="the fusion takes 3 inputs"):
        fec.run([x, y])


def test_a_given_output_is_rechecked_for_writability_and_overlap_on_a_hit():
    fec = FusionExecutorCache(scaled_add())
    x, y = rand(8), rand(8)
    buf = poisoned(8)
    (out,) = fec.run([x, y, 2], outputs=[buf])
    assert out is buf
    np.testing.assert_allclose(buf, scaled(x, 2, y), rtol=1e-6, atol=1e-5)
    read_only = poisoned(8)
    read_only.flags.writeable = False  # same dtype, shape, strides and alignment as buf
    assert fec._hits.signature([x, y, 2], [read_only]) == fec._hits.signature([x, y, 2], [buf])
    assert fec._hits.lookup([x, y, 2], [read_only]) is None  # the full path says why
    with pytest.raises(InputError, match="output 0 is read-only"):
        fec.run([x, y, 2], outputs=[read_only])
    assert fec._hits.signature([x, y, 2], [y]) == fec._hits.signature([x, y, 2], [buf])
    assert fec._hits.lookup([x, y, 2], [y]) is None  # the hit path sees the overlap; the full path names it
    with pytest.raises(InputError, match="output 0 overlaps input 1, which is not its declared alias"):
        fec.run([x, y, 2], outputs=[y])
    y0 = y.copy()
    with pytest.raises(InputError, match="output 0 overlaps input 0"):
        fec.run([x, y, 2], outputs=[x])
    np.testing.assert_array_equal(y, y0)


def test_an_input_updated_in_place_must_be_writable_on_a_miss_and_on_a_hit():
    # It was never checked: a read-only array (a read-only memory map, np.frombuffer of bytes)
    # was written in place.
    fec = FusionExecutorCache(inplace_and_visible())
    x = rand(8)
    x0 = x.copy()
    read_only = rand(8)
    read_only.flags.writeable = False
    kept = read_only.copy()
    with pytest.raises(InputError, match="input 0 is read-only, but the fusion updates it in place"):
        fec.run([read_only])  # a miss: the full validation
    np.testing.assert_array_equal(read_only, kept)
    (doubled,) = fec.run([x])
    np.testing.assert_allclose(doubled, x0 * 2.0, rtol=1e-6)
    np.testing.assert_allclose(x, x0 * 2.0, rtol=1e-6)
    assert fec._hits.signature([read_only], None) == fec._hits.signature([x], None)
    assert fec._hits.lookup([read_only], None) is None  # same raw signature: the hit path sends it to the full path
    with pytest.raises(InputError, match="input 0 is read-only"):
        fec.run([read_only])
    np.testing.assert_array_equal(read_only, kept)
    assert fec.stats.compilations == 1


def test_integer_scalars_must_fit_their_type_on_a_miss_and_on_a_hit():
    # They wrapped: 2**31 for an Int32 scalar ran as -2**31, 1e30 for an Int as whatever its low bits were.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        fd.add_output(x + fd.define_scalar(dtype=DataType.Int32))
        fd.add_output(x + fd.define_scalar(dtype=DataType.Int))
    fec = FusionExecutorCache(fd)
    low32, high32, low64, high64 = -(2**31), 2**31 - 1, -(2**63), 2**63 - 1
    x = RNG.integers(-100, 100, 8)
    # the first a miss, the others hits; the tensor's sign keeps the sums in range
    for x, scalars in [(x, [3, 4]), (-abs(x), [high32, high64]), (abs(x), [low32, low64])]:
        small, large = fec.run([x, *scalars])
        np.testing.assert_array_equal(small, np.array([int(v) + scalars[0] for v in x]))
        np.testing.assert_array_equal(large, np.array([int(v) + scalars[1] for v in x], dtype=np.int64))
    assert fec.stats.misses == 1 and fec.stats.hits == 2
    for scalars, index, what, kind in [
        ([high32 + 1, 0], 1, "2147483648", "Int32"),
        ([low32 - 1, 0], 1, "-2147483649", "Int32"),
        ([0, high64 + 1], 2, "9223372036854775808", "Int"),
        ([0, 1e30], 2, "1e\\+30", "Int"),
        ([0, np.uint64(high64 + 1)], 2, "9223372036854775808", "Int"),
    ]:
        with pytest.raises(InputError, match=rf"input {index} is an integer scalar \({kind}\), but {what} does not fit in it"):
            fec.run([x, *scalars])
    fresh = FusionExecutorCache(fd)  # on a miss too
    with pytest.raises(InputError, match=r"input 1 is an integer scalar \(Int32\), but 2147483648 does not fit in it"):
        fresh.run([x, high32 + 1, 0])


def test_scalars_that_are_no_numbers_or_past_every_float_are_input_errors_on_a_miss_and_on_a_hit():
    # NumPy strings were parsed (np.str_("1.5") ran as 1.5, np.str_("") as False), np.complex64 lost its
    # imaginary part, and 10**400 raised a bare OverflowError from float().
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        fd.add_output(x * fd.define_scalar(dtype=DataType.Double) + fd.define_scalar(dtype=DataType.Int))
        fd.add_output(fd.ops.where(fd.define_scalar(dtype=DataType.Bool), x, -x))
    x = RNG.standard_normal(6)
    good = [x, 0.5, 3, True]
    for fec in (FusionExecutorCache(fd), None):  # a miss each time, then hits of a remembered signature
        if fec is None:
            fec = FusionExecutorCache(fd)
            fec.run(good)
        for index, value, message in [
            (1, np.str_("1.5"), r"input 1 is a scalar \(Double\) of the definition, but got numpy.str_ .*; pass a Python number"),
            (1, np.complex64(1 + 2j), r"input 1 is a scalar \(Double\) .* but got numpy.complex64"),
            (1, np.array("2.5"), r"input 1 is a scalar \(Double\) .* but got a NumPy array of dtype <U3 and shape \[\]"),
            (1, np.datetime64("2026-01-01"), r"input 1 is a scalar \(Double\) .* but got numpy.datetime64"),
            (1, 10**400, r"input 1 is a float scalar \(Double\), but 1000.*000 is beyond the range of a float"),
            (2, np.str_("5"), r"input 2 is a scalar \(Int\) of the definition, but got numpy.str_"),
            (2, -(10**400), r"input 2 is an integer scalar \(Int\), but -1000.*000 does not fit in it"),
            (3, np.str_(""), r"input 3 is a scalar \(Bool\) of the definition, but got numpy.str_"),
        ]:
            args = list(good)
            args[index] = value
            with pytest.raises(InputError, match=message):
                fec.run(args)
    total, chosen = fec.run([x, np.float32(0.25), np.array(2), np.bool_(False)])  # NumPy numbers and 0-d arrays of them are fine
    np.testing.assert_array_equal(total, x * 0.25 + 2)
    np.testing.assert_array_equal(chosen, -x)


def test_an_input_updated_in_place_must_not_share_memory_with_another_input():
    # It did not: the fusion's read of the other input saw the in-place writes (x <- x + y with y a view
    # of x gave neither x + y nor anything defined, and exp(y) read the updated values).
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x + y, x)
        fd.add_output(fd.ops.exp(y))
    fec = FusionExecutorCache(fd)
    block = aligned(RNG.standard_normal(16).astype(np.float32))
    message = "input 0 is updated in place, but it shares memory with input 1, which the fusion reads as a separate tensor"
    for y_of in (lambda b: b[:8], lambda b: b[7::-1], lambda b: b[4:12]):  # a miss each: the full validation
        kept = block.copy()
        with pytest.raises(InputError, match=message):
            fec.run([block[:8], y_of(block)])
        np.testing.assert_array_equal(block, kept)
    x, y = block[:8], block[8:]  # disjoint, from one block: a valid call
    x0, y0 = x.astype(np.float64), y.astype(np.float64)
    (e,) = fec.run([x, y])
    np.testing.assert_allclose(x, x0 + y0, rtol=1e-6)
    np.testing.assert_allclose(e, np.exp(y0), rtol=1e-6)
    np.testing.assert_array_equal(y, y0.astype(np.float32))
    overlapping = block[4:12]  # 16 bytes on: the same raw signature as y
    assert fec._hits.signature([x, overlapping], None) == fec._hits.signature([x, y], None)
    assert fec._hits.lookup([x, overlapping], None) is None  # the hit path sees it; the full path names it
    kept = block.copy()
    with pytest.raises(InputError, match=message):
        fec.run([x, overlapping])
    np.testing.assert_array_equal(block, kept)
    assert fec.stats.compilations == 1


def test_an_output_given_its_own_inplace_input_is_decided_per_call():
    fd = inplace_and_visible()
    fec = FusionExecutorCache(fd)
    x = rand(8)
    x0 = x.copy()
    buf = poisoned(8)
    (out,) = fec.run([x], outputs=[buf])  # a separate destination
    np.testing.assert_allclose(buf, x0 * 2, rtol=1e-6)
    np.testing.assert_allclose(x, x0 * 2, rtol=1e-6)
    assert out is buf
    # now the visible output is given the in-place input itself, with the
    # same raw signature: not a second destination, so another key (a miss)
    assert fec._hits.signature([x], [x]) == fec._hits.signature([x], [buf])
    x1 = x.copy()
    (out,) = fec.run([x], outputs=[x])
    assert out is x
    np.testing.assert_allclose(x, x1 * 2, rtol=1e-6)
    assert fec.stats.misses == 2 and fec.stats.hits == 0
    # and a separate buffer again: the first key
    x2 = x.copy()
    other = poisoned(8)
    (out,) = fec.run([x], outputs=[other])
    assert fec.stats.misses == 2 and fec.stats.hits == 1
    assert out is other
    np.testing.assert_allclose(other, x2 * 2, rtol=1e-6)
    np.testing.assert_allclose(x, x2 * 2, rtol=1e-6)


def interleaved_rows(rows: int = 18, cols: int = 16) -> np.ndarray:
    """A 64-byte aligned float32 block whose even and odd rows (``[0::2]``,
    ``[1::2]``) are views with one raw signature: byte ranges that meet,
    elements apart."""
    return rand(rows * cols).reshape(rows, cols)


def test_interleaved_views_hit_only_at_a_difference_the_full_path_passed():
    # They never hit: their byte ranges meet, so every call took the full path (17x slower here).
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.cos(a))
        fd.add_output(fd.ops.sin(b))
        fd.add_output(a + b, a)  # a updated in place; b, read, interleaves with it
    fec = FusionExecutorCache(fd)
    block, out = interleaved_rows(), poisoned(18 * 16).reshape(18, 16)

    def call(a_rows, b_rows, first_rows, second_rows):
        a, b = block[a_rows], block[b_rows]
        a0, b0 = a.astype(np.float64), b.astype(np.float64)
        out[...] = np.nan
        first, second = out[first_rows], out[second_rows]
        results = fec.run([a, b], outputs=[first, second])
        assert len(results) == 2 and results[0] is first and results[1] is second
        np.testing.assert_allclose(first, np.cos(a0), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(second, np.sin(b0), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(a, a0 + b0, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(b, b0.astype(np.float32))

    even, odd = slice(0, 16, 2), slice(1, 16, 2)
    assert fec._hits.lookup([block[even], block[odd]], [out[even], out[odd]]) is None  # nothing remembered yet
    call(even, odd, even, odd)
    assert fec._hits.lookup([block[even], block[odd]], [out[even], out[odd]]) is not None
    call(even, odd, even, odd)
    # the same raw signature with the views the other way round: apart as well, but at
    # differences no call passed yet; the full path decides, then they hit too
    swapped = [block[odd], block[even]], [out[odd], out[even]]
    assert fec._hits.signature(*swapped) == fec._hits.signature([block[even], block[odd]], [out[even], out[odd]])
    assert fec._hits.lookup(*swapped) is None
    call(odd, even, odd, even)
    assert fec._hits.lookup(*swapped) is not None
    assert fec._hits.lookup([block[even], block[odd]], [out[even], out[odd]]) is not None
    call(odd, even, odd, even)
    call(even, odd, even, odd)
    assert len(fec._hits._entries) == 1 and fec.stats.compilations == 1
    # the same raw signature, sharing elements: never a hit, the full path's message, nothing written
    shared = slice(2, 18, 2)  # rows 2, 4, ..., 16: shares rows with `even`
    overlapping = {
        "input 0 is updated in place, but it shares memory with input 1": ([block[even], block[shared]], [out[even], out[odd]]),
        "output 0 overlaps output 1": ([block[even], block[odd]], [out[even], out[shared]]),
        "output 1 overlaps input 1": ([block[even], block[odd]], [out[even], block[odd]]),
    }
    for message, (inputs, outputs) in overlapping.items():
        assert fec._hits.signature(inputs, outputs) == fec._hits.signature([block[even], block[odd]], [out[even], out[odd]])
        assert fec._hits.lookup(inputs, outputs) is None, message
        kept, kept_out = block.copy(), out.copy()
        with pytest.raises(InputError, match=message):
            fec.run(inputs, outputs)
        np.testing.assert_array_equal(block, kept)
        np.testing.assert_array_equal(out, kept_out)


def test_the_table_is_bounded_and_starts_over():
    fec = FusionExecutorCache(scaled_add())
    fec._hits.limit = 4
    for n in range(1, 11):
        x, y = rand(n), rand(n)
        (out,) = fec.run([x, y, 1])
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
        assert len(fec._hits._entries) <= 4
    (out,) = fec.run([x, y, 1])
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_cuda_hits_run_on_the_callers_arrays_and_still_check_overlaps(device):
    """The hit path on CUDA passes the caller's DeviceArrays (or torch
    tensors) straight to the runtime: results stay right, new outputs are
    new arrays, and a given output that overlaps an input is still refused."""
    if device == "cpu":
        pytest.skip("the CPU hit path is tested above")
    from devices import to_device, to_host

    fec = FusionExecutorCache(scaled_add())
    x, y = rand(4096), rand(4096)
    dx, dy = to_device(x, device), to_device(y, device)
    for s in (2, 3, 5):
        (out,) = fec.run([dx, dy, s])
        np.testing.assert_allclose(to_host(out), scaled(x, s, y), rtol=1e-6, atol=1e-5)
    assert fec.stats.misses == 1 and fec.stats.hits == 2
    given = to_device(poisoned(4096), device)
    (same,) = fec.run([dx, dy, 4], [given])
    assert same is given
    (again,) = fec.run([dx, dy, 7], [given])  # a hit with a given output
    assert again is given and fec.stats.hits == 3
    np.testing.assert_allclose(to_host(given), scaled(x, 7, y), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(to_host(dx), x)
    with pytest.raises(InputError, match="output 0 overlaps input 0"):
        fec.run([dx, dy, 7], [dx])  # same raw signature as `given`, so checked on the hit path
    np.testing.assert_array_equal(to_host(dx), x)


def test_torch_hits_return_torch_tensors_on_the_current_stream(device):
    if device == "cpu":
        pytest.skip("CUDA only")
    torch = pytest.importorskip("torch")
    fec = FusionExecutorCache(scaled_add())
    x = torch.randn(1000, device=device)
    y = torch.randn(1000, device=device)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        results = [fec.run([x, y, s])[0] for s in (1, 2, 3)]
    stream.synchronize()
    assert fec.stats.hits == 2
    for s, out in zip((1, 2, 3), results):
        assert isinstance(out, torch.Tensor) and out.device == x.device
        torch.testing.assert_close(out.double(), x.double() * s + y.double(), rtol=1e-6, atol=1e-5)
    given = torch.full_like(x, float("nan"))
    assert fec.run([x, y, 4], [given])[0] is given
    assert fec.run([x, y, 5], [given])[0] is given
    torch.testing.assert_close(given.double(), x.double() * 5 + y.double(), rtol=1e-6, atol=1e-5)
    with pytest.raises(InputError, match="output 0 overlaps input 1"):
        fec.run([x, y, 5], [y])


def test_torch_hits_take_the_guarded_replay_only_for_the_same_raw_properties(device):
    """The entry hit last runs as a replay with its checks built in
    (HitEntry.fast): with torch tensors it must take new tensors of the same
    raw properties, and leave every other call to the table and the full path."""
    if device == "cpu":
        pytest.skip("CUDA only")
    torch = pytest.importorskip("torch")
    fec = FusionExecutorCache(scaled_add())
    x, y = torch.randn(1024, device=device), torch.randn(1024, device=device)
    fec.run([x, y, 2])
    fec.run([x, y, 3])  # the first hit makes the guarded replay
    fast = fec._hits.last
    assert fast is not None and "x0.data_ptr()" in fast.source
    x2, y2 = torch.randn(1024, device=device), torch.randn(1024, device=device)
    (out,) = fast([x2, y2, 5], None, fec.memory)
    torch.testing.assert_close(out.double(), x2.double() * 5 + y2.double(), rtol=1e-6, atol=1e-5)
    wide = torch.randn(2048, device=device)
    others = {
        "shape": [x[:512], y[:512]],
        "strides": [wide[::2], y],
        "alignment class": [wide[1:1025], y],
        "dtype": [x.double(), y],
        "device": [x.cpu(), y],
    }
    for label, (a, b) in others.items():
        assert fast([a, b, 5], None, fec.memory) is None, label
        if label in ("dtype", "device"):
            with pytest.raises((InputError, DeviceError)):
                fec.run([a, b, 5])
            continue
        before = a.clone()
        (out,) = fec.run([a, b, 5])
        torch.testing.assert_close(out.double(), a.double() * 5 + b.double(), rtol=1e-6, atol=1e-5, msg=label)
        torch.testing.assert_close(a, before, msg=label)
    given = torch.full_like(x, float("nan"))
    assert fast([x, y, 5], [given], fec.memory) is None  # outputs given: another signature
    with pytest.raises(InputError, match="output 0 overlaps input 1"):
        fec.run([x, y, 5], [y])
