"""test/test_inplace_random.py's in-place fusions on large sizes, against the SSA reference.

    python3 bench/results/experiments/sweep55/inplace_fuzz.py DEVICE SEED SECONDS [OUT]

The suite draws those fusions (pointwise ops, reductions broadcast back,
permutes, casts, segment_set cuts, in-place aliases, given outputs, some
strided) on sizes of 1 to 6; here the same recipes get sizes of up to 20000
(4M elements at most, square shapes kept square so that permutes apply), so
that the GPU's large schedules (tiles, cached and staged rows, outer
splits) meet the alias hazards the passes resolve. Each fusion runs under
every hazard policy, twice on one executor (the second a cache hit), and
each output and input is checked as the suite checks it. Mismatches and
exceptions go to OUT (default stdout). A search, not a test. With
OFFSETS=mid in the environment (from sweep 67 on), every array the search
puts on the device (inputs, among them those updated in place, and given
outputs) starts 2 or 3 elements past an aligned start, drawn for each array
(random_programs.MID_OFFSETS: the 4- and 8-byte vector classes).
"""

import dataclasses
import os
import random
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, "test")
sys.path.insert(0, str(Path(__file__).parent))
import fuzz  # noqa: E402  (the command line, OUT, and run)
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from devices import to_device  # noqa: E402
from random_programs import MID_OFFSETS, placed  # noqa: E402
from test_inplace_random import check_every_policy, recipes  # noqa: E402

SIZES, MAX_ELEMENTS = fuzz.LARGE_SIZES, fuzz.MAX_ELEMENTS
counts = {"fusions": 0, "failures": 0}

offsets = random.Random(fuzz.SEED)


def past_an_aligned_start(array, device):
    """``array`` on ``device``, 2 or 3 elements past an aligned start."""
    return placed(array, offsets.choice(MID_OFFSETS), device)


PLACE = past_an_aligned_start if os.environ.get("OFFSETS") == "mid" else to_device


@st.composite
def large_recipes(draw):
    recipe = draw(recipes())
    rank = len(recipe.base)
    if rank > 1 and len(set(recipe.base)) == 1:
        side = draw(st.sampled_from([s for s in SIZES if s**rank <= MAX_ELEMENTS]))
        base = (side,) * rank
    else:
        base = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    if np.prod(base, dtype=np.int64) > MAX_ELEMENTS:
        base = recipe.base
    return dataclasses.replace(recipe, base=base)


@seed(fuzz.SEED)
@settings(max_examples=10**6, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(recipe=large_recipes())
def search(recipe):
    if time.monotonic() > fuzz.DEADLINE[0]:
        raise KeyboardInterrupt
    counts["fusions"] += 1
    try:
        check_every_policy(recipe, fuzz.DEVICE, runs=2, large=True, place=PLACE)
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE {recipe!r}\n{traceback.format_exc()[-2500:]}", file=fuzz.OUT, flush=True)


if __name__ == "__main__":
    fuzz.run([(search, fuzz.END)], counts)
