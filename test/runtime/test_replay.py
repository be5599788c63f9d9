"""Replays of CUDA cache hits (fuser_mlir/runtime/replay.py), checked
without a GPU: fusions compiled for CUDA (PTX needs no GPU), their segments
built with no module loaded, the driver replaced by recorders. The general
path (plan.execute + CudaSegment) is the reference: given buffers at the same
addresses, a replay must make exactly its launches, slot for slot."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.errors import CudaError, DeviceError, InputError
from fuser_mlir.executor import layout_of, tensor_signature
from fuser_mlir.runtime import cuda, replay
from fuser_mlir.runtime.arrays import DeviceArray, contiguous_strides
from fuser_mlir.runtime.cpu import ArgKind, numpy_dtype
from fuser_mlir.runtime.launch import KernelLaunch, SegmentProgram, Temp
from fuser_mlir.runtime.plan import Buffer, LaunchPlan, MemoryStats, Step, execute, prepare

# -- fakes ---------------------------------------------------------------------------------


def device_array(ptr: int, shape, dtype="float32", strides=None) -> DeviceArray:
    dtype = numpy_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
    return DeviceArray(ptr, shape, strides or contiguous_strides(shape, dtype.itemsize), dtype)


def read_slots(params: int, count: int) -> list[int]:
    """The kernel parameters a launch passes: ``params`` is a ``void**``, one 8-byte slot each."""
    pointers = (ctypes.c_void_p * max(1, count)).from_address(params)
    return [ctypes.c_int64.from_address(p).value for p in pointers[:count]]


class Recorder:
    """Stands in for cuLaunchKernel: records each launch with its parameters as they are at the call."""

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.calls: list[tuple] = []

    def __call__(self, handle, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        handle = handle.value
        self.calls.append((handle, (gx, gy, gz), (bx, by, bz), shared, stream.value or 0, read_slots(params.value, self.counts[handle])))
        return 0


def stub_segments(programs: dict, arg_kinds: dict, recorder: Recorder) -> dict:
    """CudaSegments with no module (an H200's 132 SMs), a distinct fake function handle per launch, launches recorded."""
    kernels = {}
    for k, (name, program) in enumerate(programs.items()):
        segment = cuda.CudaSegment(name, program, None, arg_kinds[name], 0, sms=132)
        segment.raw = recorder
        for j, launch in enumerate(segment.launches):
            handle = 0x1000 * (k + 1) + j
            launch.handle, launch.handle_arg = handle, ctypes.c_void_p(handle)
            recorder.counts[handle] = launch.count
        kernels[name] = segment
    return kernels


class Addresses:
    """Fake device addresses: ``allocate(shape, dtype)`` hands out DeviceArrays
    at the addresses of a queue, in turn (starting over when it is used up)."""

    def __init__(self, queue):
        self.queue = list(queue)

    def __call__(self, shape, dtype):
        address = self.queue.pop(0)
        self.queue.append(address)
        return device_array(address, shape, dtype)


def compiled_for_cuda(fd, args, given_mask=None, given=()):
    layouts = {
        "input": [None if isinstance(a, (int, float)) else layout_of(tensor_signature(a)) for a in args],
        "given": {i: layout_of(tensor_signature(b)) for i, b in given},
    }
    return compile_fusion(fd, given_outputs=given_mask, device="cuda:0", layouts=layouts)


def pointer_positions(args, given: dict):
    """input_at / given_at and the pointers list, as the hit cache builds them."""
    tensors = [i for i, a in enumerate(args) if not isinstance(a, (int, float, bool))]
    input_at = {i: k for k, i in enumerate(tensors)}
    given_at = {index: len(tensors) + k for k, index in enumerate(sorted(given))}
    pointers = [args[i].ptr for i in tensors] + [given[index].ptr for index in sorted(given)]
    return input_at, given_at, pointers


def run_general(plan, kernels, args, given, trace, output_addresses, arena):
    """The general path, with every buffer it allocates placed where the replay puts it."""
    prepared = prepare(plan)
    offsets = iter(trace.arena_offsets)
    outputs = iter(output_addresses)
    plan_queue, temp_queue = [], []
    for step in prepared.steps:
        for slot, _, _ in step.allocations:
            kind = plan.buffers[slot - plan.num_inputs].kind
            plan_queue.append(next(outputs) if kind == "output" else arena + next(offsets))
        temp_queue += [arena + next(offsets) for _ in kernels[step.kernel].temps]
    stats = MemoryStats()
    with cuda.use_stream(0, Addresses(temp_queue)):
        results = execute(plan, kernels, args, given, Addresses(plan_queue), stats)
    return results, stats


def check_against_general(fd, args, given=None, given_mask=None, launches=True):
    """Trace and replay ``fd`` for ``args``/``given``; the replay's launches,
    outputs and memory statistics must be the general path's."""
    given = given or {}
    compiled = compiled_for_cuda(fd, args, given_mask, given.items())
    recorder = Recorder()
    kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, recorder)
    trace = replay.trace(compiled.plan, kernels, args, given)
    output_addresses = [0x7000_0000 + 0x100_0000 * k for k in range(len(trace.outputs))]
    arena = 0x9000_0000
    input_at, given_at, pointers = pointer_positions(args, given)
    allocate = Addresses(output_addresses + ([arena] if trace.arena_bytes else []))
    run = replay.plain_replay(trace, device=0, torch_outputs=False, input_at=input_at, given_at=given_at, allocate=allocate, ensure=lambda d: None)
    memory = MemoryStats()
    results = run(args, given, pointers, memory)
    replayed = recorder.calls
    recorder.calls = []
    expected, stats = run_general(compiled.plan, kernels, args, given, trace, output_addresses, arena)
    assert replayed == recorder.calls
    assert bool(replayed) == launches
    assert [r.ptr for r in results] == [e.ptr for e in expected]
    assert [r.shape for r in results] == [e.shape for e in expected]
    assert memory == stats
    return compiled, trace, run


