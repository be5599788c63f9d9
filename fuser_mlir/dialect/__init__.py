"""Load the fuser dialect (IRDL) into a Context, and read its op definitions.

``dialect/fuser.irdl.mlir`` at the top of the repository is the single source
of truth for op names, operand and attribute names; this package holds a
symlink to it that a wheel build turns into a regular file. IRDL dialects are
loaded per Context, so every Context the package creates comes from
:func:`make_context`.

The op *categories* (which ops are pointwise, which produce ``i1``, which take
only floats) are Python tables in :mod:`fuser_mlir.dialect.ops`; a test checks
that they cover exactly the ops of the IRDL file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from fuser_mlir._mlir import ir, irdl
from fuser_mlir.errors import DialectError

DIALECT_NAME = "fuser"
_DIALECT_FILE = "fuser.irdl.mlir"


def dialect_source() -> str:
    """The text of ``fuser.irdl.mlir`` as installed with the package."""
    path = resources.files(__name__) / _DIALECT_FILE
    try:
        return path.read_text()
    except OSError as err:
        raise DialectError(
            f"cannot read the fuser dialect definition at {path}: {err}; "
            "reinstall fuser-mlir (pip install .) so the package data is present"
        ) from err


def load_dialect(context: ir.Context) -> None:
    """Load the fuser dialect into ``context`` (idempotent per Context)."""
    if getattr(context, "_fuser_loaded", False):
        return
    with context, ir.Location.unknown():
        module = ir.Module.parse(dialect_source())
        irdl.load_dialects(module)
    context._fuser_loaded = True  # type: ignore[attr-defined]


def make_context() -> ir.Context:
    """A new Context with the upstream dialects and the fuser dialect loaded."""
    context = ir.Context()
    load_dialect(context)
    return context


@dataclass(frozen=True)
class OpSpec:
    """What the IRDL file says about one op."""

    name: str  # without the dialect prefix, e.g. "add"
    operands: tuple[str, ...]
    variadic: tuple[bool, ...]  # per operand
    attributes: tuple[str, ...]
    results: tuple[str, ...]

    @property
    def full_name(self) -> str:
        return f"{DIALECT_NAME}.{self.name}"


def _names(op: ir.Operation, key: str) -> tuple[str, ...]:
    return tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[key]))


def _variadicity(op: ir.Operation) -> tuple[bool, ...]:
    # printed as #irdl<variadicity_array[ single,  variadic]>
    text = str(op.attributes["variadicity"])
    inner = text[text.index("[") + 1 : text.rindex("]")]
    return tuple(v.strip() == "variadic" for v in inner.split(",") if v.strip())


@functools.cache
def op_specs() -> dict[str, OpSpec]:
    """Every op of the fuser dialect, keyed by its short name, in file order."""
    specs: dict[str, OpSpec] = {}
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(dialect_source())
        dialect = module.body.operations[0]
        for op in dialect.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "irdl.operation":
                continue
            fields: dict[str, object] = {"operands": (), "variadic": (), "attributes": (), "results": ()}
            for item in op.regions[0].blocks[0].operations:
                item = item.operation
                if item.name == "irdl.operands":
                    fields["operands"] = _names(item, "names")
                    fields["variadic"] = _variadicity(item)
                elif item.name == "irdl.attributes":
                    fields["attributes"] = _names(item, "attributeValueNames")
                elif item.name == "irdl.results":
                    fields["results"] = _names(item, "names")
            name = ir.StringAttr(op.attributes["sym_name"]).value
            specs[name] = OpSpec(name=name, **fields)  # type: ignore[arg-type]
    return specs
