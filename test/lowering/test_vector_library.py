"""One value an element for each libm function on the CPU (fuser_mlir/lowering/vector_library.py).

LLVM vectorises a loop nest that calls libm through libmvec's SIMD variants,
and leaves other nests (one that reads its input transposed) and the
elements after a loop's last whole vector to scalar calls. libmvec's
variants and scalar libm differ in the last place, so one value computed in
two nests used to differ between them. Every call now goes through one
variant: ``f(x)`` stored once row by row and once transposed gives the same
bits, for every libm function, ``float32`` and ``float64``, on rows that end
in a partial vector; and a comparison between two copies of a value comes
out as the stored values say (the fuzzer's case). Outputs are poisoned with
NaN and checked against the float64 reference, inputs checked unchanged;
the host's vector library is used (and checked to be, where it has one).
"""

from __future__ import annotations

import numpy as np
import pytest
from pass_cases import poisoned
from reference import evaluate

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.lowering.scalar import LIBM_CALLS
from fuser_mlir.lowering.vector_library import FUNCTIONS, host_vector_library

DTYPES = {"float32": (DataType.Float, np.float32, 1e-5), "float64": (DataType.Double, np.float64, 1e-12)}


def test_every_libm_call_of_the_lowering_has_a_vector_variant() -> None:
    """The list of functions the wrapper knows is the lowering's."""
    assert set(LIBM_CALLS) == set(FUNCTIONS)


def two_loop_nests(name: str, dtype: DataType) -> FusionDefinition:
    """``f(x)`` (or ``f(x, y)``) as an output, and transposed as another."""
    with FusionDefinition(name=f"{name}_twice") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        y = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        value = getattr(fd.ops, name)(x, y) if FUNCTIONS[name] == 2 else getattr(fd.ops, name)(x) + y
        fd.add_output(value)
        fd.add_output(fd.ops.permute(value, [1, 0]))
    return fd


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_libm_function_gives_the_same_bits_in_every_loop(name, dtype, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE", "0")
    fuser_dtype, numpy_dtype, tolerance = DTYPES[dtype]
    rng = np.random.default_rng()
    # every function is defined on (0.05, 0.95); 37 columns end in a partial vector
    x = rng.uniform(0.05, 0.95, (29, 37)).astype(numpy_dtype)
    y = rng.uniform(0.5, 2.0, (29, 37)).astype(numpy_dtype)
    entry = [x.copy(), y.copy()]
    fd = two_loop_nests(name, fuser_dtype)
    expected = evaluate(fd, [x, y])
    rows, transposed = fd.execute([x, y], outputs=poisoned(fd, expected))
    np.testing.assert_allclose(rows, expected[0], rtol=tolerance, atol=tolerance)  # f(x) + y may cancel
    np.testing.assert_array_equal(rows.view(np.uint8), np.ascontiguousarray(transposed.T).view(np.uint8))
    if host_vector_library():  # the calls went through the wrapper
        assert f"@fuser.{LIBM_CALLS[name][str(numpy_dtype.__name__).replace('float', 'f')]}(" in fd.compile([x, y]).program.llvm_dialect
    for a, before in zip([x, y], entry):
        np.testing.assert_array_equal(a, before)


def test_a_comparison_of_two_copies_of_a_value_agrees_with_the_values(monkeypatch):
    """The fuzzer's case: ``m = maximum(l, atan(x))`` stored through
    ``reshape`` and compared with ``l`` through ``permute``; ``m > l`` came
    out true for elements whose stored ``m`` equals ``l``."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    with FusionDefinition(name="two_copies") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        low = fd.ops.log10(fd.ops.abs(x))
        m = fd.ops.maximum(low, fd.ops.atan(x))
        fd.add_output(fd.ops.reshape(m, [-1, 8]))
        fd.add_output(fd.ops.permute(m > low, [1, 0]))
        fd.add_output(low)
    rng = np.random.default_rng()
    for _ in range(20):
        x = rng.standard_normal((8, 4)).astype(np.float32)
        entry = x.copy()
        expected = evaluate(fd, [x])
        got_m, got_greater, got_low = fd.execute([x], outputs=poisoned(fd, expected))
        np.testing.assert_allclose(got_m, expected[0], rtol=1e-5)
        np.testing.assert_allclose(got_low, expected[2], rtol=1e-5)
        np.testing.assert_array_equal(got_greater.T, got_m.reshape(8, 4) > got_low)
        np.testing.assert_array_equal(x, entry)


INTERLEAVED = "#llvm.loop_interleave<count = 4 : i32>"


@pytest.mark.parametrize("calls, chained, marked", [(1, True, 0), (2, True, 1), (6, True, 1), (2, False, 0)])
def test_inner_loops_of_chained_libm_calls_are_interleaved(calls, chained, marked, monkeypatch):
    """interleave_libm_chains: the inner loop of ``sin(sin(...(x)))`` is
    marked where a libm call reads another's result (LLVM's cost model
    leaves such loops one vector at a time, and the calls then wait on each
    other); a loop of one call, or of calls that do not read each other
    (``sin(x) * cos(x)``), is left to LLVM, and so is the loop around the
    inner one. The results match the reference either way."""
    if not host_vector_library():
        pytest.skip("no libmvec on this host: libm calls stay scalar, no wrapper to count")
    monkeypatch.setenv("FUSER_CACHE", "0")
    with FusionDefinition(name=f"sines{calls}") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = x
        for _ in range(calls):
            y = fd.ops.sin(y) * 0.5
        fd.add_output(y if chained else fd.ops.sin(x) * fd.ops.cos(x))
    rng = np.random.default_rng()
    x = rng.standard_normal((13, 37)).astype(np.float32)
    entry = x.copy()
    expected = evaluate(fd, [x])
    (got,) = fd.execute([x], outputs=poisoned(fd, expected))
    np.testing.assert_allclose(got, expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, entry)
    assert fd.compile([x]).program.llvm_dialect.count(INTERLEAVED) == marked
