"""In-place updates keep SSA semantics: every read of an aliased input sees
its entry value, whatever the segmentation; a copy is paid only on a hazard."""

import numpy as np
import pytest

from devices import to_device, to_host
from fuser_mlir import CompileError, DataType, FusionDefinition, FusionExecutorCache, InputError

RNG = np.random.default_rng(6)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def issue_2839(cut: bool):
    """nvFuser issue 2839: relu(T0) written into T0 while add(T0, T1) reads T0
    broadcast against a rank-3 T1."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        src = fd.ops.segment_set(t0) if cut else t0
        t2 = fd.ops.relu(t0)
        t3 = fd.ops.add(src, t1)
        fd.add_output(t2, t0)
        fd.add_output(t3)
    return fd


@pytest.mark.parametrize("cut", [False, True])
def test_nvfuser_issue_2839_reads_the_entry_value(cut, device):
    fd = issue_2839(cut)
    t0, t1 = rand(4, 5), rand(3, 4, 5)
    t0_entry, t1_entry = t0.copy(), t1.copy()
    t0, t1 = to_device(t0, device), to_device(t1, device)
    (t3,) = fd.execute([t0, t1])
    np.testing.assert_allclose(to_host(t3), t0_entry.astype(np.float64) + t1_entry, rtol=1e-6)
    np.testing.assert_array_equal(to_host(t0), np.maximum(t0_entry, 0))
    np.testing.assert_array_equal(to_host(t1), t1_entry)


def test_same_index_update_stays_one_kernel_without_a_copy():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + y, x)
    x, y = rand(8, 9), rand(8, 9)
    x0 = x.copy()
    compiled = fd.compile([x, y])
    assert compiled.num_segments == 1
    assert "fuser.set" not in compiled.ir("segmented")
    assert [b.kind for b in compiled.plan.buffers] == ["input", "input"]
    assert fd.execute([x, y]) == []
    np.testing.assert_allclose(x, x0.astype(np.float64) * 2 + y, rtol=1e-6)


def test_zero_dim_input_updated_in_place_and_broadcast_into_a_large_tensor(device):
    """The nvFuser issue 2664 family: a 0-d counter incremented in place while
    the fusion broadcasts its entry value."""
    with FusionDefinition() as fd:
        step = fd.define_tensor(shape=[], dtype=DataType.Float)
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(step + 1.0, step)
        fd.add_output(x * step)
    step, x = to_device(np.array(3.0, np.float32), device), rand(64, 32)
    (out,) = fd.execute([step, to_device(x, device)])
    np.testing.assert_allclose(to_host(out), x.astype(np.float64) * 3.0, rtol=1e-6)
    assert to_host(step) == 4.0


def test_reduction_result_aliased_to_an_input_that_the_reduction_reads(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(x - fd.ops.sum(x, dims=[1], keepdim=True), x)
        fd.add_output(fd.ops.max(x, dims=[1]))
    x = rand(10, 7)
    x0 = x.astype(np.float64)
    x = to_device(x, device)
    (m,) = fd.execute([x])
    np.testing.assert_allclose(to_host(x), x0 - x0.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_host(m), x0.max(1), rtol=1e-6)


def test_two_chained_updates_read_each_others_entry_values(device):
    """nvFuser test_issue2664_repro3-style: a <- a + b, b <- b * a, both reading entry values."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(a + b, a)
        fd.add_output(b * a, b)
        fd.add_output(fd.ops.sum(a * b, dims=[0]))
    a, b = rand(50), rand(50)
    a0, b0 = a.astype(np.float64), b.astype(np.float64)
    a, b = to_device(a, device), to_device(b, device)
    (dot,) = fd.execute([a, b])
    np.testing.assert_allclose(to_host(a), a0 + b0, rtol=1e-6)
    np.testing.assert_allclose(to_host(b), b0 * a0, rtol=1e-6)
    np.testing.assert_allclose(to_host(dot), (a0 * b0).sum(), rtol=1e-5)


def test_transposed_update_in_place(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(x, [1, 0]) * 2.0, x)
    x = rand(6, 6)
    x0 = x.copy()
    x = to_device(x, device)
    fd.execute([x])
    np.testing.assert_allclose(to_host(x), x0.T * 2.0, rtol=1e-6)


def test_visible_aliased_output_is_the_updated_input(device):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.ops.exp(x)
        fd.add_output(y, x)
        fd.add_output(y)
    x = rand(16)
    x0 = x.astype(np.float64)
    x = to_device(x, device)
    (out,) = fd.execute([x])
    assert out is x
    np.testing.assert_allclose(to_host(x), np.exp(x0), rtol=1e-6)


