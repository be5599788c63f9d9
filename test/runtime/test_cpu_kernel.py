"""CpuKernel without MLIR: what a kernel receives, checked by a fake kernel.

The fake is a ctypes callback with the packed calling convention of
``_mlir_ciface_<name>`` (one ``void**``); it decodes each memref descriptor
and scalar the way the JIT-compiled wrapper does.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

from fuser_mlir import config
from fuser_mlir.errors import ConfigWarning
from fuser_mlir.runtime import cpu as cpu_runtime
from fuser_mlir.runtime.cpu import DTYPE_OF_ELEMENT, ArgKind, CpuKernel

PACKED = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_SCALAR_READ = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "bool": ctypes.c_uint8,
    "float16": ctypes.c_uint16,
    "bfloat16": ctypes.c_uint16,
}


def fake_kernel(kinds: list[ArgKind], received: list, action=None, split=None, inner_split=None, elementwise=False) -> CpuKernel:
    """A CpuKernel whose code records each argument: a descriptor as its
    words, a scalar as the value stored in its slot."""

    @PACKED
    def entry(packed: int) -> None:
        slots = ctypes.cast(packed, ctypes.POINTER(ctypes.c_void_p))
        for index, kind in enumerate(kinds):
            if kind.is_tensor:
                descriptor = ctypes.cast(slots[index], ctypes.POINTER(ctypes.c_void_p))[0]
                words = ctypes.cast(descriptor, ctypes.POINTER(ctypes.c_int64))
                received.append(tuple(words[i] for i in range(3 + 2 * kind.rank)))
            else:
                received.append(ctypes.cast(slots[index], ctypes.POINTER(_SCALAR_READ[kind.dtype]))[0])
        if action is not None:
            action(received)

    address = ctypes.cast(entry, ctypes.c_void_p).value
    return CpuKernel(address, kinds, name="fake", keepalive=entry, split=split, inner_split=inner_split, elementwise=elementwise)


def data_pointer(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_descriptors_carry_sizes_and_strides_in_elements() -> None:
    base = np.zeros((6, 8), np.float32)
    views = [base, base.T, base[::2, 1:], base[::-1, ::-3]]
    received: list = []
    kernel = fake_kernel([ArgKind.tensor("float32", 2)] * len(views), received)
    kernel(*views)
    for view, words in zip(views, received):
        pointer = data_pointer(view)
        strides = tuple(s // 4 for s in view.strides)
        assert words == (pointer, pointer, 0, *view.shape, *strides)
    assert received[3][5:] == (-8, -3)  # negative strides pass through


def test_every_rank_is_refilled_in_place_on_each_call() -> None:
    # ranks 0-2 have their own setters, higher ranks the general one
    kinds = [ArgKind.tensor("float64", r) for r in (0, 1, 2, 3, 4)]
    first = [np.array(1.0), np.arange(8.0)[::-2], np.zeros((3, 4)).T, np.zeros((2, 3, 4))[:, ::-1], np.zeros((1, 2, 3, 2))]
    second = [np.array(2.0), np.arange(5.0), np.zeros((7, 2))[1:], np.zeros((4, 3, 2)).transpose(2, 0, 1), np.zeros((2, 1, 1, 5))[..., ::2]]
    received: list = []
    kernel = fake_kernel(kinds, received)
    for arrays in (first, second):
        received.clear()
        kernel(*arrays)
        for array, words in zip(arrays, received):
            pointer = data_pointer(array)
            assert words == (pointer, pointer, 0, *array.shape, *(s // 8 for s in array.strides))


def test_zero_d_and_zero_size_arrays() -> None:
    scalar_array = np.array(3.0, np.float64)
    empty = np.empty((0, 5), np.int64)
    received: list = []
    kernel = fake_kernel([ArgKind.tensor("float64", 0), ArgKind.tensor("int64", 2)], received)
    kernel(scalar_array, empty)
    assert received[0] == (data_pointer(scalar_array),) * 2 + (0,)
    assert received[1][2:] == (0, 0, 5, *(s // 8 for s in empty.strides))


def test_half_types_use_their_itemsize() -> None:
    received: list = []
    kernel = fake_kernel([ArgKind.tensor("bfloat16", 1), ArgKind.tensor("float16", 1), ArgKind.tensor("bool", 1)], received)
    kernel(np.zeros(10, ml_dtypes.bfloat16)[::2], np.zeros(9, np.float16)[::3], np.zeros(4, bool)[::-1])
    assert [words[-1] for words in received] == [2, 3, -1]


def test_scalars_arrive_in_their_machine_type() -> None:
    kinds = [ArgKind.scalar(d) for d in ("float32", "float64", "int32", "int64", "bool", "float16", "bfloat16")]
    received: list = []
    fake_kernel(kinds, received)(1.5, 2.25, -7, 2**40, True, 0.1, 0.1)
    assert received[:5] == [1.5, 2.25, -7, 2**40, 1]
    assert received[5] == int(np.array(0.1, np.float16).view(np.uint16))
    assert received[6] == int(np.array(0.1, ml_dtypes.bfloat16).view(np.uint16))


def test_the_kernel_writes_through_the_given_buffer() -> None:
    out = np.zeros((3, 4), np.float32)[:, ::-2]

    def write(received: list) -> None:
        pointer, _, _, _, _, stride0, stride1 = received[0]
        element = ctypes.cast(pointer + 4 * (1 * stride0 + 1 * stride1), ctypes.POINTER(ctypes.c_float))
        element[0] = 42.0

    fake_kernel([ArgKind.tensor("float32", 2)], [], write)(out)
    assert out[1, 1] == 42.0 and np.count_nonzero(out) == 1


def test_argument_count_and_null_address_are_errors() -> None:
    kernel = fake_kernel([ArgKind.scalar("float32")], [])
    with pytest.raises(TypeError, match="CpuKernel fake: expected 1 arguments, got 2"):
        kernel(1.0, 2.0)
    with pytest.raises(ValueError, match="entry point address is null"):
        CpuKernel(0, [], name="k")


# -- calls cut into blocks (split kernels) ------------------------------------


def block_calls(kinds: list[ArgKind], split, args, monkeypatch, *, threads: int | str = 3, block_bytes: int = 1, inner_split=None) -> list[tuple]:
    """The argument lists (as fake_kernel records them) of the calls a
    kernel splitting along ``split`` (and ``inner_split``) makes for one
    call on ``args``, by their first descriptor's data pointer."""
    monkeypatch.setenv("FUSER_CPU_THREADS", str(threads))
    monkeypatch.setattr(cpu_runtime, "BLOCK_BYTES", block_bytes)
    calls: list = []
    kernel = fake_kernel(kinds, [], lambda received: calls.append(tuple(received)) or received.clear(), split=split, inner_split=inner_split)
    kernel(*args)
    return sorted(calls, key=lambda call: call[0][1])


