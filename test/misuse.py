"""Spoiled calls: a good call's arguments changed one way, and what a
fusion must do with them (test_random_misuse.py; the longer search
bench/results/experiments/sweep56/misuse.py).

A spoiled call either raises one of the package's errors (a ``FuserError``
with a message), leaving every input and given output as it was, bit for
bit, or runs, and then matches the reference of the arguments it was given:
some spoilings are calls the definition accepts (a size of 1 where a dim may
broadcast, negative strides, a stride of 0 along a dim of size 1). The ones
in :data:`MUST_REFUSE` never are.
"""

from __future__ import annotations

import numpy as np
from devices import assert_unchanged, to_device, to_host
from random_programs import assert_matches_reference, poison
from reference import evaluate, visible_then_written

from fuser_mlir.errors import FuserError, InputError
from fuser_mlir.runtime.arrays import DeviceArray

#: Spoilings no definition accepts.
MUST_REFUSE = frozenset({
    "input left out", "one input too many", "input dtype", "input rank up", "input rank down", "input a list", "input None",
    "output shape", "output dtype", "output read-only", "output is an input", "one output too many", "one output too few",
    "read-only input written",
})
#: Spoilings a definition may accept.
MAY_RUN = frozenset({"input size", "input negative strides", "output repeats"})
MISUSES = sorted(MUST_REFUSE | MAY_RUN)
OTHER_DTYPE = {"float32": np.float64, "float64": np.float32, "float16": np.float32, "int32": np.int64, "bool": np.int8}


class Arg:
    """A spoiled argument that placing makes: ``array``'s values read-only,
    or viewed as ``shape`` with ``strides`` (a stride of 0), or the call's
    input ``input``."""

    def __init__(self, array=None, *, readonly: bool = False, shape: tuple = (), strides: tuple | None = None, input: int | None = None):
        self.array, self.readonly, self.shape, self.strides, self.input = array, readonly, shape, strides, input


def _other_dtype(dtype) -> np.dtype:
    return np.dtype(OTHER_DTYPE.get(str(np.dtype(dtype)), np.float32))


def spoil(kind: str, fd, arrays: list[np.ndarray], given: list, rng) -> tuple[list, list] | None:
    """The call's (inputs, outputs) spoiled as ``kind`` says, from the good
    call's host ``arrays`` and ``given`` outputs (None: allocated); None
    where ``kind`` does not apply to this fusion or these sizes."""
    inputs, outputs = list(arrays), list(given)
    if kind.startswith("input") or kind == "one input too many":
        if not arrays:
            return None
        k = int(rng.integers(len(arrays)))
        a = arrays[k]
        if kind == "input left out":
            del inputs[k]
        elif kind == "one input too many":
            inputs.append(a.copy())
        elif kind == "input dtype":
            inputs[k] = a.astype(_other_dtype(a.dtype))
        elif kind == "input rank up":
            inputs[k] = a[np.newaxis].copy()
        elif kind == "input rank down":  # a 0-d input goes up instead
            inputs[k] = a[0].copy() if a.ndim else a.reshape(1)
        elif kind == "input a list":
            inputs[k] = a.tolist()
        elif kind == "input None":
            inputs[k] = None
        elif kind == "input size":
            if not a.ndim:
                return None
            d = int(rng.integers(a.ndim))
            inputs[k] = np.concatenate([a, a.take([0], axis=d)], axis=d)
        elif kind == "input negative strides":
            if not a.ndim:
                return None
            inputs[k] = a[::-1].copy()[::-1]
        return inputs, outputs
    if kind == "read-only input written":
        written = [o.alias_input for o in fd.outputs if o.alias_input is not None]
        if not written:
            return None
        inputs[written[0]] = Arg(arrays[written[0]], readonly=True)
        return inputs, outputs
    visible = [o for o in fd.outputs if o.visible]
    if not visible:
        return None
    j = int(rng.integers(len(visible)))
    shape, dtype = fd.output_shape(visible[j].position, [a.shape for a in arrays]), np.dtype(visible[j].dtype.numpy)
    if kind == "output shape":
        outputs[j] = poison((*shape[:-1], shape[-1] + 1) if shape else (2,), dtype)
    elif kind == "output dtype":
        outputs[j] = poison(shape, _other_dtype(dtype))
    elif kind == "output read-only":
        outputs[j] = Arg(poison(shape, dtype), readonly=True)
    elif kind == "output repeats":  # every row the same memory
        if not shape or np.prod(shape) < 2:
            return None
        row = poison(shape[-1:], dtype)
        outputs[j] = Arg(row, shape=tuple(shape), strides=(0,) * (len(shape) - 1) + row.strides)
    elif kind == "output is an input":
        same = [k for k, a in enumerate(arrays) if a.shape == tuple(shape) and a.dtype == dtype]
        if not same:
            return None
        outputs[j] = Arg(input=same[0])
    elif kind == "one output too many":
        outputs.append(poison(shape, dtype))
    elif kind == "one output too few":
        outputs = outputs[:-1]
    return inputs, outputs


