"""The launch plan as data: size formulas, JSON round trip, execution order,
and freeing intermediates after their last use."""

import numpy as np
import pytest

from fuser_mlir.runtime import plan as plan_module
from fuser_mlir.runtime.plan import Buffer, Intermediates, LaunchPlan, MemoryStats, Step, eval_size, execute, format_size


def test_size_formulas_evaluate_against_input_shapes():
    shapes = [(3, 5), (7,)]
    assert eval_size(["dim", 0, 1], shapes) == 5
    assert eval_size(["mul", ["dim", 0, 0], ["dim", 1, 0]], shapes) == 21
    assert eval_size(["div", ["mul", ["dim", 0, 0], ["dim", 0, 1]], ["const", 5]], shapes) == 3
    assert eval_size(["sub", ["add", ["const", 2], ["dim", 1, 0]], ["const", 1]], shapes) == 8
    assert format_size(["mul", ["dim", 0, 0], ["const", 4]]) == "(in0.d0 * 4)"


def _chain_plan() -> LaunchPlan:
    # in0[n] -> t1 = in0 + 1 -> t2 = t1 * 2 -> out = t2 - in0
    n = ["dim", 0, 0]
    buffers = [
        Buffer(0, "input", "float64", [n], index=0, last_use=2),
        Buffer(1, "intermediate", "float64", [n], last_use=1),
        Buffer(2, "intermediate", "float64", [n], last_use=2),
        Buffer(3, "output", "float64", [n], index=0, last_use=2),
    ]
    steps = [
        Step("inc", [["buffer", 0], ["buffer", 1]], writes=[1]),
        Step("dbl", [["buffer", 1], ["buffer", 2]], writes=[2]),
        Step("sub", [["buffer", 2], ["buffer", 0], ["buffer", 3]], writes=[3]),
    ]
    return LaunchPlan(num_inputs=1, buffers=buffers, steps=steps, outputs=[3])


def test_plan_round_trips_through_json():
    plan = _chain_plan()
    again = LaunchPlan.from_json(plan.to_json())
    assert again == plan
    assert "b1: intermediate" in again.describe()


def test_execute_runs_steps_in_order_and_frees_after_last_use():
    plan = _chain_plan()
    live_at_call = []
    stats = MemoryStats()

    def kernel(fn):
        def run(*args):
            live_at_call.append(stats.live_bytes)
            np.copyto(args[-1], fn(*args[:-1]))
        return run

    kernels = {
        "inc": kernel(lambda a: a + 1),
        "dbl": kernel(lambda a: a * 2),
        "sub": kernel(lambda a, b: a - b),
    }
    x = np.random.default_rng().random(1000)
    x_before = x.copy()
    (out,) = execute(plan, kernels, [x], {}, lambda shape, dtype: np.full(shape, np.nan, dtype), stats)
    np.testing.assert_array_equal(out, (x_before + 1) * 2 - x_before)
    np.testing.assert_array_equal(x, x_before)
    # step 2 runs after t1 was freed: input + t2 + out are live, never all four
    assert live_at_call == [2 * 8000, 3 * 8000, 3 * 8000]
    assert stats.allocations == 3
    assert stats.peak_live_bytes == 3 * 8000
    assert plan.peak_live_bytes([(1000,)]) == 3 * 8000


def test_eval_size_rejects_unknown_operators():
    with pytest.raises(KeyError):
        eval_size(["pow", ["const", 2], ["const", 3]], [])


