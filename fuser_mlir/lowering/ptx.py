"""Merge the PTX of kernels compiled one module each into one PTX module.

:func:`fuser_mlir.lowering.gpu.to_ptx` gives each kernel of a fusion a
module of its own, so that MLIR's thread pool runs LLVM's NVPTX code
generation of the kernels side by side, and :func:`merge_ptx` makes one PTX
module of the texts again: one ptxas run, one cubin and one CUDA module hold
a fusion's kernels, as they did when LLVM compiled them as one module.

Each text is what LLVM's NVPTX back end prints: a header (``.version``,
``.target``, ``.address_size``), then module-scope items: comments,
variables (libdevice's tables, the ``.extern .shared`` dynamic shared
memory), function prototypes and definitions (the kernels, and libdevice
functions that LLVM did not inline). The merge keeps the header (the texts
must agree on it) and each item once, in the order of the texts:

- an item that an earlier text gave already is dropped, where the two are
  the same but for their labels (LLVM numbers a function's labels by the
  function's place in its module: ``$L__BB3_1``; labels are local to their
  function), and so is a prototype of a function that an earlier text gave;
- an internal symbol (not ``.visible``, ``.extern`` or ``.weak``) that an
  earlier text defined differently is renamed in the later text (``name``
  -> ``name_fuser2``, after the text's place), as are the internal
  functions and variables of that text that refer to it;
- a visible or external symbol that two texts give differently is an error.

Before::

    .version 8.0 / .target sm_90 / .address_size 64
    .global .align 4 .b8 __cudart_i2opi_f[24] = {...};
    .visible .entry k0(...) {...}
    ---
    .version 8.0 / .target sm_90 / .address_size 64
    .global .align 4 .b8 __cudart_i2opi_f[24] = {...};
    .visible .entry k1(...) {...}

After::

    .version 8.0 / .target sm_90 / .address_size 64
    .global .align 4 .b8 __cudart_i2opi_f[24] = {...};
    .visible .entry k0(...) {...}
    .visible .entry k1(...) {...}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The line that names a PTX function (``.entry`` or ``.func``).
FUNCTION = re.compile(r"^(?:\.\w+\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
#: The line that declares a module-scope variable: its state space, then its
#: qualifiers (``.align 16``, ``.b8``), then its name.
_VARIABLE = re.compile(r"^(?:\.\w+\s+)*\.(?:global|shared|const)\s+(?:\.\w+\s+(?:\d+\s+)?)*([\w$]+)")
#: The number LLVM gives a label after the function's place in its module.
_LABEL_NUMBER = re.compile(r"(\$L__[A-Za-z_]+?)\d+(?=_)")
#: Linkages that name the same symbol in every module (never renamed).
_SHARED_LINKAGE = re.compile(r"^\s*\.(?:visible|extern|weak)\b")


class PtxMergeError(ValueError):
    """The texts cannot be one module (other headers, a visible symbol given twice differently)."""


@dataclass(frozen=True)
class _Item:
    """A module-scope item: its lines, the symbol it declares (None for a
    comment or another directive without one), and whether it gives the
    symbol (a function's body, a variable) or only declares a function (a
    prototype)."""

    text: str
    name: str | None
    defines: bool

    @property
    def shared(self) -> bool:
        return bool(_SHARED_LINKAGE.match(self.text))

    @property
    def key(self) -> str:
        """The text as compared with another module's: labels unnumbered."""
        return _LABEL_NUMBER.sub(r"\1", self.text)


def _item(lines: list[str]) -> _Item:
    text = "\n".join(lines)
    first = lines[0]
    if first.lstrip().startswith("//"):
        return _Item(text, None, False)
    function = FUNCTION.match(first)
    if function is not None:
        return _Item(text, function.group(1), "{" in lines)
    variable = _VARIABLE.match(first)
    if variable is None:  # a directive without a symbol: kept once, as a comment is
        return _Item(text, None, False)
    return _Item(text, variable.group(1), True)


def split_ptx(ptx: str) -> tuple[str, list[_Item]]:
    """The header of ``ptx`` (up to ``.address_size``) and its module-scope items."""
    lines = ptx.split("\n")
    end = next((i for i, line in enumerate(lines) if line.startswith(".address_size")), None)
    if end is None:
        raise PtxMergeError("merge_ptx: not a PTX module (no .address_size line)")
    items, current, in_body = [], [], False
    for line in lines[end + 1 :]:
        if not current and not line.strip():
            continue
        current.append(line)
        if in_body:
            if line == "}":
                items.append(_item(current))
                current, in_body = [], False
        elif line == "{":
            in_body = True
        elif line.lstrip().startswith("//") or line.rstrip().endswith(";"):
            items.append(_item(current))
            current = []
    if any(line.strip() for line in current):
        raise PtxMergeError(f"merge_ptx: the module ends inside an item: {current[0]!r}")
    return "\n".join(lines[: end + 1]), items


def _rename(ptx: str, names: dict[str, str]) -> str:
    if not names:
        return ptx
    pattern = re.compile(r"(?<![\w$%.])(" + "|".join(map(re.escape, names)) + r")(?![\w$])")
    return pattern.sub(lambda m: names[m.group(1)], ptx)


def merge_ptx(texts: list[str]) -> str:
    """One PTX module holding the items of every text of ``texts`` (see the
    module docstring); PtxMergeError where they cannot be one."""
    if len(texts) == 1:
        return texts[0]
    header, merged, comments = None, [], set()
    defined: dict[str, str] = {}  # symbol -> the key of the item that defines it
    declared: set[str] = set()  # functions given a prototype
    for index, text in enumerate(texts):
        head, items = _renamed_items(text, defined, index)
        if header is None:
            header = head
        elif head != header:
            raise PtxMergeError(f"merge_ptx: the kernel modules differ in their headers:\n{header}\n---\n{head}")
        for item in items:
            if item.name is None:
                if item.text not in comments:
                    comments.add(item.text)
                    merged.append(item.text)
            elif not item.defines:
                if item.name not in defined and item.name not in declared:
                    declared.add(item.name)
                    merged.append(item.text)
            elif item.name not in defined:
                defined[item.name] = item.key
                merged.append(("\n" if "{" in item.text else "") + item.text)
    return "\n".join([header, "", *merged, ""])


def _renamed_items(text: str, defined: dict[str, str], index: int) -> tuple[str, list[_Item]]:
    """The header and items of ``text``, its internal symbols that an earlier
    text defined differently renamed (also those that refer to a renamed one)."""
    renames: dict[str, str] = {}
    while True:
        head, items = split_ptx(_rename(text, renames))
        clashes = [item for item in items if item.defines and item.name in defined and defined[item.name] != item.key]
        if not clashes:
            return head, items
        for item in clashes:
            if item.shared:
                raise PtxMergeError(f"merge_ptx: two kernel modules give the symbol {item.name} differently")
            renames[item.name] = f"{item.name}_fuser{index}"