def place(value, device: str, inputs: list | None = None):
    """A spoiled argument as the call gets it on ``device`` (a copy: the
    caller's arrays stay as they are)."""
    if isinstance(value, Arg):
        if value.input is not None:
            return inputs[value.input]
        if value.strides is not None:
            if device == "cpu":
                return np.lib.stride_tricks.as_strided(value.array.copy(), value.shape, value.strides)
            base = to_device(value.array, device)
            return DeviceArray(base.ptr, value.shape, value.strides, base.dtype, owner=base, device=base.device)
        if device == "cpu":
            array = value.array.copy()
            array.flags.writeable = False
            return array
        base = to_device(value.array, device)
        return DeviceArray(base.ptr, base.shape, base.strides, base.dtype, owner=base, device=base.device, readonly=True)
    if isinstance(value, np.ndarray):
        return to_device(value.copy(), device)
    return value


def _snapshot(values: list) -> list:
    return [to_host(v).copy() if isinstance(v, (np.ndarray, DeviceArray)) else None for v in values]


def spoiled_call(fd, inputs: list, outputs: list, device: str) -> str | None:
    """Runs the spoiled call on ``device``: the error's message where it is
    refused (every buffer checked unchanged), None where it ran (its results
    checked against the reference of what it got)."""
    placed_in = [place(v, device) for v in inputs]
    placed_out = [place(v, device, placed_in) for v in outputs]
    before = _snapshot(placed_in + placed_out)
    try:
        results = fd.execute(placed_in, outputs=placed_out)
    except FuserError as err:
        assert len(str(err)) > 20, f"a terse error: {err!r}"
        for k, (v, was) in enumerate(zip(placed_in + placed_out, before)):
            if was is not None:
                assert_unchanged(v, was, f"argument {k} changed by a refused call ({err})")
        return str(err)
    expected, written, written_at = visible_then_written(fd, evaluate(fd, before[: len(inputs)], rounded=True))
    got = [to_host(r) for r in results] + [to_host(placed_in[k]) for k in written_at]
    for k, (g, want) in enumerate(zip(got, expected + written)):
        assert_matches_reference(g, want, f"the spoiled call, which ran: result {k}")
    return None


def run_on_copies(run, fd, arrays: list[np.ndarray], given: list, device: str, label: str) -> list[np.ndarray]:
    """``run(inputs, outputs)`` (``fd.execute``, a loaded artifact's ``run``)
    on ``device`` copies of ``arrays`` and ``given`` (None: allocated), the
    inputs it does not write checked unchanged: the visible results, then the
    inputs written, in input order, on the host."""
    inputs = [to_device(a.copy(), device) for a in arrays]
    results = run(inputs, [None if g is None else to_device(g.copy(), device) for g in given])
    written_at = sorted(o.alias_input for o in fd.outputs if o.alias_input is not None)  # as visible_then_written orders them
    for k, (a, original) in enumerate(zip(inputs, arrays)):
        if k not in written_at:
            assert_unchanged(a, original, f"{label}: input {k} changed")
    return [to_host(r) for r in results] + [to_host(inputs[k]) for k in written_at]


def good_call(fd, arrays: list[np.ndarray], given: list, device: str, label: str) -> None:
    """The good call on copies of ``arrays`` and ``given``, checked against the reference."""
    got = run_on_copies(lambda i, o: fd.execute(i, outputs=o), fd, arrays, given, device, label)
    expected, written, _ = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
    for k, (g, want) in enumerate(zip(got, expected + written)):
        assert_matches_reference(g, want, f"{label}: result {k}")


#: What :func:`spoiled_between_good_calls` returns where the spoiling does not apply.
NOT_APPLICABLE = object()


def spoiled_between_good_calls(fd, arrays: list[np.ndarray], kind: str, rng, device: str) -> str | None | object:
    """The good call (given outputs poisoned, some), the call spoiled by
    ``kind``, then the good call again (a hit), each checked: the spoiled
    call's error message, or None where it ran; NOT_APPLICABLE, and no call,
    where ``kind`` does not apply or the definition does not take these sizes."""
    visible = [o for o in fd.outputs if o.visible]
    try:
        shapes = [fd.output_shape(o.position, [a.shape for a in arrays]) for o in visible]
    except InputError:  # a flattened dim bound to another size
        return NOT_APPLICABLE
    given = [poison(s, o.dtype.numpy) if rng.random() < 0.4 else None for s, o in zip(shapes, visible)]
    spoiled = spoil(kind, fd, arrays, given, rng)
    if spoiled is None:
        return NOT_APPLICABLE
    good_call(fd, arrays, given, device, "the first good call")
    message = spoiled_call(fd, *spoiled, device)
    assert message is not None or kind not in MUST_REFUSE, f"the call spoiled by {kind!r} ran"
    good_call(fd, arrays, given, device, f"the good call after one spoiled by {kind!r}")
    return message