# -- the fusions ---------------------------------------------------------------------------


def chain(segments: int):
    """x, y -> segments kernels cut with segment_set: (((x + y) * 1.5 - y) ...) * y."""
    with FusionDefinition(name=f"chain{segments}") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t = x + y
        for k in range(segments - 2):
            t = fd.ops.segment_set(t)
            t = fd.ops.exp(t * 0.5) if k % 2 == 0 else t - y
        t = fd.ops.segment_set(t)
        fd.add_output(t * y)
    return fd


def inputs_2d(rows=33, cols=70, base=0x1000_0000):
    return [device_array(base, (rows, cols)), device_array(base + 0x100_0000, (rows, cols))]


# -- traces against the general path -----------------------------------------------------------


def test_a_ten_segment_chain_replays_the_general_paths_launches_slot_for_slot():
    fd = chain(10)
    compiled, trace, _ = check_against_general(fd, inputs_2d())
    assert compiled.num_segments == 10
    assert len(trace.launches) >= 10
    # the nine intermediates of a chain live two steps each: two of them at a time
    size = -(-33 * 70 * 4 // replay.ALIGNMENT) * replay.ALIGNMENT
    assert trace.arena_bytes == 2 * size
    assert trace.allocations == 10 and trace.outputs[0][1] == (33, 70)


class TorchLikeBuffer:
    """What a torch allocation gives a replay: a data pointer, and how it was made."""

    def __init__(self, how, shape, strides, dtype, device=None):
        self.how, self.shape, self.strides, self.dtype, self.device = how, shape, strides, dtype, device

    def data_ptr(self) -> int:
        return 0x7000_0000


def test_torch_outputs_come_from_the_fast_allocator_on_the_current_device_else_from_empty_strided():
    fd = chain(3)
    args = inputs_2d()
    compiled = compiled_for_cuda(fd, args)
    kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, Recorder())
    trace = replay.trace(compiled.plan, kernels, args, {})
    input_at, given_at, pointers = pointer_positions(args, {})
    made = []

    def slow(shape, strides, dtype, device):
        made.append(TorchLikeBuffer("empty_strided", shape, strides, dtype, device))
        return made[-1]

    def fast(shape, strides, dtype):
        made.append(TorchLikeBuffer("fast", shape, strides, dtype))
        return made[-1]

    where = type("Device", (), {"index": 1})()
    current = [1]
    allocate = type("Allocate", (), {})()
    allocate.torch_empty_strided = (slow, where, lambda dtype: f"torch.{dtype}", (fast, lambda: current[0]))
    run = replay.plain_replay(
        trace, device=1, torch_outputs=True, input_at=input_at, given_at=given_at, allocate=allocate,
        current_stream=lambda device: 0, ensure=lambda device: None,
    )
    for device, how in [(1, "fast"), (0, "empty_strided")]:  # the fusion's device current, then another
        current[0] = device
        made.clear()
        (out,) = run(args, {}, pointers, MemoryStats())
        assert out is made[0] and [b.how for b in made] == [how] * len(made), device
        assert (out.shape, out.strides, out.dtype) == ((33, 70), (70, 1), "torch.float32")
        assert out.device in (None, where)
    allocate.torch_empty_strided = (slow, where, lambda dtype: f"torch.{dtype}", None)  # a torch without it
    run = replay.plain_replay(
        trace, device=1, torch_outputs=True, input_at=input_at, given_at=given_at, allocate=allocate,
        current_stream=lambda device: 0, ensure=lambda device: None,
    )
    current[0] = 1
    made.clear()
    run(args, {}, pointers, MemoryStats())
    assert [b.how for b in made] == ["empty_strided"] * len(made)


def test_given_outputs_strided_inputs_and_every_layout_replay_like_the_general_path():
    fd = chain(3)
    wide = device_array(0x2000_0000, (33, 140))
    strided = wide[:, ::2]  # strided input: its own strides in the descriptors
    out = device_array(0x3000_0000, (33, 70))
    check_against_general(fd, [strided, inputs_2d()[1]], {0: out}, given_mask=(True,))
    transposed = device_array(0x4000_0000, (70, 33)).T
    check_against_general(fd, [transposed, inputs_2d()[1]], {0: out}, given_mask=(True,))


def test_empty_tensors_launch_nothing_and_still_get_their_outputs():
    _, trace, _ = check_against_general(chain(3), inputs_2d(rows=0), launches=False)
    assert trace.launches == [] and trace.outputs[0][1] == (0, 70)


def test_temporaries_and_launch_variants_replay_like_the_general_path():
    with FusionDefinition(name="colsum") as fd:  # split reduction: a temporary of partial sums
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
    _, trace, _ = check_against_general(fd, [device_array(0x1000_0000, (5000, 300))])
    assert trace.arena_bytes > 0 and len(trace.launches) == 2
    with FusionDefinition(name="softmax") as fd:  # two variants, picked by the row length
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    chosen = []
    for cols in (100, 5000):
        _, trace, _ = check_against_general(fd, [device_array(0x1000_0000, (64, cols))])
        (launch,) = trace.launches
        chosen.append((launch.kernel, launch.block))
    assert chosen[0] == ("softmax_seg0_k0", (32, 1, 1))  # a warp per row, a block of one (WARP_BLOCK_THREADS)
    assert chosen[1][0] != chosen[0][0] and chosen[1][1] == (512, 1, 1)  # a 512-thread block per row


