"""CPU kernels cut into blocks that run side by side (fuser_mlir/lowering/cpu_split.py).

First which segments split, and along which dims, for fusions whose answer
is known; then the random programs of ``random_programs`` (every dtype,
dense, strided and reversed inputs) run once whole, after a run on other
values whose intermediates the plan keeps for it
(:func:`blocks.keep_every_intermediate`), which must match the float64
reference (loosely: half-precision steps round on the way), and once
cut into blocks of their split dims on three threads
(:func:`blocks.cut_into_blocks`): every output must be the same to the bit,
every input unchanged. Each element is computed by the same operations in
the same order either way; a block's start moves which elements a
vectorised loop takes in vector steps, and a libm function such as ``sin``
gives the same bits in either (fuser_mlir/lowering/vector_library.py). The test checks
that a fifth of its kernel calls did run as blocks (most of the others end
in a full reduction, which has no parallel loop). The in-place random test
(test_inplace_random.py) runs cut into blocks against the SSA reference too.
"""

from __future__ import annotations

import numpy as np
import pytest
from blocks import cut_into_blocks, keep_every_intermediate, merging, whole_calls
from hypothesis import assume, example, given
from hypothesis import strategies as st
from random_programs import ALL_DTYPES, PROGRAMS_OF_ALL_DTYPES, derandomized, input_shapes, random_fusion, random_input
from reference import evaluate

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir._mlir import ir
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import InputError
from fuser_mlir.lowering.cpu import cpu_pipeline, segments_only, split_pipeline
from fuser_mlir.lowering.cpu_split import why_not_elementwise, why_not_split
from fuser_mlir.passes.lower_to_cpu import symbol_name
from fuser_mlir.pipeline import run_pipeline


def softmax(fd, x):
    e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))


def broadcast_row(fd, x):
    fd.add_output(x + fd.define_tensor([1, -1], dtype=DataType.Float))


def scaled(fd, x):
    fd.add_output(x * fd.define_scalar(dtype=DataType.Float))


def outer_product(fd, x):
    y = fd.define_tensor([-1], dtype=DataType.Float)
    v = fd.define_tensor([-1], dtype=DataType.Float)
    fd.add_output(fd.ops.broadcast_in_dim(y, [-1, 1], [0]) * fd.ops.broadcast_in_dim(v, [1, -1], [1]) + x)


def column_sum(fd, x):
    fd.add_output(fd.ops.sum(x, dims=[0]))


def transposed(fd, x):
    fd.add_output(fd.ops.permute(x, [1, 0]) * 2.0)


def two_nests(fd, x):
    fd.add_output(x + 1.0)
    fd.add_output(fd.define_tensor([-1], dtype=DataType.Float) * 2.0)


def static_softmax(fd, x):
    softmax(fd, x)


def total(fd, x):
    fd.add_output(fd.ops.sum(x, dims=[0, 1]))


def plus_transpose(fd, x):
    fd.add_output(x + fd.ops.permute(x, [1, 0]))


def row_and_vector(fd, x):
    # y is read along the columns of x in one nest and along its own dim in
    # the other: taken from the last, the nests split x's columns
    y = fd.define_tensor([-1], dtype=DataType.Float)
    fd.add_output(x + fd.ops.broadcast_in_dim(y, [1, -1], [1]))
    fd.add_output(y * 2.0)


def both_ways(fd, x):
    # y is read along x's columns in one nest and along its rows in the
    # other: split in one and whole in the other either way, so it runs whole
    y = fd.define_tensor([-1], dtype=DataType.Float)
    fd.add_output(x + fd.ops.broadcast_in_dim(y, [1, -1], [1]))
    fd.add_output(x * fd.ops.broadcast_in_dim(y, [-1, 1], [0]))


def flattened(fd, x):
    fd.add_output(fd.ops.reshape(x, [-1]) * 2.0)


