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
1,000 more after both fixes, which all compiled.
"""

import re

from hypothesis import given
from hypothesis import strategies as st
from random_programs import PROGRAMS_OF_ALL_DTYPES, derandomized, random_fusion

from fuser_mlir.compiler import compile_fusion

LAYOUTS = st.tuples(st.booleans(), st.sampled_from([4, 8, 16]))


@derandomized(100)
@given(**PROGRAMS_OF_ALL_DTYPES, layout=LAYOUTS)
def test_random_fusions_compile_for_the_gpu(shapes, dtypes, steps, layout):
    fd = random_fusion(shapes, dtypes, steps)
    compiled = compile_fusion(fd, device="cuda:0", layouts={"input": [layout] * len(fd.inputs), "given": {}})
    entries = set(re.findall(r"\.entry (\w+)\(", compiled.program.ptx))
    launched = {launch.kernel for program in compiled.program.programs.values() for launch in program.launches}
    assert launched and launched <= entries
