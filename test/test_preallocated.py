"""Preallocated outputs through FusionExecutorCache: all, some or none, also
when the fusion runs as several segments; strided destinations; the cache key
follows what the given buffers change."""

import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache, InputError

RNG = np.random.default_rng(5)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def poisoned(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def three_segment_fusion():
    """Outputs from the first (s), a middle (d) and the last (n) segment: a
    normalization over the columns (dim 0), which cuts at every broadcast back."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[0], keepdim=True)  # segment 0
        d = x - s  # segment 1 (reads s at x's iteration space)
        q = fd.ops.sum(d * d, dims=[0], keepdim=True)
        n = d / fd.ops.sqrt(q + 1.0)  # segment 2
        fd.add_output(s)
        fd.add_output(d)
        fd.add_output(n)
    return fd


def reference(x):
    x = x.astype(np.float64)
    s = x.sum(axis=0, keepdims=True)
    d = x - s
    n = d / np.sqrt((d * d).sum(axis=0, keepdims=True) + 1.0)
    return [s, d, n]


def check(outs, x):
    for out, ref in zip(outs, reference(x)):
        np.testing.assert_allclose(to_host(out), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask", [(1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (0, 0, 0)])
def test_given_outputs_of_any_segment_are_written_in_place(mask, device):
    fd = three_segment_fusion()
    fec = FusionExecutorCache(fd)
    x = rand(7, 24)
    x0 = x.copy()
    x = to_device(x, device)
    shapes = [(1, 24), (7, 24), (7, 24)]
    given = [to_device(poisoned(s), device) if m else None for s, m in zip(shapes, mask)]
    compiled, _, _ = fec.compiled_for([x], given)
    assert compiled.num_segments == 3
    outs = fec.run([x], outputs=given)
    check(outs, x0)
    np.testing.assert_array_equal(to_host(x), x0)
    for out, buf in zip(outs, given):
        if buf is not None:
            assert out is buf
    # no staging copies: the runtime allocates exactly the outputs not given
    # plus the intermediates, and nothing for a given buffer
    intermediates = sum(1 for b in compiled.plan.buffers if b.kind == "intermediate")
    assert fec.memory.allocations == mask.count(0) + intermediates
    assert sum(1 for b in compiled.plan.buffers if b.kind == "given") == sum(mask)


def test_a_given_output_that_a_later_segment_reads_serves_as_the_intermediate():
    fd = three_segment_fusion()
    fec = FusionExecutorCache(fd)
    x = rand(5, 16)
    d_buf = poisoned((5, 16))
    compiled, _, _ = fec.compiled_for([x], [None, d_buf, None])
    # d is produced by segment 1 and read by segment 2 straight from the given buffer
    given = [b.id for b in compiled.plan.buffers if b.kind == "given"]
    assert len(given) == 1
    readers = [s for s in compiled.segments if given[0] in s.inputs]
    assert readers and readers[0].name.endswith("seg2")
    check(fec.run([x], outputs=[None, d_buf, None]), x)


def test_alternating_signatures_compile_once_each_and_reuse_buffers():
    fd = three_segment_fusion()
    fec = FusionExecutorCache(fd)
    x = rand(6, 10)
    s_buf, d_buf, n_buf = poisoned((1, 10)), poisoned((6, 10)), poisoned((6, 10))
    wide = poisoned((6, 20))
    calls = [
        [s_buf, d_buf, n_buf],
        None,
        [None, wide[:, ::2], None],  # strided
        [s_buf, d_buf, n_buf],
        None,
        [None, wide[:, ::2], None],
        [None, np.asfortranarray(poisoned((6, 10))), None],  # column-major
    ]
    for outputs in calls:
        if outputs is not None:
            for b in outputs:
                if b is not None:
                    b[...] = np.nan
        x = rand(6, 10)
        outs = fec.run([x], outputs=outputs)
        check(outs, x)
    assert fec.stats.misses == 4
    assert fec.stats.hits == 3
    assert np.isnan(wide[:, 1::2]).all()


def test_concatenation_by_allocation(device):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Double)
        fd.add_output(fd.ops.exp(a))
        fd.add_output(b * 2.0)
    n = 1000
    a, b = RNG.standard_normal(n), RNG.standard_normal(n)
    out = to_device(np.full(2 * n, np.nan), device)
    first, second = fd.execute([to_device(a, device), to_device(b, device)], outputs=[out[:n], out[n:]])
    assert first.base is out and second.base is out
    np.testing.assert_allclose(to_host(out), np.concatenate([np.exp(a), b * 2.0]), rtol=1e-12)


def test_interleaved_views_of_one_buffer_are_separate_outputs_and_inputs(device):
    """Views that interleave without sharing an element (even and odd
    columns) were refused as overlapping: the check compared byte ranges."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Double)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Double)
        fd.add_output(fd.ops.cos(a))
        fd.add_output(fd.ops.sin(a))
        fd.add_output(a + b, a)  # a updated in place; b, read, interleaves with it
    n = 64
    a, b = RNG.standard_normal((n, n)), RNG.standard_normal((n, n))
    out = to_device(np.full((n, 2 * n), np.nan), device)
    for _ in range(2):  # a miss, then a hit
        cos, sin = fd.execute([to_device(a.copy(), device), to_device(b, device)], outputs=[out[:, 0::2], out[:, 1::2]])
        expected = np.empty((n, 2 * n))
        expected[:, 0::2], expected[:, 1::2] = np.cos(a), np.sin(a)
        np.testing.assert_allclose(to_host(out), expected, rtol=1e-12)
    pair = to_device(np.stack([a, b], axis=-1), device)  # a and b interleaved in one buffer
    fd.execute([pair[..., 0], pair[..., 1]], outputs=[None, None])
    np.testing.assert_allclose(to_host(pair)[..., 0], a + b, rtol=1e-12)
    np.testing.assert_array_equal(to_host(pair)[..., 1], b)
    with pytest.raises(InputError, match="output 0 overlaps output 1"):  # views that do share elements still may not
        fd.execute([to_device(a.copy(), device), to_device(b, device)], outputs=[out[:, 0:n], out[:, n - 2:2 * n - 2]])


def test_device_views_overlap_only_where_they_share_an_element():
    from fuser_mlir.outputs import may_overlap
    from fuser_mlir.runtime.arrays import DeviceArray

    big = DeviceArray(0x7F00_0000_0000, (4, 8), (32, 4), np.dtype(np.float32))  # addresses only: nothing is read
    assert not may_overlap(big[:, 0::2], big[:, 1::2]) and not may_overlap(big[:2], big[2:])
    assert may_overlap(big[:, 0::2], big[:, 2::2]) and may_overlap(big[:3], big[2:]) and may_overlap(big.T, big[1:2])


def test_transposed_given_output_is_written_through_its_strides(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(x) + 1.0)
    x = rand(9, 4)
    buf = to_device(poisoned((4, 9)), device).T
    (out,) = fd.execute([to_device(x, device)], outputs=[buf])
    assert out is buf
    np.testing.assert_allclose(to_host(buf), np.maximum(x.astype(np.float64), 0) + 1.0, rtol=1e-6)


def test_alignment_class_of_a_given_output_is_part_of_the_key():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x * 3.0)
    fec = FusionExecutorCache(fd)
    backing = poisoned(64)
    aligned = backing[:16] if backing.ctypes.data % 16 == 0 else backing[2:18]
    shifted = backing[1:17]  # 4 bytes off: another alignment class
    for buf in (aligned, shifted, aligned):
        buf[...] = np.nan
        x = rand(16)
        (out,) = fec.run([x], outputs=[buf])
        assert out is buf
        np.testing.assert_allclose(buf, x.astype(np.float64) * 3.0, rtol=1e-6)
    assert fec.stats.misses == 2 and fec.stats.hits == 1