def test_a_plan_runs_again_with_new_sizes_and_computed_shapes():
    # in0[m, n] -> flat[m * n] (a computed size) -> out[m * n]; the flat form
    # of the plan is built on the first call and must not keep its sizes
    m, n = ["dim", 0, 0], ["dim", 0, 1]
    buffers = [
        Buffer(0, "input", "float64", [m, n], index=0, last_use=0),
        Buffer(1, "intermediate", "float64", [["mul", m, n]], last_use=1),
        Buffer(2, "output", "float64", [["mul", m, n]], index=0, last_use=1),
    ]
    steps = [
        Step("flatten", [["buffer", 0], ["buffer", 1]], writes=[1]),
        Step("scale", [["buffer", 1], ["scalar", 1], ["buffer", 2]], writes=[2]),
    ]
    plan = LaunchPlan(num_inputs=2, buffers=buffers, steps=steps, outputs=[2])
    kernels = {
        "flatten": lambda x, out: np.copyto(out, x.reshape(-1)),
        "scale": lambda x, s, out: np.copyto(out, x * s),
    }
    stats = MemoryStats()
    for shape, scale in [((3, 4), 2.0), ((5, 1), -1.0), ((3, 4), 0.5)]:
        x = np.random.default_rng().random(shape)
        (out,) = execute(plan, kernels, [x, scale], {}, lambda shape, dtype: np.full(shape, np.nan, dtype), stats)
        np.testing.assert_array_equal(out, x.reshape(-1) * scale)
        assert stats.live_bytes == 0
    assert stats.allocations == 6
    assert stats.peak_live_bytes == 3 * 12 * 8  # input, flat and out of the (3, 4) calls
    with pytest.raises(ValueError, match="the launch plan takes 2 inputs, got 1"):
        execute(plan, kernels, [x], {}, np.empty, stats)


def _recording_kernels(seen: list) -> dict:
    """The chain plan's kernels, recording the intermediates each call writes into."""

    def kernel(fn, writes_intermediate):
        def run(*args):
            if writes_intermediate:
                seen.append(args[-1])
            np.copyto(args[-1], fn(*args[:-1]))
        return run

    return {"inc": kernel(lambda a: a + 1, True), "dbl": kernel(lambda a: a * 2, True), "sub": kernel(lambda a, b: a - b, False)}


def test_reused_intermediates_come_back_in_the_next_call_and_never_leave(monkeypatch):
    monkeypatch.setattr(plan_module, "KEEP_BYTES", 1)
    plan, seen, stats = _chain_plan(), [], MemoryStats()
    kernels = _recording_kernels(seen)
    results = []
    for n in (1000, 1000, 7):
        x = np.random.default_rng().random(n)
        (out,) = execute(plan, kernels, [x], {}, lambda shape, dtype: np.full(shape, np.nan, dtype), stats, reuse=True)
        results.append((out, (x + 1) * 2 - x))
    # t1 and t2 are live together: two buffers, which the second call takes
    # again; the call on 7 elements gets buffers of its own
    first, second, third = {id(a) for a in seen[0:2]}, {id(a) for a in seen[2:4]}, {id(a) for a in seen[4:6]}
    assert len(first) == 2 and second == first and not third & first
    for out, expected in results:  # outputs are never kept: the later calls left them alone
        np.testing.assert_array_equal(out, expected)
    assert all(out is not buffer for out, _ in results for buffer in seen)
    assert stats.allocations == 9 and stats.live_bytes == 0  # counted as allocations all the same
    assert plan._prepared.intermediates.nbytes == 2 * (1000 + 7) * 8


def test_kept_intermediates_are_bounded_and_small_ones_are_not_kept(monkeypatch):
    kept = Intermediates(limit=2)
    big = [kept.take(shape, "float32") for shape in [(1, 300_000), (300_000, 1), (300_000,)]]
    for array in big:
        kept.give(array)
    assert kept.nbytes == 2 * 1_200_000  # the least recently given kind went first
    assert kept.take((300_000,), "float32") is big[2] and kept.nbytes == 1_200_000
    small = kept.take((10,), "float64")
    kept.give(small)
    assert kept.take((10,), "float64") is not small  # below KEEP_BYTES: malloc's business
    assert kept.take((300_000, 1), "float32").shape == (300_000, 1) and kept.nbytes == 0


def test_all_plans_together_keep_at_most_keep_total_bytes(monkeypatch):
    import gc

    gc.collect()  # plans of earlier tests that are garbage already: gone now, not in the middle of the test
    monkeypatch.setattr(plan_module, "KEEP_TOTAL_BYTES", plan_module.kept_bytes() + 3_000_000)
    plans = [Intermediates(limit=4) for _ in range(3)]
    for kept in plans:
        kept.give(kept.take((1_200_000,), "uint8"))
    assert [kept.nbytes for kept in plans] == [1_200_000, 1_200_000, 0]  # the third would pass the bound
    plans.pop(0)
    gc.collect()  # a plan dropped takes its buffers along, and leaves room
    plans[1].give(plans[1].take((1_200_000,), "uint8"))
    assert plans[1].nbytes == 1_200_000
