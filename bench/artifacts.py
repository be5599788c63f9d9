"""Compile, export, load: the numbers of issue 8 (artifacts and the disk cache).

    python bench/artifacts.py [--repeat 3] [--json bench/results/artifacts.json]

For three fusions (an 11-op pointwise chain, a softmax over columns from
primitives: 3 segments, and the same over rows: 1 segment) it measures, each in fresh processes, the median of ``--repeat``:

- cold compile: ``fd.compile`` with the disk cache off, MLIR already imported
  (the import itself, about 0.1 s, is reported apart);
- export time and artifact size (``.fsn``) and the size of the kernel library;
- load + first call in a new process that has NumPy imported:
  ``fuser_mlir.load(artifact)`` then ``run`` (imports of fuser-mlir included);
- the first ``fd.execute`` in a new process whose disk cache is warm (the
  definition already built; no MLIR import on a hit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEFINE = {
    "pointwise11": """
with FusionDefinition(name="pointwise11") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    t = fd.ops.exp(x * 0.5) + y
    t = fd.ops.tanh(t) * 3.0 - fd.ops.abs(y)
    t = fd.ops.sqrt(fd.ops.abs(t) + 1.0) / y
    fd.add_output(t)
args = [np.random.rand(1024, 1024).astype(np.float32) + 0.5 for _ in range(2)]
""",
    # over columns: a row softmax is one segment (segmentation rule 2b)
    "softmax3seg": """
with FusionDefinition(name="softmax3seg") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    e = fd.ops.exp(x - fd.ops.max(x, dims=[0], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[0], keepdim=True))
args = [np.random.rand(1024, 1024).astype(np.float32)]
""",
    "softmax_rows": """
with FusionDefinition(name="softmax_rows") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
args = [np.random.rand(1024, 1024).astype(np.float32)]
""",
}

COMPILE = """
import json, os, sys, time
import numpy as np
t0 = time.perf_counter()
import fuser_mlir._mlir
t_mlir = time.perf_counter() - t0
from fuser_mlir import DataType, FusionDefinition
{define}
t0 = time.perf_counter()
compiled = fd.compile(args)
t_compile = time.perf_counter() - t0
t0 = time.perf_counter()
compiled.export(sys.argv[1])
t_export = time.perf_counter() - t0
print(json.dumps({{"mlir_import_s": t_mlir, "compile_s": t_compile, "export_s": t_export, "segments": compiled.num_segments,
                  "artifact_bytes": os.path.getsize(sys.argv[1]), "library_bytes": compiled.image.nbytes}}))
"""

LOAD = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import fuser_mlir
loaded = fuser_mlir.load(sys.argv[1])
t_load = time.perf_counter() - t0
args = [np.random.rand(1024, 1024).astype(np.float32) + 0.5 for _ in loaded.signature.inputs]
t0 = time.perf_counter()
loaded.run(args)
t_first = time.perf_counter() - t0
assert not any(m.startswith("mlir") for m in sys.modules)
print(json.dumps({{"load_s": t_load, "first_run_s": t_first}}))
"""

WARM = """
import json, sys, time
import numpy as np
from fuser_mlir import DataType, FusionDefinition
{define}
t0 = time.perf_counter()
fd.execute(args)
t_first = time.perf_counter() - t0
stats = fd._executor.stats
print(json.dumps({{"first_execute_s": t_first, "disk_hits": stats.disk_hits, "compilations": stats.compilations,
                  "mlir_imported": any(m.startswith("mlir") for m in sys.modules)}}))
"""


def run(code: str, *argv: str, **env: str) -> dict:
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=environment, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, define in DEFINE.items():
            artifact = str(Path(tmp) / f"{name}.fsn")
            cold = [run(COMPILE.format(define=define), artifact, FUSER_CACHE="0") for _ in range(args.repeat)]
            load = [run(LOAD.format(), artifact) for _ in range(args.repeat)]
            cache = str(Path(tmp) / f"cache-{name}")
            run(WARM.format(define=define), FUSER_CACHE_DIR=cache)  # fills the cache
            warm = [run(WARM.format(define=define), FUSER_CACHE_DIR=cache) for _ in range(args.repeat)]
            assert all(w["disk_hits"] == 1 and w["compilations"] == 0 for w in warm), warm
            results[name] = {
                "segments": cold[0]["segments"],
                "mlir_import_ms": 1e3 * median(cold, "mlir_import_s"),
                "cold_compile_ms": 1e3 * median(cold, "compile_s"),
                "export_ms": 1e3 * median(cold, "export_s"),
                "artifact_bytes": cold[0]["artifact_bytes"],
                "library_bytes": cold[0]["library_bytes"],
                "load_ms": 1e3 * median(load, "load_s"),
                "first_run_after_load_ms": 1e3 * median(load, "first_run_s"),
                "warm_cache_first_execute_ms": 1e3 * median(warm, "first_execute_s"),
                "warm_cache_imports_mlir": any(w["mlir_imported"] for w in warm),
            }
    columns = list(next(iter(results.values())))
    print("| fusion | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, row in results.items():
        print(f"| {name} | " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
