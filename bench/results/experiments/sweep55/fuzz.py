"""Random fusions on sizes the test suite's random programs never reach, against the float64 reference.

    python3 bench/results/experiments/sweep55/fuzz.py DEVICE SEED SECONDS [OUT]

test/random_programs.py's programs (pointwise ops, reductions, permutes,
flattening reshapes, casts, selects over every dtype) and its row programs
(softmax's and the norms' shape), on sizes drawn from 1 to 20000 (up to 4M
elements a tensor), so that the GPU's flat, row, outer-reduction, cached and
staged schedules and their scalar tails are all reached; each input laid out
row-major or in a random other order (column-major calls are relaid or run
strided); each visible output given (poisoned with NaN) or not. Each result
is compared with test/reference.py's float64 value, at the tolerance of the
suite's row-program test (2e-2 relative, 2e-2 of the largest magnitude
absolute), elements the output's dtype cannot hold left out; the inputs must
be unchanged. Every mismatch or exception is written to OUT (default
stdout) with what reproduces it. A search, not a test: it runs for SECONDS.
"""

import sys
import time
import traceback

import numpy as np

sys.path.insert(0, "test")
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import UnsatisfiedAssumption  # noqa: E402
from random_programs import ALL_DTYPES, ROW_PROGRAMS, SHAPES, random_fusion, random_input, row_inputs, row_program, step  # noqa: E402
from reference import evaluate, visible_then_written  # noqa: E402
from devices import to_device, to_host  # noqa: E402

from fuser_mlir.errors import InputError  # noqa: E402

SIZES = [1, 2, 3, 5, 31, 64, 100, 127, 256, 1000, 1024, 4099, 8192, 20000]
MAX_ELEMENTS = 1 << 22
DEVICE, SEED, SECONDS = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
OUT = open(sys.argv[4], "a") if len(sys.argv) > 4 else sys.stdout
END = time.monotonic() + SECONDS
DEADLINE = [END - SECONDS / 2]  # the random fusions' search, then the row programs' until END
counts = {"programs": 0, "mismatches": 0, "errors": 0}


def concrete_shapes(fd, rng) -> list[tuple[int, ...]]:
    """A size for each class of bound dims (test/random_programs.input_shapes with SIZES), every input at most MAX_ELEMENTS."""
    for _ in range(20):
        chosen, shapes = {}, []
        for spec in fd.inputs:
            dims = []
            for d, size in enumerate(spec.shape):
                if size != -1:
                    dims.append(size)
                    continue
                group = next((frozenset(c) for c in fd.size_classes if (spec.index, d) in c), frozenset({(spec.index, d)}))
                statics = [fd.inputs[k].shape[e] for k, e in group if fd.inputs[k].shape[e] > 1]
                chosen.setdefault(group, statics[0] if statics else int(rng.choice(SIZES)))
                dims.append(chosen[group])
            shapes.append(tuple(dims))
        if all(np.prod(s, dtype=np.int64) <= MAX_ELEMENTS for s in shapes):
            return shapes
    raise UnsatisfiedAssumption()


def laid_out(array: np.ndarray, rng):
    """``array`` on DEVICE, row-major or (half the time, 2-D and up) with its dims in memory in a random other order."""
    if array.ndim < 2 or rng.random() < 0.5:
        return to_device(array, DEVICE)
    order = tuple(int(d) for d in rng.permutation(array.ndim))
    return to_device(np.ascontiguousarray(array.transpose(order)), DEVICE).transpose(tuple(np.argsort(order)))


def poison(want: np.ndarray) -> np.ndarray:
    if want.dtype == bool:
        return np.ones(want.shape, bool)
    if want.dtype.kind in "iu":
        return np.full(want.shape, -77, want.dtype)
    return np.full(want.shape, np.nan, want.dtype)


