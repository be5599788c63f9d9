"""Random fusion programs for property-based tests: a chain of pointwise
ops (with implicit broadcasting), reductions, permutes, flattening reshapes,
casts and selects over a few inputs of random shapes and dtypes (searches
may draw more ops: WIDE_KIND_NAMES); and row programs
(:func:`row_program`), of softmax's and the norms' shape. For
draws of large sizes and memory layouts (:func:`large_shapes`,
:func:`placed`): the shapes and layouts that reach the GPU's tiles, cached
and staged rows, strided and misaligned variants."""

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from devices import to_device
from fuser_mlir.errors import DefinitionError, InputError
from fuser_mlir.frontend import DataType, FusionDefinition, Tensor

DIM = st.sampled_from([-1, -1, 1, 3])
SHAPES = st.lists(st.lists(DIM, min_size=0, max_size=3), min_size=1, max_size=3)
DTYPES = st.sampled_from([DataType.Float, DataType.Half, DataType.Int32, DataType.Bool])
#: DTYPES and the two the GPU's kernels treat apart (bfloat16 words, float64 accumulators).
ALL_DTYPES = st.sampled_from([DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32, DataType.Bool])
KIND_NAMES = ("unary", "binary", "sum", "max", "permute", "flatten", "cast", "mean", "where")
KINDS = st.sampled_from(KIND_NAMES)
#: KIND_NAMES and the ops the suite's draws leave to their own tests (for
#: searches: the suite's derandomized draws stay what they were).
WIDE_KIND_NAMES = KIND_NAMES + ("clamp", "lerp", "compare", "exp", "prod", "min", "var", "var_mean", "new_dim", "reshape")


def step(dtypes=DTYPES, kinds=KINDS):
    """One step: its kind, two picks from the values so far, a cast's dtype."""
    return st.tuples(kinds, st.integers(0, 99), st.integers(0, 99), dtypes)


STEP = step()

#: What the tests that run programs of every dtype draw: random_fusion's arguments.
PROGRAMS_OF_ALL_DTYPES = dict(
    shapes=SHAPES,
    dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3),
    steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7),
)


#: A stage of a row program: unary ops on the value so far, a reduction of
#: the result over one dim (kept), and a binary op of the reduction with
#: that result or with the input, then tanh: values stay where a float32
#: sin or exp of them is near the float64 reference's (exp of tanh for the
#: same reason).
ROW_UNARY = {
    "exp": lambda fd, v: fd.ops.exp(fd.ops.tanh(v)), "sin": lambda fd, v: fd.ops.sin(v),
    "abs": lambda fd, v: fd.ops.abs(v), "neg": lambda fd, v: fd.ops.neg(v),
}
ROW_REDUCE = ("sum", "max", "min", "mean")
ROW_BINARY = {"sub": lambda a, b: a - b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b}
ROW_STAGE = st.tuples(
    st.lists(st.sampled_from(sorted(ROW_UNARY)), max_size=2), st.sampled_from(ROW_REDUCE), st.booleans(), st.sampled_from(sorted(ROW_BINARY)), st.booleans()
)
#: What the tests of row programs draw: row_program's arguments but the rank
#: (the length of a row_shapes draw).
ROW_PROGRAMS = dict(
    dtype=st.sampled_from([DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double]),
    stages=st.lists(ROW_STAGE, min_size=1, max_size=3),
    weight=st.booleans(),
    outputs=st.sampled_from(["the last value", "and the reductions", "into the input"]),
)


def row_shapes(columns):
    """Shapes of 2 or 3 dims, rows of 1, 2, 5 or 23 (a batch of one too),
    their last dim drawn from ``columns``."""
    return st.lists(st.sampled_from([1, 2, 5, 23]), min_size=1, max_size=2).flatmap(lambda rows: st.sampled_from(columns).map(lambda cols: (*rows, cols)))


def row_program(dtype, rank: int, stages, weight: bool, outputs: str) -> FusionDefinition:
    """A fusion of softmax's and the norms' shape over an input of ``rank``
    dims: ``stages`` (ROW_STAGE draws: unary ops, the reduction, over the
    last dim or the one before, its binary op, whether with the input;
    tanh), then a weight across the last dim, and ``outputs``: the last
    value; and each stage's reduction; or the last value written into the
    input."""
    with FusionDefinition(name="row_program") as fd:
        x = fd.define_tensor([-1] * rank, dtype=dtype)
        w = fd.define_tensor([-1], dtype=dtype) if weight else None
        value, reduced = x, []
        for unary, reduce, last_dim, binary, with_input in stages:
            for name in unary:
                value = ROW_UNARY[name](fd, value)
            reduced.append(getattr(fd.ops, reduce)(value, dims=[rank - 1 if last_dim else rank - 2], keepdim=True))
            value = fd.ops.tanh(ROW_BINARY[binary](x if with_input else value, reduced[-1]))
        if w is not None:
            value = value * fd.ops.broadcast(w, [True] * (rank - 1) + [False])
        fd.add_output(value, x if outputs == "into the input" else None)
        for r in reduced if outputs == "and the reductions" else ():
            fd.add_output(r)
    return fd


