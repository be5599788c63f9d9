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

sys.path.insert(0, str(Path(__file__).parent))
import searches  # noqa: E402  (the two searches; puts test/ and sweep55/ on the path)
from devices import assert_unchanged, to_device  # noqa: E402
from misuse import run_on_copies  # noqa: E402
from random_programs import assert_matches_reference, poison  # noqa: E402
from reference import evaluate, visible_then_written  # noqa: E402

import fuser_mlir  # noqa: E402
from fuser_mlir.errors import InputError  # noqa: E402

fuz_cli = searches.fuz_cli
DEVICE, OUT = fuz_cli.DEVICE, fuz_cli.OUT
counts = {"fusions": 0, "calls": 0, "other signatures": 0, "failures": 0}
SIZES = [1, 7, 33, 130, 1000]  # of symbolic dims
WORK = Path(tempfile.mkdtemp(prefix="artifact-fuzz-"))


def check(fd, make_arrays, rng, label: str) -> None:
    visible = [o for o in fd.outputs if o.visible]
    sets = searches.arrays_it_takes(fd, make_arrays, rng, 2)  # two sets of sizes
    if sets is None:
        return
    counts["fusions"] += 1
    path = WORK / (f"f{counts['fusions']}.fsn" if counts["fusions"] % 2 else f"f{counts['fusions']}")
    gives = [rng.random() < 0.4 for _ in visible]  # part of the signature an artifact is compiled for
    stage = "export"
    try:
        first = [to_device(poison(s, o.dtype.numpy), DEVICE) if g else None for g, s, o in zip(gives, sets[0][1], visible)]
        fd.compile([to_device(a, DEVICE) for a in sets[0][0]], outputs=first).export(path)
        stage = "load"
        loaded = fuser_mlir.load(path)
        for n, (arrays, shapes) in enumerate([*sets, sets[0]]):
            counts["calls"] += 1
            stage = f"call {n}"
            given = [poison(s, o.dtype.numpy) if g else None for g, s, o in zip(gives, shapes, visible)]
            try:
                got = run_on_copies(loaded.run, fd, arrays, given, DEVICE, f"call {n}")
            except InputError as err:  # sizes of 1 where the first had more, or other alignments: another signature
                if "do not match the signature" not in str(err):
                    raise
                counts["other signatures"] += 1
                continue
            fresh = run_on_copies(lambda i, o: fd.execute(i, outputs=o), fd, arrays, given, DEVICE, f"call {n}")
            for k, (a, b) in enumerate(zip(got, fresh)):
                assert_unchanged(a, b, f"result {k}: the loaded fusion against fd.execute")  # bytes: a bfloat16 NaN is not equal to itself
            expected, written, _ = visible_then_written(fd, evaluate(fd, arrays, rounded=True))
            for k, (g, want) in enumerate(zip(got, expected + written)):
                assert_matches_reference(g, want, f"result {k}")
    except Exception:
        counts["failures"] += 1
        print(f"== FAILURE at {stage} {label}\n   shapes {[[a.shape for a in s[0]] for s in sets]}\n{traceback.format_exc()[-3000:]}", file=OUT, flush=True)


if __name__ == "__main__":
    searches.run(check, counts, SIZES, (1, 2, 5, 23), (1, 3, 8, 33, 128, 1000, 4099))
