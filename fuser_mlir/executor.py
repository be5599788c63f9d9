"""FusionExecutorCache: compile once per input signature, then run.

``FusionExecutorCache(fd).run(inputs, outputs=None)`` validates the arguments
against the definition (before anything runs or is written), builds the cache
key, compiles on a miss, and runs the compiled fusion.

The key holds everything that changes the compiled code: the backend, and for
every tensor input its dtype, rank, stride order, contiguity, size-1
(broadcast) dims and alignment class; scalar dtypes; and which outputs the
caller gives, with the same properties. Sizes are symbolic: new sizes never
recompile, and are checked against the definition at run time.

A miss asks the persistent disk cache (:mod:`fuser_mlir.runtime.cache`)
before compiling, and stores what it compiled there; ``stats.disk_hits``
counts the misses the disk answered (those return a
:class:`~fuser_mlir.runtime.artifact.LoadedFusion`, which runs the stored
kernels). :meth:`FusionExecutorCache.for_loaded` makes the executor of a
loaded artifact: same validation, one key, never compiles.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fuser_mlir.errors import DeviceError, InputError, counted
from fuser_mlir.frontend.datatype import is_python_number
from fuser_mlir.hit_cache import HitCache
from fuser_mlir.outputs import check_written_inputs, validate_outputs, visible_outputs
from fuser_mlir.runtime.arrays import DeviceArray, contiguous_strides
from fuser_mlir.runtime.cpu import cpu_threads
from fuser_mlir.runtime.plan import MemoryStats


@dataclass
class CacheStats:
    """What the cache did: a miss is answered by the disk cache (``disk_hits``)
    or compiled (``compilations``; ``disk_writes`` of those were stored)."""

    compilations: int = 0
    hits: int = 0
    misses: int = 0
    disk_hits: int = 0
    disk_writes: int = 0


#: Reprs in error messages: a few items of a list, two levels deep, built no further.
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = 3
_SHORT_REPR.maxlevel = 2
_SHORT_REPR.maxother = 80  # an object's own repr, whole where it is short (<generator object <genexpr> at 0x...>)


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"a NumPy array of dtype {value.dtype} and shape {list(value.shape)}"
    return f"{type(value).__module__}.{type(value).__qualname__} {_SHORT_REPR.repr(value)}"


def stride_order(array: np.ndarray) -> tuple[int, ...]:
    """nvFuser's stride order: entry d is the rank of dim d's stride, 0 = fastest.
    An empty array takes the order of a row-major array of its shape, its empty
    dims of any size but 1 (NumPy gives it zero strides, which would read as
    column-major: an empty batch would miss the key of the full ones)."""
    strides = array.strides
    if 0 in array.shape:
        strides = contiguous_strides([size or 2 for size in array.shape], array.itemsize)
    order = sorted(range(array.ndim), key=lambda d: (abs(strides[d]), d))
    ranks = [0] * array.ndim
    for rank, dim in enumerate(order):
        ranks[dim] = rank
    return tuple(ranks)


def contiguity(array: np.ndarray, order: Sequence[int] | None = None) -> tuple[bool | None, ...]:
    """Per dim: None for a size-1 dim, else whether the dim is dense in memory
    given the dims that are faster than it in ``order`` (a stride order as
    nvFuser writes it; default: the array's own)."""
    if 0 in array.shape:  # no element, so no gap: dense whatever the order
        return tuple(None if size == 1 else True for size in array.shape)
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
    address = array.ptr if hasattr(array, "ptr") else array.__array_interface__["data"][0]
    return next(a for a in ALIGNMENTS if address % a == 0)


def tensor_signature(array: np.ndarray) -> tuple:
    """The part of the cache key one tensor contributes: dtype, rank, stride
    order, contiguity, size-1 (broadcast) dims and alignment class."""
    broadcast = tuple(d for d, s in enumerate(array.shape) if s == 1)
    order = stride_order(array)
    return (str(array.dtype), array.ndim, order, contiguity(array, order), broadcast, alignment_class(array))


def layout_of(signature: tuple) -> tuple[bool, int]:
    """What the kernels may assume of a tensor with this cache-key signature:
    (dense, alignment). Dense: its elements sit in C order without gaps
    (size-1 dims aside), so it can be read at a flat index; alignment: the
    alignment class of its data pointer in bytes."""
    _, _, order, flags, _, alignment = signature
    ranks = [order[d] for d, flag in enumerate(flags) if flag is not None]
    dense = all(flag is not False for flag in flags) and all(a > b for a, b in zip(ranks, ranks[1:]))
    return dense, alignment


def as_array(value: object, device: str):
    """``value`` as the runtime's array type on ``device`` (a NumPy array on
    the CPU, a :class:`~fuser_mlir.runtime.arrays.DeviceArray` view on CUDA),
    or None when it is not an array there."""
    if device == "cpu":
        return value if isinstance(value, np.ndarray) else None
    from fuser_mlir.runtime.arrays import device_view

    return device_view(value)


def value_device(value: object) -> str | None:
    """``"cpu"`` for a NumPy array, ``"cuda"`` for a CUDA array, else None
    (a torch CPU tensor too: it speaks DLPack, on the host)."""
    if isinstance(value, np.ndarray):
        return "cpu"
    if hasattr(value, "__cuda_array_interface__"):
        return "cuda"
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if dlpack_device is not None:
        from fuser_mlir.runtime.arrays import DLPACK_CUDA

        return "cuda" if dlpack_device()[0] == DLPACK_CUDA else None
    return None


def _check_tensor(spec, index: int, value: object, device: str = "cpu", assumed: bool = False):
    """``assumed``: see :func:`validate_inputs`."""
    array = as_array(value, device)
    if array is None:
        kind = "a NumPy array" if device == "cpu" else "a CUDA array (torch, CuPy, ...)"
        gpu = " (or a CUDA array, such as a torch CUDA tensor, to run on the GPU)" if assumed else ""
        if np.isscalar(value):
            fix = f"{kind} of dtype {spec.dtype.numpy} and rank {len(spec.shape)}{gpu}"
            if not spec.shape:  # a number for a 0-d tensor: say how to make one, and that a scalar input takes numbers
                made = f"numpy.asarray(value, dtype={spec.dtype.numpy})" if device == "cpu" else f"a 0-d CUDA array (torch.tensor(value, dtype=torch.{spec.dtype.numpy}, device='cuda'))"
                fix = f"{made}{gpu}, or declare the input with fd.define_scalar to pass a number"
            raise InputError(f"input {index} is a tensor of the definition (shape {list(spec.shape)}), but got {_describe(value)}; pass {fix}")
        hint = f"; convert it with numpy.asarray(value, dtype={spec.dtype.numpy}){gpu}" if device == "cpu" and isinstance(value, (list, tuple)) else gpu
        raise InputError(f"input {index} must be {kind} of dtype {spec.dtype.numpy}, got {_describe(value)}{hint}")
    if isinstance(array, np.ma.MaskedArray):
        raise InputError(
            f"input {index} is a numpy.ma.MaskedArray; the fusion would read its masked elements too (it has no masks): "
            "pass x.filled(value) or x.data"
        )
    value = array
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
                f"but the definition declares contiguity True there, in stride order {list(declared_order)}; "
                f"pass {_contiguous_copy(declared_order, device)} or declare contiguity False"
            )
    return value


