"""The base class of fuser-mlir's Python passes.

A pass is a dataclass whose fields are its options (snake_case here,
kebab-case on the command line: ``fuser-segment{max-ops=64}``). ``run`` gets
the module operation; it reports problems with :func:`emit_error` at the
offending op's location and then raises :class:`PassFailure`, which the
PassManager adapter turns into ``signal_pass_failure``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from fuser_mlir._mlir import ir


class PassFailure(Exception):
    """Raised by a pass after it emitted its diagnostics."""


def emit_error(op: ir.Operation, message: str) -> None:
    """Emit an MLIR error diagnostic at ``op``'s location."""
    op.location.emit_error(message)


def op_label(op: ir.Operation) -> str:
    """``'fuser.add' op``: how MLIR diagnostics name an op."""
    return f"'{op.name}' op"


@dataclasses.dataclass
class FuserPass:
    """A Python pass; subclasses set NAME and SUMMARY and implement ``run``."""

    NAME: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""

    def run(self, module: ir.Operation) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not implement run()")

    def __call__(self, op: ir.Operation, pass_) -> None:
        try:
            self.run(op)
        except PassFailure:
            pass_.signal_pass_failure()

    @classmethod
    def option_names(cls) -> list[str]:
        """Command-line (kebab-case) names of this pass's options."""
        return [f.name.replace("_", "-") for f in dataclasses.fields(cls)]

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "FuserPass":
        """Build the pass from ``{kebab-name: text}`` options, converting types."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, object] = {}
        for key, text in options.items():
            name = key.replace("-", "_")
            if name not in fields or "_" in key:  # the command line spells options in kebab-case only
                known = ", ".join(cls.option_names()) or "none"
                raise ValueError(f"pass '{cls.NAME}' has no option '{key}' (options: {known})")
            kwargs[name] = _convert(cls.NAME, key, text, fields[name].type)
        return cls(**kwargs)


def _convert(pass_name: str, key: str, text: str, annotation: object) -> object:
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    if kind == "bool":
        if text in ("", "true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise ValueError(f"option '{key}' of pass '{pass_name}' expects true or false, got '{text}'")
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"option '{key}' of pass '{pass_name}' expects an integer, got '{text}'") from None
    return text
