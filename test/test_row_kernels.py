"""Softmax, layer norm and RMS norm at row lengths that cross every scheme of
the GPU's persistent row kernel (gpu_schedule.persistent_rows): a warp with
the row in registers, blocks of 256 to 1024 threads with the row in
registers, the staged block with the row in shared memory, a block reading
the row once per pass, and for rows that are not a multiple of the vector
width the same over the tensor's flat vectors, or the scalar variants. float32 and bfloat16, against float64 NumPy
computed from the same inputs; given outputs poisoned with NaN, inputs
checked unchanged."""

import ml_dtypes
import numpy as np
import pytest

from bench_scripts import load as load_bench
from devices import assert_unchanged, to_device, to_host
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pass_cases import poisoned
from random_programs import ROW_PROGRAMS, derandomized, past_aligned_start, row_inputs, row_program, row_shapes
from reference import evaluate, visible_then_written
from fuser_mlir import DataType, FusionDefinition, FusionExecutorCache
from fuser_mlir.lowering import gpu_schedule

RNG = np.random.default_rng(20261201)
BF16 = np.dtype(ml_dtypes.bfloat16)

#: Each scheme's limits and one past them (float32 and bfloat16 limits differ
#: by 2x: warps to 512 and 1024 float32 columns, blocks to 2K-32K, staged
#: float32 rows to 32K); 500, 1000 and 16390 are not multiples of 8 (scalar
#: variants).
ROW_LENGTHS = [8, 500, 512, 520, 1000, 1024, 1032, 2048, 2056, 4096, 4104, 8192, 16384, 16390, 16392, 32768, 32776, 65544]


def cap_row_grids(constants, blocks: int) -> None:
    """Row kernels launch at most ``blocks`` blocks, so each takes several
    rows in turn: persistent grids, the grids of blocks that prefetch, and
    the others (CUDA's limit, MAX_GRID_X)."""
    for name in ("PERSISTENT_BLOCKS", "PREFETCH_GRID_CAP", "MAX_GRID_X"):
        constants.setattr(gpu_schedule, name, blocks)


#: The bench's fusions (bench/run.py): what it measures is what is checked here.
BENCH = load_bench("run")


def bench_fusion(case: str, dtype: str):
    return BENCH.fusion_for(next(c for c in BENCH.CASES if c.name == case), dtype)


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layer_norm_ref(x, w, b):
    centered = x - x.mean(axis=1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + 1e-5) * w + b


def rms_norm_ref(x, w):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w


