"""Mutated fuser IR through fuser-opt: every input parses and passes, or is refused with a diagnostic.

    python3 bench/results/experiments/sweep64/opt_fuzz.py SEED SECONDS [OUT]

The seeds are the lit tests' chunks of fuser IR (lit_tests/**/*.mlir,
split at ``// -----``) and the IR that ``fd.fusion_ir()`` prints for
test/random_programs.py's random fusions (some outputs given), half of
them also as the compiler outlines them (a host function calling segment
functions: the lowerings' input). Each mutant changes one to three things
in a seed's text: a tensor dim or rank, an element type, one tensor type
everywhere it appears, an SSA use, an op's name (another fuser op), an
integer, array or Boolean attribute, an op's attributes dropped, a line
deleted or moved. It runs through ``fuser-opt -p PIPELINE`` (fuser-verify
on the parsed input first, as a user's call would), PIPELINE one fuser
pass, a prefix of the compile pipeline, or a whole CPU or GPU pipeline.
mlir-opt's contract, which fuser-opt claims: exit 0 with IR that parses
again, or exit 1 with an ``error:`` diagnostic; and a pass that keeps the
IR fuser IR (no lowering) keeps it valid, so its output passes
fuser-verify. A finding is anything else: a Python exception out of the
driver (a pass that crashed on IR the verifier let through), exit 1 with
no diagnostic, exit 2 (usage) for a pipeline that exists, output that does
not parse or fails fuser-verify, a crash of the process, or a run over
TIMEOUT seconds.

Mutants run in a worker process (``--worker``) so that a crash is caught
and the worker restarted. A search, not a test: it runs for SECONDS and
writes every finding, with the mutant's text and pipeline, to OUT.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import select
import subprocess
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
TIMEOUT = 60.0
PIPELINES = [
    "fuser-verify",
    "fuser-segment",
    "fuser-resolve-alias-hazards",
    "fuser-test-print-alias-hazards",
    "fuser-segment,fuser-outline-segments",
    "fuser-resolve-alias-hazards,fuser-segment,fuser-outline-segments",
    "fuser-lower-to-cpu",
    "fuser-lower-to-gpu",
    "fuser-resolve-alias-hazards,fuser-segment,fuser-outline-segments,fuser-cpu-pipeline",
    "fuser-resolve-alias-hazards,fuser-segment,fuser-outline-segments,fuser-gpu-pipeline",
    "fuser-cpu-pipeline",
    "fuser-gpu-pipeline",
    "canonicalize,cse",
    "fuser-outline-segments",
    "fuser-segment,fuser-segment",
    "fuser-resolve-alias-hazards,fuser-resolve-alias-hazards",
    "fuser-segment,fuser-outline-segments,fuser-segment,fuser-outline-segments",
]
#: Passes after which the IR is no longer fuser IR (so fuser-verify does not apply to their output).
LOWERINGS = ("lower-to-cpu", "lower-to-gpu", "cpu-pipeline", "gpu-pipeline")
ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i32", "i64", "i1", "i8"]
TENSOR = re.compile(r"tensor<([^<>]*)>")
SSA_DEF = re.compile(r"^\s*(%[\w.]+)(?::\d+)?\s*=")
SSA_USE = re.compile(r"%[\w.]+")
INT_ATTR = re.compile(r"(-?\d+) : i64")
ARRAY_ATTR = re.compile(r"array<i64:?([^<>]*)>")
FUSER_OP = re.compile(r'"fuser\.(\w+)"')


def seeds(rng: random.Random, fusions: int) -> list[str]:
    texts = []
    for path in sorted((ROOT / "lit_tests").rglob("*.mlir")):
        for chunk in path.read_text().split("// -----"):
            body = "\n".join(line for line in chunk.splitlines() if not line.lstrip().startswith("//"))
            if '"fuser.' in body:  # fuser IR: the pipelines' input (linalg-only chunks test single upstream-fed passes)
                texts.append(body)
    sys.path.insert(0, str(ROOT / "test"))
    warnings.filterwarnings("ignore", "Using `assume` outside")
    from random_programs import random_fusion  # noqa: E402  (needs test/ on the path)
    from fuser_mlir import DataType

    dims, dtypes = [-1, -1, 1, 3], [DataType.Float, DataType.Half, DataType.BFloat16, DataType.Double, DataType.Int32, DataType.Bool]
    kinds = ["unary", "binary", "sum", "max", "permute", "flatten", "cast", "mean", "where"]
    made = 0
    while made < fusions:
        shapes = [[rng.choice(dims) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(1, 3))]
        steps = [(rng.choice(kinds), rng.randint(0, 99), rng.randint(0, 99), rng.choice(dtypes)) for _ in range(rng.randint(1, 7))]
        try:
            fd = random_fusion(shapes, [rng.choice(dtypes) for _ in shapes], steps)
            given = [rng.random() < 0.5 for o in fd.outputs if o.visible]
            texts.append(fd.fusion_ir(given))
            if rng.random() < 0.5:
                texts.append(outlined(texts[-1]))
            made += 1
        except Exception:  # a draw the frontend refuses (the strategies' assume)
            continue
    return texts


def outlined(text: str) -> str:
    """``text`` cut into segment functions, as the compiler cuts it before lowering."""
    from fuser_mlir._mlir import ir
    from fuser_mlir.dialect import make_context
    from fuser_mlir.pipeline import run_pipeline

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module, "fuser-segment,fuser-resolve-alias-hazards,fuser-outline-segments")
        return str(module)


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    lines = text.splitlines()
    done = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["dim", "rank", "element", "use", "op", "int", "array", "bool", "attrs", "delete", "move", "retype"])
        body = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(("func.func", "}", "module"))]
        if not body:
            break
        i = rng.choice(body)
        line = lines[i]
        if kind in ("dim", "rank", "element"):
            types = list(TENSOR.finditer(line))
            if not types:
                continue
            m = rng.choice(types)
            parts = m.group(1).split("x")
            shape, element = parts[:-1], parts[-1]
            if kind == "element":
                element = rng.choice(ELEMENT_TYPES)
            elif kind == "dim" and shape:
                j = rng.randrange(len(shape))
                shape[j] = rng.choice(["?", "1", "3", "4", "0", "7"])
            elif kind == "rank":
                if shape and rng.random() < 0.5:
                    del shape[rng.randrange(len(shape))]
                else:
                    shape.insert(rng.randint(0, len(shape)), rng.choice(["?", "1", "4"]))
            line = line[: m.start(1)] + "x".join([*shape, element]) + line[m.end(1) :]
        elif kind == "use":
            names = [SSA_DEF.match(lines[k]).group(1) for k in range(i) if SSA_DEF.match(lines[k])]
            names += re.findall(r"(%\w+):", "\n".join(lines[:i]))
            uses = list(SSA_USE.finditer(line))
            start = SSA_DEF.match(line).end() if SSA_DEF.match(line) else 0
            uses = [u for u in uses if u.start() >= start]
            if not uses or not names:
                continue
            u = rng.choice(uses)
            line = line[: u.start()] + rng.choice(names) + line[u.end() :]
        elif kind == "op":
            m = FUSER_OP.search(line)
            if not m:
                continue
            line = line[: m.start(1)] + rng.choice(OP_NAMES) + line[m.end(1) :]
        elif kind == "int":
            ints = list(INT_ATTR.finditer(line))
            if not ints:
                continue
            m = rng.choice(ints)
            line = line[: m.start(1)] + str(rng.choice([-1, 0, 1, 2, 3, 5, 64, 1 << 40])) + line[m.end(1) :]
        elif kind == "array":
            m = ARRAY_ATTR.search(line)
            if not m:
                continue
            values = [v.strip() for v in m.group(1).split(",") if v.strip()]
            how = rng.choice(["shuffle", "drop", "repeat", "range"])
            if how == "shuffle":
                rng.shuffle(values)
            elif how == "drop" and values:
                del values[rng.randrange(len(values))]
            elif how == "repeat" and values:
                values.append(rng.choice(values))
            else:
                values.append(str(rng.choice([-1, 3, 7])))
            line = line[: m.start(1)] + ", ".join(values) + line[m.end(1) :]
        elif kind == "bool":
            m = re.search(r"\b(true|false)\b", line)
            if not m:
                continue
            line = line[: m.start()] + ("false" if m.group() == "true" else "true") + line[m.end() :]
        elif kind == "retype":  # one tensor type changed everywhere, so that the IR stays consistent
            types = sorted({m.group(0) for m in TENSOR.finditer("\n".join(lines))})
            if not types:
                continue
            old = rng.choice(types)
            parts = old[len("tensor<") : -1].split("x")
            j = rng.randrange(len(parts))
            parts[j] = rng.choice(ELEMENT_TYPES) if j == len(parts) - 1 else rng.choice(["?", "1", "3", "5"])
            new = "tensor<" + "x".join(parts) + ">"
            lines = [line.replace(old, new) for line in lines]
            done.append(f"retype {old} -> {new}")
            continue
        elif kind == "attrs":
            m = re.search(r"\) \{[^{}]*\} :", line)
            if not m:
                continue
            line = line[: m.start()] + ") :" + line[m.end() :]
        elif kind == "delete":
            del lines[i]
            done.append(f"delete line {i}")
            continue
        elif kind == "move":
            j = min(max(i + rng.choice([-2, -1, 1, 2]), 0), len(lines) - 1)
            lines.insert(j, lines.pop(i))
            done.append(f"move line {i} to {j}")
            continue
        if line != lines[i]:
            done.append(f"{kind} line {i}: {lines[i].strip()} -> {line.strip()}")
            lines[i] = line
    return "\n".join(lines) + "\n", done


def _op_names() -> list[str]:
    irdl = (ROOT / "fuser_mlir" / "dialect" / "fuser.irdl.mlir").read_text()
    return sorted(set(re.findall(r"irdl\.operation @(\w+)", irdl)))


OP_NAMES = _op_names()


def worker() -> None:
    """Read {"path", "pipeline"} lines; answer each with {"status", ...}."""
    from fuser_mlir._mlir import ir
    from fuser_mlir.dialect import make_context
    from fuser_mlir.errors import PipelineError
    from fuser_mlir.pipeline import run_pipeline
    from fuser_mlir.tools.fuser_opt import main

    for request in sys.stdin:
        job = json.loads(request)
        out, err = io.StringIO(), io.StringIO()
        answer = {}
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main([job["path"], "-p", job["pipeline"]])
        except SystemExit as exit_:
            rc = exit_.code
        except BaseException:
            rc = None
            answer["traceback"] = traceback.format_exc()
        answer["rc"] = rc
        answer["stderr"] = err.getvalue()[-4000:]
        if rc == 0:
            try:
                with make_context(), ir.Location.unknown():
                    module = ir.Module.parse(out.getvalue())
                    if not any(name in job["pipeline"] for name in LOWERINGS):
                        run_pipeline(module, "fuser-verify")
            except PipelineError as error:
                answer["unverified"] = error.diagnostics[-2000:]
            except Exception as error:
                answer["reparse"] = str(error)[-2000:]
        print(json.dumps(answer), flush=True)


def verdict(answer: dict) -> str | None:
    if "traceback" in answer:
        return "exception"
    if answer["rc"] == 0:
        return "reparse" if "reparse" in answer else "unverified" if "unverified" in answer else None
    if answer["rc"] == 1:
        return None if "error:" in answer["stderr"] else "silent failure"
    return f"exit {answer['rc']}"


class Worker:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )

    def ask(self, path: str, pipeline: str) -> dict:
        self.proc.stdin.write(json.dumps({"path": path, "pipeline": pipeline}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            self.proc.wait()
            return {"rc": self.proc.returncode if ready else "timeout", "stderr": "", "died": True}
        return json.loads(line)


def search(seed: int, seconds: float, out) -> Counter:
    rng = random.Random(seed)
    corpus = seeds(rng, 200)
    end = time.monotonic() + seconds
    counts: Counter = Counter()
    work = Worker()
    scratch = Path(f"/tmp/opt_fuzz_{seed}.mlir")
    while time.monotonic() < end:
        text, changes = mutate(rng.choice(corpus), rng)
        pipeline = rng.choice(PIPELINES)
        scratch.write_text(text)
        answer = work.ask(str(scratch), pipeline)
        if answer.get("died"):
            work = Worker()
        found = "crash" if answer.get("died") else verdict(answer)
        counts["mutants"] += 1
        counts["ran" if answer["rc"] == 0 else "refused" if answer["rc"] == 1 else "other"] += 1
        if found:
            counts[found] += 1
            print(f"== {found} (rc {answer['rc']}) under -p {pipeline}; changes: {changes}", file=out)
            print(text, file=out)
            print(answer.get("traceback") or answer.get("reparse") or answer.get("unverified") or answer["stderr"], file=out, flush=True)
    work.proc.kill()
    return counts


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        SEED, SECONDS = int(sys.argv[1]), float(sys.argv[2])
        OUT = open(sys.argv[3], "a") if len(sys.argv) > 3 else sys.stdout
        counts = search(SEED, SECONDS, OUT)
        print(f"opt_fuzz seed {SEED}, {SECONDS:.0f} s: {dict(counts)}", file=OUT, flush=True)
        print(f"opt_fuzz seed {SEED}, {SECONDS:.0f} s: {dict(counts)}")
