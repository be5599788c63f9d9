"""Every fuser op on the CPU backend, through compile_cpu and CpuKernel.

Segment IR is generated here (one function per group of cases, so each group
is JIT-compiled once) and run on fresh random NumPy data; each result is
compared with a NumPy reference computed in float64 from the original
inputs. Outputs are poisoned before the call (NaN for floats; for integers
and booleans a value that differs from the reference everywhere), and inputs
are checked unchanged afterwards.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import pytest

from fuser_mlir._mlir import ir
from fuser_mlir.dialect import make_context
from fuser_mlir.dialect import ops as O
from fuser_mlir.lowering.cpu import compile_cpu

BF16 = np.dtype(ml_dtypes.bfloat16)
NP_DTYPE = {
    "f16": np.dtype(np.float16),
    "bf16": BF16,
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
ALL = (*FLOATS, *INTS, "i1")
#: Relative tolerance per result type: about two units in the last place
#: (f32 a bit more: libm's single-precision functions are within a few ulp).
RTOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 4e-6, "f64": 1e-12}

Shape = tuple  # IR shape: ints, None for '?'


def rng() -> np.random.Generator:
    return np.random.default_rng()


# -- building segment IR ------------------------------------------------------


def type_text(shape: Shape | None, elem: str) -> str:
    """``tensor<?x4xf32>``; a scalar for ``shape is None``."""
    if shape is None:
        return elem
    dims = "".join(("?" if d is None else str(d)) + "x" for d in shape)
    return f"tensor<{dims}{elem}>"


@dataclass(frozen=True)
class V:
    """An SSA value of the segment being built."""

    name: str
    shape: Shape | None
    elem: str

    @property
    def type(self) -> str:
        return type_text(self.shape, self.elem)


@dataclass
class Segment:
    """Builds the text of one segment function: inputs, ops, stores."""

    name: str = "t_seg0"
    args: list[V] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    outputs: list[V] = field(default_factory=list)

    def arg(self, shape: Shape | None, elem: str) -> V:
        value = V(f"%in{len(self.args)}", shape, elem)
        self.args.append(value)
        return value

    def op(self, name: str, *operands: V, shape: Shape | None, elem: str, attrs: str = "") -> V:
        result = V(f"%v{len(self.lines)}", shape, elem)
        names = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        attr_text = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'{result.name} = "fuser.{name}"({names}){attr_text} : ({types}) -> {result.type}')
        return result

    def output(self, value: V) -> int:
        self.outputs.append(value)
        return len(self.outputs) - 1

    def text(self, *, inplace: dict[int, int] | None = None) -> str:
        """The function; ``inplace`` maps output index -> input index to store into."""
        inplace = inplace or {}
        dests = [V(f"%out{i}", v.shape, v.elem) for i, v in enumerate(self.outputs) if i not in inplace]
        params = ", ".join(f"{v.name}: {v.type}" for v in [*self.args, *dests])
        body = [f"  {line}" for line in self.lines]
        results = []
        dest_iter = iter(dests)
        for i, value in enumerate(self.outputs):
            dest = self.args[inplace[i]] if i in inplace else next(dest_iter)
            body.append(f'  %r{i} = "fuser.store"({value.name}, {dest.name}) : ({value.type}, {dest.type}) -> {dest.type}')
            results.append((f"%r{i}", value.type))
        ret_types = ", ".join(t for _, t in results)
        body.append(f"  return {', '.join(n for n, _ in results)} : {ret_types}" if results else "  return")
        head = f"func.func private @{self.name}({params}) -> ({ret_types}) attributes {{fuser.num_inputs = {len(self.args)} : i64}} {{"
        return "\n".join([head, *body, "}"])


def compile_text(text: str):
    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(text)
        return compile_cpu(module)


# -- running and checking -----------------------------------------------------


def poison_like(expected: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An output buffer whose every element differs from ``expected``."""
    if dtype.kind == "f" or dtype == BF16:
        return np.full(expected.shape, np.nan, dtype)
    if dtype == np.bool_:
        return ~expected.astype(np.bool_)
    return np.array(expected.astype(dtype) ^ dtype.type(0x5A5A), dtype=dtype)


def snapshot(values: Sequence[object]) -> list[object]:
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]


def assert_unchanged(before: Sequence[object], after: Sequence[object]) -> None:
    for index, (a, b) in enumerate(zip(before, after)):
        if isinstance(a, np.ndarray):
            assert a.tobytes() == b.tobytes(), f"input {index} was modified"


def assert_close(got: np.ndarray, expected: np.ndarray, elem: str, *, atol_scale: float = 1.0, what: str = "") -> None:
    """``got`` (of IR type ``elem``) against a float64/int/bool reference."""
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    if elem in FLOATS:
        rtol = RTOL[elem]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol * atol_scale, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected.astype(NP_DTYPE[elem]), err_msg=what)


def as_input(values: np.ndarray, elem: str) -> np.ndarray:
    return np.asarray(values).astype(NP_DTYPE[elem])


def f64(x: np.ndarray) -> np.ndarray:
    """What the reference computes on: float64 for floats, the ints themselves."""
    return x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == BF16 else x


# -- cases --------------------------------------------------------------------

Gen = Callable[[np.random.Generator, tuple], np.ndarray]


@dataclass
class Case:
    """One output of a bundle: its inputs, how to build it, its reference."""

    id: str
    inputs: list[tuple[Shape, tuple, str, Gen]]  # (IR shape, concrete shape, elem, generator)
    build: Callable[..., V]  # (segment, *input values) -> output value
    reference: Callable[..., np.ndarray]  # (*inputs as float64/int/bool) -> expected
    out_elem: str
    atol_scale: float = 1.0
    exact: bool = False  # bit-exact (NaN equal NaN) instead of a tolerance


def uniform(lo: float, hi: float) -> Gen:
    return lambda r, shape: r.uniform(lo, hi, shape)


def integers(lo: int, hi: int) -> Gen:
    return lambda r, shape: r.integers(lo, hi, shape)


def booleans() -> Gen:
    return lambda r, shape: r.random(shape) < 0.5


def away_from_zero(lo: float, hi: float) -> Gen:
    return lambda r, shape: r.uniform(lo, hi, shape) * r.choice([-1.0, 1.0], shape)


