"""Bad calls between good ones: does a wrong call lose nothing?

    python3 bench/results/experiments/sweep56/misuse.py DEVICE SEED SECONDS [OUT]

test/random_programs.py's programs (every dtype) and row programs (some
writing into their input), on small sizes. Each fusion gets a good call
(given outputs poisoned, some), then a call spoiled one way (MISUSES: an
input left out or one too many, an input of another dtype, rank or size, a
list or None for an array, negative strides, a given output of another
shape or dtype, read-only, repeating elements, the same buffer as an input,
one too many or too few outputs, a read-only input written in place), then
the good call again on the same definition (a cache hit).

A spoiled call must either raise one of the package's errors (a
``FuserError``), leaving every given output and every input as it was, bit
for bit, or run and match the reference of the arguments it was given (some
spoilings are calls the definition accepts: a size-1 dim, negative strides).
Any other exception, a written buffer after an error, a wrong result, or a
good call after it that goes wrong is written to OUT (default stdout) with
what reproduces it. A search, not a test.
"""

import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, "test")
sys.path.insert(0, str(Path(__file__).parents[1] / "sweep55"))
from devices import to_device, to_host  # noqa: E402
from hypothesis import given, seed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import UnsatisfiedAssumption  # noqa: E402
from random_programs import (  # noqa: E402
    ALL_DTYPES, ROW_PROGRAMS, SHAPES, assert_matches_reference, input_shapes, poison, random_fusion, random_input, row_inputs, row_program, step,
)
from reference import evaluate, visible_then_written  # noqa: E402

import fuzz as fuz_cli  # noqa: E402  (sweep55/fuzz.py: the command line, OUT, SETTINGS and run)
from fuser_mlir.errors import FuserError, InputError  # noqa: E402

DEVICE, OUT, DEADLINE = fuz_cli.DEVICE, fuz_cli.OUT, fuz_cli.DEADLINE
counts = {"fusions": 0, "spoiled calls": 0, "refused": 0, "ran": 0, "failures": 0}
kinds, messages = {}, {}  # each misuse's outcomes (r refused, + ran), its first message
OTHER_DTYPE = {"float32": np.float64, "float64": np.float32, "float16": np.float32, "int32": np.int64, "bool": np.int8}


def other_dtype(a: np.ndarray) -> np.dtype:
    return np.dtype(OTHER_DTYPE.get(str(a.dtype), np.float32))


def spoil_input(kind: str, arrays: list, k: int, rng) -> list:
    a = arrays[k]
    out = list(arrays)
    if kind == "left out":
        del out[k]
    elif kind == "one too many":
        out.append(a.copy())
    elif kind == "dtype":
        out[k] = a.astype(other_dtype(a))
    elif kind == "rank up":
        out[k] = a[np.newaxis].copy()
    elif kind == "rank down":
        out[k] = a.reshape(a.shape[1:]).copy() if a.ndim and a.shape[0] == 1 else a.reshape(-1)[:1].reshape(()).copy() if a.ndim else a.reshape(1)
    elif kind == "size":
        if not a.ndim:
            return None
        d = int(rng.integers(a.ndim))
        out[k] = np.concatenate([a, a.take([0], axis=d)], axis=d)
    elif kind == "list":
        out[k] = a.tolist()
    elif kind == "None":
        out[k] = None
    elif kind == "negative strides":
        if not a.ndim:
            return None
        out[k] = a[::-1].copy()[::-1]
    return out


INPUT_MISUSES = ["left out", "one too many", "dtype", "rank up", "rank down", "size", "list", "None", "negative strides"]
OUTPUT_MISUSES = ["output shape", "output dtype", "output read-only", "output repeats", "output is an input", "outputs one too many", "outputs one too few"]
MISUSES = INPUT_MISUSES + OUTPUT_MISUSES + ["read-only input written"]


