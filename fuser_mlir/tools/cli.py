"""``fuser-mlir``: the user-facing command.

    fuser-mlir demo                   run an example fusion on the CPU, check it, print its IR
    fuser-mlir show-segments FILE.py  draw the segments of the fusions FILE.py defines
                                      (Graphviz dot text; an SVG too when `dot` exists)
    fuser-mlir compile SCRIPT.py --export OUT
                                      compile the fusion SCRIPT.py defines for its example
                                      inputs; write an artifact (OUT.fsn: one zip file; a
                                      path without .fsn: a directory)
    fuser-mlir inspect ARTIFACT       check an artifact and print its signature, segments,
                                      buffers and alias contract (no MLIR, no kernels loaded)
    fuser-mlir cache stats|clear      the persistent kernel cache (FUSER_CACHE_DIR)

How ``compile`` finds the fusion: SCRIPT.py is run as a module
(``__name__ == "__fuser_compile__"``) and must define, at module level, a
``FusionDefinition`` (``--fusion NAME`` picks one when there are several)
and ``example_inputs``: the arguments whose signature the artifact is
compiled for (dtypes, strides, broadcast dims; sizes stay symbolic). It is a
list, a function returning one, or a dict from fusion variable name to
either. ``example_outputs`` (same forms, optional) gives the preallocated
output buffers (None entries: allocated by the fusion); without it the
artifact allocates every output.

    # softmax.py
    with FusionDefinition(name="softmax") as fd:
        ...
    def example_inputs():
        return [np.zeros((8, 128), np.float32)]
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from fuser_mlir import __version__
from fuser_mlir.errors import counted
from fuser_mlir.tools import quiet_on_broken_pipe


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


def _run_script(path: Path, run_name: str) -> dict:
    """Run a user's script as ``python SCRIPT`` would: its directory first on
    ``sys.path``, so that it imports the modules next to it."""
    sys.path.insert(0, str(path.resolve().parent))
    try:
        return runpy.run_path(str(path), run_name=run_name)
    finally:
        sys.path.pop(0)


def show_segments(args) -> int:
    from fuser_mlir.compiler import compile_fusion
    from fuser_mlir.errors import FuserError
    from fuser_mlir.visualize import render_svg

    path = Path(args.file)
    if not path.is_file():
        print(f"fuser-mlir: error: no such file: {path}", file=sys.stderr)
        return 2
    namespace = _run_script(path, "__fuser_show_segments__")
    found = _definitions(namespace)
    if not found:
        print(f"fuser-mlir: error: {path} defines no FusionDefinition at module level", file=sys.stderr)
        return 2
    for name, fd in found:
        try:
            compiled = compile_fusion(fd)
        except FuserError as err:
            return _error(f"{name}: {err}")
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


def _error(message: str) -> int:
    print(f"fuser-mlir: error: {message}", file=sys.stderr)
    return 2


def _example(namespace: dict, attribute: str, name: str):
    """``example_inputs``/``example_outputs`` of the fusion ``name``: a list, a
    function returning one, or a dict by fusion variable name."""
    value = namespace.get(attribute)
    if isinstance(value, dict):
        value = value.get(name)
    if callable(value):
        value = value()
    return value


def compile_script(args) -> int:
    from fuser_mlir.errors import DeviceError, FuserError

    path = Path(args.script)
    if not path.is_file():
        return _error(f"no such file: {path}")
    namespace = _run_script(path, "__fuser_compile__")
    found = _definitions(namespace)
    if args.fusion is not None:
        found = [(n, fd) for n, fd in found if n == args.fusion]
        if not found:
            return _error(f"{path} defines no FusionDefinition named {args.fusion!r} at module level")
    if not found:
        return _error(f"{path} defines no FusionDefinition at module level")
    if len(found) > 1:
        names = ", ".join(n for n, _ in found)
        return _error(f"{path} defines several fusions ({names}); pick one with --fusion NAME")
    name, fd = found[0]
    by_name = namespace.get("example_inputs")
    if isinstance(by_name, dict) and name not in by_name:
        keys = ", ".join(repr(k) for k in by_name) or "none"
        return _error(f"{path}: example_inputs is a dict by the fusion's variable name, but has no entry for {name!r} (it has {keys}); add one")
    inputs = _example(namespace, "example_inputs", name)
    if not isinstance(inputs, (list, tuple)):
        return _error(f"{path} must define example_inputs (a list of arguments for {name!r}, or a function returning one)")
    outputs = _example(namespace, "example_outputs", name)
    try:
        compiled = fd.compile(list(inputs), outputs=outputs, device=args.device)
        out = compiled.export(args.export)
    except DeviceError as err:  # --device that the example inputs do not live on
        return _error(f"{err} (--device {args.device}: give example_inputs on that device)" if args.device else str(err))
    except FuserError as err:
        return _error(str(err))
    size = _artifact_size(Path(out))
    print(f"{name}: {compiled.num_segments} segment(s), {compiled.device}; artifact written to {out} ({size} bytes)")
    return 0


def _artifact_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _flags(contiguity: list) -> str:
    return ", ".join("-" if c is None else ("T" if c else "F") for c in contiguity)


def _format_input(index: int, spec: dict, key: list | None) -> str:
    """One input as the definition declares it and, from the executor key,
    the layout of the arrays the artifact runs (what a call must match)."""
    if spec["kind"] != "tensor":
        return f"  in{index}: scalar {spec['dtype']}"
    shape = ", ".join("?" if s == -1 else str(s) for s in spec["shape"])
    line = f"  in{index}: tensor {spec['dtype']}[{shape}] contiguity [{_flags(spec['contiguity'])}] stride order {spec['stride_order']}"
    if isinstance(key, list) and len(key) == 6:
        _, _, order, flags, broadcast, alignment = key
        size_one = f"size-1 dims {broadcast}" if broadcast else "no size-1 dim"
        line += f"\n      runs arrays of stride order {order}, contiguity [{_flags(flags)}], {size_one}, {alignment}-byte aligned"
    return line


def inspect_artifact(args) -> int:
    from fuser_mlir.errors import ArtifactError
    from fuser_mlir.runtime.artifact import malformed_manifest, read_artifact

    try:
        manifest, files = read_artifact(args.artifact)
        lines = _artifact_lines(args.artifact, manifest, files)
    except ArtifactError as err:
        return _error(str(err))
    except Exception as err:  # a manifest its digest vouches for, malformed all the same (a writer's bug)
        return _error(str(malformed_manifest(str(args.artifact), err)))
    print("\n".join(lines))
    return 0


def _artifact_lines(path, manifest: dict, files: dict) -> list[str]:
    """What ``fuser-mlir inspect`` prints of a checked artifact."""
    from fuser_mlir.runtime.plan import LaunchPlan

    import json

    signature = manifest["signature"]
    lines = [
        f"artifact {path}: fusion {manifest['name']!r} (format {manifest['format_version']}); all {len(files)} files match their sha256",
        f"compiled by fuser-mlir {manifest['compiler_version']} with MLIR {manifest['mlir_version']}",
        f"backend {manifest['backend']} ({manifest['device']}), target {json.dumps(manifest['target'], sort_keys=True)}",
        f"hazard policy {manifest['hazard_policy']}",
        "inputs:",
        *[_format_input(i, spec, key) for i, (spec, key) in enumerate(zip(signature["inputs"], _key_inputs(manifest)))],
        "outputs:",
    ]
    visible = 0
    for position, out in enumerate(signature["outputs"]):
        shape = ", ".join("?" if s == -1 else str(s) for s in out["shape"])
        notes = []
        if out["visible"]:
            notes.append(f"visible #{visible}")
            visible += 1
        if out["alias_input"] is not None:
            notes.append(f"written into in{out['alias_input']}")
        lines.append(f"  out{position}: tensor {out['dtype']}[{shape}] ({', '.join(notes)})")
    contract = manifest["contract"]
    given = [i for i, g in enumerate(contract["given_outputs"]) if g]
    lines.append("alias contract: " + (", ".join(f"out{a['output']} -> in{a['input']}" + ("" if a["visible"] else " (hidden)") for a in contract["aliases"]) or "none"))
    lines.append("preallocated outputs: caller gives " + (", ".join(f"#{i}" for i in given) or "none") + "; the fusion allocates " + (", ".join(f"#{i}" for i in contract["allocated_outputs"]) or "none"))
    lines.append(f"segments: {len(manifest['segments'])}")
    lines += [f"  {s['name']}: {' '.join(s['ops'])}" for s in manifest["segments"]]
    if manifest["backend"] == "cpu":
        lines.append("CPU threads (kernel arguments' split dims; '-' passed whole):")
        lines += [f"  {name}: {_split_text(entry.get('split'))}" for name, entry in manifest["image"]["kernels"].items()]
    lines.append(LaunchPlan.from_json(json.dumps(manifest["plan"])).describe())
    lines.append("files:")
    lines += [f"  {name}: {entry['size']} bytes sha256 {entry['sha256'][:16]}" for name, entry in sorted(manifest["files"].items())]
    return lines


def _key_inputs(manifest: dict) -> list:
    """Each input's part of the manifest's executor key (None where it has none)."""
    key = manifest.get("executor_key")
    inputs = key[1] if isinstance(key, list) and len(key) == 3 and isinstance(key[1], list) else []
    return inputs + [None] * (len(manifest["signature"]["inputs"]) - len(inputs))


def _split_text(split) -> str:
    """How a CPU kernel of an image runs: on one thread, or cut into blocks along its arguments' split dims."""
    if split is None:
        return "one thread"
    return "cut into blocks along (" + ", ".join("-" if dim is None else str(dim) for dim in split) + ")"


