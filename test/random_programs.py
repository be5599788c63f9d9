"""Random fusion programs for property-based tests: a chain of pointwise
ops (with implicit broadcasting), reductions, permutes, flattening reshapes,
casts and selects over a few inputs of random shapes and dtypes."""

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from fuser_mlir.errors import DefinitionError
from fuser_mlir.frontend import DataType, FusionDefinition, Tensor

DIM = st.sampled_from([-1, -1, 1, 3])
SHAPES = st.lists(st.lists(DIM, min_size=0, max_size=3), min_size=1, max_size=3)
DTYPES = st.sampled_from([DataType.Float, DataType.Half, DataType.Int32, DataType.Bool])
#: DTYPES and the two the GPU's kernels treat apart (bfloat16 words, float64 accumulators).
ALL_DTYPES = st.sampled_from([DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32, DataType.Bool])
KINDS = st.sampled_from(["unary", "binary", "sum", "max", "permute", "flatten", "cast", "mean", "where"])


def step(dtypes=DTYPES):
    """One step: its kind, two picks from the values so far, a cast's dtype."""
    return st.tuples(KINDS, st.integers(0, 99), st.integers(0, 99), dtypes)


STEP = step()

#: What the tests that run programs of every dtype draw: random_fusion's arguments.
PROGRAMS_OF_ALL_DTYPES = dict(
    shapes=SHAPES,
    dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3),
    steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7),
)


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
    return fd.ops.neg(a) if not a.dtype.is_bool else fd.ops.logical_not(a)


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


def input_shapes(fd, rng) -> list[tuple[int, ...]]:
    """Concrete input shapes for ``fd`` that respect its size classes
    (dims bound to one size get one random size, 2-5, or their static one)."""
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
            chosen.setdefault(group, statics[0] if statics else int(rng.integers(2, 6)))
            dims.append(chosen[group])
        shapes.append(tuple(dims))
    return shapes


def random_input(spec, shape, rng):
    """Random values of ``spec``'s dtype (never all zeros) in ``shape``, an
    array also for shape ``()``."""
    if spec.dtype.is_bool:
        return np.asarray(rng.random(shape) < 0.5)
    if spec.dtype.is_int:
        return np.asarray(rng.integers(-3, 4, shape), spec.dtype.numpy)
    return np.asarray(rng.standard_normal(shape), spec.dtype.numpy)
