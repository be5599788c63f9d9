"""FusionExecutorCache: compile once per input signature, then run.

``FusionExecutorCache(fd).run(inputs, outputs=None)`` validates the arguments
against the definition (before anything runs or is written), builds the cache
key, compiles on a miss, and runs the compiled fusion.

The key holds everything that changes the compiled code: the backend, and for
every tensor input its dtype, rank, stride order, contiguity, size-1
(broadcast) dims and alignment class; scalar dtypes; and which outputs the
caller gives, with the same properties. Sizes are symbolic: new sizes never
recompile, and are checked against the definition at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fuser_mlir.errors import InputError
from fuser_mlir.outputs import validate_outputs, visible_outputs
from fuser_mlir.runtime.plan import MemoryStats


@dataclass
class CacheStats:
    """What the cache did: one compilation per miss."""

    compilations: int = 0
    hits: int = 0
    misses: int = 0


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"a NumPy array of dtype {value.dtype} and shape {list(value.shape)}"
    return f"{type(value).__module__}.{type(value).__qualname__} {value!r}"[:120]


def stride_order(array: np.ndarray) -> tuple[int, ...]:
    """nvFuser's stride order: entry d is the rank of dim d's stride, 0 = fastest."""
    order = sorted(range(array.ndim), key=lambda d: (abs(array.strides[d]), d))
    ranks = [0] * array.ndim
    for rank, dim in enumerate(order):
        ranks[dim] = rank
    return tuple(ranks)


def contiguity(array: np.ndarray, order: Sequence[int] | None = None) -> tuple[bool | None, ...]:
    """Per dim: None for a size-1 dim, else whether the dim is dense in memory
    given the dims that are faster than it in ``order`` (a stride order as
    nvFuser writes it; default: the array's own)."""
    order = stride_order(array) if order is None else tuple(order)
    flags: list[bool | None] = [None] * array.ndim
    expected = array.itemsize
    for dim in sorted(range(array.ndim), key=lambda d: order[d]):
        if array.shape[dim] == 1:
            continue
        flags[dim] = array.strides[dim] == expected
        expected = abs(array.strides[dim]) * array.shape[dim]
    return tuple(flags)


#: Alignment classes of a buffer's data pointer, largest first (bytes).
ALIGNMENTS = (16, 8, 4, 2, 1)


def alignment_class(array: np.ndarray) -> int:
    """The largest of ALIGNMENTS that divides the array's data address."""
    address = array.__array_interface__["data"][0]
    return next(a for a in ALIGNMENTS if address % a == 0)


def tensor_signature(array: np.ndarray) -> tuple:
    """The part of the cache key one tensor contributes: dtype, rank, stride
    order, contiguity, size-1 (broadcast) dims and alignment class."""
    broadcast = tuple(d for d, s in enumerate(array.shape) if s == 1)
    order = stride_order(array)
    return (str(array.dtype), array.ndim, order, contiguity(array, order), broadcast, alignment_class(array))


def _check_tensor(spec, index: int, value: object) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        if np.isscalar(value):
            raise InputError(f"input {index} is a tensor of the definition (shape {list(spec.shape)}), but got {_describe(value)}; pass a NumPy array")
        raise InputError(f"input {index} must be a NumPy array of dtype {spec.dtype.numpy}, got {_describe(value)}")
    if value.dtype != spec.dtype.numpy:
        raise InputError(
            f"input {index} has dtype {value.dtype}, but the definition declares {spec.dtype.name} ({spec.dtype.numpy}); "
            f"convert it with .astype({spec.dtype.numpy})"
        )
    if value.ndim != len(spec.shape):
        raise InputError(f"input {index} has rank {value.ndim} (shape {list(value.shape)}), but the definition declares rank {len(spec.shape)} (shape {list(spec.shape)})")
    for dim, (declared, actual) in enumerate(zip(spec.shape, value.shape)):
        if declared == -1 or declared == actual:
            continue
        what = "a broadcast dim of size 1" if declared == 1 else f"size {declared}"
        raise InputError(f"input {index} dim {dim} has size {actual}, but the definition declares {what}")
    declared_order = spec.stride_order or tuple(range(value.ndim - 1, -1, -1))
    flags = contiguity(value, declared_order)
    for dim, declared in enumerate(spec.contiguity or ()):
        if declared and flags[dim] is False:
            raise InputError(
                f"input {index} is not contiguous in dim {dim} (shape {list(value.shape)}, strides {list(value.strides)}), "
                f"but the definition declares contiguity True there; pass numpy.ascontiguousarray(x) or declare contiguity False"
            )
    return value


def _check_scalar(spec, index: int, value: object) -> object:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise InputError(f"input {index} is a scalar ({spec.dtype.name}) of the definition, but got {_describe(value)}; pass a Python number")
    if not isinstance(value, (int, float, bool, np.generic, np.ndarray)):
        raise InputError(f"input {index} is a scalar ({spec.dtype.name}) of the definition, but got {_describe(value)}; pass a Python number")
    if spec.dtype.is_float:
        return float(value)
    if spec.dtype.name == "Bool":
        return bool(value)
    as_float = float(value)
    if not as_float.is_integer():
        raise InputError(f"input {index} is an integer scalar ({spec.dtype.name}), but got {value!r}; pass an int")
    return int(value)


def check_sizes(size_classes: Sequence[set], inputs: Sequence[object]) -> None:
    """Raise InputError if sizes bound to one symbol differ."""
    for group in size_classes:
        members = sorted(group)
        first_input, first_dim = members[0]
        first = inputs[first_input].shape[first_dim]
        for input_index, dim in members[1:]:
            size = inputs[input_index].shape[dim]
            if size != first:
                raise InputError(
                    f"input {input_index} dim {dim} has size {size}, but input {first_input} dim {first_dim}, "
                    f"bound to the same size, has {first}"
                )


def validate_inputs(fusion, inputs: Sequence[object]) -> list[object]:
    """Check ``inputs`` against the definition; return them normalised."""
    specs = fusion.inputs
    if not isinstance(inputs, (list, tuple)):
        raise InputError(f"inputs must be a list with one value per fusion input, got {_describe(inputs)}")
    if len(inputs) != len(specs):
        tensors = sum(1 for s in specs if s.kind == "tensor")
        raise InputError(
            f"the fusion takes {len(specs)} inputs ({tensors} tensors, {len(specs) - tensors} scalars), got {len(inputs)}; "
            "pass one value per define_tensor/define_scalar input, in definition order"
        )
    args = [
        _check_tensor(spec, i, value) if spec.kind == "tensor" else _check_scalar(spec, i, value)
        for i, (spec, value) in enumerate(zip(specs, inputs))
    ]
    check_sizes(fusion.size_classes, args)
    fusion.check_input_shapes([getattr(a, "shape", None) for a in args])
    return args


class FusionExecutorCache:
    """Compiles a FusionDefinition once per input signature and runs it."""

    def __init__(self, fusion, *, device: str = "cpu", hazard_policy: str = "auto"):
        from fuser_mlir.passes.resolve_alias_hazards import POLICIES

        if hazard_policy not in POLICIES:
            raise InputError(f"hazard_policy must be one of {', '.join(POLICIES)}, got {hazard_policy!r}")
        if device != "cpu":
            raise InputError(f"device '{device}' is not available: this build runs fusions on 'cpu' only")
        self.fusion = fusion
        self.device = device
        self.hazard_policy = hazard_policy
        self.stats = CacheStats()
        self.memory = MemoryStats()
        self._compiled: dict[tuple, object] = {}

    def key(self, args: Sequence[object], given: dict[int, np.ndarray]) -> tuple:
        inputs = tuple(tensor_signature(a) if isinstance(a, np.ndarray) else type(a).__name__ for a in args)
        outputs = tuple((i, tensor_signature(b)) for i, b in sorted(given.items()))
        return (self.device, inputs, outputs)

    def compiled_for(self, inputs: Sequence[object], outputs=None):
        """The CompiledFusion for these arguments (compiling on a miss)."""

        args = validate_inputs(self.fusion, inputs)
        given = validate_outputs(self.fusion, args, outputs)
        return self._lookup(args, given), args, given

    def _lookup(self, args, given):
        from fuser_mlir.compiler import compile_fusion

        key = self.key(args, given)
        compiled = self._compiled.get(key)
        if compiled is not None:
            self.stats.hits += 1
            return compiled
        self.stats.misses += 1
        compiled = compile_fusion(self.fusion, given_outputs=tuple(i in given for i in range(len(visible_outputs(self.fusion)))), device=self.device, hazard_policy=self.hazard_policy)
        self.stats.compilations += 1
        self._compiled[key] = compiled
        return compiled

    def run(self, inputs: Sequence[object], outputs=None) -> list:
        """Run the fusion; ``outputs`` is None or one buffer-or-None per visible output."""
        compiled, args, given = self.compiled_for(inputs, outputs)
        return compiled.execute(args, given, memory=self.memory)
