"""Graphviz drawings of a compiled fusion: segments, buffers, read/write edges.

``plan_to_dot(compiled)`` returns dot text: a box per segment (its ops listed),
an ellipse per buffer (kind, dtype), an edge buffer -> segment for each read
and segment -> buffer for each write. ``render_svg`` runs the ``dot`` program
when it exists.
"""

from __future__ import annotations

import shutil
import subprocess

from fuser_mlir.runtime.plan import format_size

_BUFFER_STYLE = {
    "input": "lightblue",
    "given": "palegreen",
    "output": "palegreen",
    "intermediate": "lightgrey",
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan_to_dot(compiled) -> str:
    """Dot text for ``compiled`` (a CompiledFusion)."""
    plan = compiled.plan
    lines = [f"digraph {_quote(compiled.name)} {{", "  rankdir=TB;", '  node [fontname="monospace"];']
    for b in plan.buffers:
        shape = ", ".join(format_size(e) for e in b.shape)
        where = f" #{b.index}" if b.index is not None else ""
        label = f"b{b.id}: {b.kind}{where}\\n{b.dtype}[{shape}]"
        lines.append(f'  b{b.id} [shape=ellipse, style=filled, fillcolor={_BUFFER_STYLE[b.kind]}, label={_quote(label)}];')
    for index, seg in enumerate(compiled.segments):
        label = f"{seg.name}\\n" + "\\n".join(seg.ops)
        lines.append(f"  s{index} [shape=box, label={_quote(label)}];")
        for buffer_id in seg.inputs:
            lines.append(f"  b{buffer_id} -> s{index};")
        for buffer_id in seg.outputs:
            lines.append(f"  s{index} -> b{buffer_id};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str) -> str | None:
    """SVG text rendered by Graphviz's ``dot``, or None when it is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    return subprocess.run([dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, check=True).stdout
