"""fuser-block-rows in the CPU pipeline (fuser_mlir/passes/block_rows.py).

Segments whose loop nests share a buffer (a row softmax, a layer norm, two
outputs of one input) run block by block of rows (of dim 1 within each index
of dim 0 where that index alone is larger than a block). Each case runs with
blocks of one row (``block-bytes=1``) and of a few rows, on row counts that
leave a short last block (one compiled kernel for all but the count of 1,
whose size-1 dim is a key of its own), against the float64 reference
(outputs poisoned with NaN, inputs checked unchanged), and is the same to
the bit as the pipeline's without the pass (``block-bytes=0``): blocking
changes which rows a call sees, never the arithmetic of an element. In a
block whose exp values take at most ``KEEP_BYTES``, a softmax computes
``exp`` once an element (``fuser-share-call-results``) rather than twice, in
the sum's loop; its values are the same bits in any loop (a libm function
has one vector variant, fuser_mlir/lowering/vector_library.py), so the
results are too.

Two random tests (Hypothesis, derandomized, no shrinking) compile random
fusions with and without blocks, libm's vector variants on (the host's),
and require the same bits of both
(outputs and inputs written in place) and the float64 reference: the
programs of test/random_programs.py, and row programs of softmax's and the
norms' shape (random_programs.row_program: stages of unary ops, a kept
reduction and a binary op, over rows or columns, a weight, outputs written
into the input), most of which run in blocks.
"""

from __future__ import annotations

import numpy as np
import pytest
from blocks import cut_into_blocks
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st
from pass_cases import FLOAT_DTYPES, FLOAT_TOLERANCE, fusion, libm_calls, pipeline_without, poisoned, with_pass_option
from random_programs import PROGRAMS_OF_ALL_DTYPES, ROW_PROGRAMS, derandomized, input_shapes, random_fusion, random_input, row_inputs, row_program, row_shapes
from reference import evaluate, visible_then_written

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.errors import InputError
from fuser_mlir.passes import share_call_results

ROWS = (1, 5, 23)
BLOCK_BYTES = (1, 1000)  # one row a block; a few rows a block (rows of 37 to 148 bytes a buffer)
DTYPES, TOLERANCE = FLOAT_DTYPES, FLOAT_TOLERANCE


def row_softmax(fd, x, w):
    e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))


def layer_norm(fd, x, w):
    mean = fd.ops.sum(x, dims=[1], keepdim=True) / 37.0
    d = x - mean
    var = fd.ops.sum(d * d, dims=[1], keepdim=True) / 37.0
    fd.add_output(d * fd.ops.rsqrt(var + 1e-5) * fd.ops.broadcast(w, [True, False]))


def two_outputs_of_one_input(fd, x, w):
    fd.add_output(fd.ops.exp(x))
    fd.add_output(fd.ops.sum(x, dims=[1]))


def softmax_of_a_3d_array(fd, x, w):
    e = fd.ops.exp(x - fd.ops.max(x, dims=[2], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[2], keepdim=True))


def softmax_of_a_batch_of_one(fd, x, w):
    # one index of dim 0 holds all the rows: with blocks smaller than it, its rows are cut along dim 1
    softmax_of_a_3d_array(fd, x, w)


CASES = {
    row_softmax: lambda rows: [(rows, 37)],
    layer_norm: lambda rows: [(rows, 37), (37,)],
    two_outputs_of_one_input: lambda rows: [(rows, 37)],
    softmax_of_a_3d_array: lambda rows: [(rows, 3, 7)],
    softmax_of_a_batch_of_one: lambda rows: [(1, rows, 7)],
}


#: The cases whose blocks compute exp once an element (fuser-share-call-results).
SHARED_EXP = (row_softmax, softmax_of_a_3d_array, softmax_of_a_batch_of_one)


def with_block_bytes(monkeypatch, block_bytes: int):
    """Compile the kernels made inside with ``fuser-block-rows{block-bytes=...}``."""
    with_pass_option(monkeypatch, "fuser-block-rows", "block-bytes", block_bytes)