def _contiguous_copy(order: tuple[int, ...], device: str) -> str:
    """How to make a dense copy of an array in stride ``order`` (``order[d]``
    ranks dim ``d``'s stride, 0 the smallest)."""
    rank = len(order)
    if order == tuple(range(rank - 1, -1, -1)):
        return "numpy.ascontiguousarray(x)" if device == "cpu" else "x.contiguous()"
    if order == tuple(range(rank)) and device == "cpu":
        return "numpy.asfortranarray(x)"
    return "a dense copy whose dims' strides rank as that stride order gives (0: the smallest stride)"


def _check_scalar(spec, index: int, value: object) -> object:
    if value_device(value) == "cuda":
        raise InputError(f"input {index} is a scalar ({spec.dtype.name}) of the definition, but got a CUDA array; pass a Python number")
    number = value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if not is_python_number(number):  # a str, complex, datetime64 or object is no number, whatever float() makes of it
        raise InputError(f"input {index} is a scalar ({spec.dtype.name}) of the definition, but got {_describe(value)}; pass a Python number")
    if spec.dtype.is_float:
        try:
            return float(number)
        except OverflowError:  # an int past every float
            raise InputError(f"input {index} is a float scalar ({spec.dtype.name}), but {reprlib.repr(number)} is beyond the range of a float") from None
    if spec.dtype.name == "Bool":
        return bool(number)
    if not isinstance(number, (int, np.integer, np.bool_)) and not float(number).is_integer():
        raise InputError(f"input {index} is an integer scalar ({spec.dtype.name}), but got {value!r}; pass an int")
    low, high = spec.dtype.int_range
    if not low <= int(number) <= high:
        shown = reprlib.repr(int(number)) if isinstance(number, (int, np.integer)) else repr(number)  # 2**63, not np.uint64(2**63)
        raise InputError(f"input {index} is an integer scalar ({spec.dtype.name}), but {shown} does not fit in it ({low} to {high})")
    return int(number)


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