def check(fd, arrays, rng, label: str) -> None:
    counts["programs"] += 1
    expected = evaluate(fd, arrays)
    visible, written, written_at = visible_then_written(fd, expected)
    inputs = [laid_out(a, rng) for a in arrays]
    dtypes = [np.dtype(o.dtype.numpy) for o in fd.outputs if o.visible]
    given = [to_device(poison(w.astype(d)), DEVICE) if rng.random() < 0.5 else None for w, d in zip(visible, dtypes)]
    layouts = [getattr(a, "strides", None) for a in inputs]
    try:
        results = fd.execute(inputs, outputs=given if any(g is not None for g in given) else None)
        got = [to_host(g) for g in results] + [to_host(inputs[k]) for k in written_at]
        for k, (g, want) in enumerate(zip(got, visible + written)):
            g = np.asarray(g)
            assert g.shape == want.shape, f"result {k}: shape {g.shape}, expected {want.shape}"
            if want.dtype.kind == "f" and g.dtype.kind not in "biu":  # bfloat16's kind is 'V' 
                keep = np.abs(want) <= {2: 65504.0 if g.dtype == np.float16 else 3.38e38, 4: 3.4e38}.get(g.dtype.itemsize, np.inf)
                scale = max(1.0, float(np.max(np.abs(np.where(keep & np.isfinite(want), want, 0)), initial=0.0)))
                np.testing.assert_allclose(
                    np.where(keep, g.astype(np.float64), 0), np.where(keep, want, 0), rtol=2e-2, atol=2e-2 * scale, err_msg=f"result {k}"
                )
            else:
                np.testing.assert_array_equal(g.astype(want.dtype) if g.dtype != want.dtype else g, want, err_msg=f"result {k}")
        for k, (a, original) in enumerate(zip(inputs, arrays)):
            if k not in written_at:
                np.testing.assert_array_equal(to_host(a), original, err_msg=f"input {k} changed")
    except UnsatisfiedAssumption:
        raise
    except InputError as err:
        counts["errors"] += 1
        print(f"== INPUT ERROR {label}\n   shapes {[a.shape for a in arrays]} strides {layouts}\n   {err}", file=OUT, flush=True)
    except AssertionError as err:
        counts["mismatches"] += 1
        print(f"== MISMATCH {label}\n   shapes {[a.shape for a in arrays]} dtypes {[str(a.dtype) for a in arrays]} strides {layouts} "
              f"given {[g is not None for g in given]}\n{str(err)[:1500]}", file=OUT, flush=True)
    except Exception:
        counts["errors"] += 1
        print(f"== ERROR {label}\n   shapes {[a.shape for a in arrays]} strides {layouts}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


SETTINGS = settings(
    max_examples=10**6, database=None, deadline=None, phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@seed(SEED)
@SETTINGS
@given(shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7), data=st.integers(0, 2**31))
def programs(shapes, dtypes, steps, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(data)
    concrete = concrete_shapes(fd, rng)
    try:
        fd.check_input_shapes(concrete)
    except InputError:
        raise UnsatisfiedAssumption() from None
    if any(np.prod(fd.output_shape(o.position, concrete), dtype=np.int64) > MAX_ELEMENTS for o in fd.outputs):
        raise UnsatisfiedAssumption()  # a broadcast of a column by a row: the float64 reference of 12 processes at once would not fit
    arrays = [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, concrete)]
    check(fd, arrays, rng, f"random_fusion({shapes!r}, {[d.name for d in dtypes]}, {steps!r}) sizes {concrete} data {data}")


@seed(SEED)
@SETTINGS
@given(**ROW_PROGRAMS, rows=st.lists(st.sampled_from([1, 2, 5, 23, 130, 1000]), min_size=1, max_size=2), cols=st.sampled_from(SIZES), data=st.integers(0, 2**31))
def rows(dtype, stages, weight, outputs, rows, cols, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    shape = (*rows, cols)
    if np.prod(shape) > MAX_ELEMENTS:
        raise UnsatisfiedAssumption()
    rng = np.random.default_rng(data)
    fd = row_program(dtype, len(shape), stages, weight, outputs)
    check(fd, row_inputs(dtype, shape, weight, rng), rng, f"row_program({dtype.name}, {len(shape)}, {stages!r}, {weight}, {outputs!r}) shape {shape} data {data}")


if __name__ == "__main__":
    for search, until in ((programs, DEADLINE[0]), (rows, END)):
        DEADLINE[0] = until
        try:
            search()
        except KeyboardInterrupt:
            pass
    print(f"{DEVICE} seed {SEED}: {counts}", file=OUT, flush=True)
    print(f"{DEVICE} seed {SEED}: {counts}")