@pytest.mark.parametrize("block_bytes", BLOCK_BYTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("build", CASES, ids=lambda build: build.__name__)
def test_blocks_of_rows_match_the_reference_and_the_unblocked_bits(build, dtype, block_bytes, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")  # kernels of other block sizes must not reach the cache
    rng = np.random.default_rng()
    fd, whole = (fusion(build, DTYPES[dtype], CASES[build](1)) for _ in range(2))
    for rows in ROWS:
        shapes = CASES[build](rows)
        inputs = [rng.standard_normal(shape).astype(DTYPES[dtype].numpy) for shape in shapes]
        entry = [np.copy(a) for a in inputs]
        with monkeypatch.context() as m:
            with_block_bytes(m, block_bytes)
            expected = evaluate(fd, inputs)
            got = fd.execute(inputs, outputs=poisoned(fd, expected))
            blocked = fd.compile(inputs).program.llvm_dialect
            assert "_rows" in blocked, "the segment was not blocked"
        for g, want in zip(got, expected):
            np.testing.assert_allclose(g.astype(np.float64), want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype], err_msg=f"{rows} rows")
        for a, before in zip(inputs, entry):
            np.testing.assert_array_equal(a, before)
        with monkeypatch.context() as m:
            with_block_bytes(m, 0)
            unblocked = whole.execute(inputs, outputs=poisoned(whole, expected))
            unblocked_code = whole.compile(inputs).program.llvm_dialect
            assert "_rows" not in unblocked_code
        if build in SHARED_EXP:  # fuser-share-call-results: one call where the block keeps exp, two where it would not fit
            # (fuser-block-sums keeps a copy of each sum's loop for rows of 2048 or less: one more call a sum)
            assert (libm_calls(blocked, "expf"), libm_calls(unblocked_code, "expf")) == (2 * 1 + 2 + 1, 2 + 1)
        for g, u in zip(got, unblocked):
            np.testing.assert_array_equal(g.view(np.uint8), u.view(np.uint8), err_msg=f"{rows} rows")


@pytest.mark.parametrize("view", ["reversed rows", "every other column", "a reversed output"])
def test_blocks_of_rows_read_and_write_strided_and_reversed_views(view, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    with_block_bytes(monkeypatch, 1)
    rng = np.random.default_rng()
    base = rng.standard_normal((23, 74)).astype(np.float32)
    x = {"reversed rows": base[::-1], "every other column": base[:, ::2], "a reversed output": base[:, :37]}[view]
    w = rng.standard_normal(x.shape[1]).astype(np.float32)
    entry = base.copy()
    fd = fusion(layer_norm, DataType.Float, [x.shape, w.shape])
    (expected,) = evaluate(fd, [x, w])
    storage = np.full((x.shape[0] * 2, x.shape[1]), np.nan, np.float32)
    out = storage[::-2] if view == "a reversed output" else storage[: x.shape[0]]
    fd.execute([x, w], outputs=[out])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(base, entry)
    untouched = storage[0::2] if view == "a reversed output" else storage[x.shape[0] :]
    assert np.isnan(untouched).all(), "rows outside the output view were written"


def test_a_layer_norm_written_into_its_input_in_blocks(monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    with_block_bytes(monkeypatch, 1)
    rng = np.random.default_rng()
    x, w = rng.standard_normal((23, 37)).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    with FusionDefinition(name="layer_norm_in_place") as fd:
        tx = fd.define_tensor([-1, -1], dtype=DataType.Float)
        tw = fd.define_tensor([-1], dtype=DataType.Float)
        mean = fd.ops.sum(tx, dims=[1], keepdim=True) / 37.0
        d = tx - mean
        var = fd.ops.sum(d * d, dims=[1], keepdim=True) / 37.0
        fd.add_output(d * fd.ops.rsqrt(var + 1e-5) * fd.ops.broadcast(tw, [True, False]), tx)
    (expected,) = evaluate(fd, [x, w])
    w_entry = w.copy()
    assert fd.execute([x, w]) == []
    np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(w, w_entry)


def test_nests_on_arrays_of_other_row_counts_run_whole(monkeypatch):
    """A softmax of x and, in the same segment, y * 2 of another number of
    rows: the split arguments disagree on their rows, so the body runs once
    on the whole arrays."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    with_block_bytes(monkeypatch, 1)
    rng = np.random.default_rng()
    with FusionDefinition(name="two_lengths") as fd:
        tx = fd.define_tensor([-1, -1], dtype=DataType.Float)
        ty = fd.define_tensor([-1, -1], dtype=DataType.Float)
        row_softmax(fd, tx, None)
        fd.add_output(ty * 2.0)
    x, y = rng.standard_normal((23, 37)).astype(np.float32), rng.standard_normal((9, 37)).astype(np.float32)
    compiled = fd.compile([x, y])
    assert compiled.num_segments == 1 and "_rows" in compiled.program.llvm_dialect
    expected = evaluate(fd, [x, y])
    got = fd.execute([x, y], outputs=poisoned(fd, expected))
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


def test_a_segment_of_one_loop_nest_is_not_blocked(monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    with FusionDefinition(name="one_nest") as fd:
        tx = fd.define_tensor([-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(tx) * 2.0 + 1.0)
    x = np.ones((4, 5), np.float32)
    assert "_rows" not in fd.compile([x]).program.llvm_dialect


def test_a_softmax_on_two_threads_runs_blocks_of_rows_in_each(monkeypatch):
    """At the pipeline's block size: a call large enough to run on two
    threads (fuser_mlir.runtime.cpu.BLOCK_BYTES a thread at least), each
    thread's rows in several blocks, the last one short."""
    monkeypatch.setenv("FUSER_CPU_THREADS", "2")
    rng = np.random.default_rng()
    x = rng.standard_normal((1023, 701)).astype(np.float32)  # 2.9 MB in, as much out: about 6 blocks a thread
    fd = fusion(row_softmax, DataType.Float, [x.shape])
    entry = x.copy()
    (expected,) = evaluate(fd, [x])
    (got,) = fd.execute([x], outputs=poisoned(fd, [expected]))
    compiled = fd.compile([x])
    assert compiled.program.kernels[f"{fd.name}_seg0"].split == (0, 0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(x, entry)


def test_a_softmax_written_into_its_input_in_blocks(monkeypatch):
    """The quotients read exp from the sum's buffer, then overwrite the input
    the sum read, block by block."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    with_block_bytes(monkeypatch, 1000)
    rng = np.random.default_rng()
    x = rng.standard_normal((23, 37)).astype(np.float32)
    with FusionDefinition(name="softmax_in_place") as fd:
        tx = fd.define_tensor([-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(tx - fd.ops.max(tx, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True), tx)
    (expected,) = evaluate(fd, [x])
    # kept; and where it would not fit (fuser-block-sums: each sum's loop twice)
    assert libm_calls(fd.compile([x]).program.llvm_dialect, "expf") == 2 * 1 + 2 + 1
    assert fd.execute([x]) == []
    np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-7)


def test_blocks_whose_kept_values_would_not_fit_the_cache_compute_them_twice(monkeypatch):
    """fuser-share-call-results keeps a block's exp values only up to
    KEEP_BYTES (a block holds at least one row, however long); past it the
    block runs the sum and the quotients as they were: the same bits as the
    pipeline without that pass."""
    from fuser_mlir.passes import share_call_results

    monkeypatch.setenv("FUSER_CACHE", "0")
    with_block_bytes(monkeypatch, 1000)
    monkeypatch.setattr(share_call_results, "KEEP_BYTES", 16)  # fewer than a row's 37 floats
    rng = np.random.default_rng()
    x = rng.standard_normal((23, 37)).astype(np.float32)
    fd = fusion(row_softmax, DataType.Float, [x.shape])
    (expected,) = evaluate(fd, [x])
    (got,) = fd.execute([x], outputs=poisoned(fd, [expected]))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
    with monkeypatch.context() as m:
        pipeline_without(m, "fuser-share-call-results")
        twice = fusion(row_softmax, DataType.Float, [x.shape])
        (unshared,) = twice.execute([x], outputs=poisoned(twice, [expected]))
    np.testing.assert_array_equal(got.view(np.uint32), unshared.view(np.uint32))



def blocked_against_whole(make, arrays, block_bytes: int, keep: bool) -> bool:
    """Run the fusion ``make()`` defines on copies of ``arrays`` compiled
    with blocks of ``block_bytes`` (fuser-share-call-results keeping its
    values, or never where not ``keep``: KEEP_BYTES 0) and without blocks,
    given outputs poisoned, and check that both give the same bits (outputs
    and inputs written in place), also when the runtime cuts each call of
    the blocked code into blocks on threads (test/blocks.py), near the
    float64 reference, and leave the other inputs as they were. Returns
    whether the blocked code has blocks and how many of its calls the
    runtime cut."""
    fd = make()
    visible, written, written_at = visible_then_written(fd, evaluate(fd, arrays))
    results = {}
    for label, bytes_ in (("blocked", block_bytes), ("whole", 0)):
        with pytest.MonkeyPatch.context() as m:
            with_block_bytes(m, bytes_)
            m.setattr(share_call_results, "KEEP_BYTES", share_call_results.KEEP_BYTES if keep else 0)
            fd, inputs = make(), [a.copy() for a in arrays]
            got = fd.execute(inputs, outputs=poisoned(fd, visible))
            results[label] = got + [inputs[k] for k in written_at]
            if label == "blocked":
                code = fd.compile(inputs).program.llvm_dialect
                with cut_into_blocks() as counts:  # and each call cut into blocks on threads by the runtime
                    cut = [a.copy() for a in arrays]
                    results["blocked, cut"] = fd.execute(cut, outputs=poisoned(fd, visible)) + [cut[k] for k in written_at]
        for k, (a, b) in enumerate(zip(inputs, arrays)):
            if k not in written_at:
                np.testing.assert_array_equal(a, b, err_msg=f"input {k} changed")
    for k, (got, want) in enumerate(zip(results["blocked"], visible + written)):
        # loose: half-precision steps round on the way, the reference does not;
        # elements past the dtype's range are left to the bitwise check
        want = np.asarray(want, np.float64)
        inside = np.abs(want) < (np.finfo(got.dtype).max / 4 if got.dtype.kind == "f" else np.inf)
        scale = max(1.0, float(np.max(np.abs(want[inside]), initial=0.0)))
        np.testing.assert_allclose(np.asarray(got, np.float64)[inside], want[inside], rtol=2e-2, atol=2e-2 * scale, err_msg=f"result {k} against the reference")
    for label in ("blocked", "blocked, cut"):
        for k, (a, b) in enumerate(zip(results[label], results["whole"])):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), f"result {k} differs {label} (blocks of {block_bytes} bytes):\n{a}\n{b}"
    return "_rows" in code, counts["cut"]


@pytest.fixture
def no_disk_cache(monkeypatch):
    """Kernels of other block sizes must not reach the disk cache."""
    monkeypatch.setenv("FUSER_CACHE", "0")


def test_random_fusions_in_blocks_of_rows_give_the_unblocked_bits(no_disk_cache):
    """Random fusions of test/random_programs.py (reductions, casts,
    permutes, reshapes, libm calls, every dtype)."""
    blocked = []

    @settings(derandomized(60), phases=[Phase.explicit, Phase.generate])  # a shrink costs minutes
    @given(**PROGRAMS_OF_ALL_DTYPES, block_bytes=st.sampled_from(BLOCK_BYTES), keep=st.booleans(), seed=st.integers(0, 2**16))
    def check(shapes, dtypes, steps, block_bytes, keep, seed):
        rng = np.random.default_rng(seed)
        fd = random_fusion(shapes, dtypes, steps)
        concrete = input_shapes(fd, rng)
        try:
            fd.check_input_shapes(concrete)
        except InputError:
            assume(False)  # a flattened dim bound to another size
        arrays = [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, concrete)]
        blocked.append(blocked_against_whole(lambda: random_fusion(shapes, dtypes, steps), arrays, block_bytes, keep))

    check()
    ran = sum(b for b, _ in blocked)
    assert ran >= 4, f"{ran} of {len(blocked)} fusions ran in blocks"  # 7 of the 60 do


def test_random_row_programs_in_blocks_of_rows_give_the_unblocked_bits(no_disk_cache):
    """Random fusions of the shapes the pass blocks (several loop nests over
    the rows of one input: softmax, the norms), on row counts and lengths
    that leave short blocks, rows of one column and batches of one."""
    blocked = []

    @settings(derandomized(60), phases=[Phase.explicit, Phase.generate])  # a shrink costs minutes
    @given(**ROW_PROGRAMS, shape=row_shapes([1, 3, 37]), block_bytes=st.sampled_from(BLOCK_BYTES), keep=st.booleans(), seed=st.integers(0, 2**16))
    def check(dtype, stages, weight, outputs, shape, block_bytes, keep, seed):
        arrays = row_inputs(dtype, shape, weight, np.random.default_rng(seed))
        make = lambda: row_program(dtype, len(shape), stages, weight, outputs)  # noqa: E731
        blocked.append(blocked_against_whole(make, arrays, block_bytes, keep))

    check()
    ran, cut = sum(b for b, _ in blocked), sum(b and c > 0 for b, c in blocked)
    assert ran >= 30 and cut >= 20, f"of {len(blocked)} fusions {ran} ran in blocks, {cut} of them also cut on threads"  # 37, 27 of the 60