CASES = {
    "softmax": (softmax_ref, 0),
    "layer_norm": (layer_norm_ref, 2),
    "rms_norm": (rms_norm_ref, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_normalizations_at_every_row_scheme(case, dtype, device):
    check_rows(case, dtype, device, ROW_LENGTHS)


#: Rows that are not whole 16-byte vectors in either dtype: over the
#: tensor's flat vectors (FLAT_ROWS), each group's limit (a vector less than
#: the vector variant's: 508 and 1020 float32 columns in warps, 1016 and 2040
#: bfloat16, ... 32764 float32 on (1024, 8)) and one past it, to rows read
#: per generic; to 16K, rows within a vector of a cached group's columns
#: (511, 1023, 2047, 4095, 8191, 16383) take that group with an edge slot
#: (FLAT_EDGE_SLOTS); rows of fewer columns than a vector (3) take the
#: scalar variants. Three rows of an odd length end in a partial vector:
#: the tensor's last, loaded an element at a time.
SCALAR_LENGTHS = [3, 255, 257, 507, 509, 511, 513, 1015, 1017, 1019, 1021, 1023, 1025, 2039, 2041, 2047, 4095, 8191, 16375, 16377, 16383, 16385, 32757, 32761, 32767, 65529, 65535]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_normalizations_of_rows_that_are_not_whole_vectors(case, dtype, device):
    check_rows(case, dtype, device, SCALAR_LENGTHS)


@pytest.mark.parametrize("case", list(CASES))
def test_bfloat16_rows_aligned_to_4_bytes(case, device):
    """Bfloat16 arguments 4 bytes past a 16-byte boundary: two columns a
    vector access, and the norms' rows of 2K-16K columns kept packed a
    word a slot across their reductions (PACKED_ROWS; their compile
    aborted in LLVM before, test_gpu.py), rows that are not whole vectors
    too."""
    check_rows(case, "bfloat16", device, [8, 1000, 2048, 2050, 4096, 8192, 16384, 16390, 32768], lead=2)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_normalizations_of_rows_without_columns(case, dtype, device):
    """Rows of no columns take the scalar variants' uncached group (a
    cached block would load a column the row does not have): the call
    runs and returns the empty output, in the inputs' dtype."""
    _, weights = CASES[case]
    np_dtype = BF16 if dtype == "bfloat16" else np.dtype(np.float32)
    inputs = [np.zeros((3, 0), np_dtype)] + [np.zeros(0, np_dtype) for _ in range(weights)]
    (got,) = FusionExecutorCache(bench_fusion(case, dtype)).run([to_device(a, device) for a in inputs])
    assert to_host(got).shape == (3, 0) and to_host(got).dtype == np_dtype


@pytest.mark.gpu
@pytest.mark.parametrize("flat, cached", [(True, 2), (False, 2), (False, 0)], ids=["flat", "cached", "per-generic"])
@pytest.mark.parametrize("case", list(CASES))
def test_scalar_rows_taken_in_turn(flat, cached, case, constants):
    """203 rows that are not whole vectors on 16 blocks (every row grid
    capped), over the tensor's flat vectors (FLAT_ROWS; 2047 and 16383
    bfloat16, 1021 and 8191 float32 columns with an edge slot), or a column
    at a time, cached in registers a column a slot (SCALAR_CACHED_ROWS) or
    read per generic: each block or warp takes a dozen rows in turn, and
    the last row ends in the tensor's partial last vector."""
    constants.setattr(gpu_schedule, "FLAT_ROWS", flat)
    constants.setattr(gpu_schedule, "SCALAR_CACHED_ROWS", cached)
    cap_row_grids(constants, 16)
    check_rows(case, "bfloat16", "cuda", [511, 2047, 16383], rows=203)
    check_rows(case, "float32", "cuda", [1021, 8191, 50257], rows=203)


@pytest.mark.parametrize("cols", [512, 4096, 32768, 65544])
def test_row_sums_of_signed_zeros_are_positive_zero(cols, device):
    """A row sum starts from its fill, +0.0, so rows of -0.0 sum to +0.0 as
    in NumPy (each lane's partial sum starts from the fill, which is what
    makes the sum's sign of zero the fill's): rows of -0.0, of signed zeros
    mixed, and of random values, at lengths of the two kernels a row sum
    takes (warps, and blocks looping over the row)."""
    with FusionDefinition(name="row_sum") as fd:
        fd.add_output(fd.ops.sum(fd.define_tensor(shape=[-1, -1], dtype=DataType.Float), dims=[1]))
    x = np.full((6, cols), -0.0, np.float32)
    x[2:4] = np.where(RNG.random((2, cols)) < 0.5, -0.0, 0.0)
    x[4:] = RNG.standard_normal((2, cols))
    expected = x.astype(np.float64).sum(axis=1)
    got = run_checked(FusionExecutorCache(fd), [x], expected, np.float32, device, (1e-5, 1e-5), np.sqrt(cols), f"{cols} columns")
    assert not np.signbit(got[:4]).any(), got[:4]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_staged_rows_of_every_normalization(case, dtype, constants):
    """The staged variant forced on every fusion from rows of 4K columns (the
    register variants cut to 256 threads, the bytes-a-column floor off): it
    then stages bfloat16 rows and a softmax's, and takes rows that are short
    for it (most of a lane's slots outside the row)."""
    constants.setattr(gpu_schedule, "BLOCK_CACHED", ((256, 4),))
    constants.setattr(gpu_schedule, "SHARED_MIN_BYTES", 1)
    check_rows(case, dtype, "cuda", [4096, 4104, 8192, 16392, 32768, 65536, 4101, 16391, 32761])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_blocks_that_take_many_rows_in_turn(case, dtype, constants):
    """A grid of 16 blocks (every row grid capped at 16) for 203 rows:
    each block takes 12 or 13 rows in turn, at the row lengths of every
    cached block variant. Their reductions write the warps' partial results
    in rounds that alternate from one reduction to the next, across rows
    too (an RMS norm has one reduction a row: its round is the row's
    parity). A float32
    layer norm of 32K columns (1024, 8) keeps both weights in part in shared
    memory, copied once per block and waited for by each of its rows."""
    cap_row_grids(constants, 16)
    check_rows(case, dtype, "cuda", [2048, 4096, 8192, 16384, 32768], rows=203)


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [None, 3], ids=["a-row-a-warp", "capped-grid"])
@pytest.mark.parametrize("products", [False, True], ids=["sum", "sum-of-products"])
def test_streamed_bfloat16_row_sums_in_blocks_of_two_warps(products, blocks, constants):
    """bfloat16 row sums (the bench's inner sum, and a sum of products):
    rows that one generic reads, whose cached warp variants run in blocks of
    two warps (STREAMED_WARP_THREADS), at row lengths around the warps' and
    the blocks' limits and short rows that a group of a warp's lanes takes
    (SPAN_ROWS: 1, 2, 4 and 8 lanes; 200 columns, not whole vectors, in the
    scalar variant), 7 rows (the last block's warps or groups have none),
    and with the grid capped at 3 blocks, each taking rows in turn."""
    if blocks is not None:
        cap_row_grids(constants, blocks)
    with FusionDefinition(name="row_sum_bf16") as fd:
        t = fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), dtype=DataType.Float)
        if products:
            t = t * fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), dtype=DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.sum(t, dims=[1]), dtype=DataType.BFloat16))
    fec = FusionExecutorCache(fd)
    for cols in (8, 64, 128, 200, 256, 1000, 1024, 1032, 2048, 2056, 4096):
        inputs = [RNG.standard_normal((7, cols)).astype(BF16) for _ in range(1 + products)]
        wide = [a.astype(np.float64) for a in inputs]
        expected = (wide[0] * wide[1] if products else wide[0]).sum(axis=1)
        run_checked(fec, inputs, expected, BF16, "cuda", (1e-2, 1e-2), np.sqrt(cols), f"{cols} columns")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, budget", [("float32", 16 * 1024), ("bfloat16", 32 * 1024)])