def test_a_split_call_runs_as_blocks_of_the_split_dims(monkeypatch) -> None:
    # rows of x and the output are cut; the broadcast row y and the scalar are passed whole
    x = np.zeros((7, 5), np.float32)[:, ::-1]  # a negative column stride
    y = np.zeros((1, 5), np.float32)
    out = np.zeros((10, 7), np.float64).T  # its rows are columns of its base: stride 1
    kinds = [ArgKind.tensor("float32", 2), ArgKind.tensor("float32", 2), ArgKind.scalar("int32"), ArgKind.tensor("float64", 2)]
    calls = block_calls(kinds, (0, None, None, 0), (x, y, 5, out[:, :5]), monkeypatch)
    assert [call[0][3] for call in calls] == [2, 2, 3]  # rows 0-1, 2-3, 4-6
    starts = [0, 2, 4]
    for call, start in zip(calls, starts):
        rows = call[0][3]
        x_pointer = data_pointer(x) + 4 * start * 5
        assert call[0] == (x_pointer, x_pointer, 0, rows, 5, 5, -1)
        assert call[1] == (data_pointer(y), data_pointer(y), 0, 1, 5, 5, 1)
        assert call[2] == 5
        out_pointer = data_pointer(out) + 8 * start * 1
        assert call[3] == (out_pointer, out_pointer, 0, rows, 5, 1, 7)