def test_reject_policy_names_the_write_and_the_read():
    fd = issue_2839(False)
    fec = FusionExecutorCache(fd, hazard_policy="reject")
    t0, t1 = rand(4, 5), rand(3, 4, 5)
    t0_entry = t0.copy()
    with pytest.raises(CompileError) as err:
        fec.run([t0, t1])
    message = str(err.value)
    assert message.startswith('hazard_policy="reject" refuses fusion')
    assert "'fuser.store' op writes input 0 in place, but 'fuser.broadcast_in_dim' op at" in message
    assert "the stored value is defined by 'fuser.relu' op" in message
    assert "test_inplace.py" in message  # the read's location in the user's code
    assert_a_refusal_in_the_callers_terms(err.value, 'pass hazard_policy="auto" (the default)')
    np.testing.assert_array_equal(t0, t0_entry)


def assert_a_refusal_in_the_callers_terms(err: CompileError, fix: str) -> None:
    """A policy's refusal is the caller's choice, not a failed compile: its
    message ends with the ``hazard_policy`` to pass instead, and names
    neither the pass's option nor a pipeline, and no reproducer is saved."""
    message = str(err)
    assert message.splitlines()[-1].startswith(fix), message
    assert "policy=" not in message.replace("hazard_policy=", ""), message
    assert "pipeline" not in message and err.reproducer is None and "reproducer" not in message, message


def test_hazard_report_says_what_was_found_and_how_it_was_resolved():
    t0, t1 = rand(4, 5), rand(3, 4, 5)
    compiled = issue_2839(False).compile([t0, t1])
    (entry,) = compiled.hazard_report
    assert entry.input == 0 and entry.resolution == "reorder"
    assert "intra-kernel: 'fuser.broadcast_in_dim' at" in entry.message and "test_inplace.py" in entry.message
    assert "resolved by moving the update into segment 1, after every reader" in entry.message
    # reordering costs no buffer: only the inputs and the visible output
    assert sorted(b.kind for b in compiled.plan.buffers) == ["input", "input", "output"]

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(x, [1, 0]) * 2.0, x)
    (entry,) = fd.compile([rand(3, 3)]).hazard_report
    assert entry.resolution == "copy"
    assert "copying it into input 0" in entry.message


@pytest.mark.parametrize("policy", ["auto", "reorder", "copy"])
def test_every_resolving_policy_gives_the_ssa_result(policy):
    fec = FusionExecutorCache(issue_2839(True), hazard_policy=policy)
    t0, t1 = rand(4, 5), rand(3, 4, 5)
    t0_entry = t0.copy()
    (t3,) = fec.run([t0, t1])
    np.testing.assert_allclose(t3, t0_entry.astype(np.float64) + t1, rtol=1e-6)
    np.testing.assert_array_equal(t0, np.maximum(t0_entry, 0))


def test_reorder_policy_refuses_an_update_that_cannot_move():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(x, [1, 0]), x)
    x = rand(4, 4)
    x0 = x.copy()
    with pytest.raises(CompileError, match="cannot be reordered after the reads of input 0: 'fuser.permute' at .* reads the input at other indices") as err:
        FusionExecutorCache(fd, hazard_policy="reorder").run([x])
    assert str(err.value).startswith('hazard_policy="reorder" refuses fusion')
    assert_a_refusal_in_the_callers_terms(err.value, 'pass hazard_policy="copy" or "auto" (the default)')
    np.testing.assert_array_equal(x, x0)


