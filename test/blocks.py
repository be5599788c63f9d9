"""Running CPU kernels cut into blocks on small arrays, for tests.

Split kernels (:mod:`fuser_mlir.lowering.cpu_split`) run a call as blocks
only on arrays of megabytes. Within :func:`cut_into_blocks` every call of a
split kernel on at least two rows runs as blocks (``BLOCK_BYTES`` is one
byte, ``FUSER_CPU_THREADS`` is ``threads``), and the returned counter
tells how many kernel calls there were and how many of them ran as blocks,
so that a test can check that it tested what it meant to.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest

from fuser_mlir.runtime import cpu as cpu_runtime


@contextlib.contextmanager
def cut_into_blocks(threads: int = 3):
    counts: Counter = Counter()
    call, call_in_blocks = cpu_runtime.CpuKernel.__call__, cpu_runtime.CpuKernel._call_in_blocks

    def counted_call(kernel, *args):
        counts["calls"] += 1
        return call(kernel, *args)

    def counted_blocks(kernel, length, blocks):
        counts["cut"] += 1
        return call_in_blocks(kernel, length, blocks)

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