def test_scalar_inputs_are_written_per_call():
    with FusionDefinition(name="scaled") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        t = fd.ops.segment_set(x * s)
        fd.add_output(t + 1.0)
        fd.add_output(t)
    args = [device_array(0x1000_0000, (1000,)), 2.5]
    compiled, trace, run = check_against_general(fd, args)
    (slot, index, fmt), = trace.launches[0].scalar_slots
    assert (index, fmt) == (1, "f")
    memory = MemoryStats()
    run([args[0], -7.25], {}, [args[0].ptr], memory)
    assert trace.launches[0].slots[slot] == cuda._scalar_bits("f", -7.25)


def handmade_plan(program: SegmentProgram, kinds: list[ArgKind]):
    """A one-step plan around ``program``: input 0 a (rows, 3) float32
    tensor, inputs 1-3 float32/float64/bfloat16 scalars, a new (rows,) output."""
    buffers = [
        Buffer(0, "input", "float32", [["dim", 0, 0], ["const", 3]], index=0, last_use=0),
        Buffer(1, "output", "float32", [["dim", 0, 0]], index=0, last_use=0),
    ]
    step = Step("seg", [["buffer", 0], ["scalar", 1], ["scalar", 2], ["scalar", 3], ["buffer", 1]], writes=[1])
    return LaunchPlan(num_inputs=4, buffers=buffers, steps=[step], outputs=[1])


def test_views_temporaries_and_scalars_of_every_format_fill_slots_as_pack_does():
    program = SegmentProgram(
        temps=[Temp("f32", [["argdim", 0, 0], ["const", 4]]), Temp("i8", [["const", 6]])],
        launches=[
            KernelLaunch("k0", [["argdim", 0, 0], ["const", 1], ["const", 1]], [128, 1, 1], [["arg", 0], ["arg", 1], ["temp", 0], ["arg", 2], ["arg", 4]]),
            KernelLaunch("k1", [["const", 2]] * 3, [32, 2, 1], [["view", 1, [["const", 2], ["const", 3]]], ["arg", 3], ["flat", ["temp", 0], 4]]),
            KernelLaunch("never", [["const", 1]] * 3, [32, 1, 1], [["arg", 0]], when=["gt", ["argdim", 0, 0], ["const", 1000]]),
        ],
    )
    kinds = [ArgKind.tensor("float32", 2), ArgKind.scalar("float32"), ArgKind.scalar("float64"), ArgKind.scalar("bfloat16"), ArgKind.tensor("float32", 1)]
    plan = handmade_plan(program, kinds)
    recorder = Recorder()
    kernels = stub_segments({"seg": program}, {"seg": kinds}, recorder)
    x = device_array(0x1000_0000, (5, 3), strides=(4, 20))  # a transposed layout
    args = [x, 1.5, -2.25, 3.0]
    trace = replay.trace(plan, kernels, args, {})
    assert [launch.kernel for launch in trace.launches] == ["k0", "k1"]  # "never" does not run for 5 rows
    assert trace.arena_offsets == [0, 256] and trace.arena_bytes == 512
    run = replay.plain_replay(
        trace, device=0, torch_outputs=False, input_at={0: 0}, given_at={}, allocate=Addresses([0x7000_0000, 0x9000_0000]), ensure=lambda d: None
    )
    for values in ([x, 1.5, -2.25, 3.0], [x, -0.5, 1e300, -1.0]):
        recorder.calls = []
        (out,) = run(values, {}, [x.ptr], MemoryStats())
        replayed = recorder.calls
        recorder.calls = []
        segment = kernels["seg"]
        temps = [device_array(0x9000_0000, (5, 4)), device_array(0x9000_0100, (6,), np.int8)]
        segment.launches[0].pack([*values, out], temps)
        segment.launches[1].pack([*values, out], temps)
        expected = [list(launch.slots[: launch.count]) for launch in segment.launches[:2]]
        assert [call[5] for call in replayed] == expected
        assert [call[1] for call in replayed] == [(5, 1, 1), (2, 2, 2)]


def test_a_formula_that_reads_a_scalar_is_not_replayed():
    program = SegmentProgram(launches=[KernelLaunch("k", [["arg", 1], ["const", 1], ["const", 1]], [32, 1, 1], [["arg", 0], ["arg", 4]])])
    kinds = [ArgKind.tensor("float32", 2), ArgKind.scalar("float32"), ArgKind.scalar("float64"), ArgKind.scalar("bfloat16"), ArgKind.tensor("float32", 1)]
    kernels = stub_segments({"seg": program}, {"seg": kinds}, Recorder())
    with pytest.raises(replay.NotReplayable, match="a launch formula of segment seg reads a scalar input's value"):
        replay.trace(handmade_plan(program, kinds), kernels, [device_array(0x1000, (5, 3)), 1.0, 2.0, 3.0], {})


def test_arena_buffers_alive_at_one_step_never_share_bytes():
    rng = np.random.default_rng(3)
    for _ in range(200):
        blocks = []
        for _ in range(rng.integers(1, 12)):
            first = int(rng.integers(0, 8))
            blocks.append([int(rng.integers(0, 5000)), first, first + int(rng.integers(0, 4))])
        offsets, total = replay.place(blocks)
        for (a, (size_a, first_a, last_a)), (b, (size_b, first_b, last_b)) in [
            (p, q) for i, p in enumerate(zip(offsets, blocks)) for q in list(zip(offsets, blocks))[i + 1 :]
        ]:
            assert a % replay.ALIGNMENT == 0 and b % replay.ALIGNMENT == 0
            if first_a <= last_b and first_b <= last_a:
                assert a + max(size_a, 1) <= b or b + max(size_b, 1) <= a
        assert total >= max(o + s for o, (s, _, _) in zip(offsets, blocks))


