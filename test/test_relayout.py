"""Column-major arguments of fusions of pointwise ops, broadcasts and
reductions run on row-major views, through the definition written again
with its dims in their order (fuser_mlir.frontend.relayout): a bias added to
the rows of a Fortran-order matrix is the bias added along the columns of
its row-major view, a sum of its rows a sum of the view's columns. First which definitions qualify and what the one written again
records; then calls, on the CPU and the GPU, and random fusions against
the row-major run of the same values."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.errors import InputError
from fuser_mlir.executor import relayout_order
from fuser_mlir.frontend.relayout import iteration_dims, relayout
from random_programs import DTYPES, SHAPES, derandomized, input_shapes, random_fusion, random_input
from test_column_major import definition, strides_order

RNG = np.random.default_rng(53)


def bias():
    """x * 2 + b: b (one per column) broadcast along the rows."""
    with FusionDefinition(name="bias") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        b = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + b)
    return fd


def weighted_in_place():
    """x (half, 3-D) <- where(x > 0, x * s, w) in place, w (2-D) broadcast
    along the middle dim; and exp(x) + w as a new output."""
    with FusionDefinition(name="weighted") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype=DataType.Half)
        w = fd.define_tensor([-1, -1], dtype=DataType.Half)
        s = fd.define_scalar(dtype=DataType.Double)
        wide = fd.ops.broadcast_in_dim(w, [-1, 1, -1], [0, 2])
        fd.add_output(fd.ops.where(x > 0, x * s, wide), alias_input=x)
        fd.add_output(fd.ops.exp(x) + wide)
    return fd


def softmax(fd, x):
    e = fd.ops.exp(x - fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), [-1, 1], [0]))
    return e / fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [-1, 1], [0])


def reduced_elsewhere(fd, x):
    """A sum over dim 1 (one per row) broadcast as if one per column: square inputs only."""
    return x + fd.ops.broadcast_in_dim(fd.ops.sum(x, [1]), [1, -1], [1])


def normalized():
    """A layer norm of 3-D x over its last dim (mean and var through size
    expressions), times a weight per column, and the sum over dims 0 and 2."""
    with FusionDefinition(name="normalized") as fd:
        x = fd.define_tensor([-1, -1, -1], dtype=DataType.Float)
        w = fd.define_tensor([-1], dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, [2], correction=0, keepdim=True)
        y = (x - mean) * fd.ops.rsqrt(var + 1e-5) * w
        fd.add_output(y)
        fd.add_output(fd.ops.sum(x, [0, 2]))
    return fd


def assert_normalized(normed, total, x64: np.ndarray, w: np.ndarray, label: str = "") -> None:
    """normalized()'s two results against the float64 reference of ``x64`` and ``w``."""
    mean, var = x64.mean(axis=2, keepdims=True), x64.var(axis=2, keepdims=True)
    np.testing.assert_allclose(to_host(normed), (x64 - mean) / np.sqrt(var + 1e-5) * w, rtol=1e-4, atol=1e-4, err_msg=label)
    np.testing.assert_allclose(to_host(total), x64.sum(axis=(0, 2)), rtol=1e-4, atol=1e-4, err_msg=label)


QUALIFIES = {
    "a bias": (lambda fd: fd.add_output(fd.define_tensor([-1, -1]) * 2.0 + fd.define_tensor([-1])), {0: (0, 1), 1: (1,)}),
    "a column times a row": (lambda fd: fd.add_output(fd.define_tensor([-1, 1]) * fd.define_tensor([1, -1])), {0: (0, 1), 1: (0, 1)}),
    "a reduction": (lambda fd: fd.add_output(fd.ops.sum(fd.define_tensor([-1, -1]), [1])), {0: (0, 1)}),
    "a softmax": (lambda fd: fd.add_output(softmax(fd, fd.define_tensor([-1, -1]))), {0: (0, 1)}),
    "a reduction broadcast along another dim": (lambda fd: fd.add_output(reduced_elsewhere(fd, fd.define_tensor([-1, -1]))), None),
    "a permute": (lambda fd: fd.add_output(fd.ops.permute(fd.define_tensor([-1, -1]), [1, 0]) + fd.define_tensor([-1])), None),
    "a reshape": (lambda fd: fd.add_output(fd.ops.reshape(fd.define_tensor([-1, -1]), [-1])), None),
    "a declared contiguity": (lambda fd: fd.add_output(fd.define_tensor([-1, -1], contiguity=[True, True]) + fd.define_tensor([-1])), None),
    "one dim": (lambda fd: fd.add_output(fd.define_tensor([-1]) + 1.0), None),
    "an input no op reads": (lambda fd: [fd.define_tensor([-1]), fd.add_output(fd.ops.sum(fd.define_tensor([-1, -1]), [1]))], {1: (0, 1)}),
    "a lower-rank output no broadcast places": (lambda fd: [fd.add_output(t) for t in (fd.define_tensor([-1, -1]) + 1.0, fd.define_tensor([-1]) * 2.0)], None),
}