@pytest.mark.parametrize("case", ["layer_norm", "rms_norm"])
def test_rows_that_keep_part_of_their_weights(case, dtype, budget, constants):
    """Weights kept alone in shared memory past SHARED_WEIGHT_BYTES (one
    weight) or SPLIT_WEIGHTS_BYTES (several), both cut here to 16 KB a
    weight of a float32 row and 32 KB of a bfloat16 one: an RMS norm keeps
    one slot a lane of its float32 weight and two of its bfloat16 one, a
    layer norm as many of each of its two weights. Each lane reads its first
    slots of a weight there and the others from memory, at row lengths of
    the 1024-thread blocks from just past the kept columns (bfloat16 rows
    of 16K-32K columns are kept packed on (512, 8) with no shared memory:
    PACKED_ROWS; from 50000 they take (1024, 8)), 16 blocks for 203 rows
    (the kept part copied once per block, read by each of its rows). The
    RMS norm's weight is kept in part rather than read through the
    non-coherent cache (NONCOHERENT_WEIGHTS off; see the next test)."""
    constants.setattr(gpu_schedule, "SHARED_WEIGHT_BYTES", budget)
    constants.setattr(gpu_schedule, "SPLIT_WEIGHTS_BYTES", 2 * budget)
    constants.setattr(gpu_schedule, "PERSISTENT_BLOCKS", 16)
    constants.setattr(gpu_schedule, "NONCOHERENT_WEIGHTS", False)
    lengths = [16392, 20000, 32768] + ([50000, 65536] if dtype == "bfloat16" else [])
    check_rows(case, dtype, "cuda", lengths, rows=203)


@pytest.mark.gpu
def test_long_rows_that_keep_more_of_their_weights(constants):
    """LONG_ROW_WEIGHTS: a float32 layer norm's rows of more than 24580
    columns on a (1024, 8) kernel of their own that keeps 160 KB of the two
    weights (5 slots a lane), the shorter ones on the 128 KB kernel (4), at
    row lengths on both sides of the cut, 16 blocks for 203 rows."""
    constants.setattr(gpu_schedule, "LONG_ROW_WEIGHTS", (24580, 160 * 1024))
    constants.setattr(gpu_schedule, "PERSISTENT_BLOCKS", 16)
    check_rows("layer_norm", "float32", "cuda", [20000, 24576, 24580, 24584, 28672, 32768], rows=203)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, budget", [("float32", 64 * 1024), ("bfloat16", 32 * 1024)])
