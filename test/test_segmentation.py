"""Segmented fusions end to end: the same results with and without forced
cuts, reductions broadcast back, outputs consumed by later segments, many
segments, and intermediates freed after their last use."""

import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache

RNG = np.random.default_rng(4)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def chain(cut: bool):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t = fd.ops.exp(x * 0.5)
        if cut:
            t = fd.ops.segment_set(t)
        t = fd.ops.tanh(t + y)
        if cut:
            t = fd.ops.segment_set(t)
        fd.add_output(t * y - 1.0)
    return fd


def softmax(cut: bool):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        if cut:
            x = fd.ops.segment_set(x)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        if cut:
            e = fd.ops.segment_set(e)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def layer_norm(cut: bool):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        mean = fd.ops.mean(x, dims=[1], keepdim=True)
        centered = x - mean
        if cut:
            centered = fd.ops.segment_set(centered)
        var = fd.ops.mean(centered * centered, dims=[1], keepdim=True)
        y = centered * fd.ops.rsqrt(var + 1e-5)
        fd.add_output(y * w + b)
        fd.add_output(mean)
    return fd


def ref_chain(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    return [np.tanh(np.exp(x * 0.5) + y) * y - 1.0]


def ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [e / e.sum(axis=1, keepdims=True)]


def ref_layer_norm(x, w, b):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return [(x - mean) / np.sqrt(var + 1e-5) * w + b, mean]


CASES = {
    "chain": (chain, ref_chain, lambda: [rand(33, 17), rand(33, 17)]),
    "softmax": (softmax, ref_softmax, lambda: [rand(19, 40)]),
    "layer_norm": (layer_norm, ref_layer_norm, lambda: [rand(21, 64), rand(64), rand(64)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forced_cuts_give_the_same_results(case, device):
    build, ref, make_inputs = CASES[case]
    inputs = make_inputs()
    before = [a.copy() for a in inputs]
    expected = ref(*inputs)
    inputs = [to_device(a, device) for a in inputs]
    results = {}
    for cut in (False, True):
        fec = FusionExecutorCache(build(cut))
        compiled, _, _ = fec.compiled_for(inputs)
        outs = [to_host(out) for out in fec.run(inputs)]
        for out, r in zip(outs, expected):
            np.testing.assert_allclose(out, r, rtol=2e-5, atol=2e-5)
        results[cut] = (compiled.num_segments, outs)
        for a, b in zip(inputs, before):
            np.testing.assert_array_equal(to_host(a), b)
    assert results[True][0] > results[False][0]
    for fused, cut in zip(results[False][1], results[True][1]):
        np.testing.assert_allclose(fused, cut, rtol=1e-6, atol=1e-6)


def test_an_output_consumed_by_a_later_segment_is_also_the_intermediate(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[0], keepdim=True)
        fd.add_output(s)
        fd.add_output(x - s)  # column sums broadcast back: a later segment reads the output buffer
    x = rand(12, 9)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([to_device(x, device)])
    assert compiled.num_segments == 2
    assert not [b for b in compiled.plan.buffers if b.kind == "intermediate"]
    s, d = map(to_host, fd.execute([to_device(x, device)]))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(s, x64.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, x64 - x64.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Half], ids=str)
@pytest.mark.parametrize("in_place", [False, True], ids=["new output", "in place"])
def test_a_softmax_over_columns_computes_exp_again_instead_of_storing_it(device, dtype, in_place):
    """The sum of exp(x - max) and the division by it are two segments (outer
    reductions); the second computes exp again from x and the max, so the
    only intermediates are the column maxima and sums (fuser-segment's rule
    6); not where x is updated in place, which the second segment writes."""
    with FusionDefinition(name="column_softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=dtype)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[0, 1], keepdim=True))
        y = e / fd.ops.sum(e, dims=[0, 1], keepdim=True)
        fd.add_output(y, alias_input=x) if in_place else fd.add_output(y)
    values = rand(9, 31, 40).astype(dtype.numpy)
    x64 = values.astype(np.float64)
    e64 = np.exp(x64 - x64.max(axis=(0, 1), keepdims=True))
    expected = e64 / e64.sum(axis=(0, 1), keepdims=True)
    arg = to_device(values, device)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([arg])
    full = [b for b in compiled.plan.buffers if b.kind == "intermediate" and b.shape_for([values.shape]) == values.shape]
    assert compiled.num_segments == 3 and len(full) == (1 if in_place else 0)
    outputs = None if in_place else [to_device(np.full(values.shape, np.nan, values.dtype), device)]
    results = fd.execute([arg], outputs=outputs)
    got = to_host(arg) if in_place else to_host(results[0])
    tolerance = 1e-5 if dtype == DataType.Float else 2e-3
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tolerance, atol=tolerance)
    if not in_place:
        np.testing.assert_array_equal(to_host(arg), values)


def test_a_value_two_later_segments_read_is_computed_in_each(device):
    """exp(x), read by the second and third segments and not by the first:
    each computes it again and no segment writes it (rule 6)."""
    with FusionDefinition(name="exp_read_twice_later") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x)
        q = e / fd.ops.sum(x, dims=[0], keepdim=True)
        fd.add_output(e * fd.ops.sum(q, dims=[0], keepdim=True))
    values = rand(17, 23)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([to_device(values, device)])
    assert [s.ops.count("fuser.exp") for s in compiled.segments] == [0, 1, 1]
    assert all(b.shape_for([values.shape]) != values.shape for b in compiled.plan.buffers if b.kind == "intermediate")
    x64 = values.astype(np.float64)
    e64 = np.exp(x64)
    expected = e64 * (e64 / x64.sum(axis=0, keepdims=True)).sum(axis=0, keepdims=True)
    (out,) = fd.execute([to_device(values, device)])
    np.testing.assert_allclose(to_host(out), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("keepdim", [True, False])
def test_a_layer_norm_written_with_var_mean_is_one_segment(device, keepdim):
    """var_mean broadcast its keepdim=False mean back with broadcast_in_dim,
    which cut the fusion in two: a layer norm with it took two kernels where
    one written with mean took one. A broadcast that puts back a reduction's
    dims as size 1 is now the keepdim reduction itself (ops._keepdim_form),
    so the user's own broadcast_in_dim of var_mean's keepdim=False results
    is one segment too, with the plain mean as a second output."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=keepdim)
        if not keepdim:
            var, mean = (fd.ops.broadcast_in_dim(v, [-1, 1], [0]) for v in (var, mean))
        fd.add_output((x - mean) * fd.ops.rsqrt(var + 1e-5))
        if not keepdim:
            fd.add_output(fd.ops.var_mean(x, dims=[1], correction=1)[1])  # the mean alone, as keepdim=False gives it
    x = rand(40, 300)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([to_device(x, device)])
    assert compiled.num_segments == 1
    outs = [to_host(o) for o in fd.execute([to_device(x, device)])]
    x64 = x.astype(np.float64)
    mean = x64.mean(1, keepdims=True)
    np.testing.assert_allclose(outs[0], (x64 - mean) / np.sqrt(x64.var(1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-4)
    if not keepdim:
        np.testing.assert_allclose(outs[1], mean[:, 0], rtol=1e-5, atol=1e-6)


def nvfuser_softmax(fd, x):
    """A softmax as nvFuser's examples write it: reductions without keepdim, broadcast back."""
    m = fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), [-1, 1], [0])
    e = fd.ops.exp(x - m)
    return e / fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [-1, 1], [0])


