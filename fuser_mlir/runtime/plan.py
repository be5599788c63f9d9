"""Launch plans: the host function of a compiled fusion as plain data.

A plan is what the runtime needs to run a fusion without MLIR: the buffers
(inputs, given outputs, outputs it allocates, intermediates), each with a
size formula in terms of the input sizes, and the steps (one kernel call per
segment) with their argument bindings. It is JSON-able (``to_json`` /
``from_json``), so an artifact can carry it.

Size formulas are small expression trees: ``["dim", i, d]`` (size of dim
``d`` of input ``i``), ``["const", n]``, ``["add"|"sub"|"mul"|"div", a, b]``
(``div`` is floor division on sizes).

:func:`execute` runs a plan: it allocates each buffer just before the step that
first writes it, and drops intermediates after their last use, so peak memory
is the largest live set, not the sum (:class:`MemoryStats` counts it).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fuser_mlir.runtime.cpu import numpy_dtype

SizeExpr = list  # see the module docstring

_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b,
}


def eval_size(expr: SizeExpr, input_shapes: Sequence[Sequence[int]]) -> int:
    """Evaluate one size formula for the given input shapes."""
    kind = expr[0]
    if kind == "const":
        return int(expr[1])
    if kind == "dim":
        return int(input_shapes[expr[1]][expr[2]])
    return _BINARY[kind](eval_size(expr[1], input_shapes), eval_size(expr[2], input_shapes))


def format_size(expr: SizeExpr) -> str:
    """``in0.d1 * 4``: a size formula in words."""
    kind = expr[0]
    if kind == "const":
        return str(expr[1])
    if kind == "dim":
        return f"in{expr[1]}.d{expr[2]}"
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "//"}[kind]
    return f"({format_size(expr[1])} {symbol} {format_size(expr[2])})"


@dataclass
class Buffer:
    """One tensor buffer the plan reads or writes.

    ``kind`` is ``input`` (a fusion input; ``index`` is the input index),
    ``given`` (an output buffer the caller provides; ``index`` is the visible
    output index), ``output`` (an output the runtime allocates) or
    ``intermediate`` (allocated and freed by the runtime).
    """

    id: int
    kind: str
    dtype: str
    shape: list[SizeExpr]
    index: int | None = None
    last_use: int = -1  # index of the last step that reads or writes it

    def shape_for(self, input_shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
        return tuple(eval_size(e, input_shapes) for e in self.shape)

    def nbytes_for(self, input_shapes: Sequence[Sequence[int]]) -> int:
        return int(np.prod(self.shape_for(input_shapes), dtype=np.int64)) * numpy_dtype(self.dtype).itemsize


@dataclass
class Step:
    """One kernel call: ``args`` are ``["buffer", id]`` or ``["scalar", input_index]``."""

    kernel: str
    args: list[list]
    writes: list[int]  # buffer ids this step writes (its destinations)


@dataclass
class LaunchPlan:
    num_inputs: int
    buffers: list[Buffer]
    steps: list[Step]
    outputs: list[int]  # buffer id of each visible output, in add_output order
    aliases: dict[int, int] = field(default_factory=dict)  # input index -> output position (hidden aliases included)

    def buffer(self, buffer_id: int) -> Buffer:
        return self.buffers[buffer_id]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "LaunchPlan":
        raw = json.loads(text)
        raw["buffers"] = [Buffer(**b) for b in raw["buffers"]]
        raw["steps"] = [Step(**s) for s in raw["steps"]]
        raw["aliases"] = {int(k): v for k, v in raw.get("aliases", {}).items()}
        return cls(**raw)

    def peak_live_bytes(self, input_shapes: Sequence[Sequence[int]]) -> int:
        """The largest total size of buffers alive at any step, inputs included."""
        live_inputs = sum(b.nbytes_for(input_shapes) for b in self.buffers if b.kind in ("input", "given"))
        peak = live_inputs
        for step_index in range(len(self.steps)):
            live = live_inputs + sum(
                b.nbytes_for(input_shapes)
                for b in self.buffers
                if b.kind in ("output", "intermediate") and self._first_write(b.id) <= step_index <= self._live_until(b)
            )
            peak = max(peak, live)
        return peak

    def _first_write(self, buffer_id: int) -> int:
        return next(i for i, s in enumerate(self.steps) if buffer_id in s.writes)

    def _live_until(self, buf: Buffer) -> int:
        return len(self.steps) if buf.kind == "output" else buf.last_use

    def describe(self) -> str:
        """The plan in words, one line per buffer and step."""
        lines = ["buffers:"]
        for b in self.buffers:
            shape = ", ".join(format_size(e) for e in b.shape)
            where = f" #{b.index}" if b.index is not None else ""
            lines.append(f"  b{b.id}: {b.kind}{where} {b.dtype}[{shape}] last use: step {b.last_use}")
        lines.append("steps:")
        for i, s in enumerate(self.steps):
            args = ", ".join(f"b{a[1]}" if a[0] == "buffer" else f"scalar in{a[1]}" for a in s.args)
            lines.append(f"  {i}: {s.kernel}({args}) writes {', '.join(f'b{w}' for w in s.writes)}")
        lines.append("outputs: " + ", ".join(f"b{o}" for o in self.outputs))
        return "\n".join(lines)


@dataclass
class MemoryStats:
    """Allocation counters of the runtime (per executor, cumulative)."""

    allocations: int = 0
    allocated_bytes: int = 0
    live_bytes: int = 0
    peak_live_bytes: int = 0

    def allocate(self, nbytes: int) -> None:
        self.allocations += 1
        self.allocated_bytes += nbytes
        self.live_bytes += nbytes
        self.peak_live_bytes = max(self.peak_live_bytes, self.live_bytes)

    def free(self, nbytes: int) -> None:
        self.live_bytes -= nbytes


Allocator = Callable[[tuple[int, ...], str], object]


def execute(
    plan: LaunchPlan,
    kernels: dict[str, Callable],
    inputs: Sequence[object],
    given: dict[int, object],
    allocate: Allocator,
    stats: MemoryStats | None = None,
) -> list[object]:
    """Run ``plan``; return the visible outputs in order.

    ``inputs`` are arrays or scalars in definition order, ``given`` maps a
    visible output index to the caller's buffer, ``allocate(shape, dtype)``
    makes a new buffer. ``stats`` (if given) counts the inputs as live from the
    start, then every allocation and free.
    """
    shapes = [tuple(getattr(x, "shape", ())) for x in inputs]
    stats = stats if stats is not None else MemoryStats()
    base_live = stats.live_bytes
    stats.live_bytes += sum(getattr(x, "nbytes", 0) for x in inputs) + sum(getattr(x, "nbytes", 0) for x in given.values())
    stats.peak_live_bytes = max(stats.peak_live_bytes, stats.live_bytes)
    values: dict[int, object] = {}
    for b in plan.buffers:
        if b.kind == "input":
            values[b.id] = inputs[b.index]
        elif b.kind == "given":
            values[b.id] = given[b.index]
    for step_index, step in enumerate(plan.steps):
        for buffer_id in step.writes:
            if buffer_id in values:
                continue
            buf = plan.buffers[buffer_id]
            values[buffer_id] = allocate(buf.shape_for(shapes), buf.dtype)
            stats.allocate(values[buffer_id].nbytes)
        args = [values[a[1]] if a[0] == "buffer" else inputs[a[1]] for a in step.args]
        kernels[step.kernel](*args)
        for a in step.args:
            buf = plan.buffers[a[1]] if a[0] == "buffer" else None
            if buf is not None and buf.kind == "intermediate" and buf.last_use == step_index and buf.id in values:
                stats.free(values.pop(buf.id).nbytes)
    outputs = [values[i] for i in plan.outputs]
    stats.live_bytes = base_live
    return outputs