CASES = {
    # fusion: (x's shape, the split of each segment, why a segment does not split)
    softmax: ([-1, -1], [(0, 0)], None),
    broadcast_row: ([-1, -1], [(0, None, 0)], None),
    scaled: ([-1, -1], [(0, None, 0)], None),
    outer_product: ([-1, -1], [(0, 0, None, 0)], None),
    column_sum: ([-1, -1], [(1, 0)], None),
    transposed: ([-1, -1], [(1, 0)], None),
    two_nests: ([-1, -1], [(0, 0, 0, 0)], None),
    total: ([-1, -1], [None], "a linalg.generic has no parallel loop"),
    plus_transpose: ([-1, -1], [None], "is split along different dims"),
    row_and_vector: ([-1, -1], [(1, 0, 1, 0)], None),
    both_ways: ([-1, -1], [None], "is split along different dims ([0, None])"),
    flattened: ([-1, -1], [None], "'memref.store' is not one of the ops a split segment may have"),  # the shape of a memref.reshape
    static_softmax: ([4, 8], [None], "split dim 0 of a memref<4x8xf32, strided<[?, ?], offset: ?>> is static"),
}


def fusion_of(build, shape):
    with FusionDefinition(name=build.__name__) as fd:
        build(fd, fd.define_tensor(shape, dtype=DataType.Float))
    return fd


def reasons(compiled, why=why_not_split) -> list[str | None]:
    """Why each segment of ``compiled`` does not split (or, with
    ``why_not_elementwise``, is not elementwise), from its outlined module
    at the memref level."""
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(compiled.stages["outlined"], context=context)
        lowered, kinds = segments_only(module)
        run_pipeline(lowered, split_pipeline(cpu_pipeline())[0])
        return [why(op.operation) for op in lowered.body.operations if op.operation.name == "func.func" and symbol_name(op.operation) in kinds]


@pytest.mark.parametrize("build", CASES, ids=lambda build: build.__name__)
def test_which_segments_split_and_along_which_dims(build):
    shape, splits, reason = CASES[build]
    compiled = compile_fusion(fusion_of(build, shape), device="cpu")
    assert [kernel.split for kernel in compiled.kernels.values()] == splits
    why = reasons(compiled)
    if reason is None:
        assert why == [None] * len(splits)
    else:
        assert reason in why[0]


@pytest.mark.parametrize("build", CASES, ids=lambda build: build.__name__)
def test_each_case_cut_into_blocks_matches_the_reference(build):
    # square inputs, so that arrays read along different dims agree in length
    # (the runtime would run a call whole otherwise)
    shape = CASES[build][0]
    fd = fusion_of(build, shape)
    rng = np.random.default_rng()
    inputs = []
    for spec in fd.inputs:
        if spec.kind != "tensor":
            inputs.append(float(rng.standard_normal()))
            continue
        inputs.append(rng.standard_normal(tuple(6 if size == -1 else size for size in spec.shape)).astype(np.float32))
    entry = [np.copy(a) for a in inputs]
    expected = evaluate(fd, inputs)
    outputs = [np.full(e.shape, np.nan, np.float32) for e in expected]
    with cut_into_blocks() as counts:
        results = fd.execute(inputs, outputs=outputs)
    for got, want, given_buffer in zip(results, expected, outputs):
        assert got is given_buffer
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    for got, want in zip(inputs, entry):
        np.testing.assert_array_equal(got, want)
    assert counts["cut"] == sum(split is not None for split in CASES[build][1])


def test_threads_calling_split_kernels_at_once_get_their_own_results():
    # four threads call one fusion on row counts that need 2 to 3 blocks, so
    # the pool grows while other threads hand it blocks
    import threading

    fd = fusion_of(softmax, [-1, -1])
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal((rows, 7)).astype(np.float32) for rows in (2, 3, 5, 8)]
    expected = [evaluate(fd, [a])[0] for a in arrays]
    errors = []

    def work(k):
        try:
            for _ in range(30):
                (got,) = fd.execute([arrays[k]])
                np.testing.assert_allclose(got, expected[k], rtol=2e-6, atol=2e-6)
        except Exception as err:  # reported below, with the thread
            errors.append((k, err))

    with cut_into_blocks() as counts:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors
    assert counts["cut"] == 120


