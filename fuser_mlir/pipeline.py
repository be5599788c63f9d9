"""Pass pipelines that mix fuser-mlir's Python passes with upstream MLIR passes.

A pipeline is MLIR's textual form, optionally wrapped in ``builtin.module(...)``:
``fuser-verify,canonicalize,func.func(cse)``. Each top-level element whose
name is in :data:`fuser_mlir.passes.REGISTRY` becomes a Python pass; named
pipelines (:data:`PIPELINES`) expand in place; every other element is handed
to MLIR as text. All diagnostics are collected; a failure raises
:class:`~fuser_mlir.errors.PipelineError` carrying them and the pipeline text.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from fuser_mlir import config
from fuser_mlir._mlir import PassManager, ir
from fuser_mlir.errors import PipelineError, UnknownPassError
from fuser_mlir.passes import REGISTRY, pass_class

#: Named pipelines: ``fuser-<name>-pipeline`` -> pipeline text.
PIPELINES: dict[str, str] = {}

# Segment functions -> LLVM dialect for the JIT (fuser_mlir/lowering/cpu.py says why each step).
PIPELINES["fuser-cpu-pipeline"] = (
    "fuser-verify, fuser-lower-to-cpu{segments-only=true}, arith-expand{include-bf16=true}, canonicalize, linalg-fuse-elementwise-ops, eliminate-empty-tensors, "
    "empty-tensor-to-alloc-tensor, one-shot-bufferize{buffer-alignment=0}, "
    "buffer-deallocation-pipeline, canonicalize, fuser-erase-dead-generics, fuser-block-rows, fuser-share-call-results, fuser-unroll-jam-reductions, convert-linalg-to-loops, fuser-block-sums, "
    "convert-bufferization-to-memref, expand-strided-metadata, lower-affine, convert-scf-to-cf, "
    "convert-math-to-llvm{approximate-log1p=false}, convert-math-to-libm, arith-expand{include-bf16=true}, "
    "convert-arith-to-llvm, finalize-memref-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, "
    "reconcile-unrealized-casts"
)

# Kernel module (gpu dialect, from fuser-lower-to-gpu) to the NVVM/LLVM dialects.
# convert-gpu-to-nvvm turns float math into libdevice calls; the math ops it
# leaves (integer abs: math.absi) become LLVM intrinsics after it.
GPU_NVVM_PIPELINE = (
    "canonicalize, cse, gpu.module(convert-vector-to-llvm, convert-scf-to-cf, convert-gpu-to-nvvm, "
    "convert-math-to-llvm{approximate-log1p=false}, convert-nvvm-to-llvm, canonicalize, reconcile-unrealized-casts)"
)


def sm_number(arch: str) -> int:
    """The number of an ``sm_XY`` target (``sm_90a``: 90); 0 when it has none."""
    digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
    return int(digits) if digits else 0


def ptx_features(arch: str) -> str:
    """``nvvm-attach-target``'s ``features`` for ``arch`` (``sm_XY``): PTX ISA
    8.0 (CUDA 12.0 drivers and later) for sm_90, whose default in MLIR 22
    (7.8) lacks the bulk L2 prefetch (cp.async.bulk.prefetch) the row
    kernels use there; LLVM aborts the process when asked for it. Other
    targets keep their default: older ones get no prefetch, and sm_100 and
    later need PTX 8.6 or more, which their default is (forcing 8.0 there
    aborts too)."""
    return "+ptx80" if 90 <= sm_number(arch) < 100 else ""


def attach_target(arch: str, libdevice: str = "") -> str:
    """The ``nvvm-attach-target`` pass for ``arch`` (libdevice linked in when given)."""
    features = ptx_features(arch)
    options = f"chip={arch}" + (f" features={features}" if features else "") + (f" l={libdevice}" if libdevice else "")
    return f"nvvm-attach-target{{{options}}}"


# Outlined segments to PTX for sm_90 (fuser_mlir/lowering/gpu.py also links
# libdevice, drops nuw flags and picks the device's architecture).
PIPELINES["fuser-gpu-pipeline"] = f"fuser-lower-to-gpu{{segments-only=true}}, {GPU_NVVM_PIPELINE}, {attach_target('sm_90')}, gpu-module-to-binary{{format=isa}}"


@dataclass(frozen=True)
class Element:
    """One top-level element of a pipeline: ``name{options}(nested)``."""

    name: str
    options: dict[str, str]
    text: str


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside (), {} and quotes."""
    parts, depth, quote, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quote = not quote
        elif quote:
            continue
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_options(text: str) -> dict[str, str]:
    """``a=1 b=x,y c`` -> ``{"a": "1", "b": "x,y", "c": ""}`` (MLIR option syntax)."""
    options = {}
    for item in split_top_level(text, " "):
        key, _, value = item.partition("=")
        options[key.strip()] = value.strip()
    return options


