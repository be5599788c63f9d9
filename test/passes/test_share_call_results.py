"""fuser-share-call-results in the CPU pipeline (fuser_mlir/passes/share_call_results.py).

The softmax over columns (three segments) stores ``exp(x - max)`` in its
middle segment and sums it: the sum reads the stored values instead of
computing ``exp`` again; a fusion that outputs ``exp(x)`` and its column
sums does the same. Each case runs against the float64 reference (outputs
poisoned with NaN, inputs checked unchanged) and within 8 units in the last
place of the pipeline without the pass (``exp`` now runs in one loop where
libm may take its scalar variant for other elements than in the other).
Where the sum reads the stored values, the kernels call ``expf`` in the
store's loop only (:data:`SHARED` says where it does). The row softmax's
case (a value kept in a block's buffer) is in test_block_rows.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from pass_cases import FLOAT_DTYPES, FLOAT_TOLERANCE, fusion, libm_calls, pipeline_without, poisoned
from reference import evaluate

from fuser_mlir import DataType

ROWS = (1, 5, 23)
DTYPES, TOLERANCE = FLOAT_DTYPES, FLOAT_TOLERANCE


def column_softmax(fd, x, w):
    e = fd.ops.exp(x - fd.ops.max(x, dims=[0], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[0], keepdim=True))


def exp_and_its_column_sums(fd, x, w):
    e = fd.ops.exp(x)
    fd.add_output(e)
    fd.add_output(fd.ops.sum(e, dims=[0]))


CASES = (column_softmax, exp_and_its_column_sums)

#: The cases whose sum reads the stored exp values. A column softmax's
#: middle segment stores no exp values: the last segment computes them again
#: (fuser-segment's rule 6), so its exp is computed twice with or without the
#: pass; and a bfloat16 store yields the bits of the rounded value
#: (``arith.bitcast``) where the sum widens them.
SHARED = {(exp_and_its_column_sums, "float32"), (exp_and_its_column_sums, "float16")}


def expf_calls(fd, inputs) -> int:
    return libm_calls(fd.compile(inputs).program.llvm_dialect, "expf")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("build", CASES, ids=lambda build: build.__name__)
def test_a_sum_reads_the_exp_values_a_segment_stored(build, dtype, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")  # the kernels without the pass must not reach the cache
    rng = np.random.default_rng()
    fd, unshared = (fusion(build, DTYPES[dtype], [(1, 37)]) for _ in range(2))  # each serves every row count
    for rows in ROWS:
        x = rng.standard_normal((rows, 37)).astype(DTYPES[dtype].numpy)
        entry = x.copy()
        expected = evaluate(fd, [x])
        got = fd.execute([x], outputs=poisoned(fd, expected))
        for g, want in zip(got, expected):
            np.testing.assert_allclose(g.astype(np.float64), want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * rows, err_msg=f"{rows} rows")
        np.testing.assert_array_equal(x, entry)
        with monkeypatch.context() as m:
            pipeline_without(m, "fuser-share-call-results")
            recomputed = unshared.execute([x], outputs=poisoned(unshared, expected))
            calls = expf_calls(unshared, [x])
        for g, u in zip(got, recomputed):
            np.testing.assert_array_equal(g.view(np.uint8), u.view(np.uint8), err_msg=f"{rows} rows")
        if (build, dtype) in SHARED:  # the sum's calls are gone (8 + 1 of them: fuser-unroll-jam-reductions copies its body)
            assert expf_calls(fd, [x]) == 1 < calls
        else:
            assert expf_calls(fd, [x]) == calls


def test_a_sum_of_stored_exp_values_on_two_threads(monkeypatch):
    """Large enough to split along the columns on two threads: each thread's
    sum reads the exp values its own columns stored."""
    monkeypatch.setenv("FUSER_CPU_THREADS", "2")
    rng = np.random.default_rng()
    x = rng.standard_normal((701, 1023)).astype(np.float32)
    fd = fusion(exp_and_its_column_sums, DataType.Float, [x.shape])
    entry = x.copy()
    expected = evaluate(fd, [x])
    got = fd.execute([x], outputs=poisoned(fd, expected))
    compiled = fd.compile([x])
    assert compiled.program.kernels[f"{fd.name}_seg0"].split == (1, 1, 0)
    assert libm_calls(compiled.program.llvm_dialect, "expf") == 1
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(x, entry)


def a_mask_and_its_count(fd, x, w):
    mask = fd.ops.exp(x) > 2.0
    fd.add_output(mask)
    fd.add_output(fd.ops.sum(mask, dims=[1]))


def one_value_cast_to_two_integer_types(fd, x, w):
    e = fd.ops.exp(x)
    fd.add_output(fd.ops.cast(e, DataType.Int))
    fd.add_output(fd.ops.cast(e, DataType.Int32))


@pytest.mark.parametrize("build", [a_mask_and_its_count, one_value_cast_to_two_integer_types], ids=lambda build: build.__name__)
def test_values_that_differ_in_type_alone_are_not_shared(build, monkeypatch):
    """A Bool output stored as i8 and its sum widened to i64, or one exp cast
    to i64 and to i32, had one key: the second nest read the first one's
    buffer of the other type, and the fusion failed to compile."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    x = np.random.default_rng().standard_normal((23, 37)).astype(np.float32)
    fd = fusion(build, DataType.Float, [x.shape])
    expected = evaluate(fd, [x])
    got = fd.execute([x])
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    near = np.abs(np.exp(x.astype(np.float64)) - np.rint(np.exp(x.astype(np.float64)))) < 1e-4  # float32's exp may round across
    if build is a_mask_and_its_count:
        mask, count = got
        np.testing.assert_array_equal(mask[~near], expected[0][~near])
        np.testing.assert_array_equal(count, mask.sum(axis=1))
    else:
        for g, want in zip(got, expected):
            np.testing.assert_array_equal(g[~near], want[~near])