def test_rows_that_read_their_weight_through_the_noncoherent_cache(dtype, budget, constants):
    """An RMS norm's one weight past SHARED_WEIGHT_BYTES on 1024-thread
    blocks (float32 rows past 16K columns; bfloat16 ones past 16K with the
    budget cut to 32 KB), read through ld.global.nc (NONCOHERENT_WEIGHTS),
    a row a block on a grid capped at 16 blocks for 203 rows, so each block
    takes a dozen rows in turn; rows past a whole number of the lanes' slots
    too."""
    constants.setattr(gpu_schedule, "SHARED_WEIGHT_BYTES", budget)
    cap_row_grids(constants, 16)
    lengths = [16392, 20000, 24576, 32768]
    check_rows("rms_norm", dtype, "cuda", lengths, rows=203, ptx="ld.global.nc.L2::cache_hint.v4.b32")  # (its loads L2 evict_last: L2_EVICT_LAST)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["rms_norm", "layer_norm"])
def test_rows_kept_packed_across_their_reductions(case, constants):
    """Bfloat16 RMS and layer norm rows kept across their reductions as
    loaded and converted to float32 again after each (PACKED_ROWS): on
    (512, 8) from past 16K columns to 32K, on (1024, 8) to 64K (the RMS
    norm's weight read through the non-coherent cache, the layer norm's
    kept in part in shared memory), rows past a whole number of the lanes'
    slots too, a grid capped at 16 blocks for 203 rows, so each block takes
    a dozen rows in turn."""
    cap_row_grids(constants, 16)
    lengths = [16392, 20000, 24576, 32768, 32776, 50000, 65536]
    check_rows(case, "bfloat16", "cuda", lengths, rows=203, ptx="mov.b32")


@pytest.mark.gpu
@pytest.mark.parametrize("case, dtype", [("rms_norm", "float32"), ("rms_norm", "bfloat16"), ("layer_norm", "bfloat16"), ("layer_norm", "float32")])
def test_rows_that_load_their_weights_with_the_row(case, dtype, constants):
    """Cached blocks of 4 slots a lane or more that load their weights with
    the row, before its first reduction (EARLY_WEIGHTS; a bfloat16 row and
    its weights then kept packed across the reductions): RMS norms of 4K-16K
    columns, layer norms of 4K (float32) and 6K-8K (bfloat16), rows past a
    whole number of the lanes' slots too, a grid capped at 16 blocks for
    203 rows, so each block takes a dozen rows in turn."""
    cap_row_grids(constants, 16)
    check_rows(case, dtype, "cuda", [4096, 4104, 6000, 8192, 8200, 12288, 16384], rows=203)


@pytest.mark.gpu
@pytest.mark.parametrize("narrow, split", [(True, True), (True, False), (False, None)])
@pytest.mark.parametrize("case", list(CASES))
def test_cached_blocks_with_32_bit_and_64_bit_columns(case, narrow, split, constants):
    """The cached block variants' column arithmetic (gpu_schedule.NARROW_COLUMNS)
    each way a kernel can take it: slots in 32 bits with every vector index
    split into the row's first vector and the column's (split), or the row
    operands' kept 64-bit (the default of the float32 layer norms of 16K
    and 32K columns), or all 64-bit (off). Float32 rows of every cached block
    variant, some past a whole number of its slots (lanes clamp slots to
    the row's last vector), 16 blocks for 203 rows."""
    constants.setattr(gpu_schedule, "NARROW_COLUMNS", narrow)
    constants.setattr(gpu_schedule, "NARROW_ROW_OPERANDS", split)
    constants.setattr(gpu_schedule, "PERSISTENT_BLOCKS", 16)
    check_rows(case, "float32", "cuda", [2056, 4104, 8192, 16392, 20000, 32768], rows=203)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["layer_norm", "rms_norm"])