def test_a_reader_segment_that_depends_on_another_segment_while_the_write_lands_elsewhere():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.max(y, dims=[1], keepdim=True)  # segment 0
        fd.add_output(x * m)  # segment 1 reads x after segment 0
        fd.add_output(y + 1.0, x)  # the write into x lands in segment 0 unless moved
    x, y = rand(5, 6), rand(5, 6)
    x0, y0 = x.astype(np.float64), y.astype(np.float64)
    (out,) = fd.execute([x, y])
    np.testing.assert_allclose(out, x0 * y0.max(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(x, y0 + 1.0, rtol=1e-6)


def test_aliases_combined_with_preallocated_outputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[1], keepdim=True)
        fd.add_output(x - s, x)  # hidden in-place update
        fd.add_output(s)  # visible, given
        fd.add_output(x * 2.0)  # visible, allocated
    x = rand(6, 7)
    x0 = x.astype(np.float64)
    s_buf = np.full((6, 1), np.nan, np.float32)
    s_out, doubled = fd.execute([x], outputs=[s_buf, None])
    assert s_out is s_buf
    np.testing.assert_allclose(s_buf, x0.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(doubled, x0 * 2.0, rtol=1e-6)
    np.testing.assert_allclose(x, x0 - x0.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_an_aliased_input_given_as_its_own_visible_output_is_the_same_buffer():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.ops.exp(x)
        fd.add_output(y, x)
        fd.add_output(y)
    x = rand(10)
    x0 = x.astype(np.float64)
    (out,) = fd.execute([x], outputs=[x])
    assert out is x
    np.testing.assert_allclose(x, np.exp(x0), rtol=1e-6)


@pytest.mark.parametrize("view", ["transposed", "reversed", "shifted"])
def test_a_visible_in_place_output_given_a_view_of_its_input_is_an_input_error(device, view):
    """Only the input itself may be given for an output that updates it in
    place; another view of its memory was taken as a separate destination,
    and the copy into it clobbered the input that the fusion's other reads
    still needed (all three results came out wrong)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = x * 2.0
        fd.add_output(y, x)
        fd.add_output(y)
        fd.add_output(x + 1.0)
    big = rand(5, 4)
    x, x0 = big[:4], big[:4].copy()

    def buffer(memory):
        return {"transposed": memory[:4].T, "reversed": memory[3::-1], "shifted": memory[1:5]}[view]

    separate = buffer(to_device(np.full((5, 4), np.nan, np.float32), device))  # a separate buffer of that layout: fine, and remembered
    outs = fd.execute([to_device(x.copy(), device)], outputs=[separate, None])
    np.testing.assert_allclose(to_host(outs[0]), x0.astype(np.float64) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(to_host(outs[1]), x0.astype(np.float64) + 1.0, rtol=1e-6)
    memory = to_device(big.copy(), device)
    for _ in range(2):  # a miss of the layout, then with that signature remembered
        with pytest.raises(InputError, match=r"output 0 shares memory with input 0, which it updates in place, but is not that "
                                             r"input itself .*; pass the input itself or a separate buffer"):
            fd.execute([memory[:4]], outputs=[buffer(memory), None])
        np.testing.assert_array_equal(to_host(memory), big)  # nothing written
    _, plus_one = fd.execute([memory[:4]], outputs=[memory[:4], None])  # the input itself: fine
    np.testing.assert_allclose(to_host(memory[:4]), x0.astype(np.float64) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(to_host(plus_one), x0.astype(np.float64) + 1.0, rtol=1e-6)


def test_the_input_itself_with_another_stride_on_a_size_1_dim_is_the_input_itself(device):
    # x[:, None] (stride 0 there) given back as x.reshape(4, 1) (stride 8): the same elements in the same
    # layout, refused after the rule above until the stride of a dim of one element stopped counting.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1], dtype=DataType.Double)
        t = fd.ops.exp(x)
        fd.add_output(t, x)
        fd.add_output(t)
    v = RNG.standard_normal(4)
    v0 = v.copy()
    memory = to_device(v, device)
    column, same = memory[:, None], memory.reshape(4, 1)
    (out,) = fd.execute([column], outputs=[same])
    np.testing.assert_allclose(to_host(memory), np.exp(v0), rtol=1e-12)
    np.testing.assert_allclose(to_host(out), np.exp(v0)[:, None], rtol=1e-12)


def test_copies_report_every_hazard_before_they_erase_a_store(monkeypatch):
    """Two copies, the first store named by the second's hazards (it stores
    a value computed from the second's input): the second's report was built
    after copy_in_segment had erased the first store, reading freed memory
    (a segfault in CI once, in test_inplace_random.py). Both updates give
    the SSA result, and the reports name the first store."""
    import fuser_mlir.passes.resolve_alias_hazards as resolve

    erased = []
    copy_in_segment, report = resolve.copy_in_segment, resolve._report

    def recording_copy(store, segment):
        erased.append(store)
        return copy_in_segment(store, segment)

    def checked_report(hazards, fix):
        assert not any(h.read == e or h.store == e for h in hazards for e in erased), "a report describes an erased store"
        return report(hazards, fix)

    monkeypatch.setattr(resolve, "copy_in_segment", recording_copy)
    monkeypatch.setattr(resolve, "_report", checked_report)
    monkeypatch.setenv("FUSER_CACHE", "0")
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(y, [1, 0]) * 2.0 + x, y)
        fd.add_output(x * 3.0, x)
    fec = FusionExecutorCache(fd, hazard_policy="copy")
    x, y = rand(3, 3), rand(3, 3)
    x_entry, y_entry = x.copy(), y.copy()
    fec.run([x, y])
    assert len(erased) == 2
    np.testing.assert_allclose(y, y_entry.T * 2 + x_entry, rtol=1e-6)
    np.testing.assert_allclose(x, x_entry * 3, rtol=1e-6)
    (compiled, _, _) = fec.compiled_for([x, y], None)
    second = next(entry.message for entry in compiled.hazard_report if entry.message.startswith("input 0"))
    assert "'fuser.store' at" in second and "stores another value computed from it" in second