def spoiled(kind: str, fd, arrays: list, given: list, rng):
    """The spoiled call's (inputs, outputs), host arrays, or None where ``kind`` does not apply."""
    visible = [o for o in fd.outputs if o.visible]
    if kind in INPUT_MISUSES:
        if not arrays:
            return None
        inputs = spoil_input(kind, arrays, int(rng.integers(len(arrays))), rng)
        return None if inputs is None else (inputs, given)
    if kind == "read-only input written":
        written = [o.alias_input for o in fd.outputs if o.alias_input is not None]
        if not written or DEVICE != "cpu":
            return None
        inputs = list(arrays)
        inputs[written[0]] = arrays[written[0]].copy()
        inputs[written[0]].flags.writeable = False
        return inputs, given
    if not visible:
        return None
    outs = [None if g is None else g for g in given]
    j = int(rng.integers(len(visible)))
    shape, dtype = fd.output_shape(visible[j].position, [a.shape for a in arrays]), np.dtype(visible[j].dtype.numpy)
    if kind == "output shape":
        outs[j] = poison((*shape, 2) if not shape else (*shape[:-1], shape[-1] + 1), dtype)
    elif kind == "output dtype":
        outs[j] = poison(shape, other_dtype(np.empty(0, dtype)))
    elif kind == "output read-only":
        if DEVICE != "cpu":
            return None
        outs[j] = poison(shape, dtype)
        outs[j].flags.writeable = False
    elif kind == "output repeats":
        if not shape or np.prod(shape) < 2:
            return None
        row = poison(shape[-1:], dtype)  # writable, every row the same memory (broadcast_to's views are read-only)
        outs[j] = np.lib.stride_tricks.as_strided(row, shape, (0,) * (len(shape) - 1) + row.strides)
    elif kind == "output is an input":
        same = [k for k, a in enumerate(arrays) if a.shape == tuple(shape) and a.dtype == dtype]
        if not same:
            return None
        outs[j] = "input", same[0]
    elif kind == "outputs one too many":
        outs.append(poison(shape, dtype))
    elif kind == "outputs one too few":
        outs = outs[:-1]
        if not outs:
            outs = []
    return list(arrays), outs


def on_device(value, inputs):
    if value is None or isinstance(value, (list, bool)):
        return value
    if isinstance(value, tuple):  # ("input", k): the call's own input
        return inputs[value[1]]
    return to_device(value, DEVICE) if value.flags.writeable else value


def run_call(fd, inputs, outputs):
    """The call on DEVICE: (results on the host, the arrays passed, host copies of them before)."""
    passed_in = [on_device(a, []) if isinstance(a, np.ndarray) else a for a in inputs]
    passed_out = None if outputs is None else [on_device(g, passed_in) for g in outputs]
    before = [to_host(a).copy() if hasattr(a, "shape") else a for a in passed_in + (passed_out or [])]
    results = fd.execute(passed_in, outputs=passed_out)
    return results, passed_in, passed_out, before


def good_call(fd, arrays, given, label):
    expected, written, written_at = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
    results, passed_in, _, _ = run_call(fd, [a.copy() for a in arrays], given if any(g is not None for g in given) else None)
    for k, (g, want) in enumerate(zip([to_host(r) for r in results] + [to_host(passed_in[i]) for i in written_at], expected + written)):
        assert_matches_reference(g, want, f"{label}: result {k}")
    for k, (a, original) in enumerate(zip(passed_in, arrays)):
        if k not in written_at:
            np.testing.assert_array_equal(to_host(a), original, err_msg=f"{label}: input {k} changed")


def spoiled_call(fd, kind, inputs, outputs):
    """A FuserError leaves every buffer as it was; a call that runs matches the reference."""
    counts["spoiled calls"] += 1
    try:
        results, passed_in, passed_out, before = run_call(fd, inputs, outputs)
    except FuserError as err:
        counts["refused"] += 1
        kinds[kind] = kinds.get(kind, "") + "r"
        messages.setdefault(kind, str(err))
        message = str(err)
        assert message and len(message) > 20, f"{kind}: a terse error: {message!r}"
        return message
    counts["ran"] += 1
    kinds[kind] = kinds.get(kind, "") + "+"
    arrays = [to_host(a) for a in passed_in]
    expected, written, written_at = visible_then_written(fd, evaluate(fd, [b for b in before[: len(inputs)]], rounded=True))
    for k, (g, want) in enumerate(zip([to_host(r) for r in results] + [arrays[i] for i in written_at], expected + written)):
        assert_matches_reference(g, want, f"{kind}, which ran: result {k}")
    return None