def test_rows_in_buffers_next_to_their_weights(case, constants):
    """Row buffers next to the weights (gpu_schedule.BUFFER_WITH_WEIGHTS, off
    by default): bfloat16 rows of 16K-32K columns on 1024-thread blocks, a
    layer norm's with one buffer, an RMS norm's with two, 16 blocks for 203
    rows (each block turns its buffers over many times)."""
    constants.setattr(gpu_schedule, "BUFFER_WITH_WEIGHTS", True)
    constants.setattr(gpu_schedule, "PERSISTENT_BLOCKS", 16)
    check_rows(case, "bfloat16", "cuda", [16392, 32768], rows=203)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_buffered_rows_of_two_inputs_one_read_last(dtype, constants):
    """A softmax of ``x`` times a second full-size input ``y`` that only the
    last pass reads, after the row's first reduction, when ``x``'s buffer is
    already being refilled with a later row: ``x`` arrives in the row
    buffers (gpu_schedule.BUFFER_NEXT_ROW), ``y`` must be read from memory.
    On 1024-thread blocks of 2 slots (3 buffers of ``x`` fit), 16 blocks for
    203 rows, so each block turns its buffers over 4 times."""
    constants.setattr(gpu_schedule, "BLOCK_CACHED", ((1024, 2),))
    constants.setattr(gpu_schedule, "PERSISTENT_BLOCKS", 16)
    low = dtype == "bfloat16"
    np_dtype = BF16 if low else np.dtype(np.float32)
    kind = {"float32": DataType.Float, "bfloat16": DataType.BFloat16}[dtype]
    with FusionDefinition(name=f"softmax_times_{dtype}") as fd:
        x = BENCH.fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=kind), low)
        y = BENCH.fd_up(fd, fd.define_tensor(shape=[-1, -1], dtype=kind), low)
        e = fd.ops.exp(x - fd.ops.max(x, dims=[1], keepdim=True))
        fd.add_output(BENCH.fd_down(fd, e / fd.ops.sum(e, dims=[1], keepdim=True) * y, kind))
    fec = FusionExecutorCache(fd)
    for cols in (4096 if low else 2048, 10000 if low else 6000, 16384 if low else 8192):
        inputs = [(RNG.standard_normal((203, cols)) * 3 + 1).astype(np_dtype) for _ in range(2)]
        x64, y64 = (a.astype(np.float64) for a in inputs)
        expected = softmax_ref(x64) * y64
        scale = np.abs(expected).max(axis=1, keepdims=True)
        run_checked(fec, inputs, expected, np_dtype, "cuda", TOLERANCE[dtype], scale, f"{dtype} {cols}", ptx="cp.async.bulk.shared::cluster.global")


@pytest.mark.gpu
def test_rows_of_a_bfloat16_input_among_float32_ones(constants):
    """A layer norm of a bfloat16 x with float32 weights and output: vectors
    of 4 columns, so x's rows (8 bytes a vector) need not start or end on
    16 bytes, and x is neither prefetched nor copied in bulk. Rows of every
    block scheme, some not a multiple of 8 columns, 16 blocks for 40 rows
    (each block takes rows in turn)."""
    cap_row_grids(constants, 16)
    with FusionDefinition(name="layer_norm_mixed") as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16), DataType.Float)
        w = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        centered = x - fd.ops.mean(x, dims=[1], keepdim=True)
        var = fd.ops.mean(centered * centered, dims=[1], keepdim=True)
        fd.add_output(centered * fd.ops.rsqrt(var + 1e-5) * w + b)
    fec = FusionExecutorCache(fd)
    for cols in (8196, 16388, 32772, 65540):
        inputs = [(RNG.standard_normal((40, cols)) * 3 + 1).astype(BF16)]
        inputs += [(RNG.standard_normal(cols) + 0.5).astype(np.float32) for _ in range(2)]
        expected = layer_norm_ref(*[a.astype(np.float64) for a in inputs])
        run_checked(fec, inputs, expected, np.float32, "cuda", TOLERANCE["float32"], 1.0, f"{cols} columns")