def test_reductions_broadcast_back_as_nvfuser_writes_them_are_the_keepdim_reductions(device):
    with FusionDefinition(name="softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(nvfuser_softmax(fd, x))
        mean = fd.ops.broadcast_in_dim(fd.ops.mean(x, [1]), [-1, 1], [0])  # through a pointwise op: the division by the count
        fd.add_output(x - mean)
        fd.add_output(fd.ops.max(x, [1]))  # the plain max too: its keepdim=False record stays live
    with FusionDefinition(name="softmax") as kept:
        x = kept.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = kept.ops.exp(x - kept.ops.max(x, [1], keepdim=True))
        kept.add_output(e / kept.ops.sum(e, [1], keepdim=True))
        kept.add_output(x - kept.ops.mean(x, [1], keepdim=True))
        kept.add_output(kept.ops.max(x, [1]))
    ir, kept_ir = fd.fusion_ir(), kept.fusion_ir()  # the same ops (the keepdim records come later in the definition)
    assert "broadcast_in_dim" not in ir and sorted(ir.count(f'"fuser.{op}"') for op in ("sum", "max", "div", "sub", "exp")) == sorted(
        kept_ir.count(f'"fuser.{op}"') for op in ("sum", "max", "div", "sub", "exp")
    )
    assert ir.count("keepdim = true") == kept_ir.count("keepdim = true") == 3
    x = rand(40, 300)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([to_device(x, device)])
    assert compiled.num_segments == 1
    soft, centred, top = (to_host(o) for o in fd.execute([to_device(x, device)]))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(soft, ref_softmax(x)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(centred, x64 - x64.mean(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(top, x.max(1))


def test_a_reduction_of_leading_dims_broadcast_by_right_alignment_is_the_keepdim_reduction(device):
    """``x - sum(x, [0])`` broadcasts the sums as NumPy does (a leading dim
    of size 1): the same records as ``keepdim=True`` gives, as for the
    explicit broadcast_in_dim above."""
    forms = {}
    for kept in (False, True):
        with FusionDefinition(name="centred") as fd:
            x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
            e = fd.ops.exp(x - fd.ops.max(x, [0, 1], keepdim=kept))
            fd.add_output(e / fd.ops.sum(e, [0, 1], keepdim=kept))
        forms[kept] = fd
    ir = forms[False].fusion_ir()
    assert "broadcast_in_dim" not in ir and ir.count("keepdim = true") == 2
    assert ir == forms[True].fusion_ir()
    x = rand(6, 7, 30)
    (out,) = forms[False].execute([to_device(x, device)])
    e = np.exp(x.astype(np.float64) - x.max(axis=(0, 1), keepdims=True))
    np.testing.assert_allclose(to_host(out), e / e.sum(axis=(0, 1), keepdims=True), rtol=1e-5, atol=1e-6)


def test_broadcasts_that_are_not_a_reductions_own_dims_stay_broadcasts():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, [1])
        fd.add_output(x + fd.ops.broadcast_in_dim(s, [1, -1], [1]))  # the row sums along the other dim (square x)
        fd.add_output(fd.ops.broadcast_in_dim(s, [-1, 4], [0]))  # expanded, not kept as size 1
    ir = fd.fusion_ir()
    assert ir.count('"fuser.broadcast_in_dim"') == 2 and "keepdim = true" not in ir


def test_a_fusion_of_twelve_segments(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t = x
        for i in range(11):
            t = fd.ops.segment_set(t * 1.5 + float(i))
        fd.add_output(t - 2.0)
    x = rand(100)
    compiled, _, _ = FusionExecutorCache(fd).compiled_for([to_device(x, device)])
    assert compiled.num_segments == 12
    expected = x.astype(np.float64)
    for i in range(11):
        expected = expected * 1.5 + i
    expected = expected - 2.0
    (out,) = fd.execute([to_device(x, device)])
    np.testing.assert_allclose(to_host(out), expected, rtol=1e-5)


def test_peak_memory_is_the_largest_live_set(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], dtype=DataType.Double)
        t = x + x
        t = fd.ops.sum(t, dims=[0])
        t = fd.ops.sum(t, dims=[2])
        fd.add_output(fd.ops.sum(t, dims=[0]))
    x = RNG.standard_normal((32, 64, 8, 128))
    fec = FusionExecutorCache(fd)
    compiled, _, _ = fec.compiled_for([to_device(x, device)])
    assert compiled.num_segments >= 3
    first = 64 * 8 * 128 * 8
    second = 64 * 8 * 8
    assert compiled.plan.peak_live_bytes([x.shape]) == x.nbytes + first + second
    (out,) = fec.run([to_device(x, device)])
    np.testing.assert_allclose(to_host(out), (2 * x).sum(axis=(0, 1, 3)), rtol=1e-10)
    assert fec.memory.peak_live_bytes == x.nbytes + first + second
    # intermediates are allocated once each, and the output once
    assert fec.memory.allocations == 3