@pytest.mark.parametrize("case", QUALIFIES)
def test_which_definitions_have_iteration_dims(case):
    build, expected = QUALIFIES[case]
    fd = definition(build)
    dims = iteration_dims(fd)
    if expected is None:
        assert dims is None
    else:
        assert {fd.input_index(v): along for v, along in dims.items() if fd.input_index(v) is not None} == expected


@pytest.mark.parametrize("build", [bias, weighted_in_place], ids=["bias", "weighted in place"])
def test_in_the_same_order_it_writes_the_same_ir_with_the_users_lines(build):
    fd = build()
    rank = max(s.rank for s in fd.inputs)
    same = relayout(fd, tuple(range(rank)))
    assert same.fusion.fusion_ir(locations=True) == fd.fusion_ir(locations=True)
    assert same.inputs == tuple(None if not s.is_tensor else tuple(range(s.rank)) for s in fd.inputs)


def test_a_permuted_bias_broadcasts_along_the_other_dim():
    layout = relayout(bias(), (1, 0))
    assert layout.inputs == ((1, 0), (0,)) and layout.outputs == ((1, 0),)
    ir = layout.fusion.fusion_ir()
    assert "broadcast_dims = array<i64: 0>" in ir and "tensor<?x1xf32>" in ir
    three = relayout(weighted_in_place(), (2, 1, 0))
    assert three.inputs == ((2, 1, 0), (1, 0), None)  # w's two dims swap places: its broadcast dims must increase
    assert "broadcast_dims = array<i64: 0, 2>" in three.fusion.fusion_ir()


def test_which_calls_are_relaid():
    fd = bias()
    f = np.zeros((4, 5), np.float32, order="F")
    c = np.zeros((4, 5), np.float32)
    b = np.zeros(5, np.float32)
    assert relayout_order(fd, 2, [f, b], None) == (1, 0)
    assert relayout_order(fd, 2, [f, b], [np.zeros((4, 5), np.float32, order="F")]) == (1, 0)
    for label, inputs, outputs in [
        ("row-major", [c, b], None),
        ("a given output in another order", [f, b], [c]),
        ("a bias of the wrong size (the full validation names it)", [f, np.zeros(4, np.float32)], None),
        ("too few inputs", [f], None),
        ("a given output of another shape", [f, b], [np.zeros((5, 4), np.float32, order="F")]),
        ("two outputs for one", [f, b], [None, None]),
        ("not an array", [f.tolist(), b], None),
        ("a dim of one element, row-major aside from it", [np.zeros((4, 1), np.float32, order="F"), np.zeros(1, np.float32)], None),
    ]:
        assert relayout_order(fd, 2, inputs, outputs) is None, label


def fortran(values: np.ndarray, device: str, order=None):
    """``values`` on ``device``, laid out in memory with its dims in
    ``order`` (default: reversed, column-major)."""
    order = tuple(reversed(range(values.ndim))) if order is None else order
    return to_device(np.ascontiguousarray(values.transpose(order)), device).transpose(tuple(np.argsort(order)))


def test_a_bias_on_column_major_rows(device):
    fd = bias()
    fec = FusionExecutorCache(fd)
    shape = (300, 200)
    for call in ("new output", "new output", "output given", "output given row-major"):
        x, b = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape[1]).astype(np.float32)
        expected = x.astype(np.float64) * 2.0 + b
        dx, db = fortran(x, device), to_device(b, device)
        given = None
        if call != "new output":
            poison = np.full(shape, np.nan, np.float32)
            given = to_device(poison, device) if call.endswith("row-major") else fortran(poison, device)
        (out,) = fec.run([dx, db], outputs=None if given is None else [given])
        np.testing.assert_allclose(to_host(out), expected, rtol=1e-6, atol=1e-6, err_msg=call)
        np.testing.assert_array_equal(to_host(dx), x, err_msg=call)
        np.testing.assert_array_equal(to_host(db), b, err_msg=call)
        if given is not None:
            assert out is given
        else:
            assert strides_order(out) == (1, 0), "a new output takes the inputs' order"
    assert fec.stats.compilations == 3  # the views' kernels with the output new, then given; the strided ones of the row-major output


