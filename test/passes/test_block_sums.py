"""fuser-block-sums in the CPU pipeline (fuser_mlir/passes/block_sums.py).

Long float32 sums and means on the CPU come within the float32 rounding of
the exact result (2**-22 relative; a float64 NumPy reference from the
original inputs, outputs poisoned with NaN, inputs checked unchanged): a
sum over the last dim of rows longer than a block, a full sum of a vector,
and full sums of 2-D and 3-D arrays, whose float32 accumulator used to
lose up to 13% (a full sum of 400000x10 positive values: 3e-5 here). Rows
of a block or less run the loop as it was: the same bits as without the
pass. Column sums (the reduced dim outside the parallel one) are left to
fuser-unroll-jam-reductions and keep their accuracy (NumPy's own is
alike).
"""

from __future__ import annotations

import numpy as np
import pytest
from pass_cases import pipeline_without, poisoned, with_pass_option
from reference import evaluate

from fuser_mlir import DataType, FusionDefinition

#: Twice float32's unit roundoff: the result is the exact sum rounded, and
#: a float64 total rounds once more at most.
RTOL = 2.0**-22


def sum_and_mean(rank: int, dims: list[int]) -> FusionDefinition:
    with FusionDefinition(name=f"sum_and_mean_{rank}d") as fd:
        x = fd.define_tensor(shape=[-1] * rank, dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=dims))
        fd.add_output(fd.ops.mean(x, dims=dims))
    return fd


@pytest.mark.parametrize(
    "shape, dims",
    [((4_000_000,), [0]), ((400_000, 10), [0, 1]), ((4, 1_000_000), [1]), ((3, 500_000, 2), [0, 1, 2]), ((2, 3, 300_000), [2]), ((700, 3000), [0, 1])],
    ids=str,
)
def test_long_float32_sums_are_within_float32_rounding(shape, dims, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    rng = np.random.default_rng()
    x = rng.uniform(0.0, 1.0, shape).astype(np.float32)  # positive: the sum is never small against its terms
    entry = x.copy()
    fd = sum_and_mean(len(shape), dims)
    expected = evaluate(fd, [x])
    got = fd.execute([x], outputs=poisoned(fd, expected))
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=RTOL, atol=0)
    np.testing.assert_array_equal(x, entry)


def test_signed_sums_are_within_float32_rounding_of_their_magnitude(monkeypatch):
    """Standard normal values: the error is measured against the sum of
    the magnitudes (the sum itself may be near 0)."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    x = np.random.default_rng().standard_normal((3, 2_000_000)).astype(np.float32)
    fd = sum_and_mean(2, [1])
    expected = evaluate(fd, [x])
    total, _ = fd.execute([x], outputs=poisoned(fd, expected))
    scale = np.abs(x.astype(np.float64)).sum(axis=1)
    assert np.all(np.abs(total - expected[0]) <= 4 * RTOL * scale)


@pytest.mark.parametrize("columns", [1, 37, 2048])
def test_rows_of_a_block_or_less_give_the_bits_of_the_loop_as_it_was(columns, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    x = np.random.default_rng().standard_normal((300, columns)).astype(np.float32)
    fd = sum_and_mean(2, [1])
    expected = evaluate(fd, [x])
    got = fd.execute([x], outputs=poisoned(fd, expected))
    with monkeypatch.context() as m:
        pipeline_without(m, "fuser-block-sums")
        plain = sum_and_mean(2, [1])
        unblocked = plain.execute([x], outputs=poisoned(plain, expected))
    scale = float(np.abs(x.astype(np.float64)).sum(axis=1).max())  # the rows' sums may cancel
    for g, u, want in zip(got, unblocked, expected):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=2e-6 * scale)
        np.testing.assert_array_equal(g.view(np.uint32), u.view(np.uint32))


def test_a_row_softmax_and_a_layer_norm_of_long_rows_match_the_reference_in_small_blocks(monkeypatch):
    """Blocks of 64 elements: every row runs block by block, also where
    fuser-share-call-results keeps the sum's exp values."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    with_pass_option(monkeypatch, "fuser-block-sums", "block", 64)
    with FusionDefinition(name="softmax_and_norm") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=True)
        fd.add_output((x - mean) * fd.ops.rsqrt(var + 1e-5))
    x = np.random.default_rng().standard_normal((37, 1000)).astype(np.float32)
    entry = x.copy()
    expected = evaluate(fd, [x])
    got = fd.execute([x], outputs=poisoned(fd, expected))
    assert "fpext" in fd.compile([x]).program.llvm_dialect  # the blocks' float64 totals
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, entry)