def tiny_and_normal(lo: float, hi: float) -> Gen:
    """Values in [lo, hi] scaled by 10**-k (k up to 7): probes cancellation near 0."""
    return lambda r, shape: r.uniform(lo, hi, shape) * 10.0 ** -r.integers(0, 8, shape).astype(np.float64)


def with_specials(base: Gen) -> Gen:
    def gen(r: np.random.Generator, shape: tuple) -> np.ndarray:
        x = base(r, shape).astype(np.float64)
        flat = x.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, 0.0, -0.0]
        for i, v in zip(r.choice(flat.size, size=min(flat.size, 5), replace=False), specials):
            flat[i] = v
        return x

    return gen


def halves() -> Gen:
    """Multiples of 0.5 (ties for round) mixed with other values."""
    return lambda r, shape: np.where(r.random(shape) < 0.5, r.integers(-10, 10, shape) / 2.0, r.uniform(-5, 5, shape))


def int_generator(elem: str) -> Gen:
    return booleans() if elem == "i1" else integers(-50, 50)


def full_range(elem: str) -> Gen:
    if elem == "i1":
        return booleans()
    info = np.iinfo(NP_DTYPE[elem])
    return lambda r, shape: r.integers(info.min, info.max, shape, dtype=NP_DTYPE[elem], endpoint=True)


vectorize = functools.partial(np.vectorize, otypes=[np.float64])
erf = vectorize(math.erf)
erfc = vectorize(math.erfc)

UNARY_FLOAT: dict[str, tuple[Gen, Callable]] = {
    "exp": (uniform(-3, 3), np.exp),
    "exp2": (uniform(-3, 3), np.exp2),
    "expm1": (tiny_and_normal(-1, 1), np.expm1),
    "log": (uniform(0.1, 5), np.log),
    "log2": (uniform(0.1, 5), np.log2),
    "log10": (uniform(0.1, 5), np.log10),
    "log1p": (tiny_and_normal(-0.5, 2), np.log1p),
    "sqrt": (uniform(0, 5), np.sqrt),
    "rsqrt": (uniform(0.1, 5), lambda x: 1 / np.sqrt(x)),
    "reciprocal": (away_from_zero(0.5, 3), lambda x: 1 / x),
    "sin": (uniform(-4, 4), np.sin),
    "cos": (uniform(-4, 4), np.cos),
    "tan": (uniform(-1.2, 1.2), np.tan),
    "tanh": (uniform(-3, 3), np.tanh),
    "asin": (uniform(-0.99, 0.99), np.arcsin),
    "acos": (uniform(-0.99, 0.99), np.arccos),
    "atan": (uniform(-5, 5), np.arctan),
    "sinh": (uniform(-3, 3), np.sinh),
    "cosh": (uniform(-3, 3), np.cosh),
    "erf": (uniform(-3, 3), erf),
    "erfc": (uniform(-3, 3), erfc),
    "sigmoid": (uniform(-10, 10), lambda x: 1 / (1 + np.exp(-x))),
    "silu": (uniform(-10, 10), lambda x: x / (1 + np.exp(-x))),
    "floor": (uniform(-5, 5), np.floor),
    "ceil": (uniform(-5, 5), np.ceil),
    "round": (halves(), np.round),  # half to even
    "trunc": (uniform(-5, 5), np.trunc),
    "abs": (uniform(-5, 5), np.abs),
    "neg": (uniform(-5, 5), np.negative),
    "relu": (with_specials(uniform(-5, 5)), lambda x: np.where(np.isnan(x), x, np.maximum(x, 0))),
    "sign": (with_specials(uniform(-5, 5)), lambda x: np.where(np.isnan(x), 0.0, np.sign(x))),  # PyTorch: sign(NaN) = 0
    "isnan": (with_specials(uniform(-5, 5)), np.isnan),
    "isinf": (with_specials(uniform(-5, 5)), np.isinf),
    "isfinite": (with_specials(uniform(-5, 5)), np.isfinite),
}
SMALL_NEAR_ZERO = {"expm1", "log1p"}  # checked relative-only


def int_pow_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """PyTorch's integer pow (no overflow in the tested range)."""

    def one(x: int, y: int) -> int:
        if y >= 0:
            return x**y
        if x == 1:
            return 1
        if x == -1:
            return -1 if y % 2 else 1
        return 0

    return np.array([one(int(x), int(y)) for x, y in zip(a.ravel(), b.ravel())], dtype=np.int64).reshape(a.shape)


def float_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.remainder(a, b)


def int_fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b)


BINARY_FLOAT: dict[str, tuple[Gen, Gen, Callable]] = {
    "add": (uniform(-5, 5), uniform(-5, 5), np.add),
    "sub": (uniform(-5, 5), uniform(-5, 5), np.subtract),
    "mul": (uniform(-5, 5), uniform(-5, 5), np.multiply),
    "div": (uniform(-5, 5), away_from_zero(0.5, 3), np.divide),
    "pow": (uniform(0.5, 2), uniform(-2, 2), np.power),
    "fmod": (uniform(-10, 10), away_from_zero(0.5, 3), np.fmod),
    "remainder": (uniform(-10, 10), away_from_zero(0.5, 3), float_remainder),
    "maximum": (with_specials(uniform(-5, 5)), uniform(-5, 5), np.maximum),  # NaN propagates
    "minimum": (with_specials(uniform(-5, 5)), uniform(-5, 5), np.minimum),
    "atan2": (uniform(-3, 3), uniform(-3, 3), np.arctan2),
}
BINARY_INT: dict[str, tuple[Gen, Gen, Callable]] = {
    "add": (integers(-50, 50), integers(-50, 50), np.add),
    "sub": (integers(-50, 50), integers(-50, 50), np.subtract),
    "mul": (integers(-50, 50), integers(-50, 50), np.multiply),
    "pow": (integers(-3, 4), integers(-2, 9), int_pow_reference),
    "fmod": (integers(-50, 50), lambda r, s: integers(1, 8)(r, s) * r.choice([-1, 1], s), int_fmod),
    "remainder": (integers(-50, 50), lambda r, s: integers(1, 8)(r, s) * r.choice([-1, 1], s), np.remainder),
    "maximum": (integers(-50, 50), integers(-50, 50), np.maximum),
    "minimum": (integers(-50, 50), integers(-50, 50), np.minimum),
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or}


