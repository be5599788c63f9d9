"""libm calls on the CPU: the host's vector library against scalar libm, side by side.

    python bench/cpu_libm.py [--repeat 300] [--json OUT]

Every call of a libm function goes through one libmvec variant
(fuser_mlir/lowering/vector_library.py): a vectorised loop calls it on 8
float32 lanes, a loop that is not vectorised (a transposed read, rows of 7)
calls it with its argument in every lane. Each case is compiled twice in
this process, with the host's vector library and with scalar libm
(``vector_library=""``: what a host without libmvec runs), checked against
a float64 NumPy reference, and timed on one thread (the least of
``--repeat`` calls, arrays in cache: the function's cost, not memory's),
with NumPy's time for the same expression. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

import numpy as np

from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.lowering import cpu as cpu_lowering
from fuser_mlir.lowering.vector_library import host_vector_library

F, D = DataType.Float, DataType.Double


def cases(rng: np.random.Generator) -> list:
    contiguous = rng.standard_normal((64, 1024)).astype(np.float32)
    square = rng.standard_normal((256, 256)).astype(np.float32)
    short_rows = rng.standard_normal((9362, 7)).astype(np.float32)
    double = rng.standard_normal((64, 512))
    return [
        ("sin, 64x1024 float32", lambda fd, x: fd.ops.sin(x), [contiguous], np.sin),
        ("sin of a transposed 256x256 float32", lambda fd, x: fd.ops.sin(fd.ops.permute(x, [1, 0])), [square], lambda x: np.sin(x.T)),
        ("sin, rows of 7 float32", lambda fd, x: fd.ops.sin(x), [short_rows], np.sin),
        ("sin(x) > 0.5, 64x1024 float32 (bool result)", lambda fd, x: fd.ops.gt(fd.ops.sin(x), 0.5), [contiguous], lambda x: np.sin(x) > 0.5),
        ("pow(|x|, x), 64x1024 float32", lambda fd, x: fd.ops.pow(fd.ops.abs(x), x), [contiguous], lambda x: np.power(np.abs(x), x)),
        ("exp, 64x512 float64", lambda fd, x: fd.ops.exp(x), [double], np.exp),
    ]


@contextlib.contextmanager
def vector_library(name: str):
    """Compile with ``name`` ("" for scalar libm) instead of the host's."""
    saved = cpu_lowering.host_vector_library
    cpu_lowering.host_vector_library = lambda: name
    try:
        yield
    finally:
        cpu_lowering.host_vector_library = saved


def least_time(call, repeat: int) -> float:
    call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def measure(label, build, arrays, numpy_version, library: str, repeat: int) -> dict:
    dtype = D if arrays[0].dtype == np.float64 else F
    row = {"case": label}
    for name, lib in (("vector", library), ("scalar", "")):
        with vector_library(lib):
            with FusionDefinition(name="libm_case") as fd:
                x = fd.define_tensor(shape=[-1, -1], dtype=dtype)
                fd.add_output(build(fd, x))
            (got,) = fd.execute(arrays)
        want = numpy_version(arrays[0].astype(np.float64))
        if got.dtype == bool:
            close = np.abs(np.sin(arrays[0].astype(np.float64)) - 0.5) < 1e-5  # either side within rounding
            if not np.array_equal(got[~close], want[~close]):
                raise AssertionError(f"{label} ({name} libm): wrong result")
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{label} ({name} libm)")
        row[f"{name}_us"] = least_time(lambda: fd.execute(arrays), repeat) * 1e6
    row["numpy_us"] = least_time(lambda: numpy_version(arrays[0]), repeat) * 1e6
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="calls timed per case and library (the least counts)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    with environment(FUSER_CPU_THREADS="1", FUSER_CACHE="0"):  # one thread; both builds of a case compile here
        rows = run(args.repeat)
    if args.json:
        args.json.write_text(json.dumps({"vector_library": host_vector_library(), "rows": rows}, indent=1) + "\n")
    return rows


@contextlib.contextmanager
def environment(**values: str):
    """Set environment variables for the ``with`` block, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(repeat: int) -> list[dict]:
    library = host_vector_library()
    print(f"vector library: {library or 'none (scalar libm both ways)'}")
    print(f"{'case':48} {'vector us':>10} {'scalar us':>10} {'numpy us':>10}")
    rows = []
    for case in cases(np.random.default_rng(0)):
        row = measure(*case, library, repeat)
        rows.append(row)
        print(f"{row['case']:48} {row['vector_us']:10.1f} {row['scalar_us']:10.1f} {row['numpy_us']:10.1f}", flush=True)
    return rows


if __name__ == "__main__":
    main()
