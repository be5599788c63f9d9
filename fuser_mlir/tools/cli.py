"""``fuser-mlir``: the user-facing command.

    fuser-mlir demo                   run an example fusion on the CPU, check it, print its IR
    fuser-mlir show-segments FILE.py  draw the segments of the fusions FILE.py defines
                                      (Graphviz dot text; an SVG too when `dot` exists)
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from fuser_mlir import __version__


def _demo_fusion():
    from fuser_mlir import DataType, FusionDefinition

    with FusionDefinition(name="demo_softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        scale = fd.define_scalar(dtype=DataType.Double)
        t = (x + bias) * scale
        m = fd.ops.max(t, dims=[1], keepdim=True)
        e = fd.ops.exp(t - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def demo(_args) -> int:
    import numpy as np

    fd = _demo_fusion()
    rng = np.random.default_rng()
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    bias = rng.standard_normal((1, 1000)).astype(np.float32)
    scale = 0.5
    (out,) = fd.execute([x, bias, scale])
    t = (x.astype(np.float64) + bias) * scale
    e = np.exp(t - t.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    err = float(np.max(np.abs(out - ref)))
    ok = err < 1e-5
    compiled = fd.compile([x, bias, scale])
    print("fuser-mlir demo: softmax((x + bias) * scale) over rows of a 64x1000 float32 array, on the CPU")
    print(f"result check against a NumPy float64 reference: max abs error {err:.2e} -> {'OK' if ok else 'FAILED'}")
    print(f"segments: {compiled.num_segments} ({', '.join(s.name for s in compiled.segments)})")
    print("\nfuser IR of the definition:\n")
    print(fd.fusion_ir())
    return 0 if ok else 1


def _definitions(namespace: dict) -> list:
    from fuser_mlir import FusionDefinition

    return [(name, v) for name, v in namespace.items() if isinstance(v, FusionDefinition)]


def show_segments(args) -> int:
    from fuser_mlir.compiler import compile_fusion
    from fuser_mlir.visualize import render_svg

    path = Path(args.file)
    if not path.is_file():
        print(f"fuser-mlir: error: no such file: {path}", file=sys.stderr)
        return 2
    namespace = runpy.run_path(str(path), run_name="__fuser_show_segments__")
    found = _definitions(namespace)
    if not found:
        print(f"fuser-mlir: error: {path} defines no FusionDefinition at module level", file=sys.stderr)
        return 2
    for name, fd in found:
        compiled = compile_fusion(fd)
        dot = compiled.to_dot()
        out = path.with_name(f"{path.stem}.{name}.dot")
        out.write_text(dot)
        print(f"{name}: {compiled.num_segments} segment(s); dot written to {out}")
        svg = render_svg(dot)
        if svg is not None:
            out.with_suffix(".svg").write_text(svg)
            print(f"{name}: SVG written to {out.with_suffix('.svg')}")
        print(compiled.plan.describe())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuser-mlir", description="fuser-mlir: a fusion compiler built on MLIR")
    parser.add_argument("--version", action="version", version=f"fuser-mlir {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run an example fusion and print its check and IR").set_defaults(func=demo)
    show = sub.add_parser("show-segments", help="draw the segments of the fusions a script defines")
    show.add_argument("file")
    show.set_defaults(func=show_segments)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
