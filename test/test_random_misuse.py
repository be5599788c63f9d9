"""Bad calls between good ones lose nothing (test/misuse.py).

Random fusions (test/random_programs.py's programs of every dtype, and its
row programs, some writing into their input) each get a good call, a call
spoiled one way (an input left out or one too many, of another dtype, rank
or size, a list or None for an array, negative strides; a given output of
another shape or dtype, read-only, repeating elements or an input itself;
one output too many or too few; a read-only input the fusion writes), then
the good call again: a hit, which must still be right. A spoiled call
raises a FuserError that leaves every buffer as it was, or runs and matches
the reference; those in ``MUST_REFUSE`` must raise.
"""

import numpy as np
import pytest
from devices import cuda_available
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from misuse import MISUSES, MUST_REFUSE, NOT_APPLICABLE, good_call, spoil, spoiled_call, spoiled_between_good_calls
from random_programs import ALL_DTYPES, ROW_PROGRAMS, SHAPES, input_shapes, poison, random_fusion, random_input, row_inputs, row_program, step

from fuser_mlir import DataType, FusionDefinition

SETTINGS = settings(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))


def check(fd, arrays, kind: str, rng, device: str) -> None:
    assume(spoiled_between_good_calls(fd, arrays, kind, rng, device) is not NOT_APPLICABLE)


#: The random fusions and row programs on the CPU, and the pairs of them on
#: the GPU (DeviceArrays, read-only and stride-0 ones included), fewer: each
#: compiles there for a second or so; 100 and 60 took over four minutes (sweep 56f).
CPU_FUSIONS, CPU_ROW_PROGRAMS, GPU_FUSIONS = 100, 60, 20
FUSIONS = dict(
    shapes=SHAPES, dtypes=st.lists(ALL_DTYPES, min_size=3, max_size=3), steps=st.lists(step(ALL_DTYPES), min_size=1, max_size=7),
    kind=st.sampled_from(MISUSES), data=st.integers(0, 2**31),
)
ROWS = dict(
    **ROW_PROGRAMS, rows=st.lists(st.sampled_from([1, 2, 5]), min_size=1, max_size=2), cols=st.sampled_from([1, 3, 8, 33, 128]),
    kind=st.sampled_from(MISUSES), data=st.integers(0, 2**31),
)


def random_fusion_case(device, shapes, dtypes, steps, kind, data):
    fd = random_fusion(shapes, dtypes, steps)
    rng = np.random.default_rng(data)
    check(fd, [random_input(spec, shape, rng) for spec, shape in zip(fd.inputs, input_shapes(fd, rng))], kind, rng, device)


def row_program_case(device, dtype, stages, weight, outputs, rows, cols, kind, data):
    fd = row_program(dtype, len(rows) + 1, stages, weight, outputs)
    rng = np.random.default_rng(data)
    check(fd, row_inputs(dtype, (*rows, cols), weight, rng), kind, rng, device)


@settings(SETTINGS, max_examples=CPU_FUSIONS)
@given(**FUSIONS)
def test_a_spoiled_call_of_a_random_fusion_refuses_and_loses_nothing_or_runs_right(**drawn):
    random_fusion_case("cpu", **drawn)


@settings(SETTINGS, max_examples=CPU_ROW_PROGRAMS)
@given(**ROWS)
def test_a_spoiled_call_of_a_row_program_refuses_and_loses_nothing_or_runs_right(**drawn):
    row_program_case("cpu", **drawn)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA device: needs cuda-bindings and an NVIDIA GPU")
@settings(SETTINGS, max_examples=GPU_FUSIONS, phases=[Phase.explicit, Phase.generate])  # a shrink costs minutes there
@given(fusion=st.fixed_dictionaries(FUSIONS), row=st.fixed_dictionaries(ROWS))
def test_spoiled_calls_refuse_and_lose_nothing_or_run_right_on_the_gpu(fusion, row):
    """A random fusion's and a row program's spoiled calls on the GPU."""
    random_fusion_case("cuda", **fusion)
    row_program_case("cuda", **row)


def test_every_spoiling_that_must_refuse_refuses_a_fusion_that_takes_them_all(device):
    """A fusion with a visible output and an input written in place takes
    every spoiling in MUST_REFUSE; each refuses, every buffer as it was."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        w = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(x * w)
        fd.add_output(x - fd.ops.sum(x, [1], keepdim=True), alias_input=x)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)]
    for kind in sorted(MUST_REFUSE):
        spoiled = spoil(kind, fd, arrays, [poison((3, 8), np.float32)], rng)
        assert spoiled is not None, kind
        assert spoiled_call(fd, *spoiled, device) is not None, f"the call spoiled by {kind!r} ran"
    good_call(fd, arrays, [None], device, "the good call after them")