def validate_inputs(fusion, inputs: Sequence[object], device: str = "cpu", assumed: bool = False) -> list[object]:
    """Check ``inputs`` against the definition; return them normalised (arrays
    as the runtime's array type on ``device``). ``assumed``: nothing named
    the device (no argument is an array, the cache is for none), so a value
    that is not an array is told of CUDA arrays too."""
    specs = fusion.inputs
    if not isinstance(inputs, (list, tuple)):
        raise InputError(f"inputs must be a list with one value per fusion input, got {_describe(inputs)}")
    if len(inputs) != len(specs):
        tensors = sum(1 for s in specs if s.kind == "tensor")
        raise InputError(
            f"the fusion takes {counted(len(specs), 'input')} ({counted(tensors, 'tensor')}, {counted(len(specs) - tensors, 'scalar')}), got {len(inputs)}; "
            "pass one value per define_tensor/define_scalar input, in definition order"
        )
    args = [
        _check_tensor(spec, i, value, device, assumed) if spec.kind == "tensor" else _check_scalar(spec, i, value)
        for i, (spec, value) in enumerate(zip(specs, inputs))
    ]
    check_sizes(fusion.size_classes, args)
    fusion.check_input_shapes([getattr(a, "shape", None) for a in args])
    check_written_inputs(fusion, args)
    return args


def parse_device(device: str) -> str:
    """Normalise ``"cpu"``, ``"cuda"``, ``"cuda:N"``; InputError otherwise."""
    if device == "cpu" or device == "cuda":
        return device if device == "cpu" else "cuda:0"
    kind, _, index = device.partition(":")
    if kind == "cuda" and index.isdigit():
        return device
    raise InputError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def infer_device(fusion, inputs: Sequence[object], outputs) -> str | None:
    """The device the arguments live on: ``cpu`` for NumPy arrays, ``cuda:N``
    for CUDA arrays, None where no argument is an array; DeviceError when
    they are mixed."""
    found: list[tuple[str, str]] = []
    for index, (spec, value) in enumerate(zip(fusion.inputs, inputs)):
        if spec.kind == "tensor" and value_device(value) is not None:
            found.append((f"input {index}", value_device(value)))
    for index, value in enumerate(outputs if isinstance(outputs, (list, tuple)) else ()):  # else validate_outputs says what is wrong
        if value is not None and value_device(value) is not None:
            found.append((f"output {index}", value_device(value)))
    kinds = {kind for _, kind in found}
    if len(kinds) > 1:
        host = next(name for name, kind in found if kind == "cpu")
        dev = next(name for name, kind in found if kind == "cuda")
        raise DeviceError(
            f"{host} is a NumPy array (host memory) but {dev} is a CUDA array; pass all tensors on one device "
            "(e.g. torch.as_tensor(x, device='cuda') or x.cpu().numpy())"
        )
    if kinds != {"cuda"}:
        return "cpu" if kinds else None
    from fuser_mlir.runtime.arrays import device_view

    name, _ = found[0]
    first = inputs[int(name.split()[1])] if name.startswith("input") else outputs[int(name.split()[1])]
    return f"cuda:{device_view(first).device}"


def _is_torch(value: object) -> bool:
    return type(value).__module__.startswith("torch")


def row_major_views(tensor_inputs: Sequence[int], inputs, outputs) -> tuple[list, list | None, tuple] | None:
    """A call of an elementwise fusion (:meth:`FusionDefinition.is_elementwise`)
    on column-major arrays as the same call on row-major views of them:
    ``(inputs, outputs, order)`` with every tensor argument's dims permuted
    into ``order``, the order of the first one's strides (dims of one
    element first); outputs not given stay None, so the call's new outputs
    are row-major in the views' dims, which is the inputs' order in the
    caller's (as NumPy's ufuncs and torch's pointwise ops lay out theirs;
    nvFuser's allocation order inference does the same). None where that
    order is row-major already (dims of one element aside), or the call is
    not one this applies to: arrays other than NumPy arrays, torch CUDA
    tensors and DeviceArrays, NumPy and CUDA arrays mixed, arrays of other
    shapes, or whose strides rank in another order.

    The kernels walk the dims in row-major order; over column-major arrays
    neighbouring threads touched addresses a column apart (an 8192x8192
    float32 ``x * 2 + y`` took 1911 µs against 193 on an H200, sweep 51c),
    and a row-major new output made even a column-major call with every
    other argument in order transpose (971 µs on the H200; 2048x2048 on one
    CPU thread: 32 ms against 1.8)."""
    if type(inputs) is not list and type(inputs) is not tuple or outputs is not None and type(outputs) is not list and type(outputs) is not tuple:
        return None
    if not tensor_inputs or len(inputs) <= tensor_inputs[-1]:
        return None
    first = inputs[tensor_inputs[0]]
    host = type(first) is np.ndarray
    if host and first.flags.c_contiguous:
        return None  # most calls (NumPy, row-major) leave here
    order = _stride_order(first)
    if order is None or list(order) == sorted(order):
        return None  # row-major (dims of one element aside), or not an array this applies to
    for array in [inputs[i] for i in tensor_inputs[1:]] + [o for o in outputs or () if o is not None]:
        if (type(array) is np.ndarray) is not host or _stride_order(array) != order or tuple(array.shape) != tuple(first.shape):
            return None
    order = tuple(d for d, size in enumerate(first.shape) if size == 1) + order
    return *Views.uniform(order, tensor_inputs, len(inputs), len(outputs or ())).arguments(inputs, outputs), order


