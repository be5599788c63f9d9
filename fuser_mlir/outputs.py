"""Validation of caller-provided (preallocated) output buffers.

``outputs`` is ``None`` or a list with one entry per visible output (in
``add_output`` order), each a buffer or ``None`` (allocate it). Everything is
checked before anything runs, so a bad call writes nothing: length, array
type, shape, dtype, writability, overlap with inputs that are not the
output's declared alias, and overlap between given outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fuser_mlir.errors import InputError


def visible_outputs(fusion) -> list:
    return [o for o in fusion.outputs if o.visible]


def validate_outputs(fusion, args: Sequence[object], outputs) -> dict[int, np.ndarray]:
    """Return ``{visible output index: buffer}`` for the given outputs."""
    if outputs is None:
        return {}
    visible = visible_outputs(fusion)
    if not isinstance(outputs, (list, tuple)):
        raise InputError(f"outputs must be None or a list with one entry (a buffer or None) per output, got {type(outputs).__name__}")
    if len(outputs) != len(visible):
        raise InputError(f"the fusion has {len(visible)} outputs, but outputs has {len(outputs)} entries; pass one buffer or None per output")
    shapes = [tuple(getattr(a, "shape", ())) for a in args]
    given: dict[int, np.ndarray] = {}
    for index, (spec, buf) in enumerate(zip(visible, outputs)):
        if buf is None:
            continue
        given[index] = _check_output(fusion, spec, index, buf, shapes)
    _check_overlaps(visible, args, given)
    return given


def _check_output(fusion, spec, index: int, buf: object, shapes) -> np.ndarray:
    if not isinstance(buf, np.ndarray):
        raise InputError(f"output {index} must be a NumPy array or None, got {type(buf).__module__}.{type(buf).__qualname__}")
    expected = tuple(fusion.output_shape(spec.position, shapes))
    if tuple(buf.shape) != expected:
        raise InputError(f"output {index} has shape {list(buf.shape)}, but the fusion produces shape {list(expected)} for these inputs")
    if buf.dtype != spec.dtype.numpy:
        raise InputError(f"output {index} has dtype {buf.dtype}, but the fusion produces {spec.dtype.name} ({spec.dtype.numpy})")
    if not buf.flags.writeable:
        raise InputError(f"output {index} is read-only; pass a writable array")
    return buf


def _check_overlaps(visible, args, given: dict[int, np.ndarray]) -> None:
    for index, buf in given.items():
        alias = visible[index].alias_input
        for input_index, arg in enumerate(args):
            if not isinstance(arg, np.ndarray) or input_index == alias:
                continue
            if np.may_share_memory(buf, arg):
                raise InputError(f"output {index} overlaps input {input_index}, which is not its declared alias; pass a separate buffer")
        for other, other_buf in given.items():
            if other > index and np.may_share_memory(buf, other_buf):
                raise InputError(f"output {index} overlaps output {other}; given outputs must not share memory")