def test_a_split_along_a_later_dim_moves_by_that_dims_stride(monkeypatch) -> None:
    # a column sum: x splits along its columns, the output along its only dim
    x, out = np.zeros((4, 9), np.float32), np.zeros(9, np.float32)
    calls = block_calls([ArgKind.tensor("float32", 2), ArgKind.tensor("float32", 1)], (1, 0), (x, out), monkeypatch, threads=2)
    assert [(call[0][1] - data_pointer(x), call[0][3:5], call[1][1] - data_pointer(out), call[1][3]) for call in calls] == [
        (0, (4, 4), 0, 4),
        (16, (4, 5), 16, 5),
    ]


@pytest.mark.parametrize(
    "threads, block_bytes, shapes, blocks",
    [
        (1, 1, [(6, 2), (6, 2)], 1),  # FUSER_CPU_THREADS=1
        (4, 1, [(6, 2), (5, 2)], 1),  # split dims of different lengths: run whole
        (4, 1, [(2, 8), (2, 8)], 2),  # at most one block a row
        (4, 65, [(8, 2), (8, 2)], 1),  # 128 bytes of split arguments: below two blocks of 65
        (4, 32, [(8, 2), (8, 2)], 4),
        (8, 32, [(8, 2), (8, 2)], 4),  # 128 bytes: 4 blocks of 32
        (4, 1, [(0, 2), (0, 2)], 1),  # empty
    ],
)
def test_how_many_blocks_a_call_runs_as(threads, block_bytes, shapes, blocks, monkeypatch) -> None:
    args = [np.zeros(shape, np.float32) for shape in shapes]
    calls = block_calls([ArgKind.tensor("float32", 2)] * 2, (0, 0), args, monkeypatch, threads=threads, block_bytes=block_bytes)
    assert len(calls) == blocks


@pytest.mark.parametrize("batch, cut_dim", [(1, 1), (2, 0), (3, 0)])
def test_an_inner_split_cuts_the_rows_where_the_batch_is_shorter_than_the_threads(batch, cut_dim, monkeypatch) -> None:
    # a [batch, rows, columns] layer norm: split along dim 0, inner split along dim 1
    x, out = np.zeros((batch, 6, 2), np.float32), np.zeros((batch, 6, 2), np.float32)
    kinds = [ArgKind.tensor("float32", 3)] * 2
    calls = block_calls(kinds, (0, 0), (x, out), monkeypatch, threads=2, inner_split=(1, 1))
    assert len(calls) == 2
    lengths = [call[0][3 + cut_dim] for call in calls]
    assert sum(lengths) == x.shape[cut_dim]
    stride = x.strides[cut_dim]
    assert [call[0][1] - data_pointer(x) for call in calls] == [0, lengths[0] * stride]
    assert [call[1][1] - data_pointer(out) for call in calls] == [0, lengths[0] * stride]
    assert all(call[0][3 + d] == x.shape[d] for call in calls for d in range(3) if d != cut_dim)