@pytest.mark.parametrize("order", [(2, 1, 0), (0, 2, 1), (1, 0, 2)])
def test_a_weight_broadcast_into_permuted_dims_with_an_in_place_update(device, order):
    fd = weighted_in_place()
    fec = FusionExecutorCache(fd)
    shape = (6, 50, 40)
    for _ in range(2):  # the first call, then a hit
        x = RNG.standard_normal(shape).astype(np.float16)
        w = RNG.standard_normal((shape[0], shape[2])).astype(np.float16)
        x64, w64 = x.astype(np.float64), w.astype(np.float64)[:, None, :]
        dx, dw = fortran(x, device, order), to_device(w, device)
        (out,) = fec.run([dx, dw, 0.5])
        np.testing.assert_allclose(to_host(dx).astype(np.float64), np.where(x64 > 0, x64 * 0.5, w64), rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(to_host(out).astype(np.float64), np.exp(x64) + w64, rtol=2e-3, atol=2e-3)
        np.testing.assert_array_equal(to_host(dw), w)
        assert strides_order(out) == order
    assert fec.stats.compilations == 1


def test_a_bad_call_is_refused_as_a_row_major_one_and_writes_nothing(device):
    fd = bias()
    x = RNG.standard_normal((30, 20)).astype(np.float32)
    cases = [
        ("a bias of the wrong size", np.zeros(30, np.float32), x.shape),
        ("a bias of the wrong dtype", np.zeros(20, np.float64), x.shape),
        ("an output of the wrong shape", np.zeros(20, np.float32), (20, 30)),
    ]
    for label, b, shape in cases:
        messages = []
        for dx in (to_device(x, device), fortran(x, device)):
            fec = FusionExecutorCache(fd)
            out = fortran(np.full(shape, np.nan, np.float32), device)
            with pytest.raises(InputError) as error:
                fec.run([dx, to_device(b, device)], outputs=[out])
            messages.append(str(error.value))
            assert np.isnan(to_host(out)).all() and (fec.stats.compilations, fec.memory.allocations) == (0, 0), label
        assert messages[0] == messages[1], label


def assert_same(got: np.ndarray, want: np.ndarray, label: str) -> None:
    """Equal where the order of a sum's terms cannot matter (integers,
    Booleans, pointwise results), within a few roundings otherwise."""
    assert got.dtype == want.dtype and got.shape == want.shape, label
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=label)
    else:
        tolerance = {2: 1e-2, 4: 1e-5, 8: 1e-12}[want.dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance, err_msg=label)


POINTWISE_STEP = st.tuples(st.sampled_from(["unary", "binary", "where", "cast", "sum", "max", "mean"]), st.integers(0, 99), st.integers(0, 99), DTYPES)


@derandomized(20)
@given(shapes=SHAPES, dtypes=st.lists(DTYPES, min_size=3, max_size=3), steps=st.lists(POINTWISE_STEP, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_random_fusions_give_the_row_major_results(shapes, dtypes, steps, seed):
    from hypothesis import assume

    fd = random_fusion(shapes, dtypes, steps)
    dims = iteration_dims(fd)
    assume(dims is not None)
    rng = np.random.default_rng(seed)
    arrays = [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, input_shapes(fd, rng))]
    rank = len(next(iter(dims.values())))
    order = tuple(rng.permutation(rank))
    assume(order != tuple(range(rank)))
    expected = fd.execute(arrays)
    layout = relayout(fd, order)
    assert layout is not None
    views = [a.transpose(p).copy() for a, p in zip(arrays, layout.inputs)]  # row-major (ascontiguousarray would make a 0-d array 1-d)
    results = layout.fusion.execute(views)
    for k, (got, want) in enumerate(zip(results, expected)):
        assert_same(got.transpose(np.argsort(layout.outputs[k])), want, f"output {k}")
    # and through execute: the full-rank inputs laid out in ``order``
    laid = [fortran(a, "cpu", order) if a.ndim == rank else a for a in arrays]
    for k, (got, want) in enumerate(zip(fd.execute(laid), expected)):
        assert_same(got, want, f"output {k} through execute")


def test_a_layout_is_decided_once(monkeypatch):
    import fuser_mlir.executor as executor

    decided = []
    original = executor.relayout_order
    monkeypatch.setattr(executor, "relayout_order", lambda *args: decided.append(1) or original(*args))
    fec = FusionExecutorCache(bias())
    x, b = np.asfortranarray(RNG.standard_normal((6, 5)).astype(np.float32)), RNG.standard_normal(5).astype(np.float32)
    for _ in range(3):
        (out,) = fec.run([x, b])
        np.testing.assert_allclose(out, x.astype(np.float64) * 2.0 + b, rtol=1e-6)
    assert len(decided) == 1
    fec.run([np.asfortranarray(RNG.standard_normal((7, 5)).astype(np.float32)), b])  # another shape: decided again
    assert len(decided) == 2


@pytest.mark.parametrize("order", [(2, 1, 0), (0, 2, 1), (1, 0, 2)])
def test_reductions_of_permuted_arguments(device, order):
    fd = normalized()
    fec = FusionExecutorCache(fd)
    shape = (5, 30, 40)
    for _ in range(2):  # the first call, then a hit
        x, w = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape[2]).astype(np.float32)
        x64 = x.astype(np.float64)
        dx = fortran(x, device, order)
        normed, total = fec.run([dx, to_device(w, device)])
        assert_normalized(normed, total, x64, w)
        np.testing.assert_array_equal(to_host(dx), x)
        assert strides_order(normed) == order
    assert fec.stats.compilations == 1


