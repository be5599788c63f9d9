"""Helpers shared by the frontend tests: build, verify and inspect fusions."""

from __future__ import annotations

from fuser_mlir.dialect import make_context
from fuser_mlir.pipeline import run_pipeline


def verified_ir(fd, given_outputs=None) -> str:
    """The fusion's IR after ``fuser-verify`` passed on it."""
    module = fd.build_module(make_context(), given_outputs=given_outputs)
    run_pipeline(module, "fuser-verify")
    return str(module)


def op_names(ir_text: str) -> list[str]:
    """The fuser op names in IR text, in order: ["exp", "mul", "store"]."""
    names = []
    for line in ir_text.splitlines():
        start = line.find('"fuser.')
        if start != -1:
            names.append(line[start + 7 : line.index('"', start + 1)])
    return names


def check_order(text: str, *needles: str) -> None:
    """Assert the needles occur in ``text`` in this order (FileCheck's CHECK lines)."""
    position = 0
    for needle in needles:
        found = text.find(needle, position)
        assert found != -1, f"expected {needle!r} after position {position} in:\n{text}"
        position = found + len(needle)
