"""Bad calls between good ones: does a wrong call lose nothing?

    python3 bench/results/experiments/sweep56/misuse.py DEVICE SEED SECONDS [OUT]

test/test_random_misuse.py's check for SECONDS: test/random_programs.py's
programs (every dtype) and row programs (some writing into their input), on
small sizes; each gets test/misuse.py's spoiled_between_good_calls: a good
call (given outputs poisoned, some), a call spoiled one way (MISUSES), then
the good call again. A spoiled call must raise a FuserError that leaves every buffer as it was, or
run and match the reference (those in MUST_REFUSE must raise). Failures go
to OUT (default stdout) with what reproduces them; at the end, each
spoiling's outcomes (r: refused, +: ran) and its first message. A search,
not a test.
"""

import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import searches  # noqa: E402  (the two searches; puts test/ and sweep55/ on the path)
from misuse import MISUSES, NOT_APPLICABLE, spoiled_between_good_calls  # noqa: E402

fuz_cli = searches.fuz_cli
DEVICE, OUT = fuz_cli.DEVICE, fuz_cli.OUT
counts = {"fusions": 0, "spoiled calls": 0, "refused": 0, "ran": 0, "failures": 0}
outcomes, messages = {}, {}  # each spoiling's outcomes (r refused, + ran), its first message


def check(fd, make_arrays, rng, label: str) -> None:
    drawn = searches.arrays_it_takes(fd, make_arrays, rng, 1)
    if drawn is None:
        return
    counts["fusions"] += 1
    arrays = drawn[0][0]
    kind = str(rng.choice(MISUSES))
    try:
        message = spoiled_between_good_calls(fd, arrays, kind, rng, DEVICE)
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE {label}, spoiled by {kind!r}\n   shapes {[a.shape for a in arrays]} dtypes {[str(a.dtype) for a in arrays]}\n"
              f"{traceback.format_exc()[-3000:]}", file=OUT, flush=True)
        return
    if message is NOT_APPLICABLE:
        return
    counts["spoiled calls"] += 1
    counts["refused" if message else "ran"] += 1
    outcomes[kind] = outcomes.get(kind, "") + ("r" if message else "+")
    messages.setdefault(kind, message)


if __name__ == "__main__":
    searches.run(check, counts)
    for kind in MISUSES:
        print(f"{kind:24} {outcomes.get(kind, '')[:40]:40} {(messages.get(kind) or '')[:200]!r}", file=OUT, flush=True)