def test_a_forked_child_makes_its_own_pool(monkeypatch):
    from fuser_mlir.runtime import cpu as cpu_runtime

    stale = (-1, 8, object())  # a parent's pool: its threads are not in this process
    monkeypatch.setattr(cpu_runtime, "_POOL", stale)
    pool = cpu_runtime._pool(2)
    assert pool is not stale[2] and cpu_runtime._POOL[0] > 0
    assert cpu_runtime._pool(1) is pool  # kept while it is big enough
    assert cpu_runtime._pool(3) is not pool  # and replaced by a bigger one


HAND_WRITTEN = """
#id = affine_map<(d0) -> (d0)>
func.func @index(%x: memref<?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %f = arith.index_cast %i : index to i32
    %g = arith.sitofp %f : i32 to f32
    %s = arith.addf %in, %g : f32
    linalg.yield %s : f32
  }
  return
}
func.func @captured(%x: memref<?xf32>, %table: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = memref.load %table[%c0] : memref<?xf32>
    %s = arith.addf %in, %t : f32
    linalg.yield %s : f32
  }
  return
}
"""


@pytest.mark.parametrize("why", [why_not_split, why_not_elementwise], ids=["split", "elementwise"])
def test_a_body_that_reads_a_loop_index_or_a_buffer_of_its_own_runs_whole_and_unmerged(why):
    # the lowering writes neither; a split of either, or its dims merged, would be wrong
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(HAND_WRITTEN, context=context)
        index, captured = [op.operation for op in module.body.operations]
        assert why(index) == "a linalg.generic reads a loop index"
        assert why(captured) == "a linalg.generic's body reads a buffer of its own ('memref.load')"


def elementwise_chain(fd, x):
    y = fd.define_tensor([-1] * x.ndim, dtype=DataType.Float)
    t = fd.ops.sin(x) * fd.define_scalar(dtype=DataType.Float) + y
    fd.add_output(t)
    fd.add_output(fd.ops.cast(fd.ops.exp(t), DataType.Half))


ELEMENTWISE = {
    # fusion: why its segment is not elementwise (None: it is)
    elementwise_chain: None,
    scaled: None,
    softmax: "a linalg.generic's loops are not 2 parallel ones",
    broadcast_row: "a linalg.generic indexes an operand with (d0, d1) -> (0, d1)",
    transposed: "a linalg.generic indexes an operand with (d0, d1) -> (d1, d0)",
    two_nests: "a linalg.generic's loops are not 2 parallel ones",  # its nest over the vector
    flattened: "'memref.store' is not one of the ops an elementwise segment may have",  # the shape of a memref.reshape
}


@pytest.mark.parametrize("build", ELEMENTWISE, ids=lambda build: build.__name__)
def test_which_segments_are_elementwise(build):
    reason = ELEMENTWISE[build]
    compiled = compile_fusion(fusion_of(build, [-1, -1]), device="cpu")
    (kernel,) = compiled.kernels.values()
    assert kernel.elementwise == (reason is None)
    assert [entry["elementwise"] for entry in compiled.image.spec["kernels"].values()] == [reason is None]
    (why,) = reasons(compiled, why_not_elementwise)
    assert why == reason if reason is None else reason in why



