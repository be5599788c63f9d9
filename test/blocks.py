"""The CPU runtime's large-array behaviour on small arrays, for tests.

Split kernels (:mod:`fuser_mlir.lowering.cpu_split`) run a call as blocks
only on arrays of megabytes. Within :func:`cut_into_blocks` every call of a
split kernel on at least two rows runs as blocks (``BLOCK_BYTES`` is one
byte, ``FUSER_CPU_THREADS`` is ``threads``), and the returned counter
tells how many kernel calls there were and how many of them ran as blocks,
so that a test can check that it tested what it meant to (and ``cut along
the inner split`` how many cut along a kernel's inner split).

A plan keeps its intermediates from call to call only from a megabyte on
(:class:`fuser_mlir.runtime.plan.Intermediates`); within
:func:`keep_every_intermediate` it keeps every one.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest

from fuser_mlir.runtime import cpu as cpu_runtime
from fuser_mlir.runtime import plan as plan_runtime


@contextlib.contextmanager
def cut_into_blocks(threads: int = 3):
    counts: Counter = Counter()
    call, call_in_blocks = cpu_runtime.CpuKernel.__call__, cpu_runtime.CpuKernel._call_in_blocks

    def counted_call(kernel, *args):
        counts["calls"] += 1
        return call(kernel, *args)

    def counted_blocks(kernel, cut, length, blocks):
        counts["cut"] += 1
        if cut != kernel._cut:
            counts["cut along the inner split"] += 1
        return call_in_blocks(kernel, cut, length, blocks)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUSER_CPU_THREADS", str(threads))
        patch.setattr(cpu_runtime, "BLOCK_BYTES", 1)
        patch.setattr(cpu_runtime.CpuKernel, "__call__", counted_call)
        patch.setattr(cpu_runtime.CpuKernel, "_call_in_blocks", counted_blocks)
        yield counts


@contextlib.contextmanager
def whole_calls():
    """Every CPU kernel call on the calling thread, as one block."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUSER_CPU_THREADS", "1")
        yield


@contextlib.contextmanager
def keep_every_intermediate():
    """Every intermediate a plan frees is kept, poisoned (NaN, or -77 and
    True for integers and booleans), so that a kernel reading one before its
    producer wrote all of it reads poison; the returned counter's ``kept``
    is how many intermediates a call took from an earlier one."""
    counts: Counter = Counter()
    take, give = plan_runtime.Intermediates.take, plan_runtime.Intermediates.give

    def counted_take(kept, shape, dtype):
        before = kept.nbytes
        array = take(kept, shape, dtype)
        counts["kept"] += kept.nbytes < before
        return array

    def poisoned_give(kept, array):
        array.fill(True if array.dtype == bool else -77 if array.dtype.kind in "iu" else np.nan)
        give(kept, array)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_runtime, "KEEP_BYTES", 1)
        patch.setattr(plan_runtime.Intermediates, "take", counted_take)
        patch.setattr(plan_runtime.Intermediates, "give", poisoned_give)
        yield counts


@contextlib.contextmanager
def merging(on: bool | None = None):
    """Elementwise kernels merge dims on every call of rows of more than one
    element (``on``), or never (``on=False``), or where the runtime's
    thresholds say (None); the returned counter's ``merged`` is how many
    calls did."""
    counts: Counter = Counter()
    merged_dims = cpu_runtime.merged_dims

    def counted(args, tensors):
        merged = merged_dims(args, tensors)
        counts["merged"] += merged is not None
        return merged

    with pytest.MonkeyPatch.context() as patch:
        if on is not None:
            patch.setattr(cpu_runtime, "MERGE_BELOW", 1 << 62 if on else 0)
            patch.setattr(cpu_runtime, "MERGE_FROM", 0)
        patch.setattr(cpu_runtime, "merged_dims", counted)
        yield counts