# -- the executor's hit path with the driver stubbed ---------------------------------------------


@pytest.fixture
def stubbed_hits(monkeypatch):
    """CUDA hits of stubbed segments: ``(recorder, remember)``; ``remember``
    compiles for CUDA and records a hit entry as a full call would."""
    monkeypatch.setattr(cuda, "ensure_context", lambda device=0: None)
    monkeypatch.setattr(cuda, "_allocator", lambda device, torch_outputs, raw: Addresses([0xA000_0000]))
    recorder = Recorder()

    def remember(fec, fd, inputs, outputs=None):
        given = {i: b for i, b in enumerate(outputs or ()) if b is not None}
        mask = tuple(b is not None for b in outputs) if outputs is not None else None
        compiled = compiled_for_cuda(fd, inputs, mask, given.items())
        compiled.kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, recorder)
        fec._hits.remember(inputs, outputs, compiled, given)
        return compiled

    return recorder, remember


def test_a_hit_runs_the_generated_replay_on_the_callers_pointers(stubbed_hits):
    recorder, remember = stubbed_hits
    fd = chain(3)
    fec = FusionExecutorCache(fd)
    x, y = inputs_2d()
    out = device_array(0x3000_0000, (33, 70))
    compiled = remember(fec, fd, [x, y], [out])
    assert fec.run([x, y], [out])[0] is out
    (entry,) = fec._hits._entries.values()
    assert entry.not_replayed == "" and entry.replay.trace is not None
    assert "def replay(args, given, pointers, memory):" in entry.replay.source
    first = recorder.calls
    recorder.calls = []
    x2, out2 = device_array(0x5000_0000, (33, 70)), device_array(0x6000_0000, (33, 70))
    assert fec.run([x2, y], [out2])[0] is out2  # same raw signature, other pointers
    second = recorder.calls
    assert len(first) == len(second) == 3
    # the pointers of the new call and nothing else changed
    swap = {x.ptr: x2.ptr, out.ptr: out2.ptr}
    assert [(h, g, b, s, sh, [swap.get(v, v) for v in slots]) for h, g, b, s, sh, slots in first] == second
    assert fec.stats.hits == 2
    # an output that overlaps an input is still refused on a hit (full path: the usual error)
    assert fec._hits.lookup([x, y], [x]) is None
    # a full call with the same signature and layout keeps the entry, and its replay
    runner = entry.replay
    fec._hits.remember([x2, y], [out2], compiled, {0: out2})
    assert fec._hits._entries == {fec._hits.signature([x, y], [out]): entry} and entry.replay is runner


def scaled_in_place():
    """x <- x * s + y * k in place (visible: the visible output may be given x
    itself or a separate buffer), with a float and an int scalar."""
    with FusionDefinition(name="scaled_in_place") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        k = fd.define_scalar(dtype=DataType.Int)
        t = x * s + y * k
        fd.add_output(t, x)
        fd.add_output(t)
    return fd