def lerp_reference(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    return a + w * (b - a)


def compare_values(elem: str) -> Gen:
    """Few distinct values, so that equal pairs occur (and NaN for floats)."""
    if elem == "i1":
        return booleans()
    if elem in INTS:
        return integers(-3, 3)
    return with_specials(lambda r, s: r.integers(-3, 3, s) / 2.0)


SHAPE2 = ((None, None), (3, 5))


def pointwise_case(name: str, elem: str, gens: Sequence[Gen], reference: Callable, out_elem: str | None = None, *, shape: tuple = SHAPE2[1], **kw) -> Case:
    out = out_elem or ("i1" if name in O.BOOL_RESULT else elem)
    inputs = [(SHAPE2[0], shape, elem, g) for g in gens]

    def build(seg: Segment, *xs: V) -> V:
        return seg.op(name, *xs, shape=SHAPE2[0], elem=out)

    return Case(f"{name}-{elem}", inputs, build, reference, out, **kw)


def pointwise_cases(elem: str) -> list[Case]:
    """Every pointwise op that takes ``elem`` operands."""
    cases: list[Case] = []
    if elem in FLOATS:
        for name, (gen, ref) in UNARY_FLOAT.items():
            cases.append(pointwise_case(name, elem, [gen], ref, atol_scale=1e-6 if name in SMALL_NEAR_ZERO else 1.0))
        for name, (ga, gb, ref) in BINARY_FLOAT.items():
            cases.append(pointwise_case(name, elem, [ga, gb], ref))
        cases.append(pointwise_case("clamp", elem, [with_specials(uniform(-3, 3)), uniform(-2, 0), uniform(0, 2)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)))
        cases.append(pointwise_case("lerp", elem, [uniform(-3, 3), uniform(-3, 3), uniform(-0.5, 1.5)], lerp_reference))
    if elem in INTS:
        for name in ("abs", "neg", "relu", "sign"):
            ref = {"abs": np.abs, "neg": np.negative, "relu": lambda x: np.maximum(x, 0), "sign": np.sign}[name]
            cases.append(pointwise_case(name, elem, [integers(-50, 50)], ref))
        for name, (ga, gb, ref) in BINARY_INT.items():
            cases.append(pointwise_case(name, elem, [ga, gb], ref))
        cases.append(pointwise_case("clamp", elem, [integers(-50, 50), integers(-20, 0), integers(0, 20)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)))
    if elem in (*INTS, "i1"):
        for name, ref in BITWISE.items():
            cases.append(pointwise_case(name, elem, [full_range(elem), full_range(elem)], ref))
        cases.append(pointwise_case("bitwise_not", elem, [full_range(elem)], np.invert))
    if elem == "i1":
        for name, ref in LOGICAL.items():
            cases.append(pointwise_case(name, elem, [booleans(), booleans()], ref))
        cases.append(pointwise_case("logical_not", elem, [booleans()], np.logical_not))
    for name, ref in COMPARE.items():
        cases.append(pointwise_case(name, elem, [compare_values(elem), compare_values(elem)], ref))
    cases.append(where_case(elem))
    return cases


def where_case(elem: str) -> Case:
    gen = int_generator(elem) if elem not in FLOATS else uniform(-5, 5)
    inputs = [(SHAPE2[0], SHAPE2[1], "i1", booleans()), (SHAPE2[0], SHAPE2[1], elem, gen), (SHAPE2[0], SHAPE2[1], elem, gen)]

    def build(seg: Segment, c: V, a: V, b: V) -> V:
        return seg.op("where", c, a, b, shape=SHAPE2[0], elem=elem)

    return Case(f"where-{elem}", inputs, build, np.where, elem)


def libm_cases(elem: str) -> list[Case]:
    """The ops that call libm, on rows long enough for the SIMD loop (libmvec)."""
    from fuser_mlir.lowering.scalar import LIBM_CALLS

    cases = []
    for name, (gen, ref) in UNARY_FLOAT.items():
        if name in LIBM_CALLS or name in ("sigmoid", "silu"):
            cases.append(pointwise_case(name, elem, [gen], ref, shape=(2, 300), atol_scale=1e-6 if name in SMALL_NEAR_ZERO else 1.0))
    for name in ("pow", "atan2"):
        ga, gb, ref = BINARY_FLOAT[name]
        cases.append(pointwise_case(name, elem, [ga, gb], ref, shape=(2, 300)))
    for case in cases:
        case.id = "long-rows-" + case.id
    return cases


# -- casts --------------------------------------------------------------------


def cast_source(elem: str) -> Gen:
    if elem in FLOATS:
        # values exactly representable in every float type, with zeros (for
        # ->i1) and fractions (truncation toward zero)
        return lambda r, s: np.where(r.random(s) < 0.2, 0.0, np.round(r.uniform(-100, 100, s) * 4) / 4)
    return int_generator(elem)


def cast_reference(source: str, target: str) -> Callable:
    def ref(x: np.ndarray) -> np.ndarray:
        if target == "i1":
            return x != 0
        if target in INTS and source in FLOATS:
            return np.trunc(x).astype(NP_DTYPE[target])
        if source in FLOATS and target in ("f16", "bf16"):  # through f32, as c10 does
            return x.astype(np.float32).astype(NP_DTYPE[target])
        return x.astype(NP_DTYPE[target])

    return ref


def cast_cases() -> list[Case]:
    cases = []
    for source in ALL:
        for target in ALL:
            if source == target:
                continue

            def build(seg: Segment, x: V, target: str = target) -> V:
                return seg.op("cast", x, shape=SHAPE2[0], elem=target)

            inputs = [(SHAPE2[0], SHAPE2[1], source, cast_source(source))]
            cases.append(Case(f"cast-{source}-to-{target}", inputs, build, cast_reference(source, target), target, exact=True))
    # i64 -> i32 wraps; large integers round to the nearest float
    big = lambda r, s: r.integers(-(2**40), 2**40, s)  # noqa: E731
    for target in ("i32", "f32", "f64"):

        def build_big(seg: Segment, x: V, target: str = target) -> V:
            return seg.op("cast", x, shape=SHAPE2[0], elem=target)

        cases.append(Case(f"cast-big-i64-to-{target}", [(SHAPE2[0], SHAPE2[1], "i64", big)], build_big, cast_reference("i64", target), target, exact=True))
    # ties: f32 values halfway between two neighbours round to the even one
    def ties(mantissa_bits: int) -> Gen:
        def gen(r: np.random.Generator, shape: tuple) -> np.ndarray:
            k = r.integers(0, 64, shape)
            return (1.0 + (2 * k + 1) * 2.0 ** -(mantissa_bits + 1)) * r.choice([-1.0, 1.0], shape)

        return gen

    for target, bits in (("bf16", 7), ("f16", 10)):

        def build_tie(seg: Segment, x: V, target: str = target) -> V:
            return seg.op("cast", x, shape=SHAPE2[0], elem=target)

        cases.append(Case(f"cast-ties-f32-to-{target}", [(SHAPE2[0], SHAPE2[1], "f32", ties(bits))], build_tie, cast_reference("f32", target), target, exact=True))
    # NaN and infinities to i1 (NaN is true) and between float types
    for source in ("f32", "f64"):
        for target in ("i1", "f16", "bf16"):

            def build_special(seg: Segment, x: V, target: str = target) -> V:
                return seg.op("cast", x, shape=SHAPE2[0], elem=target)

            gen = with_specials(uniform(-1e3, 1e3))
            cases.append(Case(f"cast-special-{source}-to-{target}", [(SHAPE2[0], SHAPE2[1], source, gen)], build_special, cast_reference(source, target), target, exact=True))
    return cases


# -- layout, scalars, copies ---------------------------------------------------


def layout_cases() -> list[Case]:
    cases = []

    def add(id_: str, inputs, build, reference, out_elem="f32"):
        cases.append(Case(id_, inputs, build, reference, out_elem))

    u = uniform(-5, 5)
    add("broadcast_in_dim-new-inner-dim", [((None,), (4,), "f32", u)],
        lambda s, x: s.op("broadcast_in_dim", x, shape=(None, 3), elem="f32", attrs="broadcast_dims = array<i64: 0>"),
        lambda x: np.broadcast_to(x[:, None], (4, 3)))
    add("broadcast_in_dim-new-outer-dim", [((None,), (4,), "f32", u)],
        lambda s, x: s.op("broadcast_in_dim", x, shape=(2, None), elem="f32", attrs="broadcast_dims = array<i64: 1>"),
        lambda x: np.broadcast_to(x[None, :], (2, 4)))
    add("broadcast_in_dim-expand-size-1", [((1, None), (1, 4), "f32", u)],
        lambda s, x: s.op("broadcast_in_dim", x, shape=(5, None), elem="f32", attrs="broadcast_dims = array<i64: 0, 1>"),
        lambda x: np.broadcast_to(x, (5, 4)))
    add("broadcast_in_dim-keep-broadcast-dim", [((None, None), (3, 4), "i32", integers(-9, 9))],
        lambda s, x: s.op("broadcast_in_dim", x, shape=(None, 1, None), elem="i32", attrs="broadcast_dims = array<i64: 0, 2>"),
        lambda x: x[:, None, :], "i32")
    add("broadcast_in_dim-from-0d", [((), (), "i1", booleans())],
        lambda s, x: s.op("broadcast_in_dim", x, shape=(2, 3), elem="i1", attrs="broadcast_dims = array<i64>"),
        lambda x: np.broadcast_to(x, (2, 3)), "i1")
    add("permute-3d", [((None, None, None), (2, 3, 4), "f32", u)],
        lambda s, x: s.op("permute", x, shape=(None, None, None), elem="f32", attrs="dims = array<i64: 2, 0, 1>"),
        lambda x: np.transpose(x, (2, 0, 1)))
    add("permute-2d-static", [((None, 5), (3, 5), "bf16", u)],
        lambda s, x: s.op("permute", x, shape=(5, None), elem="bf16", attrs="dims = array<i64: 1, 0>"),
        lambda x: x.T, "bf16")

    def flatten(s: Segment, x: V) -> V:
        n = s.op("size", x, shape=None, elem="i64", attrs="dim = 0 : i64")
        m = s.op("size", x, shape=None, elem="i64", attrs="dim = 1 : i64")
        nm = s.op("mul", n, m, shape=None, elem="i64")
        return s.op("reshape", x, nm, shape=(None,), elem="f32")

    add("reshape-flatten", [((None, None), (3, 5), "f32", u)], flatten, lambda x: x.reshape(-1))

    def split(s: Segment, x: V) -> V:
        n = s.op("size", x, shape=None, elem="i64", attrs="dim = 0 : i64")
        return s.op("reshape", x, n, shape=(None, 2, 3), elem="f32")

    add("reshape-split", [((None, 6), (4, 6), "f32", u)], split, lambda x: x.reshape(4, 2, 3))
    add("reshape-to-0d", [((1, 1), (1, 1), "f32", u)], lambda s, x: s.op("reshape", x, shape=(), elem="f32"), lambda x: x.reshape(()))
    add("reshape-from-0d", [((), (), "f32", u)], lambda s, x: s.op("reshape", x, shape=(1, 1), elem="f32"), lambda x: x.reshape(1, 1))
    add("set", [((None, None), (3, 4), "f32", u)], lambda s, x: s.op("set", x, shape=(None, None), elem="f32"), lambda x: x)
    add("segment_set", [((None, None), (3, 4), "i64", integers(-9, 9))], lambda s, x: s.op("segment_set", x, shape=(None, None), elem="i64"), lambda x: x, "i64")

    def plus_constant(s: Segment, x: V) -> V:
        c = s.op("constant", shape=None, elem="f32", attrs="value = 2.5 : f32")
        return s.op("add", x, c, shape=(None, None), elem="f32")

    add("constant-f32", [((None, None), (3, 4), "f32", u)], plus_constant, lambda x: x + 2.5)

    def and_constant(s: Segment, x: V) -> V:
        c = s.op("constant", shape=None, elem="i1", attrs="value = true")
        return s.op("logical_and", x, c, shape=(None, None), elem="i1")

    add("constant-i1", [((None, None), (3, 4), "i1", booleans())], and_constant, lambda x: x, "i1")

    def times_bf16_constant(s: Segment, x: V) -> V:
        c = s.op("constant", shape=None, elem="bf16", attrs="value = 1.5 : bf16")
        return s.op("mul", x, c, shape=(None, None), elem="bf16")

    add("constant-bf16", [((None, None), (3, 4), "bf16", u)], times_bf16_constant, lambda x: x * 1.5, "bf16")

    def times_size(s: Segment, x: V) -> V:
        n = s.op("size", x, shape=None, elem="i64", attrs="dim = 1 : i64")
        nf = s.op("cast", n, shape=None, elem="f32")
        return s.op("mul", x, nf, shape=(None, None), elem="f32")

    add("size", [((None, None), (3, 7), "f32", u)], times_size, lambda x: x * 7)
    return cases


def scalar_cases() -> list[Case]:
    """A runtime scalar argument of every type, and pointwise ops on scalars."""
    cases = []
    for elem in ALL:
        tensor_gen = booleans() if elem == "i1" else (integers(-20, 20) if elem in INTS else uniform(-5, 5))
        scalar_gen = booleans() if elem == "i1" else (integers(-20, 20) if elem in INTS else uniform(-5, 5))
        op = "bitwise_xor" if elem == "i1" else "mul"

        def build(s: Segment, x: V, c: V, elem: str = elem, op: str = op) -> V:
            return s.op(op, x, c, shape=(None, None), elem=elem)

        ref = np.logical_xor if elem == "i1" else np.multiply
        inputs = [((None, None), (3, 4), elem, tensor_gen), (None, None, elem, scalar_gen)]
        cases.append(Case(f"scalar-arg-{op}-{elem}", inputs, build, ref, elem))

    def scalar_chain(s: Segment, x: V, a: V, b: V) -> V:
        ab = s.op("mul", a, b, shape=None, elem="f64")
        e = s.op("exp", ab, shape=None, elem="f64")
        return s.op("add", x, e, shape=(None,), elem="f64")

    inputs = [((None,), (5,), "f64", uniform(-1, 1)), (None, None, "f64", uniform(-1, 1)), (None, None, "f64", uniform(-1, 1))]
    cases.append(Case("scalar-only-ops", inputs, scalar_chain, lambda x, a, b: x + np.exp(a * b), "f64"))
    return cases


def broadcast_cases() -> list[Case]:
    """Size-1 dims that broadcast against symbolic and static sizes."""
    u = uniform(-5, 5)
    cases = []
    patterns = [
        ("column-plus-row", [((None, 1), (4, 1)), ((1, None), (1, 5))], (None, None)),
        ("3d-mixed", [((1, None, 1), (1, 3, 1)), ((None, 1, None), (2, 1, 4))], (None, None, None)),
        ("static-with-1", [((3, None), (3, 4)), ((1, None), (1, 4))], (3, None)),
        ("all-ones-vs-full", [((1, 1), (1, 1)), ((None, None), (2, 3))], (None, None)),
        ("0d-tensors", [((), ()), ((), ())], ()),
    ]
    for name, shapes, out_shape in patterns:
        inputs = [(ir_shape, shape, "f32", u) for ir_shape, shape in shapes]

        def build(s: Segment, a: V, b: V, out_shape: Shape = out_shape) -> V:
            return s.op("sub", a, b, shape=out_shape, elem="f32")

        cases.append(Case(f"broadcast-{name}", inputs, build, np.subtract, "f32"))

    def scalar_and_broadcast(s: Segment, a: V, b: V, c: V) -> V:
        return s.op("where", a, b, c, shape=(None, None), elem="f32")

    inputs = [((None, 1), (3, 1), "i1", booleans()), ((1, None), (1, 4), "f32", u), (None, None, "f32", u)]
    cases.append(Case("broadcast-where-scalar", inputs, scalar_and_broadcast, np.where, "f32"))
    return cases


# -- reductions ---------------------------------------------------------------

REDUCTION_SHAPE = ((None, None, None), (3, 4, 5))
REDUCTION_DIMS = [((0,), False), ((1,), True), ((2,), False), ((0, 2), True), ((0, 1, 2), False), ((0, 1, 2), True)]
NP_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def reduced_shape(shape: Shape, dims: Sequence[int], keepdim: bool) -> Shape:
    return tuple(1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims)


def reduction_reference(kind: str, elem: str, dims: tuple, keepdim: bool) -> Callable:
    def ref(x: np.ndarray) -> np.ndarray:
        if elem in INTS and kind in ("sum", "prod"):  # wrap-around arithmetic, same in any order
            return NP_REDUCE[kind](x, axis=dims, keepdims=keepdim, dtype=NP_DTYPE[elem])
        return NP_REDUCE[kind](x, axis=dims, keepdims=keepdim)

    return ref


def reduction_cases(elem: str, kinds: Sequence[str] = ("sum", "prod", "max", "min")) -> list[Case]:
    cases = []
    gen = integers(-9, 10) if elem in INTS else uniform(0.5, 1.5)
    for kind in kinds:
        for dims, keepdim in REDUCTION_DIMS:
            out_shape = reduced_shape(REDUCTION_SHAPE[0], dims, keepdim)
            attrs = f"dims = array<i64: {', '.join(map(str, dims))}>, keepdim = {'true' if keepdim else 'false'}"

            def build(s: Segment, x: V, kind=kind, out_shape=out_shape, attrs=attrs) -> V:
                return s.op(kind, x, shape=out_shape, elem=elem, attrs=attrs)

            id_ = f"{kind}-{elem}-dims{''.join(map(str, dims))}-{'keep' if keepdim else 'drop'}"
            cases.append(Case(id_, [(REDUCTION_SHAPE[0], REDUCTION_SHAPE[1], elem, gen)], build, reduction_reference(kind, elem, dims, keepdim), elem, atol_scale=60))
    if elem in FLOATS:
        for kind in ("max", "min"):

            def build_nan(s: Segment, x: V, kind=kind) -> V:
                return s.op(kind, x, shape=(None,), elem=elem, attrs="dims = array<i64: 1>, keepdim = false")

            cases.append(Case(f"{kind}-{elem}-nan-propagates", [((None, None), (4, 6), elem, with_specials(uniform(-5, 5)))], build_nan, lambda x, kind=kind: NP_REDUCE[kind](x, axis=1), elem))
    return cases


def fused_cases() -> list[Case]:
    """Reductions and pointwise ops in one segment (the CPU keeps them together)."""
    cases = []
    u = uniform(-3, 3)

    def softmax(s: Segment, x: V) -> V:
        m = s.op("max", x, shape=(None, 1), elem="f32", attrs="dims = array<i64: 1>, keepdim = true")
        d = s.op("sub", x, m, shape=(None, None), elem="f32")
        e = s.op("exp", d, shape=(None, None), elem="f32")
        z = s.op("sum", e, shape=(None, 1), elem="f32", attrs="dims = array<i64: 1>, keepdim = true")
        return s.op("div", e, z, shape=(None, None), elem="f32")

    def softmax_ref(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    cases.append(Case("softmax", [((None, None), (6, 9), "f32", u)], softmax, softmax_ref, "f32"))

    def layer_norm(s: Segment, x: V) -> V:
        n = s.op("size", x, shape=None, elem="i64", attrs="dim = 1 : i64")
        nf = s.op("cast", n, shape=None, elem="f64")
        total = s.op("sum", x, shape=(None,), elem="f64", attrs="dims = array<i64: 1>, keepdim = false")
        mean = s.op("div", total, nf, shape=(None,), elem="f64")
        mean2 = s.op("broadcast_in_dim", mean, shape=(None, 1), elem="f64", attrs="broadcast_dims = array<i64: 0>")
        centered = s.op("sub", x, mean2, shape=(None, None), elem="f64")
        sq = s.op("mul", centered, centered, shape=(None, None), elem="f64")
        var = s.op("sum", sq, shape=(None, 1), elem="f64", attrs="dims = array<i64: 1>, keepdim = true")
        var = s.op("div", var, nf, shape=(None, 1), elem="f64")
        return s.op("mul", centered, s.op("rsqrt", var, shape=(None, 1), elem="f64"), shape=(None, None), elem="f64")

    def layer_norm_ref(x: np.ndarray) -> np.ndarray:
        c = x - x.mean(axis=1, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=1, keepdims=True))

    cases.append(Case("layer-norm", [((None, None), (5, 8), "f64", u)], layer_norm, layer_norm_ref, "f64"))

    def sum_of_max(s: Segment, x: V) -> V:
        m = s.op("max", x, shape=(None, None), elem="f32", attrs="dims = array<i64: 2>, keepdim = false")
        return s.op("sum", m, shape=(), elem="f32", attrs="dims = array<i64: 0, 1>, keepdim = false")

    cases.append(Case("reduction-of-reduction-0d", [((None, None, None), (3, 4, 5), "f32", u)], sum_of_max, lambda x: x.max(axis=2).sum(), "f32", atol_scale=12))

    def half_softmax(s: Segment, x: V) -> V:
        xf = s.op("cast", x, shape=(None, None), elem="f32")
        total = s.op("sum", xf, shape=(None, 1), elem="f32", attrs="dims = array<i64: 1>, keepdim = true")
        q = s.op("div", xf, total, shape=(None, None), elem="f32")
        return s.op("cast", q, shape=(None, None), elem="f16")

    cases.append(Case("f16-cast-reduce-cast", [((None, None), (4, 7), "f16", uniform(0.5, 2))], half_softmax, lambda x: x / x.sum(axis=1, keepdims=True), "f16"))
    return cases


# -- bundles: one compiled segment each ---------------------------------------

BUNDLES: dict[str, Callable[[], list[Case]]] = {
    **{f"pointwise-{e}": functools.partial(pointwise_cases, e) for e in ALL},
    **{f"long-rows-{e}": functools.partial(libm_cases, e) for e in ("f32", "f64", "bf16")},
    "cast": cast_cases,
    "layout": layout_cases,
    "scalars": scalar_cases,
    "broadcast": broadcast_cases,
    **{f"reduction-{e}": functools.partial(reduction_cases, e) for e in ("f32", "f64", "i32", "i64")},
    # half types reduce after a cast to f32 (the frontend inserts it); max/min are exact
    "reduction-bf16": functools.partial(reduction_cases, "bf16", ("max", "min")),
    "fused": fused_cases,
}


def build_bundle(cases: Sequence[Case]) -> Segment:
    seg = Segment()
    for case in cases:
        values = [seg.arg(ir_shape, elem) for ir_shape, _, elem, _ in case.inputs]
        seg.output(case.build(seg, *values))
    return seg


def make_inputs(case: Case, r: np.random.Generator) -> list[object]:
    values: list[object] = []
    for ir_shape, shape, elem, gen in case.inputs:
        if ir_shape is None:  # scalar
            raw = gen(r, ())
            values.append(bool(raw) if elem == "i1" else (int(raw) if elem in INTS else float(raw)))
        else:
            values.append(as_input(gen(r, shape), elem))
    return values


def scalar_as_reference(value: object, elem: str) -> object:
    """A scalar input as the kernel sees it (rounded to its type)."""
    if isinstance(value, float):
        return float(np.asarray(value, dtype=NP_DTYPE[elem]).astype(np.float64))
    return value


@dataclass
class Outcome:
    got: np.ndarray
    expected: np.ndarray
    case: Case


@functools.cache
def run_bundle(bundle: str) -> dict[str, Outcome]:
    """Compile the bundle's segment once, run it on fresh data, check inputs."""
    cases = BUNDLES[bundle]()
    seg = build_bundle(cases)
    program = compile_text(seg.text())
    r = rng()
    inputs: list[object] = []
    expected: list[np.ndarray] = []
    for case in cases:
        values = make_inputs(case, r)
        inputs += values
        ref_args = [f64(v) if isinstance(v, np.ndarray) else scalar_as_reference(v, e) for v, (_, _, e, _) in zip(values, case.inputs)]
        with np.errstate(all="ignore"):
            expected.append(np.asarray(case.reference(*ref_args)))
    outputs = [poison_like(e, NP_DTYPE[c.out_elem]) for e, c in zip(expected, cases)]
    before = snapshot(inputs)
    program["t_seg0"](*inputs, *outputs)
    assert_unchanged(before, inputs)
    return {case.id: Outcome(out, exp, case) for case, out, exp in zip(cases, outputs, expected)}


def case_ids(bundle: str) -> list[tuple[str, str]]:
    return [(bundle, case.id) for case in BUNDLES[bundle]()]


ALL_CASES = [pair for bundle in BUNDLES for pair in case_ids(bundle)]


@pytest.mark.parametrize("bundle,case_id", ALL_CASES, ids=[c for _, c in ALL_CASES])
def test_op(bundle: str, case_id: str) -> None:
    outcome = run_bundle(bundle)[case_id]
    if outcome.case.exact:
        expected = outcome.expected.astype(NP_DTYPE[outcome.case.out_elem])
        got = outcome.got
        if outcome.case.out_elem in FLOATS:  # NumPy's NaN checks do not know bfloat16
            got, expected = got.astype(np.float64), expected.astype(np.float64)
        np.testing.assert_array_equal(got, expected, err_msg=case_id)
        return
    assert_close(outcome.got, outcome.expected, outcome.case.out_elem, atol_scale=outcome.case.atol_scale, what=case_id)


def test_every_op_of_the_dialect_is_covered() -> None:
    covered = set()
    for bundle in BUNDLES:
        seg = build_bundle(BUNDLES[bundle]())
        covered |= {line.split('"fuser.')[1].split('"')[0] for line in seg.lines}
    covered |= {"store"}  # every bundle stores
    expected = set(O.CATEGORY) - {"empty", "copy"}  # host-side ops (copy: test_copy_op)
    assert expected - covered == set()


# -- strides, aliasing, sizes: one small segment each --------------------------


def compile_segment(seg: Segment, **kw):
    return compile_text(seg.text(**kw))["t_seg0"]


def strided_segment() -> Segment:
    """exp(a) * b + c, a row sum of a, a permute and a flatten of b."""
    seg = Segment()
    a, b, c = (seg.arg((None, None), "f32") for _ in range(3))
    e = seg.op("exp", a, shape=(None, None), elem="f32")
    m = seg.op("mul", e, b, shape=(None, None), elem="f32")
    seg.output(seg.op("add", m, c, shape=(None, None), elem="f32"))
    seg.output(seg.op("sum", a, shape=(None,), elem="f32", attrs="dims = array<i64: 1>, keepdim = false"))
    seg.output(seg.op("permute", b, shape=(None, None), elem="f32", attrs="dims = array<i64: 1, 0>"))
    n0 = seg.op("size", b, shape=None, elem="i64", attrs="dim = 0 : i64")
    n1 = seg.op("size", b, shape=None, elem="i64", attrs="dim = 1 : i64")
    seg.output(seg.op("reshape", b, seg.op("mul", n0, n1, shape=None, elem="i64"), shape=(None,), elem="f32"))
    return seg


def test_non_contiguous_inputs_and_strided_destinations() -> None:
    kernel = compile_segment(strided_segment())
    r = rng()
    for rows, cols in ((3, 5), (4, 2)):  # a new size does not need a new compile
        a = r.uniform(-2, 2, (2 * rows, cols + 1)).astype(np.float32)[::2, 1:]  # sliced
        b = r.uniform(-2, 2, (cols, rows)).astype(np.float32).T  # transposed
        c = r.uniform(-2, 2, (rows, cols)).astype(np.float32)[::-1, ::-1]  # negative strides
        big = np.full((2 * rows, 3 * cols), np.nan, np.float32)
        out0 = big[::-2, ::3]  # negative and non-unit strides
        out1 = np.full(2 * rows, np.nan, np.float32)[::2]
        out2 = np.full((rows, cols), np.nan, np.float32).T  # a transposed destination
        out3 = np.full(rows * cols * 2, np.nan, np.float32)[1::2]
        inputs = [a, b, c]
        before = snapshot(inputs)
        kernel(*inputs, out0, out1, out2, out3)
        assert_unchanged(before, inputs)
        a64, b64, c64 = (f64(x) for x in inputs)
        assert_close(out0, np.exp(a64) * b64 + c64, "f32", what="pointwise")
        assert_close(out1, a64.sum(axis=1), "f32", atol_scale=cols, what="row sum")
        assert_close(out2, b64.T, "f32", what="permute")
        assert_close(out3, b64.reshape(-1), "f32", what="reshape of a transposed input")
        untouched = np.ones(big.shape, bool)
        untouched[::-2, ::3] = False
        assert np.isnan(big[untouched]).all(), "wrote outside the destination view"


def test_inplace_update_writes_into_the_input() -> None:
    """A pointwise result stored into its own input (same index: no hazard)."""
    seg = Segment()
    x = seg.arg((None, None), "f32")
    y = seg.arg((None, None), "f32")
    e = seg.op("exp", x, shape=(None, None), elem="f32")
    seg.output(seg.op("add", e, y, shape=(None, None), elem="f32"))
    kernel = compile_segment(seg, inplace={0: 0})
    r = rng()
    x_buf = r.uniform(-1, 1, (4, 6)).astype(np.float32)
    y_buf = r.uniform(-1, 1, (4, 6)).astype(np.float32)
    expected = np.exp(f64(x_buf)) + f64(y_buf)
    kernel(x_buf, y_buf)
    assert_close(x_buf, expected, "f32")


def test_zero_size_tensors() -> None:
    seg = Segment()
    x = seg.arg((None, None), "f32")
    seg.output(seg.op("exp", x, shape=(None, None), elem="f32"))
    for kind in ("sum", "prod", "max", "min"):
        seg.output(seg.op(kind, x, shape=(None,), elem="f32", attrs="dims = array<i64: 0>, keepdim = false"))
    kernel = compile_segment(seg)
    x_val = np.empty((0, 3), np.float32)
    outs = [np.empty((0, 3), np.float32)] + [np.full(3, np.nan, np.float32) for _ in range(4)]
    kernel(x_val, *outs)
    for out, identity in zip(outs[1:], (0.0, 1.0, -np.inf, np.inf)):
        np.testing.assert_array_equal(out, np.full(3, identity, np.float32))


COPY_AND_REPEATED_STORES = """
func.func private @t_seg0(%x: tensor<?x?xf32>, %d0: tensor<?x?xf32>, %d1: tensor<?x?xf32>, %d2: tensor<?x?xf32>, %d3: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %snap = "fuser.copy"(%x, %d0) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %n = "fuser.neg"(%snap) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %r1 = "fuser.store"(%n, %d1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %r2 = "fuser.store"(%n, %d2) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %r3 = "fuser.store"(%x, %d3) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %snap, %r1, %r2, %r3 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
"""


def test_copy_op_and_one_value_stored_twice() -> None:
    """fuser.copy writes its source and yields it as a value; a value stored
    into two destinations, and an input stored unchanged, land in each."""
    kernel = compile_text(COPY_AND_REPEATED_STORES)["t_seg0"]
    x = rng().uniform(-1, 1, (3, 4)).astype(np.float32)[:, ::-1]
    outs = [np.full((3, 4), np.nan, np.float32) for _ in range(4)]
    kernel(x, *outs)
    for out, expected in zip(outs, (x, -x, -x, x)):
        np.testing.assert_array_equal(out, expected)


HOST_AND_SEGMENT = """
func.func private @f_seg0(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%e, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @f(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %r = func.call @f_seg0(%x, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
"""


def test_compile_cpu_drops_the_host_function_and_leaves_the_module_alone() -> None:
    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(HOST_AND_SEGMENT)
        before = str(module)
        program = compile_cpu(module)
        assert str(module) == before
    assert list(program.kernels) == ["f_seg0"]
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    out = np.full(7, np.nan, np.float32)
    program["f_seg0"](x, out)
    assert_close(out, np.exp(f64(x)), "f32")


def test_compile_cpu_rejects_a_module_without_segments() -> None:
    """The JIT would compile nothing, and its object dump aborts the process."""
    from fuser_mlir.errors import CompileError

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @no_segment() {\n  return\n}\n")
        with pytest.raises(CompileError, match="compile_cpu: the module holds no segment function to compile"):
            compile_cpu(module)


def test_the_pass_rejects_a_module_whose_host_calls_a_segment() -> None:
    from fuser_mlir.errors import PipelineError
    from fuser_mlir.pipeline import run_pipeline

    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(HOST_AND_SEGMENT)
        with pytest.raises(PipelineError, match="calls segment @f_seg0, whose signature fuser-lower-to-cpu rewrites"):
            run_pipeline(module, "fuser-lower-to-cpu")


def test_a_fused_chain_allocates_nothing_and_intermediates_are_freed() -> None:
    chain = Segment()
    x = chain.arg((None, None), "f32")
    y = chain.arg((1, None), "f32")
    v = chain.op("add", x, y, shape=(None, None), elem="f32")
    for name in ("exp", "neg", "abs", "sqrt"):
        v = chain.op(name, v, shape=(None, None), elem="f32")
    chain.output(v)
    lowered = compile_text(chain.text()).llvm_dialect
    assert "malloc" not in lowered and "memrefCopy" not in lowered
    softmax = build_bundle([c for c in fused_cases() if c.id == "softmax"])
    lowered = compile_text(softmax.text()).llvm_dialect
    calls = lambda name: lowered.count(f"llvm.call @{name}(")  # noqa: E731
    assert calls("malloc") > 0 and calls("malloc") == calls("free")


def test_libm_calls_use_libmvec_where_the_host_has_it() -> None:
    from fuser_mlir.lowering.vector_library import host_vector_library

    if not host_vector_library():
        pytest.skip("no libmvec with every variant on this host (glibc >= 2.35 and SSE4.1 needed)")
    seg = build_bundle([c for c in libm_cases("f32") if c.id == "long-rows-exp-f32"])
    lowered = compile_text(seg.text()).llvm_dialect
    assert "_ZGV" in lowered and "vector-function-abi-variant" in lowered


def test_no_unsigned_wrap_flags_reach_the_jit() -> None:
    """MLIR 22 marks memref index arithmetic nuw, wrong for negative strides."""
    lowered = compile_text(strided_segment().text()).llvm_dialect
    assert "getelementptr inbounds" in lowered
    assert "nuw" not in lowered


def test_half_conversion_libcalls_are_available_to_the_jit() -> None:
    """Hosts without F16C make LLVM call libgcc for f16 conversions."""
    import ctypes

    from fuser_mlir.lowering.cpu import load_runtime_libraries

    load_runtime_libraries()
    process = ctypes.CDLL(None)
    if not hasattr(ctypes.CDLL("libgcc_s.so.1"), "__extendhfsf2"):
        pytest.skip("this libgcc predates _Float16 support (GCC < 12)")
    assert hasattr(process, "__extendhfsf2") and hasattr(process, "__truncsfhf2")


def test_bfloat16_conversions_and_scalars_call_no_libgcc_routine() -> None:
    """Every bf16 conversion is integer code, and a bf16 scalar argument is
    its bits as i16: LLVM would otherwise call __truncsfbf2 (an int -> bf16
    conversion, which canonicalize folds to one op, or a bf16 value passed
    between functions), which libgcc exports only from GCC 13 on."""
    cases = cast_cases() + scalar_cases()
    assert any("bf16" in c.id for c in cases)
    lowered = compile_text(build_bundle(cases).text()).llvm_dialect
    conversions = re.findall(r"llvm\.(?:sitofp|uitofp|fptrunc|fpext|fptosi|fptoui) .*", lowered)
    assert conversions and not [c for c in conversions if "bf16" in c]
    signatures = re.findall(r"llvm\.func @\w+\(.*", lowered)
    assert signatures and not [s for s in signatures if "bf16" in s]


def test_scalar_libm_calls_without_a_vector_library() -> None:
    seg = build_bundle([c for c in libm_cases("f32") if c.id in ("long-rows-tanh-f32", "long-rows-pow-f32")])
    context = make_context()
    with context, ir.Location.unknown():
        program = compile_cpu(ir.Module.parse(seg.text()), vector_library="")
    assert "_ZGV" not in program.llvm_dialect
    r = rng()
    x = as_input(uniform(-3, 3)(r, (2, 300)), "f32")
    a, b = as_input(uniform(0.5, 2)(r, (2, 300)), "f32"), as_input(uniform(-2, 2)(r, (2, 300)), "f32")
    outs = [np.full((2, 300), np.nan, np.float32) for _ in range(2)]
    program["t_seg0"](x, a, b, *outs)
    assert_close(outs[0], np.tanh(f64(x)), "f32")
    assert_close(outs[1], np.power(f64(a), f64(b)), "f32")


def test_fuser_cpu_pipeline_reaches_the_llvm_dialect() -> None:
    from fuser_mlir.pipeline import run_pipeline

    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(strided_segment().text())
        run_pipeline(module, "fuser-cpu-pipeline")
        ops = {op.operation.name for op in module.body.operations}
    assert ops <= {"llvm.func", "llvm.mlir.global"}
