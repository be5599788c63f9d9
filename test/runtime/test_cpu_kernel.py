"""CpuKernel without MLIR: what a kernel receives, checked by a fake kernel.

The fake is a ctypes callback with the packed calling convention of
``_mlir_ciface_<name>`` (one ``void**``); it decodes each memref descriptor
and scalar the way the JIT-compiled wrapper does.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

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


def fake_kernel(kinds: list[ArgKind], received: list, action=None) -> CpuKernel:
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
    return CpuKernel(address, kinds, name="fake", keepalive=entry)


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
