"""Cache hits on the GPU: the generated replay (kernel by kernel) and the
CUDA graph replay (``cuda_graph=True``), end to end. Every result is checked
against float64 NumPy computed from the original inputs, given outputs are
poisoned with NaN, and inputs must be unchanged after the call. The tensors
change between calls (new tensors: new pointers; the same tensors with new
values; new and given outputs), so every way a replay can go stale is
exercised."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from bench_scripts import load
from devices import to_device, to_host
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.errors import InputError

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("cuda")]

HOST_OVERHEAD = load("host_overhead")
RNG = np.random.default_rng(17)
ROWS, COLS = 257, 300


def chain10():
    """bench/host_overhead.py's ten-segment chain on rank-2 tensors: x, y -> ten
    kernels (cut with segment_set), nine intermediates."""
    return HOST_OVERHEAD.ten_segments(rank=2)[0]


def chain10_reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return HOST_OVERHEAD.reference("seg10", x.astype(np.float64), y.astype(np.float64))


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def torch_pair(torch):
    """Fresh random x, y: the host arrays and CUDA tensors holding them."""
    x_host, y_host = rand(ROWS, COLS), rand(ROWS, COLS)
    return x_host, y_host, torch.as_tensor(x_host, device="cuda"), torch.as_tensor(y_host, device="cuda")


def check(out, x: np.ndarray, y: np.ndarray) -> None:
    np.testing.assert_allclose(to_host(out), chain10_reference(x, y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["replay", "graph"])
def test_a_ten_segment_chain_replays_right_as_its_tensors_change(cuda_graph):
    torch = pytest.importorskip("torch")
    fd = chain10()
    x_host, y_host, x, y = torch_pair(torch)
    given = torch.full((ROWS, COLS), float("nan"), device="cuda")
    for call in range(8):
        if call in (2, 5):  # new tensors: new pointers
            x_host, y_host, x, y = torch_pair(torch)
        elif call in (3, 6):  # the same tensors, new values
            x_host = rand(ROWS, COLS)
            x.copy_(torch.as_tensor(x_host, device="cuda"))
        if call % 2:
            given = torch.full((ROWS, COLS), float("nan"), device="cuda") if call == 5 else given.fill_(float("nan"))
            (out,) = fd.execute([x, y], [given], cuda_graph=cuda_graph)
            assert out is given
        else:
            (out,) = fd.execute([x, y], cuda_graph=cuda_graph)
            assert isinstance(out, torch.Tensor) and out.shape == (ROWS, COLS)
        check(out, x_host, y_host)
        np.testing.assert_array_equal(to_host(x), x_host)
        np.testing.assert_array_equal(to_host(y), y_host)
    fec = fd._executor
    assert fec.stats.misses == 2 and fec.stats.hits == 6  # one signature with a given output, one without
    assert fd.compile([x, y]).num_segments == 10
    for entry in fec._hits._entries.values():
        assert entry.not_replayed == ""
        assert (entry.graph if cuda_graph else entry.replay) is not None
    if cuda_graph:
        assert fec.graph_bytes > 0  # the intermediates, owned by the graphs
    else:
        assert fec.graph_bytes == 0


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["replay", "graph"])
def test_new_outputs_are_fresh_tensors_every_call(cuda_graph):
    torch = pytest.importorskip("torch")
    fd = chain10()
    x_host, y_host, x, y = torch_pair(torch)
    outs = [fd.execute([x, y], cuda_graph=cuda_graph)[0] for _ in range(4)]
    assert len({o.data_ptr() for o in outs}) == 4  # all alive at once: four buffers
    for out in outs:
        # what torch.empty gives (the replays allocate with torch.empty_strided)
        assert out.is_contiguous() and out.stride() == (COLS, 1) and out.dtype == torch.float32 and out.device == x.device
        check(out, x_host, y_host)


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["replay", "graph"])
def test_device_arrays_replay_on_the_default_stream(cuda_graph):
    fd = chain10()
    x_host, y_host = rand(ROWS, COLS), rand(ROWS, COLS)
    x, y = to_device(x_host, "cuda"), to_device(y_host, "cuda")
    given = to_device(np.full((ROWS, COLS), np.nan, np.float32), "cuda")
    for _ in range(3):
        (out,) = fd.execute([x, y], cuda_graph=cuda_graph)
        check(out, x_host, y_host)
        assert fd.execute([x, y], [given], cuda_graph=cuda_graph)[0] is given
        check(given, x_host, y_host)
    x_host = rand(ROWS, COLS)
    x = to_device(x_host, "cuda")
    check(fd.execute([x, y], cuda_graph=cuda_graph)[0], x_host, y_host)
    np.testing.assert_array_equal(to_host(y), y_host)


def test_a_graph_replays_on_the_current_torch_stream():
    torch = pytest.importorskip("torch")
    fd = chain10()
    x_host, y_host, x, y = torch_pair(torch)
    fd.execute([x, y], cuda_graph=True)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        outs = [fd.execute([x, y], cuda_graph=True)[0] for _ in range(5)]
    stream.synchronize()
    for out in outs:
        check(out, x_host, y_host)


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["replay", "graph"])
def test_scalars_temporaries_and_launch_variants_replay_right(cuda_graph):
    torch = pytest.importorskip("torch")
    with FusionDefinition(name="scaled_colsum") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        t = fd.ops.segment_set(x * s)
        fd.add_output(fd.ops.sum(t, dims=[0]))  # a split column reduction: a temporary of partial sums
    x_host = rand(3000, 70)
    x = torch.as_tensor(x_host, device="cuda")
    for s in (1.0, 2.5, 2.5, -0.75):
        (out,) = fd.execute([x, s], cuda_graph=cuda_graph)
        np.testing.assert_allclose(to_host(out), (x_host.astype(np.float64) * s).sum(axis=0), rtol=1e-4, atol=1e-3)
    with FusionDefinition(name="softmax") as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    for cols in (100, 5000):  # the two variants of the kernel, one per signature
        x_host = rand(64, cols)
        x = torch.as_tensor(x_host, device="cuda")
        for _ in range(3):
            (out,) = fd.execute([x], cuda_graph=cuda_graph)
            e = np.exp(x_host.astype(np.float64) - x_host.max(axis=1, keepdims=True))
            np.testing.assert_allclose(to_host(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_a_graph_hit_still_refuses_an_output_that_overlaps_an_input():
    torch = pytest.importorskip("torch")
    fd = chain10()
    x, y = torch.randn(ROWS, COLS, device="cuda"), torch.randn(ROWS, COLS, device="cuda")
    given = torch.empty_like(x)
    fd.execute([x, y], [given], cuda_graph=True)
    fd.execute([x, y], [given], cuda_graph=True)
    y0 = y.clone()
    with pytest.raises(InputError, match="output 0 overlaps input 1"):
        fd.execute([x, y], [y], cuda_graph=True)
    torch.testing.assert_close(y, y0)


def test_dropping_an_executor_releases_its_graphs():
    torch = pytest.importorskip("torch")
    fd = chain10()
    x_host, y_host, x, y = torch_pair(torch)
    fec = FusionExecutorCache(fd)
    for _ in range(3):
        (out,) = fec.run([x, y], cuda_graph=True)
    (entry,) = fec._hits._entries.values()
    graph = entry.graph.graph
    finalizer = graph._finalizer
    assert finalizer.alive
    del fec, entry, graph
    gc.collect()
    assert not finalizer.alive  # synchronized, destroyed, arena freed
    check(out, x_host, y_host)
    fec = FusionExecutorCache(fd)  # and a new one builds its own
    for _ in range(2):
        check(fec.run([x, y], cuda_graph=True)[0], x_host, y_host)


def test_a_replay_on_a_thread_with_no_current_context_makes_it_current():
    torch = pytest.importorskip("torch")
    import threading

    from fuser_mlir.runtime import arrays

    fd, x, y = chain10(), rand(ROWS, COLS), rand(ROWS, COLS)
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    fd.execute([tx, ty])  # compiles and remembers the signature
    results, errors = [], []

    def hit():
        try:
            drv = arrays.driver()
            arrays.check(drv.cuCtxSetCurrent(drv.CUcontext(0)), "cuCtxSetCurrent")  # no context on this thread
            (out,) = fd.execute([tx, ty])
            torch.cuda.synchronize()
            results.append(out)
        except Exception as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    thread = threading.Thread(target=hit)
    thread.start()
    thread.join()
    assert not errors, errors
    check(results[0], x, y)
    assert fd._executor.stats.hits >= 1