def check(fd, make_arrays, rng, label: str) -> None:
    visible = [o for o in fd.outputs if o.visible]
    for _ in range(20):  # sizes the definition takes (a flattened dim may be bound to another size)
        arrays = make_arrays(rng)
        try:
            shapes = [fd.output_shape(o.position, [a.shape for a in arrays]) for o in visible]
            break
        except InputError:
            continue
    else:
        return
    counts["fusions"] += 1
    given = [poison(s, o.dtype.numpy) if rng.random() < 0.4 else None for s, o in zip(shapes, visible)]
    kind = str(rng.choice(MISUSES))
    spoil = spoiled(kind, fd, arrays, given, rng)
    stage = "first good call"
    try:
        good_call(fd, arrays, [None if g is None else g.copy() for g in given], "first good call")
        if spoil is None:
            return
        stage = f"spoiled call ({kind})"
        inputs, outputs = spoil
        kept = [[None if not isinstance(a, np.ndarray) else a.copy() for a in inputs], [g.copy() if isinstance(g, np.ndarray) else g for g in outputs]]
        message = spoiled_call(fd, kind, inputs, outputs if any(g is not None for g in outputs) or len(outputs) != len(given) else None)
        if message is not None:  # refused: the host arrays it was given are as they were (the device ones are checked in run_call's copies)
            for a, b in zip(inputs + outputs, kept[0] + kept[1]):
                if isinstance(a, np.ndarray):
                    np.testing.assert_array_equal(a, b, err_msg=f"{kind}: a buffer changed by a refused call: {message[:300]}")
        stage = f"good call after the spoiled one ({kind})"
        good_call(fd, arrays, [None if g is None else g.copy() for g in given], stage)
    except UnsatisfiedAssumption:
        raise
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE at {stage} {label}\n   shapes {[a.shape for a in arrays]} dtypes {[str(a.dtype) for a in arrays]} "
              f"given {[g is not None for g in given]}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


@seed(fuz_cli.SEED)
@fuz_cli.SETTINGS
@given(shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7), data=st.integers(0, 2**31))
def programs(shapes, dtypes, steps, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(data)

    def make_arrays(rng):
        return [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, input_shapes(fd, rng))]

    check(fd, make_arrays, rng, f"random_fusion({shapes!r}, {[d.name for d in dtypes]}, {steps!r}) data {data}")


@seed(fuz_cli.SEED)
@fuz_cli.SETTINGS
@given(**ROW_PROGRAMS, rows=st.lists(st.sampled_from([1, 2, 5]), min_size=1, max_size=2), cols=st.sampled_from([1, 3, 8, 33, 128]), data=st.integers(0, 2**31))
def rows(dtype, stages, weight, outputs, rows, cols, data):
    if time.monotonic() > DEADLINE[0]:
        raise KeyboardInterrupt
    fd = row_program(dtype, len(rows) + 1, stages, weight, outputs)
    check(fd, lambda rng: row_inputs(dtype, (*rows, cols), weight, rng), np.random.default_rng(data),
          f"row_program({dtype.name}, {len(rows) + 1}, {stages!r}, {weight}, {outputs!r}) rows {rows} cols {cols} data {data}")


if __name__ == "__main__":
    fuz_cli.run([(programs, DEADLINE[0]), (rows, fuz_cli.END)], counts)
    for kind in MISUSES:
        print(f"{kind:24} {kinds.get(kind, '')[:40]:40} {messages.get(kind, '')[:200]!r}", file=OUT, flush=True)