def squarings(count: int, call_at: int) -> str:
    """A function of one generic whose body squares its input ``count``
    times, ``expf`` of the ``call_at``-th square in their place, then adds
    the other input."""
    lines = []
    for k in range(count):
        square = f"arith.mulf %v{k}, %v{k} : f32"
        lines.append(f"      %v{k + 1} = " + (f"func.call @expf(%v{k}) : (f32) -> f32" if k == call_at else square))
    chain = "\n".join(lines)
    return f"""
func.func private @expf(f32) -> f32
func.func @f(%x: memref<?xf32>, %w: memref<?xf32>, %out: memref<?xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}} ins(%x, %w : memref<?xf32>, memref<?xf32>) outs(%out : memref<?xf32>) {{
    ^bb0(%v0: f32, %w0: f32, %o: f32):
{chain}
      %last = arith.addf %v{count}, %w0 : f32
      linalg.yield %last : f32
  }}
  return
}}"""


def the_generic(text: str, check):
    """``check(g)`` on the one generic of ``text`` (:func:`squarings`)."""
    from fuser_mlir._mlir import ir
    from fuser_mlir.lowering.gpu_schedule import Generic

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        generic = list(module.body.operations[1].regions[0].blocks[0].operations)[0]
        check(Generic.of(generic.operation))


def test_a_value_that_reads_one_value_twice_has_that_values_leaves_once():
    """Each key listed its operands' leaves one after the other, duplicates
    and all: a body where each value reads the one before twice listed its
    input 2^n times, and a bfloat16 row program of three stages (its last
    nests compute the earlier stages again) ran out of memory as it
    compiled. Here 2^24 entries before; one now."""
    from fuser_mlir.passes.share_call_results import _keys, _Leaf

    def check(g):
        keys, leaves = _keys(g, {})
        body = list(g.body.operations)
        x, w = g.inputs
        assert leaves[keys[body[23].results[0]]] == [_Leaf(x, g.maps[0])]
        assert leaves[keys[body[24].results[0]]] == [_Leaf(x, g.maps[0]), _Leaf(w, g.maps[1])]

    the_generic(squarings(24, call_at=-1), check)


@pytest.mark.parametrize("call_at", [-1, 0, 30], ids=["no call", "a call first", "a call halfway"])
def test_the_values_computed_with_a_call_are_found_in_one_pass(call_at):
    """They were found by a walk up from each value, which took 2^n steps
    in such a body: 60 squarings would never finish."""
    from fuser_mlir.passes.share_call_results import _with_call

    def check(g):
        body = list(g.body.operations)
        expected = set() if call_at < 0 else {op.results[0] for op in body[call_at:-1]}
        assert _with_call(g) == expected

    the_generic(squarings(60, call_at), check)


def test_a_bfloat16_row_program_of_three_stages_compiles_and_runs_right(monkeypatch):
    """The program that ran out of memory (sweep56/misuse.py, seed 61)."""
    from devices import assert_unchanged
    from random_programs import assert_matches_reference, row_program

    monkeypatch.setenv("FUSER_CACHE", "0")
    stages = [(["exp", "sin"], "max", True, "add", False), (["exp", "exp"], "min", True, "sub", False), (["exp", "sin"], "max", True, "add", False)]
    fd = row_program(DataType.BFloat16, 2, stages, False, "the last value")
    x = np.random.default_rng().standard_normal((5, 128)).astype(DataType.BFloat16.numpy)
    entry = x.copy()
    (expected,) = evaluate(fd, [x], rounded=True)
    (got,) = fd.execute([x], outputs=poisoned(fd, [expected]))
    assert_matches_reference(got, expected, "the row program")
    assert_unchanged(x, entry, "the input")