@pytest.mark.parametrize("shape", [(5, 1, 3), (6, 2, 3)])
def test_a_mean_of_a_permuted_argument_divides_by_its_own_dim_when_a_dead_op_bound_it_to_another(device, shape):
    # The unused maximum broadcasts the mean's (n0, 3) against x's (n0, n1, 3): it bound n1 to n0 in the definition's
    # union-find, which the call does not check (no output needs it). Written again for the permuted call, the
    # mean's size took the first input dim of that class, n0, and divided by 5 (or 6) instead of 1 (or 2).
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, 3], dtype=DataType.Double)
        mean = fd.ops.mean(x, dims=[1])
        fd.ops.maximum(x, mean)
        fd.add_output(mean * 2.0)
    values = RNG.standard_normal(shape)
    for order in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
        dx = fortran(values, device, order)
        (got,) = fd.execute([dx], outputs=[to_device(np.full((shape[0], 3), np.nan), device)])
        np.testing.assert_allclose(to_host(got), 2 * values.mean(axis=1), rtol=1e-12, err_msg=f"order {order}")
        np.testing.assert_array_equal(to_host(dx), values)


@pytest.mark.parametrize("given", [False, True])
def test_a_relaid_call_is_remembered_under_its_own_signature(device, given, monkeypatch):
    """After its first call, a column-major call hits an entry of its own
    (HitEntry.views): no relayout decision, no run through the executor of
    the definition written again; its new outputs still come in their own
    orders (the normalized x in the inputs', the 1-D sum as it is)."""
    fd = normalized()
    fec = FusionExecutorCache(fd)
    relaid = []
    run_relaid = fec._run_relaid
    monkeypatch.setattr(fec, "_run_relaid", lambda *args: relaid.append(1) or run_relaid(*args))
    shape, order = (5, 30, 40), (2, 1, 0)
    for call in range(3):
        x, w = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape[2]).astype(np.float32)
        x64 = x.astype(np.float64)
        dx, dw = fortran(x, device, order), to_device(w, device)
        outputs = [fortran(np.full(shape, np.nan, np.float32), device, order), None] if given else None
        normed, total = fec.run([dx, dw], outputs)
        assert_normalized(normed, total, x64, w, f"call {call}")
        np.testing.assert_array_equal(to_host(dx), x)
        np.testing.assert_array_equal(to_host(dw), w)
        assert strides_order(normed) == order and total.shape == (shape[1],)
        if given:
            assert normed is outputs[0]
    entry = fec._hits.entry([dx, dw], outputs)
    assert relaid == [1] and entry.views.inputs == ((2, 1, 0), (0,)) and entry.views.outputs == ((2, 1, 0), (0,))
    assert (fec.stats.misses, fec.stats.hits) == (1, 2)  # one compilation (or disk hit): the views'


def test_a_softmax_of_column_major_rows_is_one_of_the_views_columns():
    with FusionDefinition(name="softmax") as fd:
        fd.add_output(softmax(fd, fd.define_tensor([-1, -1])))
    layout = relayout(fd, (1, 0))
    ir = layout.fusion.fusion_ir()
    assert '"fuser.max"(%arg0) {dims = array<i64: 0>, keepdim = true}' in ir and "broadcast_in_dim" not in ir  # a column max kept as a row
    x = np.asfortranarray(RNG.standard_normal((64, 48)).astype(np.float32))
    (out,) = fd.execute([x])
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert out.flags.f_contiguous