def row_inputs(dtype, shape, weight: bool, rng) -> list[np.ndarray]:
    """Random inputs of a row program: ``shape``, and a weight of its last dim."""
    arrays = [rng.standard_normal(shape).astype(dtype.numpy)]
    return arrays + ([rng.standard_normal(shape[-1]).astype(dtype.numpy)] if weight else [])


def derandomized(examples: int):
    """Hypothesis settings of ``examples`` programs, the same ones every run."""
    return settings(
        max_examples=examples, derandomize=True, database=None, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def apply_step(fd, pool, step):
    kind, i, j, dtype = step
    a, b = pool[i % len(pool)], pool[j % len(pool)]
    rank = a.ndim
    if kind == "unary":
        return fd.ops.abs(fd.ops.sin(a)) if a.dtype.is_float else fd.ops.abs(a + 1)
    if kind == "binary":
        return fd.ops.maximum(a, b) * 2 if not a.dtype.is_bool or not b.dtype.is_bool else a | b
    if kind == "where":
        return fd.ops.where(a > 0, b, 1.5)
    if kind in ("sum", "max", "mean") and rank > 0:
        return getattr(fd.ops, kind)(a, dims=[j % rank], keepdim=bool(i % 2))
    if kind == "permute" and rank > 1:
        return fd.ops.permute(a, list(reversed(range(rank))))
    if kind == "flatten" and rank > 0:
        return fd.ops.reshape(a, [-1])
    if kind == "cast":
        return fd.ops.cast(a, dtype)
    wide = _wide_step(fd, kind, a, b, i, j)
    if wide is not None:
        return wide
    return fd.ops.neg(a) if not a.dtype.is_bool else fd.ops.logical_not(a)


def _wide_step(fd, kind, a, b, i, j):
    """A WIDE_KIND_NAMES step beyond KIND_NAMES, or None where it does not
    apply to ``a`` (and ``b``)."""
    rank, dim = a.ndim, j % max(a.ndim, 1)
    if kind == "clamp" and not a.dtype.is_bool:
        return fd.ops.clamp(a, -0.5, 2.0) if a.dtype.is_float else fd.ops.clamp(a, -1, 2)
    if kind == "lerp" and not a.dtype.is_bool and not b.dtype.is_bool:
        return fd.ops.lerp(a, b, 0.25 if i % 2 else 0.75)
    if kind == "compare":
        return fd.ops.lt(a, b) if i % 2 else fd.ops.ge(a, b)
    if kind == "exp" and a.dtype.is_float:
        return fd.ops.exp(fd.ops.tanh(a))
    if kind in ("prod", "min") and rank > 0:
        return getattr(fd.ops, kind)(a, dims=[dim], keepdim=bool(i % 2))
    if kind in ("var", "var_mean") and rank > 0 and not a.dtype.is_bool:
        var, mean = fd.ops.var_mean(a, dims=[dim], correction=i % 2, keepdim=bool(i % 3))
        return var if kind == "var" else var - mean
    if kind == "new_dim":
        return fd.ops.broadcast_in_dim(a, [3] + [-1] * rank, list(range(1, rank + 1)))
    if kind == "reshape" and rank > 0:
        return fd.ops.reshape(a, [1, -1] if i % 2 else [-1, 1])
    return None


def random_fusion(shapes, dtypes, steps) -> FusionDefinition:
    """The fusion of inputs ``shapes``/``dtypes`` and ``steps`` (STEP draws),
    its last two results its outputs; a draw the frontend cannot broadcast
    is rejected (``assume``)."""
    try:
        with FusionDefinition() as fd:
            pool = [fd.define_tensor(s, dtype=d) for s, d in zip(shapes, dtypes)]
            for step in steps:
                pool.append(apply_step(fd, pool, step))
            outs = [v for v in pool[len(shapes) :] if isinstance(v, Tensor)]
            for v in outs[-2:]:
                fd.add_output(v)
    except DefinitionError as err:
        assume("cannot broadcast" not in str(err))
        raise
    assume(fd.outputs)
    return fd


def input_shapes(fd, rng, sizes=None) -> list[tuple[int, ...]]:
    """Concrete input shapes for ``fd`` that respect its size classes
    (dims bound to one size get one random size, 2-5 or one of ``sizes``,
    or their static one)."""
    classes = fd.size_classes
    chosen = {}
    shapes = []
    for spec in fd.inputs:
        dims = []
        for d, size in enumerate(spec.shape):
            if size != -1:
                dims.append(size)
                continue
            group = next((frozenset(c) for c in classes if (spec.index, d) in c), frozenset({(spec.index, d)}))
            statics = [fd.inputs[k].shape[e] for k, e in group if fd.inputs[k].shape[e] > 1]
            chosen.setdefault(group, statics[0] if statics else int(rng.integers(2, 6) if sizes is None else rng.choice(sizes)))
            dims.append(chosen[group])
        shapes.append(tuple(dims))
    return shapes


#: Sizes of large draws: scalar tails, whole 16-byte vectors, outer tiles, and rows warps, cached blocks and staged blocks take.
LARGE_SIZES = [1, 2, 3, 5, 31, 64, 100, 127, 256, 1000, 1024, 4099, 8192, 20000]
#: How :func:`placed` lays an array out (row-major twice as often as each other).
LAYOUTS = ("row-major", "row-major", "permuted", "strided", "offset")
#: How many elements past an aligned start :func:`placed`'s offset layouts start
#: (the two mid ones reach the 4- and 8-byte vector classes: sweep55/fuzz.py's
#: OFFSETS=mid and test_random_layouts.py's mid-offset test).
OFFSETS = {"offset": 1, "offset by 2": 2, "offset by 3": 3}
MID_OFFSETS = tuple(name for name, elements in OFFSETS.items() if elements > 1)


def large_shapes(fd, rng, max_elements: int) -> list[tuple[int, ...]] | None:
    """Input shapes for ``fd`` of LARGE_SIZES that it accepts, no input or
    output over ``max_elements``; None when 20 draws find none."""
    for _ in range(20):
        shapes = input_shapes(fd, rng, LARGE_SIZES)
        try:
            outputs = [fd.output_shape(o.position, shapes) for o in fd.outputs]
        except InputError:
            continue  # a flattened dim bound to another size
        if all(np.prod(s, dtype=np.int64) <= max_elements for s in shapes + outputs):
            return shapes
    return None


def placed(array: np.ndarray, layout: str, device: str, order=None):
    """``array``'s values on ``device`` laid out: ``row-major``; ``permuted``,
    its dims in memory in ``order``; ``strided``, every other element of a
    buffer twice as wide; ``offset``, dense from one element past an aligned
    start (no vector access; ``offset by 2`` and ``by 3``, from two and three
    elements past it: OFFSETS). Arrays of too few dims or elements row-major."""
    if layout == "permuted" and array.ndim >= 2:
        return to_device(np.ascontiguousarray(array.transpose(order)), device).transpose(tuple(np.argsort(order)))
    if layout == "strided" and array.ndim >= 1:
        wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        return to_device(wide, device)[(slice(None),) * (array.ndim - 1) + (slice(None, None, 2),)]  # DeviceArrays take no Ellipsis
    if layout in OFFSETS and array.size:
        return past_aligned_start(array, OFFSETS[layout], device)
    return to_device(array, device)


def past_aligned_start(array: np.ndarray, elements: int, device: str):
    """``array``'s values on ``device``, dense, ``elements`` elements past
    an aligned start (so aligned to ``elements`` times the element size at
    most)."""
    if not elements:
        return to_device(array, device)
    flat = np.zeros(array.size + elements, array.dtype)
    flat[elements:] = array.ravel()
    return to_device(flat, device)[elements:].reshape(array.shape)


def poison(shape, dtype) -> np.ndarray:
    """A buffer a correct call overwrites: NaN, -77 for integers, True for Booleans."""
    if np.dtype(dtype) == bool:
        return np.ones(shape, bool)
    if np.dtype(dtype).kind in "iu":
        return np.full(shape, -77, dtype)
    return np.full(shape, np.nan, dtype)


def assert_matches_reference(got, want: np.ndarray, label: str) -> None:
    """``got`` against the float64 reference ``want``: exactly for integers
    and Booleans; for floats within 2e-2 relative and 2e-2 of the largest
    magnitude absolute (the row-program tests' tolerance), leaving out the
    elements the result's dtype cannot hold (an overflow to infinity)."""
    got = np.asarray(got)
    assert got.shape == want.shape, f"{label}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind != "f" or got.dtype.kind in "biu":  # bfloat16's kind is 'V'
        np.testing.assert_array_equal(got.astype(want.dtype) if got.dtype != want.dtype else got, want, err_msg=label)
        return
    largest = {2: 65504.0 if got.dtype == np.float16 else 3.38e38, 4: 3.4e38}.get(got.dtype.itemsize, np.inf)
    keep = np.abs(want) <= largest
    scale = max(1.0, float(np.max(np.abs(np.where(keep & np.isfinite(want), want, 0)), initial=0.0)))
    np.testing.assert_allclose(np.where(keep, got.astype(np.float64), 0), np.where(keep, want, 0), rtol=2e-2, atol=2e-2 * scale, err_msg=label)


def random_input(spec, shape, rng):
    """Random values of ``spec``'s dtype (never all zeros) in ``shape``, an
    array also for shape ``()``."""
    if spec.dtype.is_bool:
        return np.asarray(rng.random(shape) < 0.5)
    if spec.dtype.is_int:
        return np.asarray(rng.integers(-3, 4, shape), spec.dtype.numpy)
    return np.asarray(rng.standard_normal(shape), spec.dtype.numpy)