def relayout_order(fusion, rank: int, inputs, outputs) -> tuple[int, ...] | None:
    """The order of the iteration dims (see :mod:`fuser_mlir.frontend.relayout`)
    in which a call of a fusion of pointwise ops, broadcasts and reductions runs on
    row-major views of its arguments: the stride order (largest first) of
    its arguments of full ``rank`` (inputs and given outputs), where they all
    agree on one that is not row-major (dims of one element aside, and those
    placed first); else None, as for a call this does not apply to (see
    row_major_views) or that the full validation refuses (it then runs as
    it is, and its error names the caller's own dims: a given output that is
    not an array, or of another shape)."""
    specs = fusion.inputs
    if type(inputs) is not list and type(inputs) is not tuple or len(inputs) != len(specs):
        return None
    if outputs is not None and (type(outputs) is not list and type(outputs) is not tuple):
        return None
    given = [o for o in outputs or () if o is not None]
    if not all(_is_array(o) for o in given):
        return None  # the full validation names what is wrong
    full = [inputs[s.index] for s in specs if s.is_tensor and s.rank == rank] + [o for o in given if o.ndim == rank]
    orders = [_stride_order(a) for a in full]
    if not orders or None in orders or len({type(a) is np.ndarray for a in full}) != 1:
        return None
    order = max(orders, key=len)
    if len(order) < 2 or order == tuple(sorted(order)):
        return None
    if any([d for d in order if d in o] != list(o) for o in orders):
        return None  # arguments laid out in different orders: run as they are
    try:
        shapes = [tuple(a.shape) if s.is_tensor else None for a, s in zip(inputs, specs)]
        fusion.check_input_shapes(shapes)
        if outputs is not None:
            positions = [o.position for o in fusion.outputs if o.visible]
            if len(outputs) != len(positions) or any(
                o is not None and tuple(getattr(o, "shape", ())) != fusion.output_shape(p, shapes) for o, p in zip(outputs, positions)
            ):
                return None
    except (InputError, AttributeError, TypeError):
        return None
    return tuple(d for d in range(rank) if d not in order) + order


@dataclass(frozen=True)
class Views:
    """How a call's arrays become the row-major views that a hit entry's
    compiled fusion was compiled for (HitEntry.views): ``inputs[i]`` the
    permutation of input i's dims (None: the input as it is, a scalar
    too), ``outputs[k]`` that of visible output k's, whose result the
    caller sees with the inverse permutation (:attr:`back`). Made for the
    column-major calls of an elementwise fusion (:meth:`uniform`, see
    row_major_views) and for those of a fusion written again in their
    order (the :class:`~fuser_mlir.frontend.relayout.Relayout`'s own)."""

    inputs: tuple
    outputs: tuple

    @classmethod
    def uniform(cls, order: tuple, tensor_inputs: Sequence[int], inputs: int, outputs: int) -> "Views":
        """Every tensor argument's dims permuted into ``order`` (row_major_views)."""
        return cls(tuple(order if i in tensor_inputs else None for i in range(inputs)), (order,) * outputs)

    def of(self, inputs, given: dict) -> tuple[list, dict]:
        """``inputs`` and ``given`` (output index -> buffer) as the views."""
        views = [a if p is None else _permuted(a, p) for a, p in zip(inputs, self.inputs)]
        return views, {k: _permuted(buf, self.outputs[k]) for k, buf in given.items()}

    def arguments(self, inputs, outputs) -> tuple[list, list | None]:
        """A call's ``inputs`` and ``outputs`` (None, or a buffer or None per
        visible output) as the views."""
        views, given = self.of(inputs, {k: o for k, o in enumerate(outputs or ()) if o is not None})
        return views, None if outputs is None else [given.get(k) for k in range(len(outputs))]

    @property
    def back(self) -> tuple:
        """Per visible output, the order in which the caller sees the dims of a
        new output made row-major in the views' (the inverse permutation;
        None: as it is made)."""
        return tuple(None if p == tuple(range(len(p))) else _inverse(p) for p in self.outputs)


def _permuted(array, order: tuple):
    """A view of ``array`` (NumPy, DeviceArray or torch) with its dims in ``order``."""
    return array.transpose(order) if type(array) is np.ndarray or not _is_torch(array) else array.permute(order)