def parse_element(text: str) -> Element:
    name_end = len(text)
    for ch in "{(":
        index = text.find(ch)
        if index != -1:
            name_end = min(name_end, index)
    name = text[:name_end].strip()
    options: dict[str, str] = {}
    rest = text[name_end:]
    if rest.startswith("{"):
        close = rest.find("}")
        if close == -1:
            raise UnknownPassError(f"pipeline element '{text}' has an unclosed '{{'")
        options = parse_options(rest[1:close])
    return Element(name=name, options=options, text=text)


def parse_pipeline(text: str) -> list[Element]:
    """The top-level elements of ``text``, with named pipelines expanded."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    elements: list[Element] = []
    for part in split_top_level(text):
        element = parse_element(part)
        if element.name in PIPELINES:
            if element.options:
                raise UnknownPassError(
                    f"pipeline '{element.name}' takes no options (got '{element.text}'); to set an option of one of "
                    "its passes, write its passes out (fuser-opt --list-passes prints them) with the option on that pass"
                )
            elements.extend(parse_pipeline(PIPELINES[element.name]))
        else:
            elements.append(element)
    return elements


#: Upstream passes (that run on ``builtin.module``) offered as close matches
#: for a misspelt name; the bindings cannot list MLIR's registered passes.
#: ``test_registry.py`` checks that each one parses.
UPSTREAM_SUGGESTIONS = (
    "arith-expand canonicalize control-flow-sink convert-arith-to-llvm convert-cf-to-llvm "
    "convert-elementwise-to-linalg convert-func-to-llvm convert-index-to-llvm convert-linalg-to-loops "
    "convert-linalg-to-parallel-loops convert-math-to-libm convert-math-to-llvm convert-nvvm-to-llvm "
    "convert-parallel-loops-to-gpu convert-scf-to-cf convert-to-llvm convert-vector-to-llvm cse "
    "empty-tensor-to-alloc-tensor expand-strided-metadata finalize-memref-to-llvm gpu-kernel-outlining "
    "gpu-lower-to-nvvm-pipeline gpu-module-to-binary inline linalg-fuse-elementwise-ops "
    "linalg-generalize-named-ops loop-invariant-code-motion lower-affine mem2reg nvvm-attach-target "
    "one-shot-bufferize print-ir reconcile-unrealized-casts remove-dead-values sccp sroa strip-debuginfo "
    "symbol-dce symbol-privatize topological-sort"
).split()

_NOT_REGISTERED = re.compile(r"'([^']*)' does not refer to a registered pass or pass pipeline")


def known_names() -> list[str]:
    return sorted([*REGISTRY, *PIPELINES])


def _unknown_pass(name: str, detail: str) -> UnknownPassError:
    candidates = sorted({*known_names(), *UPSTREAM_SUGGESTIONS})
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    message = f"unknown pass or pipeline '{name}'{hint} (fuser-opt --list-passes lists fuser-mlir's passes)"
    if detail:
        message += f"\n{detail.strip()}"
    return UnknownPassError(message)


def _check_upstream(element: Element) -> None:
    """Raise UnknownPassError unless MLIR parses ``element``: an unknown name
    (with close matches), a fuser pass nested under an op, or bad options."""
    try:
        PassManager.parse(f"builtin.module({element.text})")
    except ValueError as err:
        detail = str(err)
        match = _NOT_REGISTERED.search(detail)
        if match is None:
            raise UnknownPassError(f"invalid pipeline element '{element.text}'\n{detail.strip()}") from None
        name = match.group(1)
        if name in REGISTRY:
            raise UnknownPassError(
                f"'{name}' is a fuser-mlir pass, which runs on the whole module and cannot be nested "
                f"in '{element.name}(...)'; list it at the top level of the pipeline"
            ) from None
        raise _unknown_pass(name, detail) from None


def build_pass_manager(text: str, context: ir.Context) -> PassManager:
    """A PassManager on ``builtin.module`` running ``text``; raises on unknown names."""
    with context:
        pm = PassManager("builtin.module")
        upstream: list[str] = []

        def flush() -> None:
            if upstream:
                pm.add(",".join(upstream))
                upstream.clear()

        for element in parse_pipeline(text):
            if element.name not in REGISTRY:
                _check_upstream(element)
                upstream.append(element.text)
                continue
            flush()
            cls = pass_class(element.name)
            try:
                instance = cls.from_options(element.options)
            except ValueError as err:
                raise UnknownPassError(str(err)) from None
            pm.add(instance, name=cls.__name__, argument=cls.NAME, description=cls.SUMMARY)
        flush()
    return pm


def format_diagnostic(diag, source_name: str | None = None) -> str:
    """``file:line:col: error: message`` as mlir-opt prints it, with notes.

    ``source_name`` replaces the ``-`` that MLIR uses for text parsed from a string.
    """
    severity = str(diag.severity).rsplit(".", 1)[-1].lower()
    lines = [f"{format_location(diag.location, source_name)}: {severity}: {diag.message}"]
    for note in diag.notes:
        lines.append(format_diagnostic(note, source_name))
    return "\n".join(lines)


def format_location(loc: ir.Location, source_name: str | None = None) -> str:
    if loc.is_a_file():
        filename = source_name if source_name is not None and loc.filename == "-" else loc.filename
        return f"{filename}:{loc.start_line}:{loc.start_col}"
    if loc.is_a_name():
        return format_location(loc.child_loc, source_name)
    if loc.is_a_callsite():
        return format_location(loc.callee, source_name)
    if loc.is_a_fused() and loc.locations:
        return format_location(loc.locations[0], source_name)
    return "<unknown>:0"


class DiagnosticCollector:
    """Collects every diagnostic emitted in a Context while it is active."""

    def __init__(self, context: ir.Context, echo: Callable[[str], None] | None = None, source_name: str | None = None):
        self.context = context
        self.source_name = source_name
        self.messages: list[str] = []
        self.errors = 0
        self._echo = echo
        self._handler = None

    def __enter__(self) -> "DiagnosticCollector":
        self._handler = self.context.attach_diagnostic_handler(self._handle)
        return self

    def __exit__(self, *exc) -> None:
        self._handler.detach()
        self._handler = None  # the handler refers back to us: break the cycle, or the Context leaks

    def _handle(self, diag) -> bool:
        text = format_diagnostic(diag, self.source_name)
        self.messages.append(text)
        if "error" in str(diag.severity).lower():
            self.errors += 1
        if self._echo is not None:
            self._echo(text)
        return True

    @property
    def text(self) -> str:
        return "\n".join(self.messages)


def save_reproducer(text: str, prefix: str = "fuser") -> str:
    """Write the input IR of a failed compile where ``FUSER_REPRODUCER_DIR``
    says (default: the temporary directory); return the file's path."""
    directory = config.reproducer_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{prefix}-reproducer-{hashlib.sha256(text.encode()).hexdigest()[:16]}.mlir"
    path.write_text(text)
    return str(path)


def run_pipeline(
    module: ir.Module, text: str, *, print_ir_after_all: bool = False, source_name: str | None = None, verify: bool = True
) -> None:
    """Run ``text`` on ``module`` in place; raise PipelineError with the
    diagnostics. ``verify=False``: no verifier after each pass."""
    context = module.context
    pm = build_pass_manager(text, context)
    pm.enable_verifier(verify)
    if print_ir_after_all:
        pm.enable_ir_printing(print_after_all=True)
    with DiagnosticCollector(context, source_name=source_name) as diags:
        try:
            pm.run(module.operation)
        except ir.MLIRError as err:
            # The bindings route the run's diagnostics into the exception.
            reported = [format_diagnostic(d, source_name) for d in err.error_diagnostics]
            detail = "\n".join([*diags.messages, *reported]) or str(err)
            raise PipelineError("pass pipeline failed", pipeline=text, diagnostics=detail) from None
    if diags.errors:
        raise PipelineError("pass pipeline failed", pipeline=text, diagnostics=diags.text)
