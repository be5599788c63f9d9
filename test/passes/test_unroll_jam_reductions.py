"""fuser-unroll-jam-reductions in the CPU pipeline (fuser_mlir/passes/unroll_jam_reductions.py).

Reductions whose last reduced dim has a parallel dim inside it (a column
sum, a max over the middle dim of a 3-D array, a sum over its first two
dims) run jammed, 8 rows an iteration and the rows left over after them.
Each case runs on row counts around multiples of 8 (one compiled kernel for
all but the count of 1, whose size-1 dim is a key of its own) against the
float64 reference (outputs poisoned with NaN, inputs checked unchanged).
Where reassociating gives the same result (an integer sum, a max or a min),
the result is also the same to the bit as the pipeline's without the pass
(``factor=1``); a float sum's rows are added as a tree, 8 at a time, so its
rounding may differ.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from devices import assert_unchanged
from pass_cases import fusion, poisoned, with_pass_option
from reference import evaluate

from fuser_mlir import DataType
from fuser_mlir._mlir import ir
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.dialect import make_context
from fuser_mlir.lowering.cpu import cpu_pipeline, segments_only, split_pipeline
from fuser_mlir.pipeline import run_pipeline

ROWS = (1, 7, 8, 9, 23)
DTYPES = {"float32": DataType.Float, "float16": DataType.Half, "bfloat16": DataType.BFloat16, "int32": DataType.Int32}
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2, "int32": 0}


def sum_of_columns(fd, x, w):
    fd.add_output(fd.ops.sum(x, dims=[0]))


def max_of_columns_kept(fd, x, w):
    fd.add_output(fd.ops.max(x, dims=[0], keepdim=True))


def min_over_the_middle(fd, x, w):
    fd.add_output(fd.ops.min(x, dims=[1]))


def sum_over_the_first_two(fd, x, w):
    # two reduced dims: the last of them (dim 1) is jammed
    fd.add_output(fd.ops.sum(x, dims=[0, 1]))


def weighted_sum_of_columns(fd, x, w):
    # a fused producer and a weight read along the columns, in every copy of the body
    fd.add_output(fd.ops.sum(x * w + x, dims=[0]))


CASES = {
    sum_of_columns: lambda rows: [(rows, 37)],
    max_of_columns_kept: lambda rows: [(rows, 37)],
    min_over_the_middle: lambda rows: [(3, rows, 5)],
    sum_over_the_first_two: lambda rows: [(3, rows, 5)],
    weighted_sum_of_columns: lambda rows: [(rows, 37), (37,)],
}


def random_inputs(dtype: DataType, shapes, rng) -> list[np.ndarray]:
    if dtype.is_int:
        return [rng.integers(-50, 50, shape).astype(dtype.numpy) for shape in shapes]
    return [rng.standard_normal(shape).astype(dtype.numpy) for shape in shapes]


def run(fd, inputs, expected) -> list[np.ndarray]:
    return fd.execute(inputs, outputs=poisoned(fd, expected))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("build", CASES, ids=lambda build: build.__name__)
def test_jammed_reductions_match_the_reference_and_exact_ones_the_unjammed_bits(build, dtype, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")  # the factor=1 kernels must not reach the cache
    rng = np.random.default_rng()
    fd, unjammed_fd = (fusion(build, DTYPES[dtype], CASES[build](1)) for _ in range(2))
    for rows in ROWS:
        shapes = CASES[build](rows)
        inputs = random_inputs(DTYPES[dtype], shapes, rng)
        if dtype != "int32" and build is max_of_columns_kept:
            inputs[0][rows // 2, 3] = np.nan  # NaN propagates through a max, wherever its row falls
        entry = [np.copy(a) for a in inputs]
        expected = evaluate(fd, inputs)
        got = run(fd, inputs, expected)
        for g, want in zip(got, expected):
            np.testing.assert_allclose(g.astype(np.float64), want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * rows, err_msg=f"{rows} rows")
        for i, (a, before) in enumerate(zip(inputs, entry)):
            assert_unchanged(a, before, f"input {i}, {rows} rows")  # byte for byte: the NaN put in a bfloat16 input too
        with monkeypatch.context() as m:
            with_pass_option(m, "fuser-unroll-jam-reductions", "factor", 1)
            unjammed = run(unjammed_fd, inputs, expected)
        if dtype == "int32" or build in (max_of_columns_kept, min_over_the_middle):
            for g, u in zip(got, unjammed):
                np.testing.assert_array_equal(g.view(np.uint8), u.view(np.uint8), err_msg=f"{rows} rows")


def test_a_column_sum_becomes_a_generic_of_8_rows_an_iteration_and_one_of_the_rest():
    compiled = compile_fusion(fusion(sum_of_columns, DataType.Float, [(9, 4)]), device="cpu")
    with make_context() as context, ir.Location.unknown():
        lowered, _ = segments_only(ir.Module.parse(compiled.stages["outlined"], context=context))
        before, loops = split_pipeline(cpu_pipeline())
        assert "fuser-unroll-jam-reductions, convert-linalg-to-loops" in loops
        run_pipeline(lowered, before + ", fuser-unroll-jam-reductions")
        text = str(lowered)
    inputs = [ins.split(":")[0].count("%") for ins in re.findall(r"linalg\.generic .* ins\(([^)]*)\)", text)]
    assert inputs == [8, 1]
    assert text.count("memref.subview") == 9


@pytest.mark.parametrize("view", ["reversed rows", "every other column", "reversed columns"])
def test_jammed_column_sums_read_strided_and_reversed_views(view):
    rng = np.random.default_rng()
    base = rng.standard_normal((23, 74)).astype(np.float32)
    x = {"reversed rows": base[::-1], "every other column": base[:, ::2], "reversed columns": base[:, ::-1]}[view]
    entry = base.copy()
    fd = fusion(weighted_sum_of_columns, DataType.Float, [x.shape, (x.shape[1],)])
    w = rng.standard_normal(x.shape[1]).astype(np.float32)
    expected = evaluate(fd, [x, w])
    (got,) = run(fd, [x, w], expected)
    np.testing.assert_allclose(got, expected[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(base, entry)