def _caller_results(results: list, views: list, inputs, outputs, back) -> list:
    """The results of a run on ``views`` of the caller's ``inputs`` as the
    caller sees them: an output in place of an input (the view itself) that
    input, as a call of its own arguments returns it; a given output the
    caller's own; a new output k seen with its dims in order ``back[k]``
    (None: as it is)."""
    mapped = []
    for k, result in enumerate(results):
        own = [inputs[i] for i, view in enumerate(views) if view is result]
        if own:
            mapped.append(own[0])
        elif outputs is not None and outputs[k] is not None:
            mapped.append(outputs[k])
        else:
            mapped.append(result if back[k] is None else _permuted(result, back[k]))
    return mapped


def _is_array(value) -> bool:
    """Whether ``value`` is a NumPy array, DeviceArray or torch CUDA tensor."""
    kind = type(value)
    return kind is np.ndarray or kind is DeviceArray or _is_torch(value) and getattr(value, "is_cuda", False)


def _inverse(order: tuple) -> tuple:
    """The permutation undoing ``order``."""
    return tuple(sorted(range(len(order)), key=order.__getitem__))


def _stride_order(array) -> tuple[int, ...] | None:
    """The dims of more than one element of a NumPy array, a torch CUDA
    tensor or a DeviceArray of rank 2 or more, by stride, largest first
    (ties keep their order); None for any other array."""
    kind = type(array)
    if kind is DeviceArray or kind is np.ndarray:
        shape, strides = array.shape, array.strides
    elif _is_torch(array) and getattr(array, "is_cuda", False):
        shape, strides = array.shape, array.stride()  # in elements: the same order
    else:
        return None
    if len(shape) < 2:
        return None
    return tuple(sorted((d for d, size in enumerate(shape) if size != 1), key=lambda d: -abs(strides[d])))