def guard_cases():
    """(fusion, inputs, outputs remembered, variants): each variant is
    ``(label, inputs, outputs, fast)``, ``fast`` True where the guarded
    replay must take the call itself (else it may leave it to the table)."""
    x, y = inputs_2d()
    out = device_array(0x3000_0000, (33, 70))
    far = device_array(0x5800_0000, (33, 70))
    moved = [device_array(0x5000_0000, (33, 70)), device_array(0x5400_0000, (33, 70))]
    column = device_array(0x6000_0000, (33, 70), strides=(4, 33 * 4))
    chain_variants = [
        ("same arrays", [x, y], [out], True),
        ("other addresses", moved, [far], True),
        ("a tuple", (x, y), (out,), True),
        ("other shape", [device_array(x.ptr, (33, 71)), device_array(y.ptr, (33, 71))], [device_array(out.ptr, (33, 71))], False),
        ("other strides", [column, y], [out], False),
        ("other dtype", [x, y], [device_array(out.ptr, (33, 70), "float64")], False),
        ("other alignment class", [device_array(x.ptr + 4, (33, 70)), y], [out], False),
        ("other device", [x, DeviceArray(y.ptr, (33, 70), y.strides, y.dtype, device=1)], [out], False),
        ("read-only output", [x, y], [DeviceArray(out.ptr, (33, 70), out.strides, out.dtype, readonly=True)], False),
        ("output is an input", [x, y], [x], False),
        ("output overlaps an input's end", [x, y], [device_array(y.ptr + 9152, (33, 70))], False),  # 9240 bytes each
        ("output ends 8 bytes below an input", [x, y], [device_array(y.ptr - 9248, (33, 70))], True),
        ("no outputs", [x, y], None, False),
        ("output None", [x, y], [None], False),
        ("one input", [x], [out], False),
        ("a NumPy input", [np.ones((33, 70), np.float32), y], [out], False),
    ]
    a, b = device_array(0x1000_0000, (8, 16)), device_array(0x2000_0000, (8, 16))
    separate = device_array(0x3000_0000, (8, 16))
    in_place = [
        ("same arrays", [a, b, 2.5, 3], [separate], True),
        ("an int and a bool for the scalars", [a, b, 2, True], [separate], True),
        ("a NumPy scalar", [a, b, np.float32(2.5), 3], [separate], False),
        ("a float for the int scalar", [a, b, 2.5, 3.0], [separate], False),
        ("a string scalar", [a, b, "2.5", 3], [separate], False),
        ("given its in-place input itself", [a, b, 2.5, 3], [a], False),
        ("another array over its in-place input", [a, b, 2.5, 3], [device_array(a.ptr, (8, 16))], False),
        ("a separate buffer elsewhere", [a, b, 2.5, 3], [device_array(0x4000_0000, (8, 16))], True),
        ("a separate buffer over part of its in-place input", [a, b, 2.5, 3], [device_array(a.ptr + 64, (8, 16))], False),
        ("an int past every float for the float scalar", [a, b, 10**400, 3], [separate], False),
        ("inf for the float scalar", [a, b, float("inf"), 3], [separate], False),
        ("overlapping the other input", [a, b, 2.5, 3], [device_array(b.ptr + 256, (8, 16))], False),
        ("the other input over the in-place one", [a, device_array(a.ptr + 256, (8, 16)), 2.5, 3], [separate], False),
        ("the other input right after the in-place one", [a, device_array(a.ptr + 512, (8, 16)), 2.5, 3], [separate], True),
        ("the largest Int scalar", [a, b, 2.5, 2**63 - 1], [separate], True),
        ("an Int scalar past its range", [a, b, 2.5, 2**63], [separate], False),
    ]
    rows = interleaved_rows(0x1000_0000)
    out_rows = interleaved_rows(0x3000_0000)
    interleaved = [
        ("same arrays", rows, out_rows, True),
        ("the same interleaving elsewhere", interleaved_rows(0x5000_0000), interleaved_rows(0x6000_0000), True),
        ("apart altogether", [rows[0], interleaved_rows(0x5000_0000)[1]], [out_rows[0], interleaved_rows(0x6000_0000)[1]], True),
        ("the views the other way round", rows[::-1], out_rows[::-1], False),  # apart too, at differences not yet passed
        ("inputs sharing rows", [rows[0], interleaved_rows(0x1000_0000 - 64)[1]], out_rows, False),
        ("outputs sharing rows", rows, [out_rows[0], interleaved_rows(0x3000_0000 - 64)[1]], False),
        ("an output over the input read", rows, [out_rows[0], rows[1]], False),
        ("an output over the input updated in place", rows, [rows[0], out_rows[1]], False),
    ]
    return [
        (chain(3), [x, y], [out], chain_variants),
        (scaled_in_place(), [a, b, 2.5, 3], [separate], in_place),
        (interleaved_in_place(), rows, out_rows, interleaved),
    ]


def interleaved_in_place():
    """a <- a + b in place, and cos(a), sin(b): given the even and odd rows of one block (interleaved_rows)."""
    with FusionDefinition(name="interleaved") as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.cos(a))
        fd.add_output(fd.ops.sin(b))
        fd.add_output(a + b, a)
    return fd


def interleaved_rows(base: int) -> list:
    """The even and odd rows of a 16 x 16 float32 block at ``base``: byte
    ranges that meet, no element shared, 64 bytes apart (one alignment class)."""
    return [device_array(base + start, (8, 16), strides=(128, 4)) for start in (0, 64)]


@pytest.mark.parametrize("case", [0, 1, 2], ids=["chain", "scalars and in place", "interleaved"])
def test_the_guarded_replay_takes_exactly_the_calls_the_table_gives_its_entry(stubbed_hits, case):
    """HitEntry.fast (the replay with the entry's checks built in) must never
    take a call that lookup() would not give its entry, and must launch what
    the table's replay launches for the calls it takes."""
    recorder, remember = stubbed_hits
    fd, inputs, outputs, variants = guard_cases()[case]
    fec = FusionExecutorCache(fd)
    remember(fec, fd, inputs, outputs)
    fec.run(inputs, outputs)  # the first hit makes the replays
    (entry,) = fec._hits._entries.values()
    assert fec._hits.last is entry.fast and "def replay(inputs, outputs, memory):" in entry.fast.source
    for label, args, given, fast in variants:
        recorder.calls = []
        memory = MemoryStats()
        results = entry.fast(args, given, memory)
        guarded = recorder.calls
        try:
            hit = fec._hits.lookup(args, given)
        except InputError:  # the table's answer to a string scalar: the full path's message
            hit = None
        found = hit is not None and hit[0] is entry
        assert (results is not None) == fast, label
        assert found or results is None, f"{label}: the guard took a call the table does not give its entry"
        if results is None:
            assert guarded == [], label
            continue
        recorder.calls = []
        table_memory = MemoryStats()
        _, table_args, table_given, pointers = hit
        expected = entry.replay(table_args, table_given, pointers, table_memory)
        assert guarded == recorder.calls and guarded, label
        assert all(r is e for r, e in zip(results, expected)) and len(results) == len(expected), label
        assert memory == table_memory, label


def test_the_executor_tries_the_entry_hit_last_then_the_table(stubbed_hits):
    recorder, remember = stubbed_hits
    fd = chain(3)
    fec = FusionExecutorCache(fd)
    x, y = inputs_2d()
    wide = inputs_2d(33, 140, base=0x4000_0000)
    out, wide_out = device_array(0x3000_0000, (33, 70)), device_array(0x7000_0000, (33, 140))
    remember(fec, fd, [x, y], [out])
    remember(fec, fd, wide, [wide_out])
    assert fec._hits.last is None  # a new entry resets it
    entries = dict(fec._hits._entries)
    for call in range(3):
        for args, given in (([x, y], [out]), (wide, [wide_out])):
            assert fec.run(args, given)[0] is given[0]
            assert fec._hits.last is entries[fec._hits.signature(args, given)].fast
    assert fec.stats.hits == 6 and len(recorder.calls) == 18
    # the same shape twice in a row: the second call takes the guarded replay
    before = fec._hits.last
    fec.run(wide, [wide_out])
    assert fec._hits.last is before and fec.stats.hits == 7