def merged(*arrays):
    """merged_dims of ``arrays`` as the tensor arguments of an elementwise
    kernel, with the real thresholds; strides in elements."""
    result = cpu_runtime.merged_dims(arrays, range(len(arrays)))
    if result is None:
        return None
    sizes, strides, dim = result
    return sizes, [[step // a.itemsize for step in steps] for a, steps in zip(arrays, strides)], dim


def test_dims_back_to_back_in_every_array_merge():
    n = cpu_runtime.MERGE_FROM
    rows = np.zeros((n, 3), np.float32)
    assert merged(rows, np.zeros((n, 3), np.float64)) == ((1, 3 * n), [[0, 1], [0, 1]], 1)
    assert merged(rows[::-1, ::-1], rows) == ((1, 3 * n), [[0, -1], [0, 1]], 1)  # reversed whole: one stride of -1
    wide = np.zeros((n, 8), np.float32)
    assert merged(wide[:, 2:3], rows[:, :1]) == ((1, n), [[0, 8], [0, 3]], 1)  # a dim of one element drops out
    assert merged(wide[:, ::2][:, :3], rows) is None  # rows with a gap: as short as they were
    assert merged(rows[::-1], rows) is None  # only the rows reversed
    # column-major: its columns are the rows, whole ones where every array is column-major
    columns = np.zeros((3, n), np.float32).T
    assert merged(columns, rows) == ((3, n), [[n, 1], [1, 3]], 0)  # the dim whose strides add up to less, innermost
    assert merged(columns, columns) == ((1, 3 * n), [[0, 1], [0, 1]], 1)
    long_columns = np.zeros((cpu_runtime.MERGE_BELOW, n), np.float32).T
    assert merged(long_columns, long_columns[::-1, ::-1]) == ((1, cpu_runtime.MERGE_BELOW * n), [[0, 1], [0, -1]], 1)  # at any row length
    batch = np.zeros((2, n // 4, 4, 3), np.float32)
    assert merged(batch, batch[:, :, ::-1][:, :, ::-1]) == ((1, 1, 1, 2 * n * 3), [[0, 0, 0, 1], [0, 0, 0, 1]], 3)
    assert merged(np.zeros((2, n // 4, 4, 5), np.float32)[..., :3], batch) is None  # the outer dims merge, the rows stay 3 long
    # too few elements, or rows long enough, to gain
    assert merged(rows[: n // 3 - 1]) is None
    assert merged(np.zeros((n, cpu_runtime.MERGE_BELOW), np.float32)) is None
    assert merged(rows, np.zeros((n, 1), np.float32)) is None  # another shape: not this kernel's arguments


def test_an_elementwise_call_of_short_rows_runs_merged_and_cut_along_the_merged_dim(monkeypatch) -> None:
    n = cpu_runtime.MERGE_FROM
    x, out = np.zeros((n, 3), np.float32), np.zeros((n, 3), np.float64)[::-1, ::-1]
    kinds = [ArgKind.tensor("float32", 2), ArgKind.scalar("float32"), ArgKind.tensor("float64", 2)]
    whole: list = []
    kernel = fake_kernel(kinds, whole, split=(0, None, 0), elementwise=True)
    kernel(x, 2.0, out)
    assert whole == [(data_pointer(x), data_pointer(x), 0, 1, 3 * n, 0, 1), 2.0, (data_pointer(out), data_pointer(out), 0, 1, 3 * n, 0, -1)]
    assert kernel.elementwise and fake_kernel(kinds, [], split=(0, None, 0)).elementwise is False
    calls: list = []
    monkeypatch.setenv("FUSER_CPU_THREADS", "2")
    monkeypatch.setattr(cpu_runtime, "BLOCK_BYTES", 1)
    fake_kernel(kinds, [], lambda received: calls.append(tuple(received)) or received.clear(), split=(0, None, 0), elementwise=True)(x, 2.0, out)
    half = 3 * n // 2
    assert sorted(calls) == [
        ((data_pointer(x), data_pointer(x), 0, 1, half, 0, 1), 2.0, (data_pointer(out), data_pointer(out), 0, 1, half, 0, -1)),
        ((data_pointer(x) + 4 * half,) * 2 + (0, 1, half, 0, 1), 2.0, (data_pointer(out) - 8 * half,) * 2 + (0, 1, half, 0, -1)),
    ]
    # rows long enough: the kernel's own split (2 blocks of rows), rows as they are
    calls.clear()
    fake_kernel(kinds, [], lambda received: calls.append(tuple(received)) or received.clear(), split=(0, None, 0), elementwise=True)(
        np.zeros((4, 64), np.float32), 2.0, np.zeros((4, 64))
    )
    assert [(call[0][3:], call[2][3:]) for call in calls] == [((2, 64, 64, 1), (2, 64, 64, 1))] * 2


def test_an_elementwise_kernel_has_tensor_arguments_of_one_rank() -> None:
    with pytest.raises(ValueError, match="elementwise, but its tensor arguments have ranks"):
        fake_kernel([ArgKind.tensor("float32", 2), ArgKind.tensor("float32", 1)], [], elementwise=True)


def test_a_malformed_split_is_refused() -> None:
    kinds = [ArgKind.tensor("float32", 2), ArgKind.scalar("float32")]
    for split, message in [((0,), "a split of 1 entries for 2 arguments"), ((2, None), "split dim 2"), ((0, 0), "split dim 0 for an argument of kind")]:
        with pytest.raises(ValueError, match=message):
            fake_kernel(kinds, [], split=split)


def test_cpu_threads_must_be_a_positive_number(monkeypatch) -> None:
    monkeypatch.setenv("FUSER_CPU_THREADS", "0")
    with pytest.raises(ValueError, match="FUSER_CPU_THREADS must be a whole number of threads, 1 or more; got '0'"):
        config.cpu_threads()
    monkeypatch.setenv("FUSER_CPU_THREADS", "many")
    with pytest.raises(ValueError, match="got 'many'"):
        config.cpu_threads()
    monkeypatch.setenv("FUSER_CPU_THREADS", "")
    assert config.cpu_threads() >= 1


def test_a_bad_thread_count_met_by_a_kernel_runs_it_whole_and_is_warned_of_later(monkeypatch) -> None:
    # a typo in a speed knob must not stop a fusion half-way through its segments
    monkeypatch.setattr(cpu_runtime, "_THREADS", None)  # the setting is read once per value
    x = np.zeros((8, 2), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is said in the middle of a call
        calls = block_calls([ArgKind.tensor("float32", 2)] * 2, (0, 0), [x, x.copy()], monkeypatch, threads="two")
    assert len(calls) == 1
    with pytest.warns(ConfigWarning, match="FUSER_CPU_THREADS must be a whole number .* got 'two'; running CPU kernels on one thread"):
        cpu_runtime.say_unsaid()


def _two_segments():
    from fuser_mlir import DataType, FusionDefinition

    with FusionDefinition() as fd:
        w = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(w, dims=[0, 1], keepdim=True)  # a small segment, not split, its output given
        fd.add_output(s)
        fd.add_output(x * s)  # a large one, split
    return fd, np.ones((2, 4), np.float32), np.ones((1024, 1024), np.float32)


def test_a_bad_thread_count_warns_before_the_first_segment_runs(monkeypatch) -> None:
    """Under -W error the warning is an error: it was raised by the first
    kernel call that split, after earlier segments had written given outputs."""
    monkeypatch.setattr(cpu_runtime, "_THREADS", None)
    monkeypatch.setenv("FUSER_CPU_THREADS", "two")
    fd, w, x = _two_segments()
    given = np.full((1, 1), np.nan, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        with pytest.raises(ConfigWarning, match="got 'two'"):
            fd.execute([w, x], outputs=[given, None])
    assert np.isnan(given).all()
    with pytest.warns(ConfigWarning, match="got 'two'"):
        total, product = fd.execute([w, x], outputs=[given, None])
    assert total is given and given[0, 0] == 8.0 and (product == 8.0).all()


def test_a_thread_count_made_bad_between_calls_is_warned_of_after_the_call(monkeypatch) -> None:
    # A cache hit reads no environment before it runs (it costs 0.5 us a call): the kernel that meets the value
    # runs whole, and the warning comes when the call has run, its outputs written.
    monkeypatch.setattr(cpu_runtime, "_THREADS", None)
    fd, w, x = _two_segments()
    fd.execute([w, x])
    monkeypatch.setenv("FUSER_CPU_THREADS", "two")
    given = np.full((1, 1), np.nan, np.float32)
    with pytest.warns(ConfigWarning, match="got 'two'"):
        total, product = fd.execute([w, x], outputs=[given, None])
    assert total is given and given[0, 0] == 8.0 and (product == 8.0).all()


def test_every_element_type_has_a_numpy_dtype() -> None:
    assert set(DTYPE_OF_ELEMENT) == {"f16", "bf16", "f32", "f64", "i32", "i64", "i1"}
    assert repr(fake_kernel([ArgKind.tensor("float32", 2), ArgKind.scalar("int64")], [])) == "CpuKernel(fake: float32[2d], int64)"


def test_the_cpu_runtime_does_not_import_mlir() -> None:
    code = "import sys, fuser_mlir.runtime.cpu; sys.exit(any(m == 'mlir' or m.startswith('mlir.') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_data_pointer_agrees_with_the_array_interface() -> None:
    from fuser_mlir.runtime.cpu import data_pointer

    class Sub(np.ndarray):
        pass

    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for array in (base, base[1:, ::-2], base.T, np.empty((0, 3)), np.array(1.5), base.view(Sub)[2:]):
        assert data_pointer(array) == array.__array_interface__["data"][0]