def check_rows(case, dtype, device, lengths, rows=3, ptx=None, lead=0):
    """``case`` in ``dtype`` on ``rows`` rows of each of ``lengths`` against
    the float64 reference (see run_checked; ``lead``: every argument starts
    that many elements past an aligned start), all on one compiled fusion."""
    ref, weights = CASES[case]
    low = dtype == "bfloat16"
    np_dtype = BF16 if low else np.dtype(np.float32)
    fec = FusionExecutorCache(bench_fusion(case, dtype))
    for cols in lengths:
        inputs = [(RNG.standard_normal((rows, cols)) * 3 + 1).astype(np_dtype)]
        inputs += [(RNG.standard_normal(cols) + 0.5).astype(np_dtype) for _ in range(weights)]
        expected = ref(*[a.astype(np.float64) for a in inputs])
        # softmax outputs are about 1/cols: compare them relative to the row's largest
        scale = np.abs(expected).max(axis=1, keepdims=True) if case == "softmax" else 1.0
        run_checked(fec, inputs, expected, np_dtype, device, TOLERANCE[dtype], scale, f"{case} {dtype} {cols} columns", ptx, lead)
    assert fec.stats.misses == 1


#: (rtol, atol) of a result computed in float32 and stored in each dtype.
TOLERANCE = {"float32": (2e-5, 2e-5), "bfloat16": (2**-7, 2e-2)}


def run_checked(fec, inputs, expected, out_dtype, device, tolerance, scale, what, ptx=None, lead=0):
    """Run ``fec`` on host ``inputs`` (moved to ``device``, ``lead``
    elements past an aligned start, the output too) into an output of
    ``out_dtype`` poisoned with NaN; check it against the float64
    ``expected`` (both divided by ``scale``) and the inputs unchanged.
    ``ptx``: text the compiled kernels' PTX must hold. Returns the output
    on the host."""
    before = [a.copy() for a in inputs]
    out = past_aligned_start(np.full(expected.shape, np.nan, out_dtype), lead, device)
    arguments = [past_aligned_start(a, lead, device) for a in inputs]
    if ptx is not None:
        compiled, _, _ = fec.compiled_for(arguments, [out])
        assert ptx in compiled.program.ptx
    (got,) = fec.run(arguments, outputs=[out])
    got = to_host(got)
    rtol, atol = tolerance
    np.testing.assert_allclose(got.astype(np.float64) / scale, expected / scale, rtol=rtol, atol=atol, err_msg=what)
    for array, original in zip(inputs, before):
        np.testing.assert_array_equal(array.view(np.uint8), original.view(np.uint8))
    return got