def test_cuda_graph_on_the_cpu_is_an_error_naming_the_fix():
    fd = chain(3)
    x = np.ones((4, 5), np.float32)
    with pytest.raises(DeviceError, match="cuda_graph=True needs CUDA arrays \\(torch tensors or DeviceArrays\\), but these arguments run on the CPU"):
        fd.execute([x, x], cuda_graph=True)
    fd.execute([x, x])  # remembered: the hit path refuses it too
    with pytest.raises(DeviceError, match="cuda_graph=True needs CUDA arrays"):
        fd.execute([x, x], cuda_graph=True)
    (out,) = fd.execute([x, x])
    assert out.shape == (4, 5)


def test_cuda_graph_with_another_cuda_array_type_is_an_error(monkeypatch):
    class Foreign:  # a CUDA array that is neither a torch tensor nor a DeviceArray
        def __init__(self, array):
            self.__cuda_array_interface__ = array.__cuda_array_interface__

    fec = FusionExecutorCache(chain(3))
    compiled = compiled_for_cuda(chain(3), inputs_2d())
    compiled.device = "cuda:0"
    monkeypatch.setattr(fec, "compiled_for", lambda inputs, outputs=None: (compiled, inputs, {}))
    x, y = inputs_2d()
    with pytest.raises(DeviceError, match="cuda_graph=True replays torch tensors and DeviceArrays only, but input 1 is a .*Foreign"):
        fec.run([x, Foreign(y)], cuda_graph=True)


# -- CUDA graphs with a fake driver ------------------------------------------------------------


class FakeGraphApi:
    """The driver's graph calls, recorded: node parameters as the driver would copy them."""

    def __init__(self, counts: dict[int, int]):
        self.counts = counts
        self.nodes: list[dict] = []  # per node: dependencies, and its parameters now
        self.updates: list[int] = []  # node index of each cuGraphExecKernelNodeSetParams
        self.launches: list[tuple] = []  # (stream, parameters of every node) per cuGraphLaunch
        self.released: list[str] = []

    def _params(self, address: int) -> tuple:
        p = cuda.KernelNodeParams.from_address(address)
        grid, block = (p.gridDimX, p.gridDimY, p.gridDimZ), (p.blockDimX, p.blockDimY, p.blockDimZ)
        return p.func, grid, block, p.sharedMemBytes, read_slots(p.kernelParams, self.counts[p.func])

    def create(self, out, flags):
        ctypes.c_void_p.from_address(out).value = 0xC0
        return 0

    def add_kernel_node(self, out, graph, dependencies, count, params):
        deps = [ctypes.c_void_p.from_address(dependencies + 8 * i).value for i in range(count)]
        self.nodes.append({"deps": deps, "params": self._params(params)})
        ctypes.c_void_p.from_address(out).value = 0x100 + len(self.nodes)
        return 0

    def instantiate(self, out, graph, flags):
        ctypes.c_void_p.from_address(out).value = 0xE0
        return 0

    def set_kernel_params(self, exec_, node, params):
        assert exec_.value == 0xE0
        index = node.value - 0x101
        self.updates.append(index)
        self.nodes[index]["params"] = self._params(params.value)
        return 0

    def launch(self, exec_, stream):
        self.launches.append((stream.value or 0, [n["params"] for n in self.nodes]))
        return 0

    def destroy_exec(self, handle):
        self.released.append("exec")

    def destroy(self, handle):
        self.released.append("graph")

    def synchronize(self, device):
        self.released.append("synchronize")

    def check(self, code, call):
        if code:
            raise CudaError(f"{call} failed")


class Arena:
    def __init__(self, ptr):
        self.ptr = ptr


