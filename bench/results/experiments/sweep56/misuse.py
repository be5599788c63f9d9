"""Bad calls between good ones: does a wrong call lose nothing?

    python3 bench/results/experiments/sweep56/misuse.py DEVICE SEED SECONDS [OUT]

test/test_random_misuse.py's check for SECONDS: test/random_programs.py's
programs (every dtype) and row programs (some writing into their input), on
small sizes; each gets a good call (given outputs poisoned, some), a call
spoiled one way (test/misuse.py's MISUSES), then the good call again. A
spoiled call must raise a FuserError that leaves every buffer as it was, or
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
from misuse import MISUSES, MUST_REFUSE, good_call, spoil, spoiled_call  # noqa: E402
from random_programs import poison  # noqa: E402

from fuser_mlir.errors import InputError  # noqa: E402

fuz_cli = searches.fuz_cli
DEVICE, OUT, DEADLINE = fuz_cli.DEVICE, fuz_cli.OUT, fuz_cli.DEADLINE
counts = {"fusions": 0, "spoiled calls": 0, "refused": 0, "ran": 0, "failures": 0}
outcomes, messages = {}, {}  # each spoiling's outcomes (r refused, + ran), its first message


def check(fd, make_arrays, rng, label: str) -> None:
    visible = [o for o in fd.outputs if o.visible]
    for _ in range(20):  # sizes the definition takes (a flattened dim may be bound to another size)
        arrays = make_arrays(rng)
        if arrays is None:
            continue
        try:
            shapes = [fd.output_shape(o.position, [a.shape for a in arrays]) for o in visible]
            break
        except InputError:
            continue
    else:
        return
    counts["fusions"] += 1
    given_outputs = [poison(s, o.dtype.numpy) if rng.random() < 0.4 else None for s, o in zip(shapes, visible)]
    kind = str(rng.choice(MISUSES))
    spoiled = spoil(kind, fd, arrays, given_outputs, rng)
    stage = "the first good call"
    try:
        good_call(fd, arrays, given_outputs, DEVICE, stage)
        if spoiled is None:
            return
        stage = f"the call spoiled by {kind!r}"
        counts["spoiled calls"] += 1
        message = spoiled_call(fd, *spoiled, DEVICE)
        counts["refused" if message else "ran"] += 1
        outcomes[kind] = outcomes.get(kind, "") + ("r" if message else "+")
        messages.setdefault(kind, message)
        assert message is not None or kind not in MUST_REFUSE, f"the call spoiled by {kind!r} ran"
        stage = f"the good call after one spoiled by {kind!r}"
        good_call(fd, arrays, given_outputs, DEVICE, stage)
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE at {stage} {label}\n   shapes {[a.shape for a in arrays]} dtypes {[str(a.dtype) for a in arrays]} "
              f"given {[g is not None for g in given_outputs]}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


if __name__ == "__main__":
    searches.run(check, counts)
    for kind in MISUSES:
        print(f"{kind:24} {outcomes.get(kind, '')[:40]:40} {(messages.get(kind) or '')[:200]!r}", file=OUT, flush=True)