@pytest.mark.gpu
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_staged_rows_run_from_the_hit_path_and_a_graph(cuda_graph, constants):
    """A staged launch takes its shared memory from a formula of the row
    length (float32 RMS norm rows of 16K-32K columns, staged by the register
    rule alone: REGISTER_ROOM 1): the cache-hit launch and a CUDA graph's
    node (whose launches are traced once per shape) must pass it too, for
    each row length."""
    constants.setattr(gpu_schedule, "REGISTER_ROOM", 1)
    fd = bench_fusion("rms_norm", "float32")
    for cols in (20000, 32768, 20000):
        x, w = RNG.standard_normal((5, cols)).astype(np.float32), RNG.standard_normal(cols).astype(np.float32)
        expected = rms_norm_ref(x.astype(np.float64), w.astype(np.float64))
        for _ in range(2):  # the second call is a hit (and a graph replay)
            (got,) = fd.execute([to_device(x, "cuda"), to_device(w, "cuda")], cuda_graph=cuda_graph)
            np.testing.assert_allclose(to_host(got), expected, rtol=2e-5, atol=2e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_rows_of_no_columns(case, cuda):
    """Three rows of no columns: the vector variants, whose loads are clamped
    into the row (gpu_schedule.CLAMPED_LOADS), take rows of at least one
    vector, so these run the scalar variant, which loads nothing: the call
    returns the empty output and no launch faults."""
    _, weights = CASES[case]
    inputs = [np.zeros((3, 0), np.float32)] + [np.zeros(0, np.float32)] * weights
    (got,) = FusionExecutorCache(bench_fusion(case, "float32")).run([to_device(a, "cuda") for a in inputs])
    assert to_host(got).shape == (3, 0)


#: Rows that are not whole vectors and that groups of a warp's lanes take
#: with FLAT_SPAN_ROWS: each side of a span's step (float32, 4 columns a
#: vector: 12, 28, 60, 124 and 252 columns; bfloat16, 8: 24, 56, 120, 248
#: and 504) and past the last, to a warp a row.
FLAT_SPAN_LENGTHS = [5, 9, 10, 13, 23, 25, 27, 29, 55, 57, 61, 77, 100, 119, 121, 123, 125, 247, 249, 250, 251, 253, 255, 503, 505, 511]


@pytest.mark.gpu
@pytest.mark.parametrize("blocks, scalar", [(None, 0), (3, 0), (None, 504)], ids=["a-row-a-group", "capped-grid", "scalar-short-rows"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_short_rows_that_are_not_whole_vectors_in_groups_of_lanes(case, dtype, blocks, scalar, constants):
    """FLAT_SPAN_ROWS on (as by default): short rows that
    are not whole vectors walk the tensor's flat vectors in groups of a
    warp's lanes, 1 to 16 lanes a row, each group's first and last vectors
    shared with the rows beside it (and, in a warp, with other groups');
    7 rows, so the last warp's groups are partly idle; uncapped and on a
    grid capped at 3 blocks. With SCALAR_SHORT_ROWS = 504 (off by default:
    sweep 42a), those rows take the scalar variants instead, a
    column a load, in groups of lanes up to 128 columns and a warp a row
    beyond; rows of 505 and 511 the flat warp as before."""
    constants.setattr(gpu_schedule, "FLAT_SPAN_ROWS", True)
    constants.setattr(gpu_schedule, "SCALAR_SHORT_ROWS", scalar)
    if blocks is not None:
        cap_row_grids(constants, blocks)
    check_rows(case, dtype, "cuda", FLAT_SPAN_LENGTHS, rows=7)


#: Row lengths of the plain reductions' row plans (ROW_PLAN_REDUCTIONS):
#: groups of 1 to 16 lanes (float32 rows of up to 256 columns), warps of 4
#: and 8 slots (to 512 and 1024 columns), cached blocks to 32K and rows read
#: per pass past them; 3, 100 and 1000 are not whole vectors (the flat and
#: scalar variants), 1 is less than one.
PLAIN_LENGTHS = [1, 3, 4, 16, 64, 100, 128, 256, 260, 512, 1000, 1024, 1032, 4096, 8192, 32768, 32776, 65544]


def plain_reduction(kind: str):
    """(fusion, float64 reference and exactness of each output, dtype, rank) of a reduction over the last dim."""
    dtype, np_dtype = {"sum-float64": (DataType.Double, np.float64), "sum-int32": (DataType.Int32, np.int32)}.get(kind, (DataType.Float, np.float32))
    rank = 3 if kind in ("sum-3d", "sum-of-two-dims") else 2
    dims = [1, 2] if kind == "sum-of-two-dims" else [rank - 1]
    with FusionDefinition(name="plain_" + kind.replace("-", "_")) as fd:
        x = fd.define_tensor(shape=[-1] * rank, dtype=dtype)
        if kind in ("max", "sum-and-max"):
            if kind == "sum-and-max":
                fd.add_output(fd.ops.sum(x, dims=dims))
            fd.add_output(fd.ops.max(x, dims=dims))
        else:
            fd.add_output(fd.ops.sum(x, dims=dims, keepdim=kind == "sum-keepdim"))
    axes = tuple(dims)
    row_sum, row_max = (lambda x: x.sum(axis=axes, keepdims=kind == "sum-keepdim"), kind == "sum-int32"), (lambda x: x.max(axis=axes), True)
    refs = {"max": [row_max], "sum-and-max": [row_sum, row_max]}.get(kind, [row_sum])
    return fd, refs, np_dtype, rank


@pytest.mark.parametrize("kind", ["sum", "max", "sum-and-max", "sum-keepdim", "sum-float64", "sum-int32", "sum-3d", "sum-of-two-dims", "sum-strided"])
def test_plain_reductions_as_row_plans(kind, device, monkeypatch):
    """Plain reductions over the last dims with ROW_PLAN_REDUCTIONS on, on
    every row and in its "short" mode (the default: the groups of lanes,
    then the inner reductions), uncapped and on a
    grid capped at 3 blocks. On the GPU: the row plan's kernels, a group of
    a warp's lanes to a block a row, thread 0 of the group storing the
    row's results (a sum and a max of the same rows in one kernel; float64
    sums, and int32 ones promoted to int64, in blocks: their accumulators
    are too wide for shuffles; a sum of every other column into every other
    element of a buffer, in the strided variants; a sum over the last two
    dims of a 3-D tensor, a column at a time). On the CPU: the same fusions
    as they always run. 7 rows (3 x 7 in 3-D), given outputs poisoned with
    NaN (-1 for int64), against float64 NumPy: float sums to a rounding
    error that grows with the row (as its square root where partial sums
    are combined, as the row where one accumulator takes every column: the
    CPU's strided rows, whose error at 65544 columns had a 99th percentile of
    3.4e-3, where 64 eps sqrt(cols) is 2.0e-3), integer sums and maxima
    exact; the input unchanged, and the strided output's gaps still poisoned."""
    monkeypatch.setenv("FUSER_CACHE", "0")
    step = 2 if kind == "sum-strided" else 1
    for mode, blocks in [(True, None)] if device == "cpu" else [(True, None), ("short", None), (True, 3), ("short", 3)]:  # (the cap stays set)
        monkeypatch.setattr(gpu_schedule, "ROW_PLAN_REDUCTIONS", mode)
        if blocks is not None:
            cap_row_grids(monkeypatch, blocks)
        fd, refs, np_dtype, rank = plain_reduction(kind)
        fec = FusionExecutorCache(fd)
        integer = np.issubdtype(np_dtype, np.integer)
        eps = 0 if integer else np.finfo(np_dtype).eps
        poison, out_dtype = (-1, np.int64) if integer else (np.nan, np_dtype)
        for cols in PLAIN_LENGTHS:
            shape = (3, 7, cols * step)[3 - rank :]
            whole = RNG.integers(-1000, 1000, shape).astype(np_dtype) if integer else RNG.standard_normal(shape).astype(np_dtype)
            columns = (slice(None),) * (rank - 1) + (slice(None, None, step),)  # DeviceArrays take no Ellipsis
            before, x = whole.copy(), whole[columns]
            expected = [ref(x.astype(np.float64)) for ref, _ in refs]
            buffers = [to_device(np.full((e.shape[0] * step, *e.shape[1:]), poison, out_dtype), device) for e in expected]
            got = fec.run([to_device(whole, device)[columns]], outputs=[b[::step] for b in buffers])
            for out, want, (_, exact) in zip(got, expected, refs):
                atol = 0 if exact else eps * max(64 * np.sqrt(cols), 2 * cols)
                np.testing.assert_allclose(to_host(out), want, rtol=0 if exact else 64 * eps, atol=atol, err_msg=f"{kind} {cols} columns, {mode}, {blocks} blocks")
            gaps = [to_host(b)[1::step] for b in buffers] if step > 1 else []
            assert all(np.isnan(g).all() for g in gaps), f"{kind} {cols} columns: written outside the output's view"
            np.testing.assert_array_equal(whole, before)


@settings(
    derandomized(20), phases=[Phase.explicit, Phase.generate],  # a shrink costs minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],  # `device` is a name, the same for every draw
)
@given(**ROW_PROGRAMS, shape=row_shapes([3, 37, 128, 1000, 4100, 20000]), seed=st.integers(0, 2**16))
def test_random_row_programs_match_the_reference(device, dtype, stages, weight, outputs, shape, seed):
    """Row programs (test/random_programs.py: stages of unary ops, a kept
    reduction over the rows or the columns and a binary op; a weight;
    outputs written into the input) on rows the warp, span, cached block and
    uncached variants take, against the float64 reference, given outputs
    poisoned, the inputs not written unchanged."""
    arrays = row_inputs(dtype, shape, weight, np.random.default_rng(seed))
    fd = row_program(dtype, len(shape), stages, weight, outputs)
    visible, written, written_at = visible_then_written(fd, evaluate(fd, arrays))
    inputs = [to_device(a, device) for a in arrays]
    outs = [to_device(p, device) for p in poisoned(fd, visible)]
    got = [to_host(g) for g in fd.execute(inputs, outputs=outs)] + [to_host(inputs[k]) for k in written_at]
    for k, (g, want) in enumerate(zip(got, visible + written)):
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))  # tanh keeps the values within a few units
        np.testing.assert_allclose(g.astype(np.float64), want, rtol=2e-2, atol=2e-2 * scale, err_msg=f"result {k}")
    for k, (a, original) in enumerate(zip(inputs, arrays)):
        if k not in written_at:
            assert_unchanged(a, original, f"input {k} changed")