def cache_command(args) -> int:
    from fuser_mlir.runtime.cache import DiskCache

    cache = DiskCache()
    unusable = cache.not_a_directory()
    if unusable:
        return _error(f"the cache cannot be used: {unusable}")
    if args.action == "clear":
        try:
            removed = cache.clear()
        except OSError as err:
            return _error(f"cannot clear the cache at {cache.directory}: {err.strerror or err}")
        print(f"removed {counted(removed, 'entry')} from {cache.directory}")
        return 0
    stats = cache.stats()
    from fuser_mlir import config

    state = "on" if config.cache_enabled() else "off (FUSER_CACHE=0)"
    print(f"directory: {stats.directory}\nstate: {state}\nentries: {stats.entries}\nsize: {stats.total_bytes} bytes (limit {stats.max_bytes})")
    return 0


@quiet_on_broken_pipe
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuser-mlir", description="fuser-mlir: a fusion compiler built on MLIR")
    parser.add_argument("--version", action="version", version=f"fuser-mlir {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run an example fusion and print its check and IR").set_defaults(func=demo)
    show = sub.add_parser("show-segments", help="draw the segments of the fusions a script defines")
    show.add_argument("file")
    show.set_defaults(func=show_segments)
    comp = sub.add_parser("compile", help="compile the fusion a script defines and export it as an artifact")
    comp.add_argument("script")
    comp.add_argument("--export", required=True, metavar="OUT", help="artifact path: a directory, or a zip file ending in .fsn")
    comp.add_argument("--fusion", help="the module-level FusionDefinition variable to compile (when there are several)")
    comp.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: where the example inputs live)")
    comp.set_defaults(func=compile_script)
    insp = sub.add_parser("inspect", help="check an artifact and print its signature, segments, buffers and alias contract")
    insp.add_argument("artifact")
    insp.set_defaults(func=inspect_artifact)
    cache = sub.add_parser("cache", help="the persistent kernel cache")
    cache.add_argument("action", choices=["stats", "clear"])
    cache.set_defaults(func=cache_command)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
