"""Random fusions through exported artifacts: does a loaded fusion compute what the fusion does?

    python3 bench/results/experiments/sweep56/artifact_fuzz.py DEVICE SEED SECONDS [OUT]

test/random_programs.py's programs (every dtype) and row programs (some
writing into their input), compiled on one set of sizes, given outputs or not (poisoned; part of the signature an artifact holds), exported (a
directory or a .fsn zip, by turns), loaded with ``fuser_mlir.load`` and run
on those sizes and on others (a call of another signature, such as sizes of
1 where the first call had more, is refused by the artifact and counted). Each loaded
result must equal, bit for bit, what ``fd.execute`` gives on the same
arguments (the same kernels), and match the reference (rounded to each op's
dtype); inputs that are not written must be unchanged. Mismatches and
exceptions go to OUT (default stdout) with what reproduces them. A search,
not a test.
"""

import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import searches  # noqa: E402  (the two searches; puts test/ and sweep55/ on the path)
from devices import to_device, to_host  # noqa: E402
from random_programs import assert_matches_reference, poison  # noqa: E402
from reference import evaluate, visible_then_written  # noqa: E402

import fuser_mlir  # noqa: E402
from fuser_mlir.errors import InputError  # noqa: E402

fuz_cli = searches.fuz_cli
DEVICE, OUT, DEADLINE = fuz_cli.DEVICE, fuz_cli.OUT, fuz_cli.DEADLINE
counts = {"fusions": 0, "calls": 0, "other signatures": 0, "failures": 0}
SIZES = [1, 7, 33, 130, 1000]  # of symbolic dims
WORK = Path(tempfile.mkdtemp(prefix="artifact-fuzz-"))


def one_call(run, fd, arrays, given):
    """``run(inputs, outputs)`` on DEVICE copies: the visible results and the written inputs, on the host."""
    inputs = [to_device(a.copy(), DEVICE) for a in arrays]
    outputs = [None if g is None else to_device(g.copy(), DEVICE) for g in given]
    results = run(inputs, outputs if any(g is not None for g in outputs) else None)
    written_at = [o.alias_input for o in fd.outputs if o.alias_input is not None]
    unchanged = [k for k in range(len(arrays)) if k not in written_at]
    for k in unchanged:
        np.testing.assert_array_equal(to_host(inputs[k]), arrays[k], err_msg=f"input {k} changed")
    return [to_host(r) for r in results] + [to_host(inputs[k]) for k in dict.fromkeys(written_at)]


def check(fd, make_arrays, rng, label: str) -> None:
    visible = [o for o in fd.outputs if o.visible]
    sets = []
    for _ in range(40):  # two sets of sizes the definition takes (a flattened dim may be bound to another size)
        arrays = make_arrays(rng)
        if arrays is None:
            continue
        try:
            sets.append((arrays, [fd.output_shape(o.position, [a.shape for a in arrays]) for o in visible]))
        except InputError:
            continue
        if max([np.prod(s, dtype=np.int64) for s in sets[-1][1]], default=0) > searches.MAX_ELEMENTS:
            sets.pop()
            continue
        if len(sets) == 2:
            break
    else:
        return
    counts["fusions"] += 1
    path = WORK / (f"f{counts['fusions']}.fsn" if counts["fusions"] % 2 else f"f{counts['fusions']}")
    gives = [rng.random() < 0.4 for _ in visible]  # part of the signature an artifact is compiled for
    stage = "export"
    try:
        first = [to_device(poison(s, o.dtype.numpy), DEVICE) if g else None for g, s, o in zip(gives, sets[0][1], visible)]
        fd.compile([to_device(a, DEVICE) for a in sets[0][0]], outputs=first if any(gives) else None).export(path)
        stage = "load"
        loaded = fuser_mlir.load(path)
        for n, (arrays, shapes) in enumerate([*sets, sets[0]]):
            counts["calls"] += 1
            stage = f"call {n}"
            given = [poison(s, o.dtype.numpy) if g else None for g, s, o in zip(gives, shapes, visible)]
            try:
                got = one_call(loaded.run, fd, arrays, given)
            except InputError as err:  # sizes of 1 where the first had more, or other alignments: another signature
                if "do not match the signature" not in str(err):
                    raise
                counts["other signatures"] += 1
                continue
            fresh = one_call(lambda i, o: fd.execute(i, outputs=o), fd, arrays, given)
            for k, (a, b) in enumerate(zip(got, fresh)):
                np.testing.assert_array_equal(a, b, err_msg=f"result {k}: the loaded fusion against fd.execute")
            expected, written, _ = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
            for k, (g, want) in enumerate(zip(got, expected + written)):
                assert_matches_reference(g, want, f"result {k}")
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE at {stage} {label}\n   shapes {[[a.shape for a in s[0]] for s in sets]}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


if __name__ == "__main__":
    searches.run(check, counts, SIZES, (1, 2, 5, 23), (1, 3, 8, 33, 128, 1000, 4099))