def test_a_graph_replays_the_general_paths_launches_and_updates_only_changed_nodes():
    fd = chain(10)
    args = inputs_2d()
    compiled = compiled_for_cuda(fd, args)
    recorder = Recorder()
    kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, recorder)
    trace = replay.trace(compiled.plan, kernels, args, {})
    api = FakeGraphApi(recorder.counts)
    arena = 0x9000_0000
    outputs = Addresses([0x7000_0000, 0x7000_0000, 0x7100_0000, 0x7100_0000])  # a caching allocator's reuse
    run = replay.graph_replay(
        trace, device=0, torch_outputs=False, input_at={0: 0, 1: 1}, given_at={}, allocate=outputs,
        ensure=lambda d: None, api=api, allocate_arena=lambda n: Arena(arena),
    )
    assert run.graph_bytes == trace.arena_bytes > 0
    count = len(trace.launches)
    assert len(api.nodes) == count
    assert [n["deps"] for n in api.nodes] == [[]] + [[0x101 + i] for i in range(count - 1)]  # a chain, in launch order

    def expected(x, y, out_ptr):
        recorder.calls = []
        run_general(compiled.plan, kernels, [x, y], {}, trace, [out_ptr], arena)
        return [(h, g, b, s, slots) for h, g, b, s, _, slots in recorder.calls]

    memory = MemoryStats()
    (out,) = run(args, {}, [a.ptr for a in args], memory)
    assert out.ptr == 0x7000_0000
    assert api.launches[-1] == (0, expected(*args, out.ptr))
    dynamic = [i for i, launch in enumerate(trace.launches) if any(s[0] != "arena" for _, s in launch.pointer_slots)]
    assert 0 < len(dynamic) < count
    assert sorted(api.updates) == dynamic  # the first replay sets every node that has per-call values
    api.updates = []
    (out,) = run(args, {}, [a.ptr for a in args], memory)  # same pointers: no node changes
    assert api.updates == [] and api.launches[-1] == (0, expected(*args, out.ptr))
    x2 = device_array(0x5000_0000, (33, 70))
    (out,) = run([x2, args[1]], {}, [x2.ptr, args[1].ptr], memory)  # a new x and a new output
    assert out.ptr == 0x7100_0000
    reads_x = [i for i, launch in enumerate(trace.launches) if any(s == ("input", 0) for _, s in launch.pointer_slots)]
    writes_out = [i for i, launch in enumerate(trace.launches) if any(s[0] == "output" for _, s in launch.pointer_slots)]
    assert sorted(api.updates) == sorted(set(reads_x + writes_out)) and len(api.updates) < count
    assert api.launches[-1] == (0, expected(x2, args[1], out.ptr))
    assert len(api.launches) == 3
    # statistics: new outputs per call; the arena counts as live in every replay
    assert memory.allocations == 3 and memory.allocated_bytes == 3 * 33 * 70 * 4
    assert memory.peak_live_bytes == 3 * 33 * 70 * 4 + trace.arena_bytes
    del run  # the graph goes with its replay
    assert api.released == ["synchronize", "exec", "graph"]


def test_a_graph_updates_nodes_whose_scalar_changed():
    with FusionDefinition(name="scaled") as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        t = fd.ops.segment_set(x * s)
        fd.add_output(fd.ops.exp(t))
    x = device_array(0x1000_0000, (1000,))
    out = device_array(0x2000_0000, (1000,))
    compiled = compiled_for_cuda(fd, [x, 2.0], (True,), [(0, out)])
    recorder = Recorder()
    kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, recorder)
    trace = replay.trace(compiled.plan, kernels, [x, 2.0], {0: out})
    api = FakeGraphApi(recorder.counts)
    run = replay.graph_replay(
        trace, device=0, torch_outputs=False, input_at={0: 0}, given_at={0: 1}, allocate=None,
        ensure=lambda d: None, api=api, allocate_arena=lambda n: Arena(0x9000_0000),
    )
    memory = MemoryStats()
    assert run([x, 2.0], {0: out}, [x.ptr, out.ptr], memory)[0] is out
    api.updates = []
    run([x, 2.0], {0: out}, [x.ptr, out.ptr], memory)
    assert api.updates == []
    run([x, 3.0], {0: out}, [x.ptr, out.ptr], memory)
    assert api.updates == [0]  # the node of x * s only
    (slot, _, _), = trace.launches[0].scalar_slots
    assert api.launches[-1][1][0][4][slot] == cuda._scalar_bits("f", 3.0)


class FailingFirst(Recorder):
    """A recorder whose first launch answers ``code`` (then launches succeed)."""

    def __init__(self, code: int):
        super().__init__()
        self.code = code

    def __call__(self, *args):
        super().__call__(*args)
        code, self.code = self.code, 0
        return code


@pytest.mark.parametrize("code, relaunched", [(201, True), (400, True), (700, False)])
def test_a_torch_replay_checks_the_context_only_when_the_first_launch_says_it_is_wrong(code, relaunched):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(x + 1.0)
    args, given = [device_array(0x1000_0000, (64,))], {0: device_array(0x2000_0000, (64,))}
    compiled = compiled_for_cuda(fd, args, (True,), given.items())
    recorder = FailingFirst(code)
    kernels = stub_segments(compiled.program.programs, compiled.program.arg_kinds, recorder)
    trace = replay.trace(compiled.plan, kernels, args, given)
    ensured = []
    input_at, given_at, pointers = pointer_positions(args, given)
    run = replay.plain_replay(
        trace, device=0, torch_outputs=True, input_at=input_at, given_at=given_at,
        allocate=Addresses([]), current_stream=lambda device: 0x55, ensure=ensured.append,
    )
    if not relaunched:
        with pytest.raises(CudaError, match="cuLaunchKernel"):
            run(args, given, pointers, MemoryStats())
        assert ensured == [] and len(recorder.calls) == 1
        return
    assert run(args, given, pointers, MemoryStats()) == [given[0]]
    assert ensured == [0]  # made current once, then launched again with the same parameters
    first, again = recorder.calls
    assert first == again and first[4] == 0x55
    run(args, given, pointers, MemoryStats())
    assert ensured == [0] and len(recorder.calls) == 3  # no check while launches succeed