@pytest.mark.parametrize("shape", [(100_000, 3), (300_000, 1), (2, 20_000, 7)])
def test_short_rows_of_a_large_elementwise_call_run_merged_on_the_threads(shape):
    # rows of 1 to 7 ran 2-7x slower than long rows: the vector loop was never entered
    from fuser_mlir.runtime import cpu as cpu_runtime

    with FusionDefinition(name="short_rows") as fd:
        elementwise_chain(fd, fd.define_tensor([-1] * len(shape), dtype=DataType.Float))
    rng = np.random.default_rng()
    x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    entry = [x.copy(), y.copy()]
    args = [x, y, 0.5] if fd.inputs[1].kind == "tensor" else [x, 0.5, y]
    expected = evaluate(fd, args)
    outputs = [np.full(shape, np.nan, np.float32), np.full(shape, np.nan, np.float16)]
    assert shape[-1] < cpu_runtime.MERGE_BELOW and x.size >= cpu_runtime.MERGE_FROM
    with merging() as merged, cut_into_blocks(threads=2) as counts:
        fd.execute(args, outputs=outputs)
    assert merged["merged"] == 1 and counts["cut"] == 1
    np.testing.assert_allclose(outputs[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs[1].astype(np.float64), expected[1], rtol=2e-3, atol=1e-6)
    for got, want in zip((x, y), entry):
        np.testing.assert_array_equal(got, want)


def test_split_dims_travel_with_the_kernel_image():
    compiled = compile_fusion(fusion_of(outer_product, [-1, -1]), device="cpu")
    assert [entry["split"] for entry in compiled.image.spec["kernels"].values()] == [[0, 0, None, 0]]


def softmax_of_rows_of_batches(fd, x):
    e = fd.ops.exp(x - fd.ops.max(x, dims=[2], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[2], keepdim=True))


@pytest.mark.parametrize(
    "build, shape, inner",
    [
        (softmax_of_rows_of_batches, [-1, -1, -1], (1, 1)),  # split along the batch, inner split along the rows
        (softmax, [-1, -1], None),  # one parallel loop
        (column_sum, [-1, -1], None),
        (scaled, [-1, -1], (1, None, 1)),  # columns: a call on one long row runs on the threads too
        (outer_product, [-1, -1], None),  # the columns would cut v and read y whole: other arguments than the rows
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_which_segments_have_an_inner_split(build, shape, inner):
    compiled = compile_fusion(fusion_of(build, shape), device="cpu")
    assert [kernel.inner_split for kernel in compiled.kernels.values()] == [inner]
    assert [entry["inner_split"] for entry in compiled.image.spec["kernels"].values()] == [None if inner is None else list(inner)]


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_a_batch_shorter_than_the_threads_is_cut_along_its_rows(batch):
    fd = fusion_of(softmax_of_rows_of_batches, [-1, -1, -1])
    rng = np.random.default_rng()
    x = rng.standard_normal((batch, 40, 33)).astype(np.float32)
    entry = x.copy()
    (expected,) = evaluate(fd, [x])
    out = np.full(x.shape, np.nan, np.float32)
    with cut_into_blocks(threads=3) as counts:
        fd.execute([x], outputs=[out])
    assert counts["cut"] == 1 and counts["cut along the inner split"] == (batch < 3)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(x, entry)


def test_nests_over_arrays_of_different_lengths_run_whole():
    fd = fusion_of(two_nests, [-1, -1])
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    with cut_into_blocks() as counts:
        plus, doubled = fd.execute([x, y])
    assert counts == {"calls": 1}  # no "cut": the split dims are 6 and 5 long
    np.testing.assert_allclose(plus, x.astype(np.float64) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(doubled, y.astype(np.float64) * 2.0, rtol=1e-6)


LAYOUTS = st.sampled_from(["dense", "strided", "reversed"])


def laid_out(array: np.ndarray, layout: str) -> np.ndarray:
    """``array``'s values in a dense, every-other-element or reversed view."""
    if layout == "dense" or array.ndim == 0:
        return array
    if layout == "reversed":
        return np.ascontiguousarray(array[::-1])[::-1]
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def random_program(shapes, dtypes, steps, layout: str, seed: int, sets: int = 1):
    """A random fusion and ``sets`` lists of random inputs for it, laid out
    as ``layout`` says (a draw whose shapes the fusion refuses is skipped)."""
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(seed)
    concrete = input_shapes(fd, rng)
    try:
        fd.check_input_shapes(concrete)
    except InputError:
        assume(False)  # a flattened dim bound to another size
    return fd, *([laid_out(random_input(spec, shape, rng), layout) for spec, shape in zip(fd.inputs, concrete)] for _ in range(sets))


def same_bits_inputs_unchanged(got, want, how: str, arrays, entry) -> None:
    """Each output of ``got`` has the dtype, shape and bits of ``want``'s, and each input its values at entry."""
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes(), f"output {k} differs {how}:\n{a}\n{b}"
    for k, (a, b) in enumerate(zip(arrays, entry)):
        np.testing.assert_array_equal(a, b, err_msg=f"input {k} changed")


def test_random_fusions_give_the_same_bits_cut_into_blocks():
    totals = {"calls": 0, "cut": 0, "kept": 0}

    @derandomized(80)
    @given(**PROGRAMS_OF_ALL_DTYPES, layout=LAYOUTS, seed=st.integers(0, 2**16))
    def check(shapes, dtypes, steps, layout, seed):
        fd, arrays, others = random_program(shapes, dtypes, steps, layout, seed, sets=2)
        entry = [a.copy() for a in arrays]
        expected = [e for e, spec in zip(evaluate(fd, entry), fd.outputs) if spec.visible]
        with keep_every_intermediate() as kept:
            with whole_calls():
                fd.execute(others)  # leaves its intermediates for the next call to take
                whole = fd.execute(arrays)
            for k, (got, want) in enumerate(zip(whole, expected)):
                # loose: half-precision steps round on the way, the reference does not
                want = np.asarray(want, np.float64)
                scale = max([1.0] + [float(np.max(np.abs(want[np.isfinite(want)])))] if np.isfinite(want).any() else [1.0])
                np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-2, atol=2e-2 * scale, err_msg=f"output {k} against the reference")
            with cut_into_blocks() as counts:
                cut = fd.execute(arrays)
        same_bits_inputs_unchanged(cut, whole, "cut into blocks", arrays, entry)
        totals["calls"] += counts["calls"]
        totals["cut"] += counts["cut"]
        totals["kept"] += kept["kept"]

    check()
    # most random programs end in a full reduction (no parallel loop) or a
    # reshape (a copy): a fifth of the calls split (21 of 93 when written)
    # few random programs have intermediates (the in-place random test has more)
    assert totals["cut"] >= totals["calls"] // 5 and totals["kept"] >= 4, totals


#: Random programs of pointwise steps over inputs of one shape of 2 or 3 dims: elementwise segments.
POINTWISE_PROGRAMS = dict(
    shapes=st.integers(2, 3).map(lambda rank: [[-1] * rank] * 3),
    dtypes=PROGRAMS_OF_ALL_DTYPES["dtypes"],
    steps=st.lists(st.tuples(st.sampled_from(["unary", "binary", "cast", "where"]), st.integers(0, 99), st.integers(0, 99), ALL_DTYPES), min_size=1, max_size=7),
)


def test_random_fusions_give_the_same_bits_with_dims_merged():
    """Elementwise kernels (cpu_split.why_not_elementwise) run a call on views
    with its dims merged where they lie back to back in every argument
    (runtime.cpu.merged_dims); forced on every call here, random pointwise
    programs must give the bits they give with merging off."""
    totals = {"calls": 0, "merged": 0}

    @derandomized(60)
    @given(**POINTWISE_PROGRAMS, layout=LAYOUTS, seed=st.integers(0, 2**16))
    def check(shapes, dtypes, steps, layout, seed):
        fd, arrays = random_program(shapes, dtypes, steps, layout, seed)
        entry = [a.copy() for a in arrays]
        with merging(on=False) as off:
            plain = fd.execute(arrays)
        with merging(on=True) as on, cut_into_blocks() as counts:
            merged = fd.execute(arrays)
        assert off["merged"] == 0
        same_bits_inputs_unchanged(merged, plain, "with dims merged", arrays, entry)
        totals["calls"] += counts["calls"]
        totals["merged"] += on["merged"]

    check()
    # in the reversed layout (dim 0 reversed) only a rank-3 array's last two dims merge:
    # 26 of the 60 calls merged when written
    assert totals["merged"] >= totals["calls"] // 3, totals


def view_of(values: np.ndarray, how: str, dim: int) -> np.ndarray:
    """A view holding ``values`` in a layout: "dense", "every other"
    element along ``dim`` (the last: one stride, merges), "reversed" along ``dim``
    (merges only where every dim is reversed), "transposed" (column-major:
    merges, reordered, where every array is), or "padded" rows (a gap after
    each row: the last dim merges with no other)."""
    if how == "dense":
        return values.copy()
    if how == "every other":
        shape = list(values.shape)
        shape[dim] *= 2
        wide = np.zeros(shape, values.dtype)
        index = [slice(None)] * values.ndim
        index[dim] = slice(None, None, 2)
        wide[tuple(index)] = values
        return wide[tuple(index)]
    if how == "reversed":
        index = [slice(None)] * values.ndim
        index[dim] = slice(None, None, -1)
        return np.ascontiguousarray(values[tuple(index)])[tuple(index)]
    if how == "transposed":
        return np.ascontiguousarray(values.T).T
    wide = np.zeros(values.shape[:-1] + (values.shape[-1] + 1,), values.dtype)
    wide[..., :-1] = values
    return wide[..., :-1]


VIEWS = st.sampled_from(["dense", "dense", "every other", "reversed", "transposed", "padded"])


@derandomized(60)
@example(shape=[5, 3, 1], views=[("padded", 0), ("dense", 0), ("padded", 0), ("every other", 2)], seed=1)  # rows of 1: merged away
@example(shape=[3, 1, 5], views=[("every other", 1), ("dense", 0), ("reversed", 0), ("dense", 0)], seed=2)  # one reversed: no merge
@example(shape=[5, 2, 3], views=[("transposed", 0)] * 4, seed=3)  # column-major: reordered and merged
@given(
    shape=st.lists(st.sampled_from([1, 2, 3, 5]), min_size=2, max_size=4),
    views=st.lists(st.tuples(VIEWS, st.integers(0, 3)), min_size=4, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_an_elementwise_fusion_gives_the_same_bits_with_dims_merged_in_any_layout(shape, views, seed):
    # the layouts of x, y and of the two given outputs, each its own; dims merge only
    # where they lie back to back in all four (and size-1 dims drop out)
    rank = len(shape)
    rng = np.random.default_rng(seed)
    with FusionDefinition(name="elementwise") as fd:
        elementwise_chain(fd, fd.define_tensor([-1] * rank, dtype=DataType.Float))
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    s = float(rng.standard_normal())
    laid = [view_of(v, how, dim % rank) for v, (how, dim) in zip((x, y), views)]
    expected = evaluate(fd, [x, s, y] if fd.inputs[1].kind != "tensor" else [x, y, s])
    results = {}
    for on in (False, True):
        outputs = [view_of(np.full(shape, np.nan, dtype), how, dim % rank) for dtype, (how, dim) in zip((np.float32, np.float16), views[2:])]
        arguments = [laid[0], laid[1], s] if fd.inputs[1].kind == "tensor" else [laid[0], s, laid[1]]
        with merging(on) as counts:
            got = fd.execute(arguments, outputs=outputs)
        assert all(g is o for g, o in zip(got, outputs))
        results[on] = [g.tobytes() for g in got], counts["merged"]
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g.astype(np.float64), want, rtol=2e-3, atol=2e-3)
    assert results[True][0] == results[False][0]
    np.testing.assert_array_equal(laid[0], x)
    np.testing.assert_array_equal(laid[1], y)
    # one stride over all elements: dense, every other element along the last dim; or all column-major
    layouts = {"dense" if how == "every other" and dim % rank == rank - 1 else how for how, dim in views}
    if sum(size > 1 for size in shape) >= 2 and layouts in ({"dense"}, {"transposed"}):
        assert results[True][1] == 1
