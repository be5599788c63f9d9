"""GPU launch programs: how the host runs one segment's kernels, as data.

A :class:`SegmentProgram` is what the GPU schedulers
(:mod:`fuser_mlir.lowering.gpu_schedule`) leave for the host: the temporary
buffers of the segment and its kernel launches, in order. It is JSON-able, so
an artifact carries it, and :mod:`fuser_mlir.runtime.cuda` runs it with the
CUDA driver alone (no MLIR, no compiled host code).

Formulas (grid sizes, temporary shapes) are small expression trees over the
segment's arguments: ``["const", n]``, ``["argdim", k, d]`` (size of dim ``d``
of argument ``k``; launch plans write ``["dim", i, d]`` for input ``i`` and
share this module's evaluation), ``["arg", k]`` (the value of scalar argument ``k``),
``["sms"]`` (the number of SMs of the device the program runs on, known
when it is loaded there: :func:`compile_formula`'s ``sms``) and ``[op, a, b]`` with ``op`` one of ``add sub mul div ceildiv mod min max le gt eq``
(``div`` rounds down; ``le``/``gt``/``eq`` are 1 or 0; a quotient or
remainder by 0 is 0: divisors are sizes, and a size of 0 is an empty dim,
with nothing to launch over it, as in an outer sum of 0 columns).

Bindings say what a kernel argument is: ``["arg", k]`` (argument ``k`` of the
segment), ``["temp", j]`` (temporary ``j``), ``["view", j, shape]``
(temporary ``j`` seen with another, contiguous shape: a reshape) or
``["flat", binding, lanes]`` (a dense buffer as a 1-D memref of its
elements, or of vectors of ``lanes`` elements: ``size // lanes`` of them).

Kernel parameters follow MLIR's lowering of ``gpu.func`` arguments: a memref of
rank ``r`` is ``3 + 2r`` 64-bit parameters (allocated pointer, aligned pointer,
offset, sizes, strides in elements), a scalar is one parameter of its type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Leaves naming a dim of an argument: ``argdim`` (launch programs) and
#: ``dim`` (launch plans, whose arguments are the fusion's inputs).
_DIM = ("argdim", "dim")

_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b if b else 0,
    "ceildiv": lambda a, b: -(-a // b) if b else 0,
    "min": min,
    "max": max,
    "mod": lambda a, b: a % b if b else 0,
    "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b),
    "eq": lambda a, b: int(a == b),
}


def evaluate(expr: list, shapes: Sequence[Sequence[int]], scalars: Sequence[object], sms: int | None = None) -> int:
    """The value of a formula for arguments of ``shapes`` (``scalars[k]`` is
    argument ``k`` itself, for scalar arguments) on a device of ``sms`` SMs."""
    kind = expr[0]
    if kind == "const":
        return int(expr[1])
    if kind == "sms":
        return _sms(sms)
    if kind in _DIM:
        return int(shapes[expr[1]][expr[2]])
    if kind == "arg":
        return int(scalars[expr[1]])
    return int(_BINARY[kind](evaluate(expr[1], shapes, scalars, sms), evaluate(expr[2], shapes, scalars, sms)))


def _sms(sms: int | None) -> int:
    if sms is None:
        raise ValueError("the formula reads the device's SM count ('sms'): evaluate it for a device (pass sms=)")
    return int(sms)


def compile_formula(expr: list, sms: int | None = None) -> Callable[[Sequence[Sequence[int]], Sequence[object]], int]:
    """``evaluate(expr, ..., sms)`` as a closure of the argument shapes and
    values, for formulas evaluated on every call (no tree walk, no dispatch)."""
    kind = expr[0]
    if kind == "const" or kind == "sms":
        value = int(expr[1]) if kind == "const" else _sms(sms)
        return lambda shapes, args: value
    if kind in _DIM:
        k, d = int(expr[1]), int(expr[2])
        return lambda shapes, args: shapes[k][d]
    if kind == "arg":
        k = int(expr[1])
        return lambda shapes, args: int(args[k])
    if kind not in _BINARY:
        raise ValueError(f"unknown formula node {kind!r}")
    op, left, right = _BINARY[kind], compile_formula(expr[1], sms), compile_formula(expr[2], sms)
    return lambda shapes, args: op(left(shapes, args), right(shapes, args))


def reads_scalars(expr: list | None) -> bool:
    """Whether a formula reads the value of a scalar argument (an ``["arg", k]``
    leaf): then its value is not fixed by the arguments' shapes alone."""
    if not expr:
        return False
    kind = expr[0]
    if kind == "arg":
        return True
    if kind in ("const", "sms") or kind in _DIM:
        return False
    return reads_scalars(expr[1]) or reads_scalars(expr[2])


def describe(expr: list, prefix: str = "arg") -> str:
    """``ceildiv(arg0.d1, 256)``: a formula in words (``prefix`` names the
    arguments: ``in`` for a launch plan's fusion inputs)."""
    kind = expr[0]
    if kind == "const":
        return str(expr[1])
    if kind in _DIM:
        return f"{prefix}{expr[1]}.d{expr[2]}"
    if kind == "arg":
        return f"{prefix}{expr[1]}"
    if kind == "sms":
        return "sms"
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "//", "mod": "%", "le": "<=", "gt": ">", "eq": "=="}.get(kind)
    if symbol:
        return f"({describe(expr[1], prefix)} {symbol} {describe(expr[2], prefix)})"
    return f"{kind}({describe(expr[1], prefix)}, {describe(expr[2], prefix)})"


@dataclass
class Temp:
    """A buffer the runtime allocates for the duration of one segment call."""

    dtype: str  # element type as in the IR (f32, bf16, i8, ...)
    shape: list[list]  # one formula per dim


@dataclass
class KernelLaunch:
    kernel: str  # the gpu.func's name in the fusion's kernel module
    grid: list[list]  # three formulas
    block: list[int]  # three sizes
    args: list[list]  # one binding per kernel argument
    shared_bytes: int | list = 0  # dynamic shared memory per block: bytes, or a formula of them
    when: list | None = None  # launched only where this formula is non-zero (None: always)


@dataclass
class SegmentProgram:
    temps: list[Temp] = field(default_factory=list)
    launches: list[KernelLaunch] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> "SegmentProgram":
        return cls(
            temps=[Temp(**t) for t in raw["temps"]],
            launches=[KernelLaunch(**launch) for launch in raw["launches"]],
        )

    def describe(self) -> str:
        lines = []
        for j, temp in enumerate(self.temps):
            lines.append(f"temp{j}: {temp.dtype}[{', '.join(describe(e) for e in temp.shape)}]")
        for launch in self.launches:
            grid = ", ".join(describe(e) for e in launch.grid)
            args = ", ".join(_binding_text(b) for b in launch.args)
            condition = f" if {describe(launch.when)}" if launch.when else ""
            shared = launch.shared_bytes
            shared = f", {describe(shared) if isinstance(shared, list) else shared}" if shared else ""
            lines.append(f"{launch.kernel}<<<({grid}), {tuple(launch.block)}{shared}>>>({args}){condition}")
        return "\n".join(lines)


def _binding_text(binding: list) -> str:
    if binding[0] == "flat":
        return f"{_binding_text(binding[1])} flat" + (f" x{binding[2]}" if binding[2] > 1 else "")
    if binding[0] == "view":
        return f"temp{binding[1]} as [{', '.join(describe(e) for e in binding[2])}]"
    return f"{binding[0]}{binding[1]}"