class FusionExecutorCache:
    """Compiles a FusionDefinition once per input signature and runs it.

    ``device`` is ``None`` (run where the inputs live: NumPy arrays on the CPU,
    CUDA arrays on their GPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    """

    def __init__(self, fusion, *, device: str | None = None, hazard_policy: str = "auto"):
        if hazard_policy != "auto":  # the default needs no check (and no MLIR import: loaded artifacts)
            from fuser_mlir.passes.resolve_alias_hazards import POLICIES

            if hazard_policy not in POLICIES:
                raise InputError(f"hazard_policy must be one of {', '.join(POLICIES)}, got {hazard_policy!r}")
        fusion.check_finished("FusionExecutorCache")
        self.fusion = fusion
        self.device = None if device is None else parse_device(device)
        self.hazard_policy = hazard_policy
        self.stats = CacheStats()
        self.memory = MemoryStats()
        self._compiled: dict[tuple, object] = {}
        self._hits = HitCache(fusion)  # raw argument signature -> compiled, for cache hits
        self._loaded = None  # the LoadedFusion or CompiledFusion of for_loaded (then nothing compiles)
        #: tensor inputs of an elementwise fusion, whose column-major arguments run as row-major views (see row_major_views)
        elementwise = getattr(fusion, "is_elementwise", None)
        self._permutable = tuple(i for i, s in enumerate(fusion.inputs) if s.kind == "tensor") if elementwise and elementwise() else None
        #: a fusion of pointwise ops, broadcasts and reductions: its rank (None: not yet known; 0: not one), and its
        #: definition written again per order of the dims, with its executor (see _run_relaid)
        self._relayout_rank = None if self._permutable is None and elementwise else 0
        self._relaid: dict[tuple, tuple | None] = {}

    @classmethod
    def for_loaded(cls, loaded) -> "FusionExecutorCache":
        """The executor of a loaded artifact (or of a compiled fusion: its
        ``run``): it validates arguments against the fusion's signature exactly
        as for a definition, and runs it for its one key (an InputError names
        what differs otherwise)."""
        executor = cls(loaded.signature, device=loaded.device)
        executor.hazard_policy = loaded.hazard_policy
        executor._loaded = loaded
        executor._compiled[loaded.key] = loaded
        return executor

    def key(self, device: str, args: Sequence[object], given: dict[int, object]) -> tuple:
        inputs = tuple(type(a).__name__ if isinstance(a, (int, float, bool)) else tensor_signature(a) for a in args)
        outputs = tuple((i, tensor_signature(b)) for i, b in sorted(given.items()))
        return (device, inputs, outputs)

    def resolve_device(self, inputs: Sequence[object], outputs) -> tuple[str, bool]:
        """The device a call runs on, and whether it is assumed: nothing names
        it (this cache is for none and no argument is an array), so the CPU
        runs it (:func:`validate_inputs`' ``assumed``)."""
        listed = isinstance(inputs, (list, tuple))
        found = infer_device(self.fusion, inputs, outputs) if listed else None
        if self.device is None:
            return found or "cpu", listed and found is None
        if found not in (None, self.device) and any(value_device(v) is not None for v in inputs):
            raise DeviceError(f"the arguments live on {found}, but this FusionExecutorCache runs on {self.device}")
        return self.device, False

    def compiled_for(self, inputs: Sequence[object], outputs=None):
        """The CompiledFusion for these arguments (compiling on a miss), with
        the validated arguments."""
        device, assumed = self.resolve_device(inputs, outputs)
        if device != "cpu":
            from fuser_mlir.runtime import cuda

            if not cuda.available():
                raise DeviceError(f"device {device} is not available: no CUDA GPU or cuda-bindings in this process")
        args = validate_inputs(self.fusion, inputs, device, assumed)
        given = validate_outputs(self.fusion, args, outputs, device)
        return self._lookup(device, args, given), args, given

    def _lookup(self, device: str, args, given):
        key = self.key(device, args, given)
        compiled = self._compiled.get(key)
        if compiled is not None:
            self.stats.hits += 1
            return compiled
        if self._loaded is not None:
            from fuser_mlir.runtime.artifact import loaded_key_error

            raise loaded_key_error(self._loaded, key)
        self.stats.misses += 1
        disk, disk_key = self._disk_cache(key)
        if disk is not None:
            compiled = disk.load(disk_key, device)
            if compiled is not None:
                self.stats.disk_hits += 1
                self._compiled[key] = compiled
                return compiled
        compiled = self._compile(key, device, given)
        if disk is not None and compiled.image is not None and disk.store(disk_key, compiled) is not None:
            self.stats.disk_writes += 1
        self._compiled[key] = compiled
        return compiled

    def _compile(self, key: tuple, device: str, given):
        from fuser_mlir.compiler import compile_fusion

        mask = tuple(i in given for i in range(len(visible_outputs(self.fusion))))
        _, inputs, outputs = key
        layouts = {
            "input": [None if isinstance(sig, str) else layout_of(sig) for sig in inputs],
            "given": {i: layout_of(sig) for i, sig in outputs},
        }
        compiled = compile_fusion(
            self.fusion, given_outputs=mask, device=device, hazard_policy=self.hazard_policy, layouts=layouts
        )
        compiled.key = key
        self.stats.compilations += 1
        return compiled

    def _disk_cache(self, key: tuple):
        """The disk cache and this key's entry name, or (None, None) when the cache is off."""
        from fuser_mlir.runtime.cache import cache_key, default_cache

        disk = default_cache()
        if disk is None:
            return None, None
        return disk, cache_key(self.fusion.fingerprint(), key, self.hazard_policy)

    def run(self, inputs: Sequence[object], outputs=None, *, cuda_graph: bool = False) -> list:
        """Run the fusion; ``outputs`` is None or one buffer-or-None per
        visible output. Returns the outputs: the given buffers themselves,
        NumPy arrays on the CPU, torch tensors when the inputs are torch
        tensors, else DeviceArrays. New outputs are row-major
        (C-contiguous), but those of an elementwise fusion whose tensor
        arguments (inputs and given outputs) all rank their strides in one
        other order (column-major arrays, ``x.t()`` views) take that order,
        as NumPy's ufuncs and torch's pointwise ops do: such a call runs on
        row-major views of its arguments (:func:`row_major_views`). So does
        such a call of a fusion of pointwise ops, broadcasts and reductions, through its
        definition written again with its dims in that order
        (:func:`relayout_order`, :mod:`fuser_mlir.frontend.relayout`).

        ``cuda_graph=True`` (CUDA, torch tensors or DeviceArrays): a cache
        hit replays the fusion's launches as one CUDA graph, built at the
        first hit of each argument signature and kept with it (the first
        call of a signature runs as usual). The graph owns the fusion's
        intermediates and temporaries for as long as the signature is
        remembered (:attr:`graph_bytes`); new outputs are still allocated per
        call. A fusion whose launches depend on a scalar input's value runs
        without a graph. DeviceError on the CPU or with other array types.

        :attr:`memory` counts the same on every path: the plan's buffers per
        call (a hit allocates intermediates and temporaries as one arena, but
        counts the buffers, as the general path does). A graph's arena counts
        as one allocation when the graph is built, and as live in each of
        its replays."""
        if not cuda_graph:
            fast = self._hits.last  # the entry hit last, its checks built in (HitEntry.fast)
            if fast is not None:
                results = fast(inputs, outputs, self.memory)
                if results is not None:
                    self.stats.hits += 1
                    return results
        hit = self._hits.lookup(inputs, outputs)
        if hit is None and self._relayout_rank != 0:
            relaid = self._relaid_for(inputs, outputs)
            if relaid is not None:
                return self._run_relaid(*relaid, inputs, outputs, cuda_graph)
        if hit is None and self._permutable is not None:
            views = row_major_views(self._permutable, inputs, outputs)
            if views is not None:
                return self._run_permuted(inputs, outputs, *views, cuda_graph)
        if hit is not None:
            self.stats.hits += 1
            entry, args, given, pointers = hit
            runner = entry.graph if cuda_graph else entry.replay
            if runner is None:
                runner = self._runner(entry, args, given, cuda_graph)
            if not cuda_graph:
                self._hits.last = entry.fast
            return runner(args, given, pointers, self.memory)
        compiled, args, given = self.compiled_for(inputs, outputs)
        if cuda_graph:
            self._check_graph_arguments(compiled, inputs, outputs)
        torch_outputs = any(_is_torch(v) for v in inputs)
        self._hits.remember(inputs, outputs, compiled, given, torch_outputs)
        if compiled.device == "cpu":
            cpu_threads(during_a_call=False)  # a bad FUSER_CPU_THREADS warns here, before anything is written
            return compiled.launch(args, given, memory=self.memory)
        views = compiled.launch(args, given, memory=self.memory, torch_outputs=torch_outputs)
        return [_user_object(view, inputs, args, outputs, given) for view in views]

    def _run_permuted(self, inputs, outputs, views, view_outputs, order: tuple, cuda_graph: bool) -> list:
        """Run a call of column-major arguments on their row-major views (see
        row_major_views; _run_on_views)."""
        layout = Views.uniform(order, self._permutable, len(inputs), len(visible_outputs(self.fusion)))
        return self._run_on_views(self, layout, inputs, outputs, views, view_outputs, cuda_graph)

    def _relaid_for(self, inputs, outputs):
        """``(Relayout, its executor)`` for a call of column-major arguments of
        a fusion of pointwise ops, broadcasts and reductions (see
        relayout_order), made at the first call of its order; else None.
        Asked at a signature's first call: its later calls hit the entry
        _run_on_views remembers."""
        from fuser_mlir.frontend.relayout import iteration_dims, relayout

        if self._relayout_rank is None:
            dims = iteration_dims(self.fusion)
            self._relayout_rank = 0 if dims is None else max(len(along) for along in dims.values())
            if self._relayout_rank == 0:
                return None
        order = relayout_order(self.fusion, self._relayout_rank, inputs, outputs)
        if order is None:
            return None
        if order not in self._relaid:
            relaid = relayout(self.fusion, order)
            executor = None
            if relaid is not None:
                executor = FusionExecutorCache(relaid.fusion, device=self.device, hazard_policy=self.hazard_policy)
                executor.stats, executor.memory = self.stats, self.memory  # one account of the fusion's work
                executor._relayout_rank = 0  # its arguments are the views: already in order
            self._relaid[order] = None if relaid is None else (relaid, executor)
        return self._relaid[order]

    def _run_relaid(self, layout, executor, inputs, outputs, cuda_graph: bool) -> list:
        """Run a call on row-major views of its arguments through the
        definition written again in their order (see relayout_order;
        _run_on_views): new outputs laid out as the inputs."""
        views = Views(layout.inputs, layout.outputs)
        return self._run_on_views(executor, views, inputs, outputs, *views.arguments(inputs, outputs), cuda_graph)

    def _run_on_views(self, executor, layout: Views, inputs, outputs, views, view_outputs, cuda_graph: bool) -> list:
        """Run a call on ``views`` of its arguments (made as ``layout`` says)
        through ``executor`` and return its results as the caller sees them
        (see _caller_results); then remember the call's own signature with
        the views' compiled fusion and ``layout``: its next calls hit (the
        full validation of the views is that of the arguments: the same
        elements, bytes and pointers), and their runner, made on the views,
        reads the caller's pointers directly (HitEntry.views)."""
        try:
            results = executor.run(views, view_outputs, cuda_graph=cuda_graph)
        except InputError as error:
            raise self._callers_error(inputs, outputs, error) from None
        inner = executor._hits.entry(views, view_outputs)
        if inner is not None:
            separate = {index: None for index, _, is_separate in inner.outputs if is_separate}
            self._hits.remember(inputs, outputs, inner.compiled, separate, inner.torch_outputs, views=layout)
        return _caller_results(results, views, inputs, outputs, layout.back)

    def _callers_error(self, inputs, outputs, error: InputError) -> InputError:
        """The error of a call refused on the views of its arguments, named as
        the caller's own arguments are: their full validation raises it where
        it refuses them too (its messages name the caller's dims and
        strides); else ``error`` (a check the views alone fail)."""
        device, assumed = self.resolve_device(inputs, outputs)
        validate_outputs(self.fusion, validate_inputs(self.fusion, inputs, device, assumed), outputs, device)
        return error

    @property
    def graph_bytes(self) -> int:
        """Device memory held by the CUDA graphs of remembered signatures
        (their intermediates and temporaries; see ``run(cuda_graph=True)``)."""
        return sum(getattr(e.graph, "graph_bytes", 0) for e in self._hits._entries.values())

    def _runner(self, entry, args, given, cuda_graph: bool):
        """The runner of a hit entry (see HitEntry.replay), made at its first
        hit: on CUDA a generated replay of its launches, or a CUDA graph. An
        entry of column-major arguments (HitEntry.views) runs on their
        row-major views: its replays are traced on them (and read the same
        pointers), the other runners permute them per call."""
        compiled = entry.compiled
        views = entry.views
        if compiled.device == "cpu":
            if cuda_graph:
                raise _graph_on_cpu()

            def run_cpu(args, given, pointers, memory):
                return compiled.launch(args, given, memory=memory)

            entry.replay = _on_views(run_cpu, views) if views else run_cpu
            return entry.replay
        from fuser_mlir.runtime import replay

        device = int(compiled.device.partition(":")[2] or 0)
        try:
            traced = replay.trace(compiled.plan, compiled.kernels, *(views.of(args, given) if views else (args, given)))
        except replay.NotReplayable as why:

            def run_general(args, given, pointers, memory):
                # the caller's own tensors: the results need no mapping back
                return compiled.launch(args, given, memory=memory, torch_outputs=entry.torch_outputs, raw=True)

            entry.replay = entry.graph = _on_views(run_general, views) if views else run_general
            entry.not_replayed = str(why)
            return entry.replay
        back = views.back if views else None  # new outputs: made row-major in the views' dims, seen in the caller's
        options = dict(device=device, torch_outputs=entry.torch_outputs, input_at=entry.input_at, given_at=entry.given_at, back=back)
        if not cuda_graph:
            entry.replay = replay.plain_replay(traced, **options)
            guard = self._hits.guard(entry)
            if guard is not None:  # the same trace: the two share its cells, slots and lock
                entry.fast = replay.plain_replay(traced, device=device, torch_outputs=entry.torch_outputs, arguments=guard, back=back)
            return entry.replay
        entry.graph = replay.graph_replay(traced, **options)
        if entry.graph.graph_bytes:  # one allocation, held by the graph (its replays count it as live)
            self.memory.allocations += 1
            self.memory.allocated_bytes += entry.graph.graph_bytes
        return entry.graph

    def _check_graph_arguments(self, compiled, inputs, outputs) -> None:
        """DeviceError unless a call can replay a CUDA graph (cuda_graph=True)."""
        if compiled.device == "cpu":
            raise _graph_on_cpu()
        if self._hits.signature(inputs, outputs) is not None:
            return
        from fuser_mlir.runtime.arrays import DeviceArray

        arguments = [(f"input {i}", v) for i, v in enumerate(inputs)] + [(f"output {i}", v) for i, v in enumerate(outputs or ())]
        for name, value in arguments:
            if value_device(value) == "cuda" and not _is_torch(value) and type(value) is not DeviceArray:
                raise DeviceError(
                    f"cuda_graph=True replays torch tensors and DeviceArrays only, but {name} is a "
                    f"{type(value).__module__}.{type(value).__qualname__}; wrap it with torch.as_tensor(x, device='cuda') (no copy)"
                )
        raise DeviceError("cuda_graph=True replays torch tensors and DeviceArrays only; pass those")


def _on_views(run, views: Views):
    """``run(args, given, pointers, memory)`` called on the row-major views
    of the arguments of a column-major entry (see HitEntry.views), its
    results as the caller sees them: each given output the caller's own, an
    output given as its in-place input that input, and each new output
    permuted back into the caller's dims."""
    back = views.back

    def run_on_views(args, given, pointers, memory):
        arrays, view_given = views.of(args, given)
        results = run(arrays, view_given, pointers, memory)
        return _caller_results(results, arrays, args, [given.get(k) for k in range(len(results))], back)

    return run_on_views


def _graph_on_cpu() -> DeviceError:
    return DeviceError("cuda_graph=True needs CUDA arrays (torch tensors or DeviceArrays), but these arguments run on the CPU; drop cuda_graph there")


def _user_object(view, inputs, args, outputs, given):
    """The object the caller should see for an output view: their own input
    or given buffer when it is one, the torch tensor behind a new buffer, or
    the DeviceArray itself."""
    for original, arg in zip(inputs, args):
        if arg is view:
            return original
    for index, buf in given.items():
        if buf is view:
            return outputs[index]
    base = view.base
    return base if base is not None and _is_torch(base) else view