def test_a_column_major_call_hits_its_own_entry_traced_on_its_row_major_views(stubbed_hits, monkeypatch):
    """FusionExecutorCache._run_permuted: after a column-major call of an
    elementwise fusion ran on its row-major views, its own signature is
    remembered with the views' compiled fusion; its hits launch exactly what
    the views' entry launches, on the caller's pointers, and return the
    caller's arrays."""
    recorder, remember = stubbed_hits
    fd = scaled_in_place()  # x <- x * s + y * k in place, and the same as a visible output
    fec = FusionExecutorCache(fd)
    column = [device_array(base, (70, 33)).T for base in (0x1000_0000, 0x2000_0000, 0x3000_0000)]
    x, y, out = column
    views = [a.T for a in column]
    remember(fec, fd, [views[0], views[1], 2.5, 3], [views[2]])  # the views' full call, compiled for row-major arrays
    assert fec.run([x, y, 2.5, 3], [out])[0] is out  # a miss on its own signature: run on the views
    first = recorder.calls
    entry = fec._hits.entry([x, y, 2.5, 3], [out])
    assert entry is not None and entry.views.outputs == ((1, 0),) and entry.compiled is fec._hits.entry(views[:2] + [2.5, 3], [views[2]]).compiled
    for call in range(2):  # the table's hit (traced on the views), then the guarded replay
        recorder.calls = []
        assert fec.run([x, y, 2.5, 3], [out])[0] is out
        assert recorder.calls == first, call
    assert fec._hits.last is entry.fast and entry.replay.trace.launches
    moved = [device_array(base, (70, 33)).T for base in (0x5000_0000, 0x6000_0000, 0x7000_0000)]
    recorder.calls = []
    assert fec.run([*moved[:2], 2.5, 3], [moved[2]])[0] is moved[2]
    swap = {a.ptr: b.ptr for a, b in zip(column, moved)}
    assert recorder.calls == [(h, g, b, s, st, [swap.get(v, v) for v in slots]) for h, g, b, s, st, slots in first]
    assert fec._hits.last is entry.fast and fec.stats.hits == 4  # the views' one hit, then this signature's three


def test_a_relaid_call_hits_its_own_entry_traced_on_its_row_major_views(stubbed_hits):
    """FusionExecutorCache._run_relaid: after a column-major call of a fusion
    with a broadcast and a reduction ran through the definition written again
    in its order, its own signature is remembered with that fusion's compiled
    one and each argument's permutation (HitEntry.views); its hits launch
    what the views' entry launches, on the caller's pointers, and make each
    new output in its own order: the 2-D one transposed back, the row sums
    as they are."""
    recorder, remember = stubbed_hits
    with FusionDefinition(name="bias_and_sums") as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        b = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(x * 2.0 + b)
        fd.add_output(fd.ops.sum(x, [1]))
    fec = FusionExecutorCache(fd)
    x, b = device_array(0x1000_0000, (70, 33)).T, device_array(0x2000_0000, (70,))
    layout, inner = fec._relaid_for([x, b], None)
    assert layout.inputs == ((1, 0), (0,)) and layout.outputs == ((1, 0), (0,))
    remember(inner, layout.fusion, [x.T, b])  # the views' full call, compiled for row-major arrays
    fec.run([x, b])  # a miss on its own signature: run on the views
    first = recorder.calls
    entry = fec._hits.entry([x, b], None)
    assert entry.views.inputs == layout.inputs and entry.compiled is inner._hits.entry([x.T, b], None).compiled
    for call in range(2):  # the table's hit (traced on the views), then the guarded replay
        recorder.calls = []
        out, sums = fec.run([x, b])
        assert recorder.calls == first, call
        assert (out.shape, out.strides, sums.shape, sums.strides) == ((33, 70), (4, 33 * 4), (33,), (4,)), call
    assert fec._hits.last is entry.fast and ".transpose((1, 0))" in entry.fast.source
    moved = device_array(0x5000_0000, (70, 33)).T, device_array(0x6000_0000, (70,))
    recorder.calls = []
    fec.run(list(moved))
    swap = {0x1000_0000: 0x5000_0000, 0x2000_0000: 0x6000_0000}
    assert recorder.calls == [(h, g, bl, s, st, [swap.get(v, v) for v in slots]) for h, g, bl, s, st, slots in first]
    assert fec.stats.hits == 4  # the views' one hit, then this signature's three


def test_a_column_major_entry_that_cannot_replay_runs_the_general_path_on_its_views(stubbed_hits, monkeypatch):
    recorder, remember = stubbed_hits
    fd = scaled_in_place()
    fec = FusionExecutorCache(fd)
    x, y, out = (device_array(base, (70, 33)).T for base in (0x1000_0000, 0x2000_0000, 0x3000_0000))
    remember(fec, fd, [x.T, y.T, 2.5, 3], [out.T])
    fec.run([x, y, 2.5, 3], [out])
    first = recorder.calls

    def not_replayable(*args):
        raise replay.NotReplayable("a test's")

    monkeypatch.setattr(replay, "trace", not_replayable)
    recorder.calls = []
    results = fec.run([x, y, 2.5, 3], [out])
    entry = fec._hits.entry([x, y, 2.5, 3], [out])
    assert entry.views.outputs == ((1, 0),) and entry.not_replayed == "a test's"
    assert results[0] is out and recorder.calls == first


def test_a_column_major_hit_makes_its_new_outputs_in_the_inputs_order(stubbed_hits):
    recorder, remember = stubbed_hits
    fd = chain(3)
    fec = FusionExecutorCache(fd)
    x, y = (device_array(base, (70, 33)).T for base in (0x1000_0000, 0x2000_0000))
    remember(fec, fd, [x.T, y.T])  # the views' full call: a new output, row-major in their dims
    for call in range(3):  # a miss on the views' entry, then this signature's table hit and guarded replay
        (out,) = fec.run([x, y])
        assert out.ptr == 0xA000_0000 and out.shape == (33, 70) and out.strides == (4, 33 * 4), call
    entry = fec._hits.entry([x, y], None)
    assert entry.views.outputs == ((1, 0),) and fec._hits.last is entry.fast and ".transpose((1, 0))" in entry.fast.source
    assert fec.memory.allocations == 3 * entry.replay.trace.allocations  # the plan's buffers per call, on either entry
