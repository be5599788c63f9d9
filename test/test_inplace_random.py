"""Property-based differential test of in-place updates (issue 6).

Hypothesis draws random fusions: 3-15 ops (pointwise unary/binary with
implicit broadcasting of lower-rank and size-1 inputs, Python-number
operands, reductions whose keepdim (or explicitly re-broadcast) result
broadcasts back, permutes of square tensors, casts between Float and Double,
``segment_set`` cuts) over 1-3 Float/Double inputs of small sizes; random
in-place aliases (``add_output(t, alias_input=x)``, ``t`` reduced, broadcast
and cast into ``x``'s shape and dtype; some also added visibly, before or
after the alias); and, sometimes, NaN-poisoned preallocated outputs. Each
fusion runs under every policy of ``fuser-resolve-alias-hazards`` (one
FusionExecutorCache per policy) and every visible output, every aliased
input and every other input must match the SSA reference
(``reference.evaluate`` on the entry values). Policies that may refuse
(``MAY_REFUSE``) raise CompileError and write nothing, never a wrong result.
The random test runs on the CPU, and its first fusions on the GPU too
(``..._on_the_gpu``, where one is present); the regression tests at the end
take the ``device`` fixture like test_inplace.py.

Cost: the LLVM JIT dominates (0.05-0.3 s a compile, by segment count).
Policies often produce the very same outlined module (always when there is
no hazard), so ``compile_once_per_module_text`` compiles each distinct
module text once per fusion and reuses its kernels, which are a pure
function of that text; the pipeline, the launch plan and the run stay per
policy. 500 fusions x 4 policies take about 2 minutes on 2 cores. The GPU
variant runs the first 60 of them on the device.

Hypothesis is derandomized (the same fusions every run) and does not shrink
(a shrink costs minutes at a second an example): a failure prints the fusion
as Python (the ``fusion:`` note) and its Recipe, with the policy and what
differs. Replay the Recipe with ``phases=[Phase.explicit, Phase.shrink]``
and ``@example(recipe=...)`` to minimise it, then add a regression test like
the ones at the end of this file.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass

import numpy as np
import pytest
from blocks import cut_into_blocks, keep_every_intermediate
from devices import assert_unchanged, cuda_available, to_device, to_host
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from reference import evaluate

import fuser_mlir.compiler as compiler_module
import fuser_mlir.lowering.gpu as gpu_lowering
from fuser_mlir import CompileError, DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.passes.resolve_alias_hazards import POLICIES

#: Policies allowed to refuse a fusion with CompileError (reject: any
#: hazard; reorder: an update that cannot move after its readers).
MAY_REFUSE = frozenset({"reject", "reorder"})

NUM_FUSIONS = 500
#: The fusions of the GPU variant (compiles for the GPU cost a second or so each).
GPU_FUSIONS = 60

UNARY = ("neg", "abs", "sin", "cos", "tanh", "sigmoid", "relu")
BINARY = ("add", "sub", "mul", "maximum", "minimum")
REDUCE = ("sum", "max", "min", "mean")
KINDS = ("unary", "binary", "binary", "binary", "scalar", "reduce", "reduce", "permute", "cast", "segment_set", "segment_set")
FLOATS = (DataType.Float, DataType.Double)

# Tolerances against the float64 reference: values that went through Float
# arithmetic get Float's, the others Double's; atol scales with the largest
# magnitude the program computes (cancellation in sums and differences).
TOL = {True: 1e-5, False: 1e-12}


# -- the drawn recipe (plain data; the builder interprets it) ----------------


@dataclass(frozen=True)
class Recipe:
    base: tuple[int, ...]  # concrete sizes of the full-rank shape
    inputs: tuple[tuple[DataType, tuple[int, ...]], ...]  # dtype, declared shape (-1/1), right-aligned with base
    steps: tuple[tuple[str, int, int, int], ...]  # kind, operand picks, variant
    actions: tuple[tuple, ...]  # ("alias", input, pick, variant, visible mode) | ("plain", pick)
    given: tuple[int, ...]  # per visible output: 0 none, 1 contiguous NaN buffer, 2 strided NaN buffer
    poison: bool  # pass outputs= at all
    seed: int


@st.composite
def recipes(draw) -> Recipe:
    rank = draw(st.sampled_from([0, 1, 2, 2, 2, 3, 3]))
    if draw(st.booleans()):
        base = (draw(st.integers(1, 6)),) * rank  # square: permutes apply
    else:
        base = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        dtype = draw(st.sampled_from(FLOATS))
        drop = draw(st.sampled_from([0, 0, 0, 1, 2]))
        sizes = base[min(drop, rank) :]
        shape = tuple(draw(st.sampled_from([-1, -1, -1, 1])) for _ in sizes)
        inputs.append((dtype, shape))
    steps = tuple(draw(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)), min_size=3, max_size=15)))
    actions = []
    for k in range(len(inputs)):
        if draw(st.integers(0, 9)) < 7:
            actions.append(("alias", k, draw(st.integers(0, 99)), draw(st.integers(0, 99)), draw(st.sampled_from([0, 0, 1, 2]))))
    actions += [("plain", pick) for pick in draw(st.lists(st.integers(0, 99), max_size=3))]
    actions = tuple(draw(st.permutations(actions)))
    given = tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2]), min_size=4, max_size=4)))
    return Recipe(base, tuple(inputs), steps, actions, given, draw(st.integers(0, 9)) < 4, draw(st.integers(0, 2**32 - 1)))


# -- building the fusion -----------------------------------------------------


@dataclass(eq=False)
class Node:
    """A tensor of the fusion with what the builder needs to know about it."""

    tensor: object
    name: str
    concrete: tuple[int, ...]  # its runtime shape
    float32: bool  # went through Float arithmetic

    @property
    def declared(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


def _aligned(node: Node, rank: int, d: int) -> tuple[int, int]:
    """(declared, concrete) size of right-aligned dim ``d`` of a rank-``rank`` result; (1, 1) if absent."""
    k = d - (rank - len(node.concrete))
    return (node.declared[k], node.concrete[k]) if k >= 0 else (1, 1)


def _broadcasts(a: Node, b: Node) -> bool:
    """Whether the frontend accepts ``a op b`` and the runtime sizes agree."""
    rank = max(len(a.concrete), len(b.concrete))
    for d in range(rank):
        (da, ca), (db, cb) = _aligned(a, rank, d), _aligned(b, rank, d)
        if da != 1 and db != 1 and ca != cb:
            return False
    return True


def _broadcast_shape(a: Node, b: Node) -> tuple[int, ...]:
    rank = max(len(a.concrete), len(b.concrete))
    return tuple(max(_aligned(a, rank, d)[1], _aligned(b, rank, d)[1]) for d in range(rank))


class Builder:
    """Interprets a Recipe inside a FusionDefinition, keeping a Python listing."""

    def __init__(self, fd: FusionDefinition, recipe: Recipe):
        self.fd, self.recipe = fd, recipe
        self.pool: list[Node] = []
        self.made: list[Node] = []  # every tensor the builder created (for the probe)
        self.lines: list[str] = []
        self.float32: dict[int, bool] = {}

    def _node(self, tensor, concrete, float32: bool, code: str) -> Node:
        node = Node(tensor, f"t{len(self.made) + len(self.recipe.inputs)}", tuple(concrete), float32 or tensor.dtype is DataType.Float)
        self.lines.append(f"{node.name} = {code}")
        self.made.append(node)
        self.float32[tensor.id] = node.float32
        return node

    def define_inputs(self) -> list[Node]:
        rank = len(self.recipe.base)
        nodes = []
        for k, (dtype, shape) in enumerate(self.recipe.inputs):
            concrete = tuple(1 if s == 1 else self.recipe.base[rank - len(shape) + d] for d, s in enumerate(shape))
            tensor = self.fd.define_tensor(shape=list(shape), dtype=dtype)
            node = Node(tensor, f"t{k}", concrete, dtype is DataType.Float)
            self.lines.append(f"t{k} = fd.define_tensor(shape={list(shape)}, dtype=DataType.{dtype.name})  # {concrete}")
            self.float32[tensor.id] = node.float32
            nodes.append(node)
        self.pool = list(nodes)
        return nodes

    # ops ---------------------------------------------------------------------

    def unary(self, a: Node, v: int) -> Node:
        name = UNARY[v % len(UNARY)]
        return self._node(getattr(self.fd.ops, name)(a.tensor), a.concrete, a.float32, f"fd.ops.{name}({a.name})")

    def binary(self, a: Node, b: Node, v: int) -> Node:
        name = BINARY[v % len(BINARY)]
        t = getattr(self.fd.ops, name)(a.tensor, b.tensor)
        return self._node(t, _broadcast_shape(a, b), a.float32 or b.float32, f"fd.ops.{name}({a.name}, {b.name})")

    def scalar(self, a: Node, v: int) -> Node:
        name, c = [("mul", 0.5), ("add", 1.5), ("sub", -0.75), ("mul", -1.25)][v % 4]
        return self._node(getattr(self.fd.ops, name)(a.tensor, c), a.concrete, a.float32, f"fd.ops.{name}({a.name}, {c})")

    def reduce(self, a: Node, dims: list[int], v: int, keepdim: bool) -> Node:
        name = REDUCE[v % len(REDUCE)]
        t = getattr(self.fd.ops, name)(a.tensor, dims=dims, keepdim=keepdim)
        concrete = tuple(1 if d in dims else c for d, c in enumerate(a.concrete) if keepdim or d not in dims)
        return self._node(t, concrete, a.float32, f"fd.ops.{name}({a.name}, dims={dims}, keepdim={keepdim})")

    def reduce_step(self, a: Node, mask: int, v: int) -> Node:
        rank = len(a.concrete)
        if rank == 0:
            return self.unary(a, v)
        dims = [d for d in range(rank) if mask >> d & 1] or list(range(rank))
        variant = v // len(REDUCE) % 4
        if variant == 3:  # everything, to a 0-d tensor that broadcasts against any rank
            t = getattr(self.fd.ops, REDUCE[v % len(REDUCE)])(a.tensor)
            return self._node(t, (), a.float32, f"fd.ops.{REDUCE[v % len(REDUCE)]}({a.name})")
        if variant == 2:  # keepdim=False, then broadcast back explicitly
            r = self.reduce(a, dims, v, keepdim=False)
            shape = [1 if d in dims else -1 for d in range(rank)]
            kept = [d for d in range(rank) if d not in dims]
            t = self.fd.ops.broadcast_in_dim(r.tensor, shape=shape, broadcast_dims=kept)
            concrete = tuple(1 if d in dims else c for d, c in enumerate(a.concrete))
            return self._node(t, concrete, r.float32, f"fd.ops.broadcast_in_dim({r.name}, shape={shape}, broadcast_dims={kept})")
        return self.reduce(a, dims, v, keepdim=variant != 1)

    def permute(self, a: Node, v: int) -> Node:
        rank = len(a.concrete)
        perms = [p for p in itertools.permutations(range(rank)) if list(p) != list(range(rank)) and all(a.concrete[p[d]] == a.concrete[d] for d in range(rank))]
        if not perms:
            return self.unary(a, v)
        p = list(perms[v % len(perms)])
        return self._node(self.fd.ops.permute(a.tensor, p), a.concrete, a.float32, f"fd.ops.permute({a.name}, {p})")

    def cast(self, a: Node, dtype: DataType) -> Node:
        return self._node(self.fd.ops.cast(a.tensor, dtype), a.concrete, a.float32, f"fd.ops.cast({a.name}, DataType.{dtype.name})")

    def segment_set(self, a: Node) -> Node:
        return self._node(self.fd.ops.segment_set(a.tensor), a.concrete, a.float32, f"fd.ops.segment_set({a.name})")

    def step(self, kind: str, i: int, j: int, v: int) -> Node:
        a, b = self.pool[i % len(self.pool)], self.pool[j % len(self.pool)]
        if kind == "binary" and _broadcasts(a, b):
            return self.binary(a, b, v)
        if kind == "scalar":
            return self.scalar(a, v)
        if kind == "reduce":
            return self.reduce_step(a, j, v)
        if kind == "permute":
            return self.permute(a, v)
        if kind == "cast":
            return self.cast(a, FLOATS[a.tensor.dtype is DataType.Float])
        if kind == "segment_set":
            return self.segment_set(a)
        return self.unary(a, v)

    # outputs -----------------------------------------------------------------

    def fit(self, node: Node, x: Node, v: int) -> Node | None:
        """``node`` reduced and broadcast into ``x``'s declared shape, or None."""
        rank = len(x.concrete)
        if len(node.concrete) > rank:
            node = self.reduce(node, list(range(len(node.concrete) - rank)), v, keepdim=False)
        offset = rank - len(node.concrete)
        extra = [d - offset for d in range(offset, rank) if x.declared[d] == 1 and node.declared[d - offset] != 1]
        if extra:
            node = self.reduce(node, extra, v // 7, keepdim=True)
        for d in range(rank):
            declared, concrete = _aligned(node, rank, d)
            if declared != 1 and concrete != x.concrete[d]:
                return None
        if node.declared != x.declared:  # lower rank, or size 1 where x has a symbolic dim
            partners = [n for n in self.pool if n.declared == x.declared and n.concrete == x.concrete]
            node = self.binary(node, partners[v // 3 % len(partners)], v // 11)
        if node.tensor.dtype is not x.tensor.dtype:
            node = self.cast(node, x.tensor.dtype)
        return node

    def alias(self, k: int, pick: int, v: int, visible: int) -> None:
        x = self.pool[k]
        target = self.fit(self.pool[pick % len(self.pool)], x, v)
        if target is None:  # misaligned after a reduction: take a value of x's shape
            target = self.fit(next(n for n in reversed(self.pool) if n.declared == x.declared and n.concrete == x.concrete), x, v)
        if visible == 2:
            self.fd.add_output(target.tensor)
            self.lines.append(f"fd.add_output({target.name})")
        self.fd.add_output(target.tensor, alias_input=x.tensor)
        self.lines.append(f"fd.add_output({target.name}, alias_input={x.name})")
        if visible == 1:
            self.fd.add_output(target.tensor)
            self.lines.append(f"fd.add_output({target.name})")

    def plain(self, pick: int) -> None:
        node = self.pool[pick % len(self.pool)]
        self.fd.add_output(node.tensor)
        self.lines.append(f"fd.add_output({node.name})")


def build(recipe: Recipe, probe: bool = False) -> tuple[FusionDefinition, Builder]:
    """The fusion of ``recipe``; ``probe=True`` also adds every tensor as a plain
    output, so that ``evaluate`` shows the magnitudes the program computes."""
    with FusionDefinition() as fd:
        builder = Builder(fd, recipe)
        builder.define_inputs()
        for kind, i, j, v in recipe.steps:
            builder.pool.append(builder.step(kind, i, j, v))
        for action in recipe.actions:
            if action[0] == "alias":
                builder.alias(*action[1:])
            else:
                builder.plain(action[1])
        if not fd.outputs:
            builder.plain(-1)
        if probe:
            for node in builder.pool[: len(recipe.inputs)] + builder.made:
                fd.add_output(node.tensor)
    return fd, builder


# -- running and checking ----------------------------------------------------


@contextlib.contextmanager
def compile_once_per_module_text():
    """Within the block, ``compile_cpu`` and ``compile_gpu`` compile each
    distinct outlined module once (see the module docstring); the kernels
    die with the block."""
    programs: dict[tuple, object] = {}

    def once(real):
        def compile_module(module, **kwargs):
            key = (real.__name__, str(module), repr(sorted(kwargs.items())))
            if key not in programs:
                programs[key] = real(module, **kwargs)
            return programs[key]

        return compile_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiler_module, "compile_cpu", once(compiler_module.compile_cpu))
        patch.setattr(gpu_lowering, "compile_gpu", once(gpu_lowering.compile_gpu))  # compile_fusion imports it when called
        yield


def random_inputs(fd: FusionDefinition, recipe: Recipe) -> list[np.ndarray]:
    rng = np.random.default_rng(recipe.seed)
    rank = len(recipe.base)
    arrays = []
    for spec in fd.inputs:
        shape = tuple(1 if s == 1 else recipe.base[rank - len(spec.shape) + d] for d, s in enumerate(spec.shape))
        arrays.append(rng.standard_normal(shape).astype(spec.dtype.numpy))
    return arrays


def given_outputs(
    fd: FusionDefinition, recipe: Recipe, inputs: list, expected: list[np.ndarray], device: str = "cpu", place=to_device,
):
    """``outputs=`` for one run: NaN buffers (contiguous or strided) put on
    ``device`` by ``place`` for some visible outputs; a visible aliased
    output gets its input's own buffer."""
    if not recipe.poison:
        return None
    visible = [(spec, ref) for spec, ref in zip(fd.outputs, expected) if spec.visible]
    buffers = []
    for i, (spec, ref) in enumerate(visible):
        choice = recipe.given[i % len(recipe.given)]
        if choice == 0:
            buffers.append(None)
        elif spec.alias_input is not None:
            buffers.append(inputs[spec.alias_input])
        elif choice == 2 and ref.ndim > 0:
            wide = place(np.full(ref.shape[:-1] + (2 * ref.shape[-1],), np.nan, spec.dtype.numpy), device)
            buffers.append(wide[(slice(None),) * (ref.ndim - 1) + (slice(None, None, 2),)])  # DeviceArrays take no Ellipsis
        else:
            buffers.append(place(np.full(ref.shape, np.nan, spec.dtype.numpy), device))
    return buffers


def assert_close(got: np.ndarray, want: np.ndarray, float32: bool, scale: float, what: str) -> None:
    tol = TOL[float32]
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, err_msg=what)


def run_and_check(
    fd, policy: str, inputs, expected, float32: list[bool], scale: float, recipe: Recipe, device: str = "cpu", executor=None,
    place=to_device,
) -> None:
    """Run under ``policy`` on copies of ``inputs`` put on ``device`` by
    ``place``, as are given outputs (with ``executor``, else a new
    FusionExecutorCache) and check every output and input."""
    args = [place(a.copy(), device) for a in inputs]
    outputs = given_outputs(fd, recipe, args, expected, device, place)
    try:
        outs = (executor or FusionExecutorCache(fd, hazard_policy=policy)).run(args, outputs=outputs)
    except CompileError as err:
        if policy not in MAY_REFUSE:
            raise AssertionError(f"policy={policy} must compile every fusion, but: {err}") from err
        for k, (arg, entry) in enumerate(zip(args, inputs)):
            np.testing.assert_array_equal(to_host(arg), entry, err_msg=f"policy={policy} refused but wrote input {k}")
        return
    visible = [pos for pos, spec in enumerate(fd.outputs) if spec.visible]
    assert len(outs) == len(visible), f"policy={policy}: {len(outs)} outputs returned, expected {len(visible)}"
    for i, (out, pos) in enumerate(zip(outs, visible)):
        spec = fd.outputs[pos]
        assert out.dtype == spec.dtype.numpy, f"policy={policy}: output {i} has dtype {out.dtype}, expected {spec.dtype.numpy}"
        assert_close(to_host(out), expected[pos], float32[pos], scale, f"policy={policy}: visible output {i}")
        if spec.alias_input is not None:
            assert out is args[spec.alias_input], f"policy={policy}: visible aliased output {i} is not input {spec.alias_input} itself"
        elif outputs is not None and outputs[i] is not None:
            assert out is outputs[i], f"policy={policy}: output {i} is not the given buffer"
    aliased = {}
    for pos, spec in enumerate(fd.outputs):
        if spec.alias_input is not None:
            aliased[spec.alias_input] = pos
    for k, (arg, entry) in enumerate(zip(args, inputs)):
        if k in aliased:
            assert_close(to_host(arg), expected[aliased[k]], float32[aliased[k]], scale, f"policy={policy}: aliased input {k}")
        else:
            assert_unchanged(arg, entry, f"policy={policy}: input {k} is not aliased but changed")


def check_every_policy(recipe: Recipe, device: str, runs: int = 1, large: bool = False, place=to_device) -> None:
    """The recipe's fusion under every policy on ``device``, against the SSA
    reference (``runs`` times on one executor a policy); ``place(array,
    device)`` puts each input and given output there (the search's mid
    offsets: sweep55/inplace_fuzz.py). ``large``: sizes
    past the suite's (bench/results/experiments/sweep55/inplace_fuzz.py),
    where a float32 sum of n elements that cancel to near 0 is off by about
    sqrt(n) roundings of its terms (NumPy's own float32 sum too): the
    absolute tolerance of a recipe with a reduction grows by sqrt of its
    element count."""
    fd, builder = build(recipe)
    note("fusion:\n" + "\n".join(builder.lines))
    inputs = random_inputs(fd, recipe)
    expected = evaluate(fd, inputs)
    probe, _ = build(recipe, probe=True)
    scale = max([1.0] + [float(np.max(np.abs(v))) for v in evaluate(probe, inputs) if v.size])
    if large and any(step[0] == "reduce" for step in recipe.steps):
        scale *= float(np.sqrt(np.prod(recipe.base)))
    float32 = [builder.float32.get(spec.tensor, True) for spec in fd.outputs]
    with compile_once_per_module_text():
        for policy in POLICIES:
            executor = FusionExecutorCache(fd, hazard_policy=policy)
            for _ in range(runs):
                run_and_check(fd, policy, inputs, expected, float32, scale, recipe, device, executor, place)


RANDOM_SETTINGS = dict(
    derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@settings(max_examples=NUM_FUSIONS, **RANDOM_SETTINGS)
@given(recipe=recipes())
def test_random_inplace_fusions_match_the_ssa_reference_under_every_policy(recipe):
    check_every_policy(recipe, "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA device: needs cuda-bindings and an NVIDIA GPU")
@settings(max_examples=GPU_FUSIONS, **RANDOM_SETTINGS)
@given(recipe=recipes())
def test_random_inplace_fusions_match_the_ssa_reference_on_the_gpu(recipe):
    """The first GPU_FUSIONS of the CPU test's fusions, on the GPU (DeviceArrays,
    strided given outputs included): each compiles there for every distinct
    outlined module (about a second), so fewer of them."""
    check_every_policy(recipe, "cuda")


#: The fusions of the variant whose CPU kernels run cut into blocks on three threads.
BLOCK_FUSIONS = 100


def test_random_inplace_fusions_cut_into_blocks_match_the_ssa_reference():
    """The first BLOCK_FUSIONS of the CPU test's fusions, with every call of a
    split kernel (fuser_mlir/lowering/cpu_split.py) on two rows or more cut
    into blocks that run side by side: an in-place update must stay an SSA
    update when blocks of one kernel run at once. Each runs twice on one
    executor a policy, the second run taking the first's intermediates,
    poisoned (blocks.keep_every_intermediate)."""
    totals = {"calls": 0, "cut": 0, "kept": 0}

    @settings(max_examples=BLOCK_FUSIONS, **RANDOM_SETTINGS)
    @given(recipe=recipes())
    def check(recipe):
        with cut_into_blocks() as counts, keep_every_intermediate() as kept:
            check_every_policy(recipe, "cpu", runs=2)
        totals["calls"] += counts["calls"]
        totals["cut"] += counts["cut"]
        totals["kept"] += kept["kept"]

    check()
    assert totals["cut"] >= totals["calls"] // 5 and totals["kept"] >= 50, totals


# -- regressions found by the random test ------------------------------------


def _run_or_refused(fd, policy: str, inputs, outputs=None):
    """The outputs of a run under ``policy``, or None where it may refuse and did."""
    try:
        return FusionExecutorCache(fd, hazard_policy=policy).run(inputs, outputs=outputs)
    except CompileError:
        if policy not in MAY_REFUSE:
            raise
        return None


@pytest.mark.parametrize("policy", POLICIES)
def test_two_inputs_swapped_in_place(policy, device):
    """a <- b, b <- a: each update reads the other's entry value, although
    both copies land in one trailing segment."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(b, alias_input=a)
        fd.add_output(a, alias_input=b)
    a = to_device(np.array([1.0, 2.0, 3.0], np.float32), device)
    b = to_device(np.array([4.0, 5.0, 6.0], np.float32), device)
    refused = _run_or_refused(fd, policy, [a, b]) is None
    np.testing.assert_array_equal(to_host(a), [1.0, 2.0, 3.0] if refused else [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(to_host(b), [4.0, 5.0, 6.0] if refused else [1.0, 2.0, 3.0])


@pytest.mark.parametrize("policy", POLICIES)
def test_visible_aliased_output_given_its_own_input_while_a_reduction_reads_it(policy, device):
    """Issue 6: "an aliased input passed also as a given output is the same
    buffer and fine". The sum still reads x's entry value, although the given
    buffer (x itself) is the destination of a store in the kernel that sums x."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = x + 1.0
        fd.add_output(y, alias_input=x)
        fd.add_output(y)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    x = to_device(np.zeros((2, 3), np.float32), device)
    outs = _run_or_refused(fd, policy, [x], outputs=[x, None])
    if outs is None:
        np.testing.assert_array_equal(to_host(x), np.zeros((2, 3)))
        return
    assert outs[0] is x
    np.testing.assert_array_equal(to_host(x), np.ones((2, 3)))
    np.testing.assert_array_equal(to_host(outs[1]), np.zeros(3))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("shape", [(), (300, 257)], ids=["0-d", "2-d"])
def test_a_value_computed_from_an_input_read_by_a_later_segment_sees_its_entry_value(policy, shape, device):
    """Found by sweep 55's in-place search (inplace_fuzz.py cpu 21): t = y * 0.5
    is read by the segment after a segment_set while the segment that
    computes it also stores t * t into y. Outlining stores t into a buffer
    of its own, another loop of that kernel, which on the CPU ran after the
    in-place write and so stored (t * t) * 0.5: every policy then gave the
    later segment's -t * x wrong. Now the analysis counts such a value as a
    hazard (reject refuses), and each other policy gives the entry values'
    results, every input checked."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), dtype=DataType.Double)
        y = fd.define_tensor(shape=[-1] * len(shape), dtype=DataType.Double)
        t = y * 0.5
        kept = fd.ops.segment_set(x)
        difference, square = kept - t, t * t  # before neg(t): the order the search drew
        fd.add_output(fd.ops.neg(t) * kept)
        fd.add_output(square, alias_input=y)
        fd.add_output(difference, alias_input=x)
    rng = np.random.default_rng(55)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    inputs = [to_device(a.copy(), device), to_device(b.copy(), device)]  # the CPU's are the arrays themselves
    outs = _run_or_refused(fd, policy, inputs)
    if outs is None:
        np.testing.assert_array_equal(to_host(inputs[0]), a)
        np.testing.assert_array_equal(to_host(inputs[1]), b)
        return
    np.testing.assert_allclose(to_host(outs[0]), -(b * 0.5) * a, rtol=1e-14)
    np.testing.assert_allclose(to_host(inputs[1]), (b * 0.5) ** 2, rtol=1e-14)
    np.testing.assert_allclose(to_host(inputs[0]), a - b * 0.5, rtol=1e-14)


FOLDS_TO_INPUT = {
    "neg(neg(x))": lambda fd, x: fd.ops.neg(fd.ops.neg(x)),
    "maximum(x, x)": lambda fd, x: fd.ops.maximum(x, x),
    "permute(permute(x))": lambda fd, x: fd.ops.permute(fd.ops.permute(x, [1, 0]), [1, 0]),
    "cast(cast(x, Double), Float)": lambda fd, x: fd.ops.cast(fd.ops.cast(x, DataType.Double), DataType.Float),
}


@pytest.mark.parametrize("aliased", [False, True], ids=["output", "update"])
@pytest.mark.parametrize("expr", FOLDS_TO_INPUT)
def test_a_value_that_folds_to_an_input_is_still_stored(expr, aliased, device):
    """Values equal to the input (some folded to it by the canonicalizer): the
    store of it (into a new output, or a no-op update of the input itself)
    compiles and writes the input's values; a policy may only refuse as it may."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(FOLDS_TO_INPUT[expr](fd, x), alias_input=x if aliased else None)
    x0 = np.arange(9, dtype=np.float32).reshape(3, 3)
    for policy in POLICIES:
        x = to_device(x0.copy(), device)
        outs = _run_or_refused(fd, policy, [x])  # reorder refuses permute(permute(x)) -> x: it reads x transposed
        np.testing.assert_array_equal(to_host(x), x0)
        if outs is None:
            continue
        assert len(outs) == (0 if aliased else 1)
        if outs:
            np.testing.assert_array_equal(to_host(outs[0]), x0)
