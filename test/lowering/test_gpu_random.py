"""Random fusions compile for the GPU, on a machine without one.

Hypothesis draws the programs of ``random_programs`` (pointwise chains with
broadcasting, reductions, permutes, flattening reshapes, casts, selects)
over float32, float16, bfloat16, float64, int32 and bool inputs, and input
layouts (dense or strided, 4-, 8- or 16-byte aligned). Each must compile for
sm_90: schedulers, NVVM lowering, the PTX merge, and ptxas where it is on
PATH (a rejection raises); every kernel a launch program names must be in
the PTX. 100 fusions, the same every run (about 8 s on 2 cores); the 100
fail before b6bb730 (a reshape to a static shape). One-off runs drew 600
fusions afresh, which found that and integer abs (fixed in 3fd7719), then
1,000 more after both fixes, which all compiled. The row programs of
``random_programs`` (softmax's and the norms' shape, which the persistent
normalization scheduler takes) compile the same way.
"""

import re

from hypothesis import given
from hypothesis import strategies as st
from random_programs import PROGRAMS_OF_ALL_DTYPES, ROW_PROGRAMS, derandomized, random_fusion, row_program

from fuser_mlir.compiler import compile_fusion

LAYOUTS = st.tuples(st.booleans(), st.sampled_from([4, 8, 16]))


@derandomized(100)
@given(**PROGRAMS_OF_ALL_DTYPES, layout=LAYOUTS)
def test_random_fusions_compile_for_the_gpu(shapes, dtypes, steps, layout):
    compiles_for_the_gpu(random_fusion(shapes, dtypes, steps), layout)


def compiles_for_the_gpu(fd, layout) -> None:
    """``fd`` compiles for sm_90 with its inputs in ``layout``, and every kernel a launch program names is in the PTX."""
    compiled = compile_fusion(fd, device="cuda:0", layouts={"input": [layout] * len(fd.inputs), "given": {}})
    entries = set(re.findall(r"\.entry (\w+)\(", compiled.program.ptx))
    launched = {launch.kernel for program in compiled.program.programs.values() for launch in program.launches}
    assert launched and launched <= entries


@derandomized(20)
@given(**ROW_PROGRAMS, rank=st.sampled_from([2, 3]), layout=LAYOUTS)
def test_random_row_programs_compile_for_the_gpu(dtype, stages, weight, outputs, rank, layout):
    compiles_for_the_gpu(row_program(dtype, rank, stages, weight, outputs), layout)
