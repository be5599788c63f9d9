"""GPU schedulers: segment functions (linalg on memrefs) to ``gpu.func`` kernels
and launch programs.

:func:`schedule_segment` takes one segment function after bufferization
(``linalg.generic`` ops on memrefs, ``linalg.fill``/``linalg.copy`` generalised,
intermediate ``memref.alloc``\\ s, index arithmetic on sizes) and writes one
or more ``gpu.func`` kernels into a ``gpu.module``. What the host must do to
run the segment, it returns as data, a
:class:`~fuser_mlir.runtime.launch.SegmentProgram`: the temporary buffers to
allocate (with size formulas in terms of the segment's argument sizes) and
the kernel launches in order (grid formula, block size, argument bindings).
No host code is compiled: the runtime evaluates the formulas and launches the
kernels with the CUDA driver, so a compiled fusion runs without MLIR.

Each kernel argument is a memref (the launch passes the memref descriptor:
allocated and aligned pointer, offset, sizes, strides, as separate 64-bit
parameters) or a scalar. Values the kernel body needs from the segment
function (constants, sizes, scalar arithmetic on scalar inputs) are
recomputed inside the kernel from its arguments.

Schedulers (a generic's iteration space is split into its parallel dims P
and reduction dims R; *layouts* say which segment arguments are dense and
how aligned, from the executor's cache key):

persistent rows (a whole segment)
    when the segment's generics all run over the ``[P..., R]`` space of its
    first reduction (R the trailing dims) or over one value per row, as a
    softmax, layer norm or RMS norm do after segmentation rule 2b: one
    kernel in which each group of threads takes rows in a grid-stride loop
    and runs every generic of the segment in turn for its row. A reduction's
    result is combined over the group (in a block holding the row in
    registers, with one barrier: :func:`_block_reduce`) and stays in a
    register for the rest of the row, as does every value computed per row (their temporaries are
    not even allocated). Rows of up to :data:`WARP_CACHED` 16-byte slots
    per lane of a warp (float32: 1024 columns; rows that half a warp
    holds, a group of its lanes a row: :data:`SPAN_ROWS`, :data:`FLAT_SPAN_ROWS`; in blocks of two
    warps where one generic reads the row: :data:`STREAMED_WARP_THREADS`),
    or of blocks of 128 to 1024 threads holding a
    few 16-byte slots a lane (:data:`BLOCK_CACHED`: up to 32K columns where
    the row's values fit in registers), with 16-byte vector access, are
    *cached*: each lane loads its columns once, into registers, and every
    generic reads them there; full-size temporaries stay in registers too.
    A 16-bit row that fits only as loaded, not as float32 values (an RMS or
    layer norm of bfloat16), is kept packed across its reductions
    (:data:`PACKED_ROWS`); a cached block of 4 slots a lane or more
    loads its weights with its row where they fit (:data:`EARLY_WEIGHTS`). The cached 1024-thread blocks (one an SM) take rows in a persistent
    grid and get them ahead, in shared memory, from the copy engine
    (:data:`BUFFER_NEXT_ROW`, :class:`_RowBuffer`), or keep their weights
    there alone (:data:`SHARED_WEIGHTS_ALONE`); a weight too large for that
    and no wider than the rows is read through the non-coherent cache
    instead, a row a block (:data:`NONCOHERENT_WEIGHTS`).
    Longer float32 rows, up to 32K columns, are *staged*
    (:data:`SHARED_THREADS`): a 1024-thread block loads a lane's slots of the
    row at once into dynamic shared memory (the launch's ``shared_bytes`` is
    a formula of the row length), and later generics read them there.
    Longer rows still are read again by each generic (from L2 at best), and
    full-size buffers are written and read back by the same lane, so no
    barrier is needed between the generics. Staged and read-again blocks ask
    the L2 for their next row as they start a row (:data:`PREFETCH_NEXT_ROW`).
    A float32 division by a value
    of the row (a softmax's sum) is a multiplication by its reciprocal
    (:func:`_divided`).
flat pointwise (R empty, every operand dense and read at the same index)
    one 16-byte vector per thread (where the alignments allow) in a grid
    that covers the tensor, and a scalar tail.
row pointwise (R empty, rows of at least :data:`ROW_POINTWISE_MIN`)
    where the output and the inputs read at its index are dense and
    aligned, the flat scheme over the tensor's vectors, each vector's row
    and column by one division: for rows that are whole vectors where one
    such input is read (``x * w + b``), the weights read as vectors at that
    column (:data:`FLAT_WHOLE_ROWS`); for rows that are not, an element at a
    time (:data:`FLAT_SCALAR_ROWS`). Otherwise (a write-only broadcast such
    as a column plus a row, strided operands) warps take rows shorter than a
    block's chunk (a write-only broadcast's rows of 256 vectors or more a
    block of 128 threads each, :data:`WRITE_ONLY_BLOCK`), blocks take
    pieces of longer rows (:data:`ROW_PIECE_CHUNKS`), threads stride over
    the row or piece: no index division per element, and a column operand
    broadcast along the row is one value per row; a grid-stride loop with
    index division for short rows.
inner reduction (R dims after the P dims)
    a warp per row for rows up to :data:`WARP_ROW_LIMIT` elements (butterfly
    ``gpu.shuffle``), a block per row otherwise (``gpu.all_reduce``, then a
    barrier before the block's next row): lanes accumulate strided slices
    of the row in registers, lane 0 stores the row's result. With
    :data:`ROW_PLAN_REDUCTIONS` (``"short"``: short rows), the persistent row
    scheme instead.

Row kernels walk a row in chunks of :data:`CHUNK_SLOTS` slots per lane (a
slot: one column, or one vector of them), unrolled: the chunk's loads, each
guarded by its slot being inside the row, are issued before its arithmetic
and stores, and a reduction keeps one partial result per slot (combined as a
tree at the end), so several loads per lane are in flight (see
:class:`_RowWalk`).
outer reduction (R dims before the P dims, a full reduction included)
    a column scheme in two kernels: threads own consecutive output columns
    (coalesced reads, :data:`OUTER_UNROLL` rows per iteration), the R space
    is split into ``S`` chunks along ``blockIdx.y`` so that tall inputs
    still fill the GPU, each writing a
    partial result to a ``[S, columns]`` temporary; a second kernel combines
    the ``S`` partials of each column. Columns that are whole 16-byte
    vectors of dense, aligned inputs are read a vector a lane, in tiles of
    a block's warps that take every 8th row of the split and combine their
    results in shared memory (:data:`OUTER_VECTORS`); many splits are
    combined the same way, a block's warps each taking every 8th split of
    32 columns (:data:`OUTER_COMBINE_TILES`). A pointwise generic over the
    columns that follows the reduction runs in the combining kernel
    (:data:`OUTER_EPILOGUES`).
serial (any other reduction)
    one thread per output element looping over the whole R space.

Row kernels read and write 16-byte vectors of consecutive columns when every
operand that varies along the row is dense with the row as its last dim and
aligned for it (:meth:`_SegmentScheduler.row_lanes`). Choices that depend on
sizes are made at launch: a scheme is compiled in each variant (warp or block
per row, vector or scalar columns, row or flat pointwise) and each launch
carries a ``when`` condition (the row length against the limits, the row
length a multiple of the vector width), exactly one of which holds.
Kernels that write as much as they read (every scheme but the reductions to
fewer values: the inner, outer and serial reductions) load with the L2
eviction priority ``evict_last`` (:data:`L2_EVICT_LAST`).

The block-level schemes need the combining operation of each accumulator: the
generic's body must yield ``combine(acc, f(inputs))`` where ``combine`` is an
associative and commutative arith op (:data:`ALL_REDUCE_OPS`) and ``acc`` is
used nowhere else, and the preceding ``linalg.fill`` of the output must be
the identity of ``combine`` (or ``combine`` idempotent, like max). Otherwise
the serial scheme runs (correct, slow). The fill is folded into the
reduction kernel's initial value; a fill that is not folded is a pointwise
kernel of its own.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from fuser_mlir._mlir import arith, gpu, ir, llvm, math, memref, nvvm, scf, vector
from fuser_mlir.errors import CompileError
from fuser_mlir.pipeline import sm_number
from fuser_mlir.runtime.launch import KernelLaunch, SegmentProgram, Temp

#: Threads per block of every kernel.
THREADS = 256
#: Grid cap of grid-stride loops (about 8 blocks per SM on an H200).
MAX_BLOCKS = 1056
#: Grid cap of the row kernels whose blocks prefetch their next row
#: (:data:`PREFETCH_NEXT_ROW`), rows past it in a grid-stride loop. The
#: other row kernels that are not persistent launch a block per row (or
#: piece of a row, :data:`ROW_PIECE_CHUNKS`), or a warp per row, up to
#: CUDA's limit (:data:`MAX_GRID_X`): blocks that end after one row or piece
#: keep more loads in flight than blocks that walk several in turn. On the
#: H200 (1 GB, back to back / one call after an L2 flush; capped at 8448 ->
#: not): RMS norm bfloat16 8K 0.93 / 0.93 of copy -> 0.97 / 0.96, layer norm
#: bfloat16 8K 0.93 / 0.94 -> 0.97 / 0.98, softmax bfloat16 8K 0.93 / 0.93 ->
#: 0.98 / 0.97, layer norm float32 8K 0.96 / 0.96 -> 0.99 / 0.96, scale_bias
#: float32 32K 0.94 / 0.94 -> 1.00 / 0.99, bfloat16 8K 0.93 / 0.93 -> 0.98 /
#: 0.98, broadcast_add bfloat16 1K 1.00 / 0.99 -> 1.07 / 1.04; at 256 MB
#: within 0.01 or better (bench/results/h200-sweeps.txt, sweep 18).
PREFETCH_GRID_CAP = MAX_BLOCKS * 8
#: Blocks an SM the outer-reduction scheme aims for: its grid (split count ×
#: column blocks) is at most this many times the device's SMs (the launch
#: formula's ``["sms"]``), the splits rounded down, so that the partial
#: results take one wave of blocks: the tile kernel (256 threads, 60-64
#: registers) fits 4 blocks an SM. On the H200 (256 MB, back to back / one
#: call after an L2 flush; 1056 blocks rounded up before): f32 rows of 1024
#: columns 0.95 / 0.88 of copy -> 1.02 / 0.93, bfloat16 0.87 / 0.82 -> 0.97 /
#: 0.88, f32 rows of 64 columns 0.65 / 0.61 -> 0.84 / 0.77, bfloat16 rows of
#: 16K columns (1088 -> 512 blocks) 0.82 / 0.77 -> 0.99 / 0.89; at 1 GB f32
#: 1.05 -> 1.06, bfloat16 1.02 -> 1.04. 8 an SM (two waves) and 2 lost on
#: every shape, and 528 blocks rounded up (576 for 16K columns) lost on the
#: wide rows (bench/results/h200-sweeps.txt, sweep 25).
OUTER_BLOCKS_PER_SM = 4
#: Fewest reduced rows per split of the outer-reduction scheme.
OUTER_MIN_ROWS = 32
#: Rows a thread of the outer-reduction scheme reads per loop iteration (all
#: loads first, one partial result each): loads in flight per thread.
OUTER_UNROLL = 4
#: Outer reductions whose inputs along the columns are dense, aligned and
#: read at their own last dim (one column dim) read 16-byte vectors where
#: the column count is a multiple of the vector: a block of warps, a lane a
#: vector of consecutive columns, each warp every ``THREADS // WARP``-th row
#: of the split, the warps' results combined in shared memory
#: (:meth:`_SegmentScheduler.outer_tiles`). False: a column a thread. On
#: the H200 (outer sums of rows of 1024 columns, back to back; with
#: OUTER_COMBINE_TILES): bfloat16 0.70 -> 0.85 of copy at 256 MB, 0.72 ->
#: 1.00 at 1 GB; float32 0.89 -> 0.94, 1.02 -> 1.04 (h200-sweeps.txt, sweep 22).
OUTER_VECTORS = True
#: Splits from which the outer reduction's second kernel combines them in
#: tiles (:meth:`_SegmentScheduler.combine_tiles`: a block's warps take 32
#: columns, each warp every 8th split) instead of a thread a column looping
#: over every split (a chain of L2 loads, on a few blocks where the columns
#: are few). 0: never. On the H200 (as above, with OUTER_VECTORS; 256 MB):
#: bfloat16 0.81 -> 0.85 of copy, float32 0.91 -> 0.94.
OUTER_COMBINE_TILES = 16

#: An outer reduction followed by a pointwise generic over its columns (the
#: cast of a bfloat16 sum back to bfloat16, a mean's scaling) runs that
#: generic in its combining kernel, at each column's result
#: (:meth:`_SegmentScheduler.epilogue_of`), instead of in a kernel of its own.
#: False: a kernel of its own.
OUTER_EPILOGUES = True

#: Bytes per vector load/store of the flat pointwise scheme.
VECTOR_BYTES = 16
#: (dense, alignment) of the buffers the runtime allocates.
FRESH_LAYOUT = (True, 256)

#: Reduction combiner (arith op) -> ``gpu.all_reduce`` operation.
ALL_REDUCE_OPS = {
    "arith.addf": "add",
    "arith.addi": "add",
    "arith.mulf": "mul",
    "arith.muli": "mul",
    "arith.maxsi": "maxsi",
    "arith.minsi": "minsi",
    "arith.maxui": "maxui",
    "arith.minui": "minui",
    "arith.maximumf": "maximumf",
    "arith.minimumf": "minimumf",
    "arith.maxnumf": "maxnumf",
    "arith.minnumf": "minnumf",
    "arith.ori": "or",
    "arith.andi": "and",
    "arith.xori": "xor",
}
#: Combiners for which a repeated initial value does not change the result.
_IDEMPOTENT = {"maxsi", "minsi", "maxui", "minui", "maximumf", "minimumf", "maxnumf", "minnumf", "or", "and"}
#: Identity element of the non-idempotent combiners.
_IDENTITY = {"add": 0, "mul": 1, "xor": 0}

#: Host ops that only compute sizes or scalars: recomputed where needed.
_PURE_PREFIXES = ("arith.", "math.", "index.")


#: Shortest innermost dim for which a strided pointwise generic runs a block per row.
ROW_POINTWISE_MIN = 128
#: Longest row (elements) reduced by one warp; longer rows get a block.
WARP_ROW_LIMIT = 4096
WARP = 32

#: 16-byte slots of a row each lane keeps in registers in the *cached* warp
#: variants of a persistent row kernel, by row length: a row of up to 32 times
#: this many slots (float32: 512 and 1024 columns; bfloat16 1K and 2K) is read
#: from memory once, however many generics read it. Rows fill the lanes'
#: slots or nearly: a bfloat16 softmax of 2048 columns ran at 0.61 of copy on
#: a 256-thread block, 0.91 on a warp of 8 slots, which ran rows of 1024 at
#: 0.59 (0.97 on 4 slots; bench/results/h200-sweeps.txt, sweep 4).
WARP_CACHED = (4, 8)
#: Threads of a block of the cached warp variants (a warp a row): one warp, as
#: Inductor's persistent reductions of 1K columns run. An SM's register file is
#: shared out by the warp, so blocks of one warp pack it more tightly than
#: blocks of eight (an RMS norm float32 of 1K columns at 80 registers: 25 warps
#: an SM against 24). They declare no ``.maxntid`` (with it ptxas allots fewer
#: registers, and that RMS norm ran at 0.87 of copy instead of 0.99). On the
#: H200 (256 MB, back to back, 256 threads -> 32; sweep 23f): layer norm
#: bfloat16 of 1K columns 0.98 -> 1.01 of copy, RMS norm bfloat16 0.99 ->
#: 1.01, softmax float32 0.99 -> 1.00, layer norm float32 1.00 -> 1.00, RMS
#: norm float32 0.99 -> 0.99.
WARP_BLOCK_THREADS = WARP
#: Rows that half a warp's lanes hold in the slots of the cached warp
#: variant of the fewest (:data:`WARP_CACHED`; bfloat16 rows of up to 512
#: columns, float32 256) take a variant of their own that splits a warp into
#: groups of ``span`` lanes, each taking a row: ``span`` the fewest lanes, a
#: power of two from 1 to 16, whose slots hold the row (a bfloat16 row of
#: 128 columns: 4 lanes of 4 vectors, 8 rows a warp), worked out in the
#: kernel from the row length and in the launch grid the same way; partial
#: results are combined over the group's lanes alone
#: (:func:`_warp_all_reduce`), and its loads are clamped into the row
#: (:data:`CLAMPED_LOADS`). A warp a row left a row of 128 columns 4 of a
#: warp's 32 lanes and made a block of every row or two. On the H200 (256
#: MB, one call, us; off -> on, torch.compile in brackets; sweep 39g):
#: bfloat16 sum of rows of 128 columns 320.2 -> 74.8 (72.9; guarded loads
#: 85.0), of 512 83.6 -> 71.2 (83.3), softmax bfloat16 of 128 658.6 ->
#: 139.4 (135.6), RMS norm bfloat16 of 256 320.1 -> 129.3 (129.3). Not for
#: longer rows: the span computed in the kernel cost a layer norm bfloat16
#: of 1K columns 9 registers (80), and 129.0 -> 137.6 us.
SPAN_ROWS = True
#: :data:`SPAN_ROWS` for rows that are not whole vectors too, whose lanes
#: walk the tensor's flat vectors (:data:`FLAT_ROWS`): a group of a
#: warp's lanes holds a vector fewer columns than its slots (the row's
#: first and last vectors may be partial), so its span steps at ``lanes *
#: columns - vector`` (rows of up to 504 bfloat16 or 252 float32 columns).
#: Without it such rows take a warp each: a softmax of rows of 77 columns (a
#: CLIP text encoder's attention) or 10 (ten classes) launches 2.4 and 0.3
#: elements a thread, under one 16-byte vector; with it 19.2 and 10.0 in
#: bfloat16 (``scripts/row_threads.py``). On the H200 (sweep 41b; 256 MB,
#: one call after an L2 flush, us; off -> on, torch.compile in brackets):
#: softmax bfloat16 of 77 columns 2358 -> 338 (455), float32 of 77 721 ->
#: 206 (227), bfloat16 of 10 18005 -> 651 (295), layer norm bfloat16 of 100
#: 2250 -> 340 (177), RMS norm float32 of 250 225 -> 133 (131), sum
#: bfloat16 of 77 804 -> 121 (178).
FLAT_SPAN_ROWS = True
#: Rows that are not whole 16-byte vectors and at most this many columns
#: long take the scalar variants (:data:`SCALAR_CACHED_ROWS`, a column a
#: load, groups of a warp's lanes a row where half a warp holds the row)
#: instead of a flat walk (:data:`FLAT_ROWS`); 0: none. A flat walk's
#: kernel tests each column of its vectors for being in the row and
#: handles the partial first and last vectors: a softmax bfloat16's is 1657
#: SASS instructions, the scalar variant's 481 (``scripts/kernel_sass.py
#: softmax:bfloat16:100 --all``), for 8 columns a lane where the flat walk
#: keeps 32; on the H200 the flat walks of bfloat16 rows of 10 to 250
#: columns ran at 0.15-0.52 of copy in the normalizations (0.34-0.73 in
#: a sum), bound by instruction issue (sweep 41c). Off: on the H200 (256
#: MB, one call after an L2 flush) the scalar variants won on some of those
#: rows and lost on others, with no threshold that wins on all: softmax
#: bfloat16 of 10 columns 649 -> 509 us, of 250 420 -> 329, RMS norm
#: bfloat16 of 250 409 -> 391; softmax bfloat16 of 77 336 -> 528, layer
#: norm bfloat16 of 100 341 -> 460, sum bfloat16 of 77 121 -> 267, softmax
#: float32 of 10 239 -> 257 (bench/results/h200-sweeps.txt, sweep 42a).
SCALAR_SHORT_ROWS = 0
#: Threads of a block of the cached warp variants where the row is
#: *streamed*: read by one generic, no temporary kept (a sum, ``sum(x *
#: y)``), so a lane holds only its slots' loads in flight (32-40 registers).
#: An SM holds at most 32 blocks: in blocks of one warp such a kernel ran on
#: 32 warps an SM where its registers allow 64 (a bfloat16 row of 1024
#: columns is 2 KB, a warp's one chunk, then the block ends). On the H200
#: (sweep 39a; 256 MB, one call after an L2 flush, us; 32 -> 64 threads):
#: inner sum bfloat16 of 1024 columns 87.6 -> 71.0 (torch.compile 83.1), at
#: 1 GB 325.2 -> 246.6 (319.9); of 2048 75.3 -> 73.4 (80.9); float32 of
#: 1024 and 512 the same (71.1, 71.0). 128 and 256 threads: within 0.01 of
#: 64 but bfloat16 2048 (74.2, 76.4). Not for the rows a warp keeps (the
#: norms' 32-80 registers: an RMS norm bfloat16 of 2K columns ran at 0.83
#: of copy in blocks of two warps against 0.86 in blocks of one, sweep 24a).
STREAMED_WARP_THREADS = 2 * WARP
#: Plain inner reductions (a reduction whose results the segment stores
#: and reads no further: a float32 sum, a sum and a max of the same rows)
#: run as a row plan (:class:`_RowPlan`) instead of :meth:`_SegmentScheduler.inner_reduction`:
#: the kernels of the bfloat16 sum, whose row results thread 0 of the group
#: stores. They would give plain reductions what the row plans have and
#: ``inner_reduction`` lacks: short rows a group of a warp's lanes each
#: (:data:`SPAN_ROWS`; ``inner_reduction`` runs a warp a row, so a row of
#: 16 float32 columns keeps 4 of its 32 lanes busy), rows cached in
#: registers, and reductions of the same rows in one kernel that reads them
#: once (a sum and a max: two kernels, each reading the row, without it).
#: The price is compile time: a float32 sum compiles 34 kernels (every row
#: variant) where ``inner_reduction`` compiles 4, 0.78-0.81 s against 0.10 s
#: on a 2-core host (ptxas included). ``"short"``: the row plan's groups of
#: a warp's lanes alone take the rows they hold (up to 256 float32
#: columns), ``inner_reduction`` the others: 7 kernels, 0.16 s. On the H200 (sweep 41a; float32 sums,
#: 256 MB, one call after an L2 flush, us; False / True / "short",
#: torch.compile in brackets): rows of 16 columns 779 / 75 / 75 (74), 64
#: 202 / 73 / 73 (74), 128 108 / 73 / 72 (72), 256 to 32K 71-74 all three
#: (70-72). "short" is as fast as True on every row measured and compiles
#: a fifth of the kernels. Not measured: a sum and a max of the same long
#: rows, which True reads once and "short" twice.
ROW_PLAN_REDUCTIONS: bool | str = "short"
#: (threads, 16-byte slots per lane) of the cached *block* variants, by row
#: length: the first whose ``threads * slots * lanes`` columns hold the row
#: runs it (float32, 4 columns a slot: up to 2K, 4K, 8K, 16K, 16K, 32K
#: columns; bfloat16 twice that). Few slots per lane keep registers, and so
#: blocks per SM, up; the last doubles them, as threads cannot grow past 1024.
#: A variant is compiled only where the row's values fit in half of a
#: thread's share of the register file, with room for
#: :data:`BLOCK_MIN_PER_SM` blocks of 512 threads (see :meth:`_SegmentScheduler.row_registers`):
#: past that, ptxas spills and the kernel is slower than reading the row per
#: generic (measured on the H200: bench/results/h200-sweeps.txt). So (512, 8)
#: takes a softmax's float32 rows of 16K (32 values a lane: 0.94 of copy,
#: 0.77 on (1024, 4)), where a layer or RMS norm's 36-40 spilled 132-144 B
#: and ran at 0.58-0.60 (sweep 7). Loaded
#: bfloat16 columns count half a register, but a lane's columns at least one
#: each: an RMS norm bfloat16 of 32K columns on (1024, 4) (32 columns a
#: lane, 20 words loaded with its weight's: 32 of the 32 allowed; 40
#: counting every value as float32) runs at 0.85 of copy, read per generic
#: at 0.81; float32 rows of as many values a lane and a weight spill 96-160 B
#: there and ran at 0.47-0.60 (sweep 6). Those spills were mostly the
#: slots' addresses, hoisted out of the row loop; with :data:`OPAQUE_LANE`
#: they are 8-24 B, and the rule leaves :data:`REGISTER_ROOM`: a float32
#: layer or RMS norm's rows of 16K take (512, 8), of 32K (1024, 8) (sweeps 11
#: and 12).
BLOCK_CACHED = ((256, 2), (256, 4), (512, 4), (512, 8), (1024, 4), (1024, 8))
#: Blocks per SM the cached block variants of 512 threads must leave room
#: for (their registers are capped to fit): a block waiting at a barrier of
#: its row's reduction leaves the other to keep memory busy. A layer norm of
#: 8K columns needs 93 registers, one block per SM, without the cap. 256-thread
#: blocks fit two at any register count; 1024-thread blocks, one.
BLOCK_MIN_PER_SM = 2
#: Where :data:`HALVE_CAPPED_BLOCKS` is off: registers a thread of a
#: 256-thread cached block variant may take (``.maxnreg``: three blocks an
#: SM) where its row values take more than
#: :data:`BLOCK_CAPPED_ABOVE` registers a lane (``row_registers``). A layer
#: norm bfloat16 of 8K columns (48) took 96 registers (two blocks) and ran at
#: 0.62 of copy; capped, it spills 40 bytes and runs at 0.74. The directive
#: alone changes ptxas's code: a softmax bfloat16 of 8K columns (32, 71
#: registers either way) ran at 0.91 without it and 0.82 with it, an RMS norm
#: (40) at 0.94 both ways (bench/results/h200-sweeps.txt, sweep 4). (Not
#: with ``.maxntid`` and ``.minnctapersm``: see :meth:`_Kernel.finish`.)
BLOCK_MAX_REGISTERS = 80
BLOCK_CAPPED_ABOVE = 40
#: Such a variant (256 threads, row values of more than
#: :data:`BLOCK_CAPPED_ABOVE` registers a lane) runs instead as 128 threads of
#: twice the slots, uncapped: the same row a block, but the SM's registers
#: are shared out in smaller blocks, so more rows are in flight (a layer norm
#: bfloat16 of 8K columns: 4 blocks of 128 threads at 128 registers against 3
#: of 256 at 72). On the H200 (back to back, two runs, 256 MB / 1 GB): layer
#: norm bfloat16 of 8K columns 0.89 / 0.91 of copy -> 0.93 / 0.93, of 6000
#: columns 0.78 / 0.80 -> 0.86 / 0.86. Not for rows of fewer values (not
#: capped): an RMS norm bfloat16 of 8K columns (40 a lane) ran at 0.95 /
#: 0.93-0.94 on (256, 4) and 0.90 / 0.95 on (128, 8), a softmax (32) within
#: 0.01 (bench/results/h200-sweeps.txt, sweep 14).
HALVE_CAPPED_BLOCKS = True
#: (above, registers): a 256-thread cached block variant whose row values
#: take more than ``above`` registers a lane but are not capped
#: (:data:`BLOCK_CAPPED_ABOVE`) gets ``.maxnreg registers``, so more blocks
#: fit an SM; (0, 0): off. An RMS norm bfloat16 of 8K columns (40 values a
#: lane on (256, 4)) takes 54 registers, 4 blocks an SM (32 warps; ncu:
#: 47.5% of warps active against torch.compile's 92.2%, sweep 34b); at 48
#: (4 bytes spilled) 5 blocks fit, at 40 (44 bytes) 6. On an H100 (sweep
#: 48f; 256 MB, one call after an L2 flush) (32, 48) tied (180.4 us against
#: 179.8-180.0) and (32, 40) lost 15%; on the H200 (sweep 49b) (32, 48)
#: lost 1% (129.3-129.7 against 128.0-128.3), so off.
BLOCK_OCCUPANCY_CAP = (0, 0)
#: 32-bit registers of an SM (every GPU since Kepler).
REGISTER_FILE = 65536
#: Slots (``lanes`` columns each) a lane reads per iteration of a row loop
#: (the uncached variants): that many independent loads in flight per lane.
CHUNK_SLOTS = 4
#: Chunks (of :data:`CHUNK_SLOTS` slots a lane) in the piece of a row that
#: a block of the row-pointwise block variant takes at a time, in a
#: grid-stride loop over the rows' pieces (0: whole rows, and warps for rows
#: up to :data:`WARP_ROW_LIMIT`; :data:`SCALAR_PIECE_CHUNKS` for the scalar
#: variant); rows shorter than a block's chunk (4096 float32 columns in
#: 16-byte vectors, 8192 bfloat16, 1024 scalar) take a warp each. A block
#: then ends its work a piece, not a
#: row, after the others (a 32K-column float32 row is 256 KB of traffic
#: and 2048 of them, 256 MB, are about five rounds of the 396 blocks that
#: fit), and a lane's columns, counted from the piece's start, fit 32 bits
#: (:data:`NARROW_COLUMNS`, for every operand): 56 registers instead of 80
#: for x * w + b in float32, 4 blocks an SM instead of 3. On the H200
#: (bench's scale_bias, 256 MB, back to back / one call after an L2 flush;
#: whole rows -> 1 chunk): float32 32K 0.92 / 0.90 of copy -> 0.98 / 0.96,
#: 8K 0.96 / 0.92 -> 0.99 / 0.97, bfloat16 32K 0.93 / 0.91 -> 0.97 / 0.97,
#: 8K 0.92 / 0.91 -> 0.96 / 0.95. Pieces of 2 and 4 chunks: 0.93-0.97;
#: pieces of 1 with 64-bit columns: 0.95-0.97 back to back; a grid of 528
#: blocks (4 an SM) instead of up to 8448: 0.88-0.91 (sweep 18a). Rows of a
#: piece or more in pieces, against warps up to 4096 columns (256 MB):
#: float32 4096 0.94 -> 1.00 (1 GB: 0.95 -> 1.00); scalar rows (a length
#: not a multiple of the vector), float32 4095 0.35 -> 0.62, 2047 0.42 ->
#: 0.61, bfloat16 4095 0.24 -> 0.34; pieces of rows shorter than a piece
#: lost (bfloat16 4096 0.95 -> 0.91, 2048 0.98 -> 0.68), as did 8 and 16
#: slots a lane in scalar pieces (0.62 -> 0.56, 0.44; sweep 18e).
ROW_PIECE_CHUNKS = 1
#: :data:`ROW_PIECE_CHUNKS` of the scalar variant (rows that are not whole
#: 16-byte vectors): a chunk is a lane's 4 columns, and the block's start
#: (the piece's row and columns, a division) spread over one chunk made the
#: loop 270 SASS instructions for 4 columns a lane. On the H200 (scale_bias,
#: 256 MB, back to back; pieces of 1 -> 4 chunks): float32 4095 columns 0.62
#: -> 0.68 of copy, 2047 0.62 -> 0.67, 1501 0.54 -> 0.63, 32767 0.61 ->
#: 0.67, bfloat16 4095 and 32767 0.34 -> 0.42; 8 and 16 chunks the same or
#: within 0.04 below (sweep 18g). Scalar rows stay short of copy: one 4-byte
#: (2-byte) access a column and operand. Where the output and the full-size
#: inputs are dense and aligned, such rows run the flat scheme instead
#: (:data:`FLAT_SCALAR_ROWS`).
SCALAR_PIECE_CHUNKS = 4
#: Row-pointwise generics whose rows are not whole vectors (a length not a
#: multiple of the vector, or a weight not aligned to one) but whose output
#: and full-size inputs are dense and aligned run the flat scheme instead of
#: the scalar row variants: the tensor's flat 16-byte vectors, a thread a
#: vector, the broadcast inputs (weights, columns) loaded an element at a
#: time (:meth:`_SegmentScheduler.flat_pointwise`). On the H200 (256 MB,
#: back to back; scalar rows -> flat): scale_bias float32 of 1501, 4095
#: and 50257 columns 0.63-0.68 of copy -> 1.00-1.02, bfloat16 of 4095,
#: 32767 and 50257 0.41-0.42 -> 0.77-0.79; broadcast_add float32 of 1501
#: and 50257 0.56 / 0.69 -> 0.71 / 0.71, of 4095 0.80 -> 0.72, bfloat16
#: 0.39-0.40 -> 0.52-0.53 (sweep 19b).
FLAT_SCALAR_ROWS = True
#: Row-pointwise generics whose rows are whole 16-byte vectors and that read
#: a full-size input (``x * w + b``; not a write-only broadcast such as a
#: column plus a row) run the flat scheme too, where the output and the
#: full-size inputs are dense and aligned: a thread a vector of the tensor,
#: its row and column by one division, each weight loaded as one vector at
#: that column (a vector is inside one row), a value broadcast along the row
#: (a ``[rows, 1]`` column) loaded once (:meth:`_SegmentScheduler._gathered_in_row`).
#: This is the shape of Inductor's pointwise kernels (sweep 21b). False: a
#: warp a row, a block a piece of the longer rows (:data:`ROW_PIECE_CHUNKS`).
#: On the H200 (bench's scale_bias, one call after an L2 flush, 256 MB / 1 GB;
#: rows -> flat): float32 of 1K columns 0.97 / 0.97x torch.compile -> 1.00 /
#: 1.00 (0.99 / 0.97 of copy -> 1.01 / 1.00), bfloat16 of 1K 0.97 / 0.97 ->
#: 0.99 / 1.00, of 8K 0.98 / 0.97 -> 0.99 / 0.99, of 32K 0.96 / 0.97 -> 1.00 /
#: 1.00, float32 of 8K and 32K 1.00 -> 0.99-1.00. A write-only broadcast lost
#: on it (broadcast_add of 1K columns, float32 1.10 -> 0.91 of copy, bfloat16
#: 1.09 -> 0.81; in blocks of 128 threads too: 0.82-0.84): its stores wait
#: on the gathered loads, a vector a thread, where a warp a row loads the
#: row's column once and stores 8 vectors a lane (sweep 26).
FLAT_WHOLE_ROWS = True
#: (threads, 16-byte slots a lane) of the blocks that take a row each of a
#: write-only broadcast (no full-size input: a column plus a row) whose rows
#: are whole vectors, at least ``threads * slots`` of them and shorter than a
#: block's chunk (which a warp a row took before; longer rows stay in
#: pieces, :data:`ROW_PIECE_CHUNKS`), walked in chunks of that many slots a
#: lane: Inductor's kernels of such broadcasts store from small blocks too.
#: They run the pieces' grid-stride loop, a row one piece (so its columns
#: are 32-bit, :data:`NARROW_COLUMNS`: 26 registers, 30 with a row loop and
#: 64-bit columns, which measured the same).
#: On the H200 (bench's broadcast_add, one call after an L2 flush, 256 MB;
#: a warp a row -> (128, 2); torch.compile's kernel in brackets): float32
#: of 1K columns 63.6-64.1 -> 62.0-62.6 us (60.3-60.5), of 2K 66.4 -> 62.1-62.3
#: (60.7-61.0), at 1 GB 1K 242.2 -> 236.5 (235.7); bfloat16 of 2K 63.0 ->
#: 62.0, of 4K 64.6-64.8 -> 61.9-62.2 (82.3-82.4). Rows of fewer vectors keep
#: a warp: bfloat16 of 1K columns (128 vectors) on a block of 128 threads
#: of 1 slot, or 64 of 2, took 83 us against 63 on warps; (256, 1) on
#: float32 of 1K 74.7, (64, 2) 62.5, (128, 4) 69.2 (half its slots empty);
#: 8-byte vectors lost or tied (sweep 33).
WRITE_ONLY_BLOCK = (128, 2)
#: Kernels that write as much as they read (pointwise, broadcasts, row
#: kernels: softmax, layer and RMS norms) load with the L2 eviction priority
#: ``evict_last`` (:func:`fuser_mlir.lowering.gpu.hint_loads`), so the L2
#: gives up the lines they wrote before the lines they read (why that is
#: faster is not known: the written lines marked ``evict_first`` instead were
#: not), and each kernel ran about as fast as torch.compile's or faster
#: (Triton's loads of values it reads again carry the same priority). The reductions to fewer values
#: (inner and outer sums) load as before: nothing of theirs streams out, and
#: the outer sum bfloat16 lost with it. On the H200 (256 MB, one call after
#: an L2 flush, off -> on, torch.compile in brackets; sweep 34): RMS norm
#: bfloat16 of 8K columns 134.0 -> 128.3 us (127.7), of 32K 136.0 -> 131.4
#: (132.5), float32 of 1K 132.4 -> 128.9 (129.5), of 8K 132.1 -> 128.1
#: (129.1), of 32K 134.4 -> 131.1 (132.0); layer norm float32 of 8K 132.6
#: -> 131.5 (132.0), of 32K 152.1 -> 149.4 (146.8); softmax float32 of 32K
#: 137.6 -> 134.2; the write-only broadcast float32 of 1K columns 61.7 ->
#: 60.9 (60.8); pointwise 188.3 -> 185.8 (188.9); scale and bias bfloat16
#: of 8K 130.0 -> 127.9 (128.3); outer sum bfloat16 79.5 -> 95.3 (77.4),
#: float32 75.8 -> 76.7, inner sums within 1%. The L1 qualifier alone
#: (``L1::evict_last``) changed nothing, ``evict_first`` on the stores lost
#: 0-1%. The cost falls on the kernels after one: the lines it read stay in
#: the L2 before theirs, so a later kernel that reads 32 MB twice read it
#: the second time in 17.7 us against 13.0 (8 and 16 MB: the same).
L2_EVICT_LAST = True
#: The unit attribute that marks such a kernel's ``gpu.func`` for
#: :func:`fuser_mlir.lowering.gpu.hint_loads` (removed before its lowering).
EVICT_LAST_ATTRIBUTE = "fuser.l2_evict_last"
#: Most blocks of a grid's x dim (CUDA's limit): the flat pointwise grid covers the tensor.
MAX_GRID_X = 2**31 - 1
#: Slots of the cached warp variant's last pass whose small operands
#: (weights) are loaded together before their results are stored, for 4-byte
#: elements (4 columns a slot) ...
CACHED_STORE_GROUP = 4
#: ... and for 2-byte ones (8 columns a slot, whose float32 values take twice
#: the registers): a layer norm bfloat16 of 1024 columns needed 124 registers
#: and ran at 0.86 of copy with 4, 75 and 0.97 with 1 (RMS norm 0.93 -> 0.99),
#: where float32 did best with 4 (bench/results/h200-sweeps.txt, sweep 4).
NARROW_STORE_GROUP = 1
#: The same for the cached block variants, whose lanes have fewer registers to spare.
BLOCK_STORE_GROUP = 1
#: Row kernels divide a float32 by a value that is the same along the row (a
#: softmax's sum) by multiplying with its reciprocal, computed once per row
#: (see :func:`_divided`): a few instructions per element less than an IEEE
#: division, within 1.5 ulp of it instead of 0.5.
RECIPROCAL_DIVISORS = True
#: (threads, 16-byte slots per lane) of the *staged* variant of a
#: persistent row kernel: rows longer than the cached variants take, whose
#: values still fit in :data:`SHARED_ROW_BYTES`, are loaded once, all of a
#: lane's slots at a time (a whole row in flight), into shared memory (each
#: lane keeps its own columns there), and every later generic reads them
#: there: float32 rows up to 32K columns. One such block takes an SM (its
#: registers, and shared memory for rows past 28K columns), so a row must be
#: long in bytes to keep memory busy: the staged variant is compiled only where
#: its values take at least :data:`SHARED_MIN_BYTES` a column. On the H200,
#: RMS norm float32 rows of 32K columns ran at 0.82 of copy staged against
#: 0.65 read per generic, a layer norm at 0.64 against 0.57; but a bfloat16
#: RMS norm at 0.48 against 0.75, and 512 threads of 16 slots did worse
#: (bench/results/h200-sweeps.txt, sweep 4).
SHARED_THREADS, SHARED_SLOTS = 1024, 8
#: Block-per-row kernels of rows too long for registers (the staged
#: variant, and rows read per generic; 16-byte vector variants) ask the L2
#: for the next row their block takes (a grid-stride step on) at the start
#: of each row: thread 0 issues one ``cp.async.bulk.prefetch.L2`` per input
#: that varies along rows and columns (sm_90 and later: :func:`bulk_prefetch`;
#: PTX 8.0 on sm_90). Such a block reads its row, then reduces and writes
#: with no load of its own in flight; meanwhile the prefetch keeps memory
#: busy, and the next row's loads hit the L2. On the H200 (256 MB, back to
#: back): layer norm float32 of 32K columns 0.65 -> 0.71 of copy, bfloat16
#: 0.64 -> 0.67, RMS norm 0.82 -> 0.84 and 0.79 -> 0.81. Register-cached
#: variants do not prefetch: their several resident rows an SM already
#: overlap, and a softmax bfloat16 of 8K columns dropped from 0.92 to 0.86
#: with it (prefetched rows evicting rows in use;
#: bench/results/h200-sweeps.txt, sweep 5). But a block has a next row only
#: where rows outnumber the grid's cap (:data:`PREFETCH_GRID_CAP`): the bench's
#: rows of 32K columns are 2048-8192, so there the prefetch is never issued
#: (the gains above are not explained by it), and made persistent, these
#: grids lost (layer norm float32 32K 0.71 -> 0.59; sweep 8b). The persistent
#: cached blocks of 1024 threads (weights in shared memory) lost with it too:
#: RMS norm float32 of 32K columns 0.91 -> 0.70 of copy, layer norm 0.86 ->
#: 0.67 (sweep 23a).
PREFETCH_NEXT_ROW = True
#: Normalization rows that are not whole 16-byte vectors (a length not a
#: multiple of the vector) get cached variants too, where every tensor read or
#: written along the row is dense, so the row is read from memory once
#: instead of once per generic: the vector variants' ladder
#: (:data:`WARP_CACHED`, :data:`BLOCK_CACHED`) with this many columns a
#: slot, each loaded on its own (a 4- or 2-byte load at a flat index,
#: clamped to the row's last column in blocks): rows up to 16K columns, 16
#: a lane. 0: none (read per generic). A lane of 32 such columns kept the
#: address of each live and spilled (ptxas, sm_90: a layer norm float32 of
#: 16383 columns on (512, 32) 348 B, of 1023 on warps of 32 columns 684 B).
SCALAR_CACHED_ROWS = 2
#: Normalization rows that are not whole 16-byte vectors walk the tensor's
#: flat vectors instead, where every tensor read or written along the row is
#: dense and read at the generic's own indices (or is a weight, read along
#: the row alone): a row from element ``r * cols`` covers the vectors from
#: ``r * cols // lanes`` to its last element's, the first and last of them
#: shared with the rows beside it. Each slot is a vector load (clamped to the
#: row's last vector, and to the tensor's last whole vector, the elements of
#: a partial one past it loaded one by one), a column's reduction counts only
#: the row's own elements, a vector wholly in the row is stored as one and
#: the others element by element, and weights are loaded an element at a
#: time at its column. So these rows get the vector variants' ladder less a
#: vector (cached in registers, staged in shared memory, or read per
#: generic). False: the scalar variants. On the H200 (256 MB, back to back,
#: scalar variants -> flat; sweep 20): softmax float32 of 1019 columns 0.85
#: -> 0.96 of copy, layer norm float32 of 4091 0.68 -> 0.95, RMS norm
#: bfloat16 of 4087 0.43 -> 0.69; rows past the scalar variants' cached 16K
#: columns, read per generic before: layer norm float32 of 20001 0.32 ->
#: 0.53, of 50257 0.24 -> 0.46 (bfloat16 0.16 -> 0.38), softmax float32 /
#: bfloat16 of 50257 0.29 / 0.20 -> 0.48, RMS norm 0.37 / 0.21 -> 0.60 /
#: 0.56. But a row within a vector of a variant's columns (1023, 4095, 16383:
#: it may need one vector more than that variant's lanes hold) takes the
#: next variant, of twice the slots, mostly idle, and there flat lost
#: (softmax float32 of 1023 0.85 -> 0.58, layer norm float32 of 4095 0.68
#: -> 0.47, of 16383 0.59 -> 0.46): up to the scalar variants' 16K cached
#: columns, those rows take their cached variant with an edge slot
#: (:data:`FLAT_EDGE_SLOTS`), or the scalar variants
#: (:meth:`_SegmentScheduler.flat_boundary`).
FLAT_ROWS = True
#: A flat row within a vector of a cached variant's columns (1021-1023 float32
#: columns for the warp of 1024, 4093-4095 for the block of 4096, ... up to
#: the scalar variants' 16K cached columns) takes that variant with one slot
#: more, which only lane 0's can be in the row (its first vector may be
#: partial, so it may span one vector more than the lanes hold) instead of
#: the scalar variants (:attr:`_RowGroup.edge_slot`). False: the scalar
#: variants, as :meth:`_SegmentScheduler.flat_boundary` says. On the H200
#: (256 MB, back to back, scalar variants -> edge slot; sweep 22) 12 of 16
#: rows measured gained, softmax float32 of 511 columns 0.44 -> 0.91, RMS
#: norm float32 of 4095 0.65 -> 0.97, layer norm float32 of 16383 0.59 ->
#: 0.83, softmax bfloat16 of 16383 0.41 -> 0.60; 4 lost: layer norm float32
#: of 1023 0.82 -> 0.57 and softmax bfloat16 of 2047 0.61 -> 0.42 (the edge
#: warp's registers cross 128, so its block fits once an SM; see
#: :data:`EDGE_MAX_REGISTERS`), softmax float32 of 2047 0.98 -> 0.84, layer
#: norm float32 of 8191 0.85 -> 0.74.
FLAT_EDGE_SLOTS = True
#: Registers (``.maxnreg``) of an edge-slot variant (:data:`FLAT_EDGE_SLOTS`)
#: of the warp of the most slots (:data:`WARP_CACHED`; 0: uncapped): there
#: the edge slot took ptxas past 128 registers, so the 256-thread block no
#: longer fit twice an SM (sm_90: layer norm float32 of 1023 columns 121 ->
#: 145, softmax bfloat16 of 2047 128 -> 151, layer norm bfloat16 of 2047 118
#: -> 156). Capped at two blocks an SM, on the H200 (256 MB, back to back;
#: uncapped -> capped, the scalar variants in brackets; sweep 23): layer norm
#: float32 1023 0.57 -> 0.78 (0.82), softmax bfloat16 2047 0.42 -> 0.63
#: (0.60), layer norm bfloat16 2047 0.35 -> 0.48 (0.53); RMS norm float32 1023
#: 0.98 -> 0.96, softmax float32 1023 0.93 -> 0.92, RMS norm bfloat16 2047
#: 0.69 both ways. Not on the warp of fewer slots: a softmax float32 of 511
#: columns (67 registers, three blocks an SM) dropped from 0.91 to 0.74 capped
#: (ptxas then took 88, two blocks).
EDGE_MAX_REGISTERS = REGISTER_FILE // (THREADS * 2)
#: Fewest staged bytes a column for which the staged variant is compiled.
SHARED_MIN_BYTES = 4
#: Dynamic shared memory a staged row may take (an H200 block may opt in to
#: 227 KB; the rest is left for ``gpu.all_reduce``'s static buffers).
SHARED_ROW_BYTES = 224 * 1024
#: Columns a staged row's shared memory is rounded up to (keeps each
#: operand's region 16-byte aligned).
SHARED_PAD = 16
#: The cached block variants reduce 32-bit values with one barrier
#: (:func:`_block_reduce`) instead of ``gpu.all_reduce``'s three (its own
#: two, and one before the next reduction may reuse its buffer). On the
#: H200 (256 MB, back to back, three runs): layer norm bfloat16 8K 0.84 ->
#: 0.90 of copy (its 8 B spill gone), 16K 0.66 -> 0.84, float32 8K 0.92 ->
#: 0.96, 16K 0.79 -> 0.82, softmax bfloat16 8K 0.92 -> 0.97, 16K 0.83 ->
#: 0.86, float32 32K 0.87 -> 0.90. Not in the other block kernels: the
#: staged variant lost (layer norm float32 32K 0.72 -> 0.61, RMS norm 0.84 ->
#: 0.72, with or without a barrier after it), as did a block per row of an
#: inner sum (bfloat16 64K 1.02 -> 0.96); rows read per generic did not
#: change (bench/results/h200-sweeps.txt, sweep 6).
BLOCK_REDUCE = True
#: The cached block variants of 1024 threads (one block an SM, so one row's
#: load, reductions and stores do not overlap another's) receive their rows
#: in shared memory, rows ahead, from the copy engine (``cp.async.bulk``,
#: sm_90 and later; :class:`_RowBuffer`): up to :data:`BUFFER_DEPTH` row
#: buffers of the inputs the row's first reduction reads, and the weights
#: (inputs that vary along the row alone) once per block where they fit
#: too. Their grid is persistent (:data:`PERSISTENT_BLOCKS`), each block
#: taking many rows, so memory reads the block's next rows while it reduces
#: and writes this one. On the H200 (256 MB, back to back; off -> on):
#: softmax bfloat16 of 32K columns 0.70 -> 0.87 of copy, layer norm bfloat16
#: 32K 0.68 -> 0.85 (one row buffer and the weights; two row buffers
#: without the weights ran at 0.65), RMS norm bfloat16 32K 0.85 -> 0.87,
#: layer norm float32 16K 0.82 -> 0.84, RMS norm float32 16K 0.88 -> 0.88.
#: Without a persistent grid (a block a row: rows of 256 MB are fewer than
#: its cap), there is no next row to buffer and all of these lost
#: (bench/results/h200-sweeps.txt, sweep 8). Since :data:`CLAMPED_LOADS`,
#: rows with weights keep the weights alone (:data:`BUFFER_WITH_WEIGHTS`).
BUFFER_NEXT_ROW = True
#: Most row buffers of a buffered variant (as many as fit, up to this): one
#: is refilled once every lane has read it, so with more, later rows are
#: on their way meanwhile. Softmax bfloat16 32K: 1, 2, 3 buffers 0.83, 0.81,
#: 0.87 of copy; RMS norm bfloat16 32K 0.81, 0.87, 0.87 (sweep 8). Where only
#: one fits, the block is buffered only if its weights fit too: a softmax
#: float32 of 32K columns ran at 0.81-0.83 on one buffer, 0.90-0.91 without.
BUFFER_DEPTH = 3
#: Whether rows with weights get row buffers too (next to their weights). Not
#: since :data:`CLAMPED_LOADS`: a lane's loads of the row straight from
#: memory, all issued together, then did as well or better than rows
#: arriving in shared memory, so such a block keeps its weights alone
#: (:data:`SHARED_WEIGHTS_ALONE`). On the H200 (back to back, 256 MB / 1 GB):
#: RMS norm bfloat16 of 32K columns 0.87 / 0.89 of copy buffered (the weight
#: and 2 row buffers) -> 0.90 / 0.92; layer norm bfloat16 32K 0.83 / 0.86
#: (both weights and 1 buffer) -> 0.82 / 0.87. A softmax (no weights) keeps
#: its 3 buffers: 0.88 / 0.90 against 0.67 / 0.72 without (sweep 12).
BUFFER_WITH_WEIGHTS = False
#: A 1024-thread cached block variant with no row buffer (not even one
#: fits next to its weights) keeps its weights in shared memory, copied once
#: per block, and its grid is persistent so that each block copies them once
#: for many rows (whole or in part: :data:`SHARED_WEIGHT_BYTES`,
#: :data:`SPLIT_WEIGHTS_BYTES`). When it kept only the first weights that fit
#: whole, a layer norm float32 of 32K columns on (1024, 8) kept its first weight
#: (128 KB) and read the second from memory: 0.84 / 0.88 of copy at 256 MB /
#: 1 GB, against 0.73 / 0.75 with both weights from memory on a grid of a
#: block a row (the staged variant ran at 0.72 / 0.75;
#: bench/results/h200-sweeps.txt, sweep 11).
SHARED_WEIGHTS_ALONE = True
#: Most bytes of dynamic shared memory a block keeps its weights alone in
#: (:data:`SHARED_WEIGHTS_ALONE`): past it, each kept weight keeps the
#: columns of its lanes' first slots that fit (the same number for each),
#: and the lanes read their other slots from memory. Shared memory and the
#: L1 cache share an SM's 256 KB, and a (1024, 8) block issues the loads of
#: a whole row at once (128 KB of float32): on the H200 (256 MB, back to
#: back) a softmax float32 of 32K columns on (1024, 8) ran at 0.91 of copy,
#: 0.91 with 64 KB of unused dynamic shared memory and 0.85 with 128 KB. An
#: RMS norm float32 of 32K columns (its weight 128 KB) ran at 0.85 / 0.88 of
#: copy (256 MB / 1 GB) with the whole weight kept, 0.86 / 0.89 with 96 KB
#: of it, 0.89-0.90 / 0.92 with 64, 48 or 32 KB; rows of 20000 columns 0.76 /
#: 0.73 -> 0.84 / 0.86 with 64 KB. The layer norms of 32K columns (float32:
#: its first weight; bfloat16: both) moved within 0.02 either way
#: (bench/results/h200-sweeps.txt, sweep 13). Since
#: :data:`NONCOHERENT_WEIGHTS`, an RMS norm's weight that does not fit whole
#: is not kept at all.
SHARED_WEIGHT_BYTES = 64 * 1024
#: Most bytes of dynamic shared memory a block keeps its weights alone in
#: (:data:`SHARED_WEIGHTS_ALONE`) where it has several (a layer norm's
#: two): past it, as past :data:`SHARED_WEIGHT_BYTES` for one weight, every
#: weight keeps the columns of its lanes' first slots that fit, the same
#: number for each. The store pass of a row waits for one L2 round trip a
#: slot whose weights are read from memory, one slot after the other (a
#: weight's loads cannot pass the stores before them; the non-coherent
#: cache, :data:`NONCOHERENT_WEIGHTS`, lost for two weights), so keeping
#: the same bytes spread over both weights leaves fewer slots waiting. On
#: the H200 (256 MB, one call after an L2 flush), layer norm float32 on
#: (1024, 8), the first weight's first 4 slots a lane kept (64 KB; the
#: second weight from memory) -> both weights' first 2 / 3 / 4 slots (64 /
#: 96 / 128 KB): rows of 32768 columns 150.5 -> 151.7 / 149.3 / 145.9 us
#: (torch.compile 146.4), 24576 147.9 -> 147.9 / 145.1 / 141.6 (143.2)
#: (bench/results/h200-sweeps.txt, sweep 36e). Past 128 KB no budget won
#: on every row: 160 KB took 32768 columns 147.1 -> 143.5 us (146.7), 20000
#: (kept whole) 148.4 -> 145.6 (150.1), but 24576 141.8 -> 147.4 (142.9);
#: 192 and 224 KB lost more (sweep 43a). An RMS norm's one weight
#: keeps :data:`SHARED_WEIGHT_BYTES`: 128 KB of it lost (sweep 13).
SPLIT_WEIGHTS_BYTES = 128 * 1024
#: (columns, budget): a cached block whose weights are kept in part under
#: :data:`SPLIT_WEIGHTS_BYTES` runs rows of more than ``columns`` columns
#: as a variant of its own that keeps ``budget`` bytes of them; (0, 0): no
#: such variant.
LONG_ROW_WEIGHTS = (0, 0)
#: A 1024-thread cached block whose weights do not fit whole in
#: :data:`SHARED_WEIGHT_BYTES`, and whose weights have no more bytes a column
#: than its rows (an RMS norm's one weight: not a layer norm's two), keeps
#: none of them in shared memory: it takes a row a block and reads its
#: weights' slots from memory through the non-coherent (read-only) cache,
#: ``ld.global.nc`` (:func:`_noncoherent_vector`). ptxas may issue such loads
#: ahead of the stores before them (a plain load cannot pass a store that
#: may alias it), so the store pass no longer waits for one L2 round trip
#: a weight slot, one slot after the other. Valid because no thread of a
#: kernel writes a buffer the kernel reads as a weight: an in-place write
#: into an input read through a broadcast in the same kernel is an alias
#: hazard that the passes resolve before lowering (analysis/hazards.py), a
#: given output may not overlap an input it is not declared an alias of,
#: and a row kernel writes full-size and per-row values only, so a
#: temporary it reads as a weight was written by an earlier kernel (the
#: weights kept in shared memory rely on the same). On the H200 (256 MB, one call after
#: an L2 flush), RMS norm float32 on (1024, 8), 64 KB of the weight kept
#: persistent -> none kept, read through ``.nc``: rows of 18432 columns
#: 169.9 -> 136.6 us (torch.compile 141.7), 20000 163.9 -> 135.0 (136.5),
#: 24576 146.9 -> 132.9 (133.6), 32768 143.2 -> 140.8 (131.7). The same
#: with plain loads (sweep 29b): 32768 151.6. A layer norm bfloat16 of 32K
#: columns (two weights) lost that way (153.4 -> 160.1 us), so the weights
#: of more bytes a column than the rows stay kept in part
#: (bench/results/h200-sweeps.txt, sweeps 29 and 30). LLVM's NVPTX backend
#: emits plain ``ld.global`` for ``!invariant.load``, hence inline asm.
NONCOHERENT_WEIGHTS = True
#: Cached block variants compute their lanes' columns from the thread index
#: passed through an opaque move inside the row loop (:func:`_opaque`), so that
#: LLVM does not hoist the slots' row-invariant addresses (a lane's columns, a
#: weight's address per slot: 64-bit values) out of the row loop into
#: registers held across it. A layer norm float32 on (1024, 8) spilled 160 B
#: without, 16 B with (ptxas, sm_90), and ran at 0.64 of copy against 0.84
#: (since :data:`NARROW_COLUMNS`: 72 B without, none with).
#: Not in the staged and read-per-generic variants: the staged layer norm
#: float32 of 32K columns dropped from 0.72 to 0.64 with it (sweep 11).
OPAQUE_LANE = True
#: A cached block variant whose row operands are all 16-bit, with no kept
#: temporary and no function (libdevice call, math op) in its reductions
#: (RMS and layer norms; not a softmax), is compiled where its row fits the
#: register rule (:data:`BLOCK_CACHED`) as loaded, half a word a column,
#: though not as float32 values: after each reduction its generics convert
#: the loaded words again (:func:`_packed_again`) instead of LLVM keeping
#: each column's float32 value across the barrier. ptxas (sm_90): RMS and
#: layer norms bfloat16 of 32K columns on (512, 8), two blocks an SM (128 KB
#: of their rows in flight), 63-64 registers, no spills (196 B spilled
#: without, the RMS norm); the (1024, 4) block they replace has 64 KB in
#: flight. On the H200 (256 MB, one call after an L2 flush), RMS norm
#: 143.2 -> 135.6 us (torch.compile 132.1), 20000 columns 164.3 -> 135.1,
#: 65536 ((1024, 8)) 201.5 -> 150.5; layer norm 152.3 -> 137.3 (144.3),
#: 24576 173.8 -> 137.2, 65536 229.4 -> 157.1. Not on the variants the rule
#: already takes: converting again lost there (softmax bfloat16 8K 133.7 ->
#: 162.7 us, its exponentials computed twice; layer norm bfloat16 32K on
#: (1024, 4) 153.4 -> 162.8), and a softmax bfloat16 of 32K columns on
#: (512, 8) spilled 320 B (bench/results/h200-sweeps.txt, sweep 31). Not
#: in the flat walks.
PACKED_ROWS = True
#: A cached block variant of at least :data:`EARLY_WEIGHT_SLOTS` slots a
#: lane loads its weights (operands that vary along the row alone) with its
#: row, before the row's first reduction, where its row and every slot's
#: weights fit the register rule (:meth:`_SegmentScheduler.row_groups`; a
#: 16-bit row then stays packed, :data:`PACKED_ROWS`), and it keeps no
#: weight in shared memory or reads it through ``.nc``. Otherwise its last
#: pass loads a slot's weights just before that slot's store: a load is
#: not moved above an earlier store, so the pass is a chain of one L1 or L2
#: round trip a slot, after the reduction's barrier. On the H200 (256 MB,
#: one call after an L2 flush; off -> on, three runs): layer norm bfloat16
#: of 8K columns ((128, 8), its row and two weights packed, 127 registers)
#: 137.3 -> 134.1, 136.7 -> 133.2, 137.0 -> 134.6 us (torch.compile
#: 134.4-135.0); RMS norm bfloat16 16K 133.7 -> 132.6; the RMS norms
#: float32 and bfloat16 of 4K-12K columns within 0.5% (float32 8K 133.1 ->
#: 132.5), the layer norm float32 of 4K ((256, 4), 54 -> 72 registers)
#: 135.6 -> 136.7. A 16-bit row left unpacked with its weights loaded early
#: lost (layer norm bfloat16 8K, 159 registers: 143.2), and so did loading
#: all the last pass's weights together after the barrier instead
#: (BLOCK_STORE_GROUP 8: layer norm bfloat16 8K 144.5, 6000 columns 176.7)
#: (bench/results/h200-sweeps.txt, sweep 32).
EARLY_WEIGHTS = True
#: See :data:`EARLY_WEIGHTS`: with 2 slots a lane the chain is short, and
#: the weights' registers cost blocks an SM (a layer norm bfloat16 of 4K
#: columns on (256, 2), its row packed: 134.2 -> 147.8 us with its weights
#: loaded early, 137.5 as shipped; sweep 32).
EARLY_WEIGHT_SLOTS = 4
#: The cached block variants load every slot of a lane unconditionally, a
#: slot past the row's end from the row's last vector (its values are never
#: used: a reduction's partials and the stores are guarded by the slot
#: being inside the row), instead of in an ``scf.if`` yielding zeros.
#: With the guards, ptxas (sm_90) zeroes each slot's registers before its
#: predicated load and, short of registers, reuses one slot's registers for
#: the next: the loads are then issued one at a time, each after the
#: arithmetic of the one before (an RMS norm float32 on (1024, 8) and
#: (512, 8): ``LDG f LDG f ...`` in SASS, against ``LDG x8`` unguarded; ncu
#: samples its warps stalled evenly on each slot's first use). On the H200
#: (256 MB, back to back): RMS norm float32 16K 0.75 -> 0.94 of copy on
#: (512, 8), 32K 0.72 -> 0.85 on (1024, 8); the others within 0.01. Not in
#: the staged variant (its RMS norm float32 of 32K columns dropped from 0.83
#: to 0.78 with it), nor in the warp variants: there LLVM hoists the
#: weights' loads, no longer conditional, out of the row loop (no
#: :data:`OPAQUE_LANE` there), and a float32 layer norm of 1K columns took
#: 191 registers instead of 121 and ran at 0.77 of copy instead of 0.94
#: (bench/results/h200-sweeps.txt, sweep 12). The vector variants take rows
#: of at least one vector. The clamp is ``min(col, last)``, not ``select(col
#: < cols, col, last)`` (the same value: both are whole vectors): a select
#: keeps each slot's predicate live until its partial sum's select, and with
#: 8 slots ptxas ran short of predicate registers (7 a thread) and issued a
#: row's loads in two waves (``LLLLLLaLLa``, scripts/kernel_sass.py); RMS
#: norm float32 of 32K columns 140.3 -> 133.7 us (256 MB, one call; sweep 31).
CLAMPED_LOADS = True
#: Cached block variants may take up to this many times the registers the
#: register rule allows (see :data:`BLOCK_CACHED`): a layer norm float32 of
#: 16K columns on (512, 8) runs at 0.90 of copy (40 words a lane: 32
#: columns and one slot of each of two weights; (1024, 4) and one row buffer
#: 0.84-0.86), of 32K on (1024, 8) at 0.84 / 0.88 (see
#: :data:`SHARED_WEIGHTS_ALONE`; sweep 11); an RMS norm float32 (36 words)
#: of 16K on (512, 8) 0.94 against 0.88 on (1024, 4), of 32K on (1024, 8)
#: 0.85 against 0.83 staged (with :data:`CLAMPED_LOADS`; sweep 12). Of the
#: bench's rows, only these (float32 layer and RMS norms of 16K and 32K
#: columns) take another variant with it.
REGISTER_ROOM = 1.25
#: Fewest threads of a buffered cached block variant: buffering the 512-thread
#: ones (two blocks an SM) lost (RMS norm bfloat16 16K 0.96 -> 0.86 of copy,
#: float32 8K 0.96 -> 0.86, layer norm float32 8K 0.95 -> 0.86; sweep 8).
BUFFERED_THREADS = 1024
#: Blocks of a buffered variant's grid per block an SM holds: None, the SMs of
#: the device it runs on (the launch formula's ``["sms"]``, known when the
#: kernels are loaded), so each SM holds one block for the whole kernel (a
#: grid past the SMs would leave the blocks past them for a second wave, each
#: with as many rows as the others); a number (tests) fixes it.
PERSISTENT_BLOCKS = None


@dataclass
class _RowGroup:
    """Who reduces one row: a ``warp`` (rows spread over the block's warps,
    partial results combined with butterfly shuffles) or a ``block`` (one row
    per block at a time; :func:`_block_reduce` where the row is cached,
    else ``gpu.all_reduce``). ``when``: the launch condition;
    ``cached``: the whole row fits in the lanes' registers (``columns`` per
    lane), so it is read once; ``staged``: the row's values are kept in
    shared memory instead (see :data:`SHARED_THREADS`); ``threads``: per block;
    ``buffered``: row buffers in shared memory that a cached block's rows
    arrive in (:data:`BUFFER_NEXT_ROW`), ``shared_weights``: how many of
    its weights (in order) it keeps in shared memory, ``weight_slots``: of
    each of them, the slots of each lane kept there where not all
    (:data:`SHARED_WEIGHT_BYTES`, :data:`SPLIT_WEIGHTS_BYTES`); ``narrow_rows``: the row operands'
    vector indices too are split (:data:`NARROW_COLUMNS`); ``packed_rows``:
    a cached block's 16-bit row is kept as loaded across its reductions
    (:data:`PACKED_ROWS`); ``early_weights``: a cached block loads its
    weights with its row (:data:`EARLY_WEIGHTS`); ``chunk_slots``: a lane's
    slots in a chunk of an uncached walk, where not :data:`CHUNK_SLOTS`."""

    kind: str
    when: list | None
    cached: bool = False
    threads: int = THREADS
    columns: int = 0  # per lane, in the cached and staged variants
    staged: bool = False
    max_registers: int = 0  # a thread's registers (.maxnreg; 0: as ptxas likes)
    buffered: int = 0  # row buffers its rows arrive in, rows ahead (:data:`BUFFER_NEXT_ROW`; 0: none)
    shared_weights: int = 0  # ... and its first weights, once (or alone, all of them: :data:`SHARED_WEIGHTS_ALONE`)
    weight_slots: int = 0  # slots of each lane kept of each of those weights (0: all; :data:`SHARED_WEIGHT_BYTES`, :data:`SPLIT_WEIGHTS_BYTES`)
    narrow_rows: bool = False  # row operands' vector indices split too (:data:`NARROW_COLUMNS`)
    edge_slot: bool = False  # a flat walk's slot past ``columns``, for rows within a vector of them (:data:`FLAT_EDGE_SLOTS`)
    noncoherent: bool = False  # weights read through the non-coherent cache (:data:`NONCOHERENT_WEIGHTS`)
    packed_rows: bool = False  # its row kept across its reductions as loaded, 16-bit (:data:`PACKED_ROWS`)
    early_weights: bool = False  # its weights loaded with its row (:data:`EARLY_WEIGHTS`)
    chunk_slots: int = 0  # slots a lane of an uncached walk's chunk (0: :data:`CHUNK_SLOTS`; :data:`WRITE_ONLY_BLOCK`)
    spans: bool = False  # a warp's lanes in groups of a row each, as few as hold the row (:data:`SPAN_ROWS`)
    span_less: int = 0  # columns a group of lanes holds fewer than its slots (a flat walk's vector: :data:`FLAT_SPAN_ROWS`)

    def ids(self, k: "_Kernel", cols: ir.Value | None = None) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """(this group's first row, row stride, lane, lanes) as index values
        (``cols``: the row's length, for a group whose warps are split in
        :meth:`span` lanes a row)."""
        tid, threads = k.special("thread"), k.special("block_dim")
        block, blocks = k.special("block"), k.special("grid_dim")
        if self.kind == "block":
            return block, blocks, tid, threads
        warp = self.span(cols) if self.spans else _index(WARP)
        per_block = arith.DivUIOp(threads, warp).result
        worker = arith.AddIOp(arith.MulIOp(block, per_block).result, arith.DivUIOp(tid, warp).result).result
        return worker, arith.MulIOp(blocks, per_block).result, arith.RemUIOp(tid, warp).result, warp

    def span_steps(self) -> list[tuple[int, int]]:
        """(lanes, columns) of :meth:`span`'s steps: a row longer than
        ``columns`` takes ``lanes`` more lanes (from 1)."""
        return [(lanes, lanes * self.columns - self.span_less) for lanes in (1, 2, 4, 8, 16)]

    def span(self, cols: ir.Value) -> ir.Value:
        """The lanes that take a row of ``cols`` columns (:data:`SPAN_ROWS`):
        1 plus 1, 2, 4, 8 and 16 where the row is longer than 1, 2, 4, 8 and
        16 lanes' columns; as :meth:`span_formula` works it out for the grid."""
        span = _index(1)
        for lanes, columns in self.span_steps():
            longer = arith.CmpIOp(arith.CmpIPredicate.ugt, cols, _index(columns)).result
            span = arith.AddIOp(span, arith.SelectOp(longer, _index(lanes), _index(0)).result).result
        return span

    def span_formula(self, cols: list) -> list:
        """:meth:`span` as a launch formula of the row length ``cols``."""
        span = ["const", 1]
        for lanes, columns in self.span_steps():
            span = ["add", span, ["mul", ["gt", cols, ["const", columns]], ["const", lanes]]]
        return span

    def reduce(
        self, k: "_Kernel", values: Sequence[ir.Value], ops: Sequence[str], sequence: int = 0, row_parity: ir.Value | None = None,
        span: ir.Value | None = None,
    ) -> list[ir.Value]:
        """Each lane's partial ``values`` combined over the group (``ops``:
        the combining arith op of each; ``span``: a warp group's lanes a
        row, where its warps are split, see :meth:`span`). In a cached block variant
        (:data:`BLOCK_REDUCE`) the reduction is the ``sequence``-th of its
        row, and ``row_parity`` the parity of the row among the block's rows
        where its rows have an odd number of reductions (None where even), so
        the block's reductions alternate their rounds of partials
        (:func:`_block_reduce`)."""
        if self.kind != "block":
            return _warp_all_reduce(values, ops, within=span)
        if not self.one_barrier or not all(_word(v) for v in values):
            return _block_all_reduce(values, ops)
        if row_parity is None:
            buffer = _index(sequence % 2)
        else:
            buffer = row_parity if sequence % 2 == 0 else arith.XOrIOp(row_parity, _index(1)).result
        return _block_reduce(k, values, ops, self.threads // WARP, buffer)

    def store_group(self, lanes: int) -> int:
        """Slots (of ``lanes`` columns) whose small operands a cached pass loads together."""
        if self.kind == "block" and not self.staged:
            return BLOCK_STORE_GROUP
        return CACHED_STORE_GROUP if lanes <= VECTOR_BYTES // 4 else NARROW_STORE_GROUP

    def weight_columns(self, lanes: int) -> int:
        """Columns of its row each kept weight holds in shared memory (0: all; see :data:`SHARED_WEIGHT_BYTES`)."""
        return self.weight_slots * self.threads * lanes

    @property
    def persistent(self) -> bool:
        """Whether its blocks stay resident, each taking many rows, and keep
        row buffers or weights in shared memory across them."""
        return bool(self.buffered or self.shared_weights)

    @property
    def one_barrier(self) -> bool:
        """Whether the block reduces 32-bit values with :func:`_block_reduce` (:data:`BLOCK_REDUCE`)."""
        return BLOCK_REDUCE and self.kind == "block" and self.cached

    @property
    def blocks_per_sm(self) -> int:
        """Blocks an SM must have room for (ptxas caps registers to fit)."""
        return _blocks_per_sm(self.threads) if self.kind == "block" and self.cached else 1

    @property
    def prefetches(self) -> bool:
        """Whether the block asks the L2 for its next row (:data:`PREFETCH_NEXT_ROW`)."""
        return PREFETCH_NEXT_ROW and self.kind == "block" and not self.cached

    def grid(self, rows: list, prefetching: bool = False, cols: list | None = None) -> list:
        """The launch grid for ``rows`` rows (or pieces of rows): a block a
        row or piece, or a warp a row (or a group of its lanes a row, for
        rows of ``cols`` columns: :meth:`span`; up to :data:`PREFETCH_GRID_CAP`
        blocks where they are ``prefetching``), or persistent blocks."""
        per_block = ["const", 1 if self.kind == "block" else self.threads // WARP]
        if self.spans:
            per_block = ["div", ["const", self.threads], self.span_formula(cols)]
        cap = ["const", PREFETCH_GRID_CAP if prefetching else MAX_GRID_X]
        if self.persistent:
            sms = ["sms"] if PERSISTENT_BLOCKS is None else ["const", PERSISTENT_BLOCKS]
            cap = sms if self.blocks_per_sm == 1 else ["mul", sms, ["const", self.blocks_per_sm]]
        return [["min", _ceildiv(rows, per_block), cap], ["const", 1], ["const", 1]]


def _blocks_per_sm(threads: int) -> int:
    """Blocks of a cached block variant of ``threads`` an SM must have room for (:data:`BLOCK_MIN_PER_SM`)."""
    return BLOCK_MIN_PER_SM if threads == 512 else 1


def _warp_all_reduce(values: Sequence[ir.Value], ops: Sequence[str], span: int = WARP, within: ir.Value | None = None) -> list[ir.Value]:
    """Each (32-bit) value combined over its warp with its arith op: a
    butterfly of ``gpu.shuffle xor``, after which every lane holds the result
    (the same bits in every lane: each step combines two lanes' equal
    partials of disjoint groups, and the ops commute). With ``span`` (a power
    of two), over each aligned group of that many lanes instead; with
    ``within`` (an index value, a power of two the same in every lane), the
    same for that many: every lane shuffles at each step, and a step of
    ``within`` lanes or more keeps the lane's value (:data:`SPAN_ROWS`)."""
    width = arith.ConstantOp(ir.IntegerType.get_signless(32), WARP).result
    totals = []
    for value, op in zip(values, ops):
        for offset in (o for o in (16, 8, 4, 2, 1) if o < span):
            distance = arith.ConstantOp(ir.IntegerType.get_signless(32), offset).result
            other = gpu.ShuffleOp(value, distance, width, ir.Attribute.parse("#gpu<shuffle_mode xor>")).results[0]
            combined = ir.Operation.create(op, results=[value.type], operands=[value, other]).result
            if within is not None:
                combined = arith.SelectOp(arith.CmpIOp(arith.CmpIPredicate.ult, _index(offset), within).result, combined, value).result
            value = combined
        totals.append(value)
    return totals


def _scaled(value: ir.Value, factor: int) -> ir.Value:
    """``value * factor`` (an index or integer value)."""
    return value if factor == 1 else arith.MulIOp(value, arith.ConstantOp(value.type, factor).result).result


def _both(a: list | None, b: list | None) -> list | None:
    """The conjunction of two launch conditions (None: always)."""
    if a is None or b is None:
        return a if b is None else b
    return ["mul", a, b]


def _word(value: ir.Value) -> bool:
    """Whether ``value`` is a float32 or a 32-bit integer (what a shuffle moves)."""
    return isinstance(value.type, ir.F32Type) or (isinstance(value.type, ir.IntegerType) and ir.IntegerType(value.type).width == 32)


def _block_reduce(k: "_Kernel", values: Sequence[ir.Value], ops: Sequence[str], warps: int, buffer: ir.Value) -> list[ir.Value]:
    """Each 32-bit value combined over a block of ``warps`` full warps with
    its arith op, with one barrier: each warp combines its lanes' values
    (:func:`_warp_all_reduce`), lane 0 writes the warp's result to word
    ``warp`` of round ``buffer`` (0 or 1) of the kernel's partials
    (:meth:`_Kernel.partials`), and after the barrier every warp reads them
    all (lane ``l`` word ``l mod warps``) and combines them the same way, so
    every thread holds the same result. A block's consecutive reductions
    alternate rounds: the words of one round are written again only after
    the barrier of the next reduction, which no thread reaches before it has
    read them (:data:`BLOCK_REDUCE`)."""
    i32 = ir.IntegerType.get_signless(32)
    tid = k.special("thread")
    lane, warp = arith.RemUIOp(tid, _index(WARP)).result, arith.DivUIOp(tid, _index(WARP)).result
    base = arith.MulIOp(buffer, _index(WARP)).result
    partials = _warp_all_reduce(values, ops)
    branch = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.eq, lane, _index(0)).result)
    with ir.InsertionPoint(branch.then_block):
        for j, value in enumerate(partials):
            word = value if value.type == i32 else arith.BitcastOp(i32, value).result
            memref.StoreOp(word, k.partials(j), [arith.AddIOp(base, warp).result])
        scf.YieldOp([])
    gpu.BarrierOp()
    mine = arith.AddIOp(base, arith.AndIOp(lane, _index(warps - 1)).result).result
    loaded = []
    for j, value in enumerate(values):
        word = memref.LoadOp(k.partials(j), [mine]).result
        loaded.append(word if value.type == i32 else arith.BitcastOp(value.type, word).result)
    return _warp_all_reduce(loaded, ops, span=warps)


def _block_all_reduce(values: Sequence[ir.Value], ops: Sequence[str]) -> list[ir.Value]:
    """Each value combined over the block with its arith op (``gpu.all_reduce``:
    warp shuffles, then shared memory), followed by a barrier: every thread
    has read the results before any thread starts another reduction (the next
    row reuses the shared buffers)."""
    totals = [
        gpu.AllReduceOp(value, op=ir.Attribute.parse(f"#gpu<all_reduce_op {ALL_REDUCE_OPS[op]}>"), uniform=True).result
        for value, op in zip(values, ops)
    ]
    gpu.BarrierOp()
    return totals


def _divided(x: ir.Value, d: ir.Value) -> ir.Value:
    """``x / d`` (float32) as ``(x * s) * (1 / (d * s))``, where the
    reciprocal and the power of two ``s`` depend on ``d`` alone: the same
    along a row, so LLVM computes them once per row. ``s`` is 1 unless ``|d|``
    is below 2^-125 or above 2^125, where ``1 / d`` would overflow or lose
    bits to a subnormal; scaled, it stays normal. Scaling is exact, so the
    result is ``x * RN(1/d)`` up to overflow or underflow, which then happens
    where ``x / d`` overflows or underflows too: ±0, ±inf and NaN divisors
    give what the division gives."""
    f32 = d.type

    def constant(value: float) -> ir.Value:
        return arith.ConstantOp(f32, value).result

    size = math.AbsFOp(d).result
    tiny = arith.CmpFOp(arith.CmpFPredicate.OLT, size, constant(2.0**-125)).result
    huge = arith.CmpFOp(arith.CmpFPredicate.OGT, size, constant(2.0**125)).result
    scale = arith.SelectOp(tiny, constant(2.0**64), arith.SelectOp(huge, constant(2.0**-64), constant(1.0)).result).result
    reciprocal = arith.DivFOp(constant(1.0), arith.MulFOp(d, scale).result).result
    return arith.MulFOp(arith.MulFOp(x, scale).result, reciprocal).result


def _workgroup() -> ir.Attribute:
    return ir.Attribute.parse("#gpu.address_space<workgroup>")


def _shared_bytes() -> ir.Value:
    """The block's dynamic shared memory, as bytes."""
    return gpu.DynamicSharedMemoryOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8), memory_space=_workgroup())).result


def _padded(columns: ir.Value) -> ir.Value:
    """``columns`` rounded up to :data:`SHARED_PAD`: a row's places in each region of shared memory."""
    pad = _index(SHARED_PAD)
    return arith.MulIOp(arith.CeilDivUIOp(columns, pad).result, pad).result


def element_bytes(element: ir.Type) -> int:
    """Bytes of one element of a buffer of ``element``s (``index``: 8)."""
    if isinstance(element, ir.IndexType):
        return 8
    width = ir.FloatType(element).width if isinstance(element, ir.FloatType) else ir.IntegerType(element).width
    return max(1, width // 8)


def _index_plus(value: ir.Value, offset: int) -> ir.Value:
    """``value + offset`` (``value`` itself for 0)."""
    return arith.AddIOp(value, _index(offset)).result if offset else value


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


#: Vectors of at least this many lanes (0: none) get their index's division
#: by the lanes marked ``exact`` (:func:`_vector_index`): 8, bfloat16 and
#: half vectors. The row loop of a bfloat16 layer norm of 32K columns is then
#: 508 SASS instructions instead of 532, and on the H200 (256 MB, back to
#: back, two runs) the layer norm bfloat16 of 16K columns ran at 0.93 of copy
#: against 0.90, of 32K at 0.85 against 0.84, the other bfloat16 rows within
#: 0.01. Float32 vectors (4 lanes) keep the plain division: with it ptxas
#: scheduled the RMS norm float32 of 32K columns' loads differently (six,
#: its first slots' arithmetic, then two more) and it dropped from 0.89 to
#: 0.83 of copy, and a float32 layer norm of 32K columns spills 28 B instead
#: of 24 (sweeps 15d and 15g).
EXACT_VECTOR_LANES = 8
#: The cached block variants compute a lane's columns, the test of a slot
#: being inside the row and the clamp to the row's last vector in 32-bit
#: arithmetic (their rows are at most a block's slots long, as their launch
#: condition says), and a weight's vector index (an operand that varies
#: along the row alone) as the column's vector, widened: ptxas then forms
#: the address with one wide multiply-add instead of 64-bit compares,
#: selects, adds and shifts. The operands that vary along rows too get
#: their vector index as the row's first vector (64-bit, once a row) plus
#: the column's (32-bit), but only where the row's values leave registers
#: for those row addresses, live across the row (``words`` below
#: :data:`REGISTER_ROOM` times the rule's allowance, see
#: :data:`BLOCK_CACHED`): a layer norm float32 (40 words of 40) spilled 28
#: B on (1024, 8) with them (20 B without this, 0 B with the weights' alone)
#: and 20 B on (512, 8) (20 B, 0 B). Row loop of the layer norm float32 of
#: 32K columns 628 -> 581 SASS instructions, RMS norm float32 474 -> 377.
#: On the H200 (256 MB / 1 GB, back to back; off -> on): layer norm float32
#: 32K 0.82-0.83 / 0.85 of copy -> 0.86 / 0.89 (row operands split too:
#: 0.80-0.81 / 0.83), 16K 0.90-0.91 -> 0.94-0.95 (split too: 0.90), RMS norm
#: float32 32K 0.89-0.90 / 0.92 -> 0.90 / 0.93 (row operands 64-bit: 0.85-0.86
#: / 0.90), softmax float32 32K 0.92 -> 0.94, layer norm bfloat16 16K
#: 0.92 -> 0.94, float32 8K 0.95 -> 0.96-0.97, the other rows within 0.01
#: (bench/results/h200-sweeps.txt, sweep 16).
NARROW_COLUMNS = True
#: Whether the row operands' vector indices are split as well: None, where
#: the row's values leave the room (see :data:`NARROW_COLUMNS`); True or
#: False, in every cached block variant (tests, sweeps).
NARROW_ROW_OPERANDS = None


def _vector_index(flat: ir.Value, lanes: int) -> ir.Value:
    """The index of the ``lanes``-element vector starting at element
    ``flat``, which a vector variant only takes at a multiple of ``lanes``
    (its rows are multiples of ``lanes`` columns from an aligned start;
    an index that were not would load the wrong vector). For vectors of
    :data:`EXACT_VECTOR_LANES` lanes or more the division is marked
    ``exact``, so LLVM takes the byte offset ``flat / lanes * vector
    bytes`` as ``flat * element bytes`` instead of a shift and a mask for
    each slot."""
    quotient = arith.DivUIOp(flat, arith.ConstantOp(flat.type, lanes).result)
    if EXACT_VECTOR_LANES and lanes >= EXACT_VECTOR_LANES:
        quotient.operation.attributes["isExact"] = ir.UnitAttr.get()
    return quotient.result


def _vector_lanes(widths: Sequence[tuple[int, int]]) -> int:
    """Elements per 16-byte vector access of operands of (element bytes,
    alignment) ``widths``: the most that the widest element allows and
    every alignment divides; 1 (scalar access) for none."""
    if not widths:
        return 1
    lanes = VECTOR_BYTES // max(size for size, _ in widths)
    while lanes > 1 and any(alignment % (lanes * size) for size, alignment in widths):
        lanes //= 2
    return lanes


def _lane_and_warp(thread: ir.Value) -> tuple[ir.Value, ir.Value]:
    """A block's thread as (its lane in its warp, its warp)."""
    return arith.RemUIOp(thread, _index(WARP)).result, arith.DivUIOp(thread, _index(WARP)).result


def _warp_share(count: ir.Value, warp: ir.Value) -> ir.Value:
    """How many of ``count`` items warp ``warp`` of a block takes when the
    block's ``THREADS // WARP`` warps deal them out in turn (items ``warp``,
    ``warp + THREADS // WARP``, ...)."""
    warps = THREADS // WARP
    return arith.DivUIOp(arith.AddIOp(count, arith.SubIOp(_index(warps - 1), warp).result).result, _index(warps)).result


def _dimension(name: str) -> ir.Attribute:
    return ir.Attribute.parse(f"#gpu<dim {name}>")


# -- host-side formulas ---------------------------------------------------------------


def _product(exprs: Sequence[list]) -> list:
    result: list = ["const", 1]
    for e in exprs:
        result = e if result == ["const", 1] else ["mul", result, e]
    return result


def _sum_of(formulas: Sequence[list]) -> list:
    """The launch formula adding ``formulas`` (at least one)."""
    return functools.reduce(lambda a, b: ["add", a, b], formulas)


def _ceildiv(a: list, b: int | list) -> list:
    return ["ceildiv", a, ["const", b] if isinstance(b, int) else b]


_FORMULA_OPS = {
    "arith.addi": "add",
    "arith.subi": "sub",
    "arith.muli": "mul",
    "arith.divui": "div",
    "arith.divsi": "div",
    "arith.floordivsi": "div",
    "arith.divf": "div",  # reshape sizes are divided in f64 (exact)
    "arith.ceildivui": "ceildiv",
    "arith.ceildivsi": "ceildiv",
    "arith.mulf": "mul",
    "arith.addf": "add",
    "arith.subf": "sub",
    "arith.minui": "min",
    "arith.minsi": "min",
    "arith.maxui": "max",
    "arith.maxsi": "max",
}
_FORMULA_CASTS = ("arith.index_cast", "arith.index_castui", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci")


# -- the structure of one linalg.generic ---------------------------------------------


@dataclass
class Generic:
    """A ``linalg.generic`` as the schedulers see it."""

    op: ir.Operation
    inputs: list[ir.Value]
    outputs: list[ir.Value]
    maps: list[ir.AffineMap]
    iterators: list[str]

    @classmethod
    def of(cls, op: ir.Operation) -> "Generic":
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = list(op.operands)
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        iterators = [str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        return cls(op, operands[: segments[0]], operands[segments[0] :], maps, iterators)

    @property
    def body(self) -> ir.Block:
        return self.op.regions[0].blocks[0]

    @functools.cached_property
    def body_ops(self) -> tuple[list[ir.Value], list[tuple], list[ir.Value]]:
        """The body's arguments; (op, name, operands, results, has regions)
        of each of its ops but the yield; the yield's operands. Read once:
        each read through the bindings makes new Python objects, and
        :meth:`_Kernel.apply` clones a body thousands of times for a
        normalization's kernels."""
        ops = list(self.body.operations)
        walked = [(op, op.name, list(op.operands), list(op.results), bool(op.regions)) for op in ops[:-1]]
        return list(self.body.arguments), walked, list(ops[-1].operands)

    @property
    def parallel(self) -> list[int]:
        return [d for d, kind in enumerate(self.iterators) if kind == "parallel"]

    @property
    def reduction(self) -> list[int]:
        return [d for d, kind in enumerate(self.iterators) if kind != "parallel"]

    def fill_value(self) -> ir.Value | None:
        """The scalar a fill-like generic (all parallel, one scalar input,
        body ``yield %in``) writes; None for any other generic."""
        if self.reduction or len(self.inputs) != 1 or isinstance(self.inputs[0].type, ir.ShapedType):
            return None
        ops = list(self.body.operations)
        if len(ops) != 1 or list(ops[0].operands) != [self.body.arguments[0]]:
            return None
        return self.inputs[0]

    def combiners(self) -> list[str] | None:
        """The ``gpu.all_reduce`` op of each accumulator, or None when the body
        is not ``yield combine(acc, f(inputs))`` for every output."""
        block = self.body
        yielded = list(list(block.operations)[-1].operands)
        accumulators = list(block.arguments)[len(self.inputs) :]
        found = []
        for acc, value in zip(accumulators, yielded):
            owner = value.owner
            if isinstance(owner, ir.Block) or owner.name not in ALL_REDUCE_OPS:
                return None
            operands = list(owner.operands)
            uses = list(acc.uses)
            if len(operands) != 2 or acc not in operands or len(uses) != 1 or operands[0] == operands[1]:
                return None
            found.append(ALL_REDUCE_OPS[owner.name])
        return found

    def combining_ops(self) -> list[str]:
        """The arith op combining two partial results of each accumulator
        (the op the body yields; call after :meth:`combiners` accepted it)."""
        yielded = list(list(self.body.operations)[-1].operands)
        return [v.owner.name for v in yielded]


def _neutral(fill: ir.Value | None, combiner: str) -> bool:
    """Whether starting every lane's partial result from ``fill`` leaves a
    ``combiner`` reduction unchanged: an idempotent combiner, or ``fill`` its
    identity."""
    if fill is None:
        return False
    return combiner in _IDEMPOTENT or _constant_number(fill) == _IDENTITY.get(combiner)


def _combine(ops: Sequence[str], a: Sequence[ir.Value], b: Sequence[ir.Value]) -> list[ir.Value]:
    """Two lists of partial results combined element by element with ``ops``."""
    return [ir.Operation.create(op, results=[x.type], operands=[x, y]).result for op, x, y in zip(ops, a, b)]


def _combine_all(partials: list[list[ir.Value]], ops: Sequence[str]) -> list[ir.Value]:
    """Lists of partial results combined pairwise, as a tree (independent ops)."""
    while len(partials) > 1:
        pairs = [_combine(ops, partials[i], partials[i + 1]) for i in range(0, len(partials) - 1, 2)]
        partials = pairs + partials[len(pairs) * 2 :]
    return partials[0]


def _zero(element: ir.Type) -> ir.Value:
    """A zero of a scalar or vector type."""
    scalar = ir.VectorType(element).element_type if isinstance(element, ir.VectorType) else element
    if isinstance(scalar, ir.FloatType):
        attr = ir.FloatAttr.get(scalar, 0.0)
    else:
        attr = ir.IntegerAttr.get(scalar, 0)
    if isinstance(element, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(element, attr)
    return arith.ConstantOp(element, attr).result


def _guarded(inside: ir.Value, element: ir.Type, load) -> ir.Value:
    """``load()`` where ``inside`` holds, else a zero: the load runs in an
    ``scf.if`` whose result dominates the rest of the kernel."""
    branch = scf.IfOp(inside, [element], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([load()])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([_zero(element)])
    return branch.results[0]


def _narrow(reductions: Sequence[Generic]) -> bool:
    """Whether every accumulator of ``reductions`` is 32-bit (a warp shuffle's width)."""
    return all(element_bytes(ir.MemRefType(o.type).element_type) == 4 for g in reductions for o in g.outputs)


def _uses_dim(amap: ir.AffineMap, dim: int) -> bool:
    return any(isinstance(e, ir.AffineDimExpr) and e.position == dim for e in amap.results)


def _dims_of(amap: ir.AffineMap) -> set[int]:
    """The dims ``amap``'s results are, where a result is one."""
    return {e.position for e in amap.results if isinstance(e, ir.AffineDimExpr)}


def _renumbered(amap: ir.AffineMap, dims: Sequence[int]) -> ir.AffineMap | None:
    """``amap`` over only ``dims`` (dim ``dims[i]`` becoming dim ``i``), its
    results each one of them or a constant; None when it has other results."""
    results = []
    for e in amap.results:
        if isinstance(e, ir.AffineDimExpr) and e.position in dims:
            results.append(ir.AffineDimExpr.get(list(dims).index(e.position)))
        elif isinstance(e, ir.AffineConstantExpr):
            results.append(e)
        else:
            return None
    return ir.AffineMap.get(len(dims), 0, results)


def _column_last(amap: ir.AffineMap, inner: int) -> bool:
    """Whether ``amap`` reads dim ``inner`` (a row's column) as its last
    index and nowhere else: in a dense operand, the next column is then the
    next element."""
    at = [isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == inner for e in amap.results]
    return bool(at) and at[-1] and sum(at) == 1


def _constant_number(value: ir.Value):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, (ir.FloatAttr, ir.IntegerAttr)):
        return attr.value
    return None


# -- building one kernel -------------------------------------------------------------


class _Kernel:
    """One ``gpu.func`` under construction.

    Arguments are added on demand (:meth:`value`), each bound to a host value
    of the segment function; values the body needs from the host are cloned
    into the kernel's prologue when they are pure arithmetic.
    """

    def __init__(self, segment: "_SegmentScheduler", name: str, evict_last: bool):
        self.segment = segment
        self.name = name
        self.evict_last = evict_last  # its loads L2 evict_last (see L2_EVICT_LAST)
        with ir.InsertionPoint(segment.gpu_module_body), segment.location:
            self.func = gpu.GPUFuncOp(ir.TypeAttr.get(ir.FunctionType.get([], [])), sym_name=name, kernel=True)
            self.entry = self.func.body.blocks.append()
        with ir.InsertionPoint(self.entry), segment.location:
            self.anchor = _index(0)  # prologue clones go before it
            self.zero = self.anchor
        self.bindings: list[list] = []
        self.mapping: dict[ir.Value, ir.Value] = {}
        self.views: dict[tuple, ir.Value] = {}
        self.partial_buffers: list[ir.Value] = []

    def partials(self, index: int) -> ir.Value:
        """The ``index``-th workgroup buffer of block reductions' per-warp
        results (one per value reduced together): two rounds of a 32-bit
        word per warp, a ``memref.global`` of the kernel's module."""
        while len(self.partial_buffers) <= index:
            name = f"partials{len(self.partial_buffers)}"
            self.partial_buffers.append(self.workgroup_global(name, 2 * WARP, ir.IntegerType.get_signless(32)))
        return self.partial_buffers[index]

    def workgroup_global(self, name: str, size: int, element: ir.Type) -> ir.Value:
        """A new buffer of ``size`` elements in the block's shared memory (a
        ``memref.global`` of the kernel's module, ``{kernel}_{name}``), got
        in the kernel's prologue."""
        mtype = ir.MemRefType.get([size], element, memory_space=_workgroup())
        with ir.InsertionPoint(self.func), self.segment.location:
            memref.GlobalOp(f"{self.name}_{name}", ir.TypeAttr.get(mtype), sym_visibility="private", alignment=16)
        with ir.InsertionPoint(self.anchor.owner), self.segment.location:
            return memref.GetGlobalOp(mtype, f"{self.name}_{name}").result

    # -- arguments and host values ---------------------------------------------------

    def argument(self, host: ir.Value) -> ir.Value:
        if host not in self.mapping:
            self.mapping[host] = self.entry.add_argument(host.type, self.segment.location)
            self.bindings.append(self.segment.binding(host))
        return self.mapping[host]

    def view_argument(self, host: ir.Value, lanes: int) -> ir.Value:
        """``host`` (a dense buffer) as a 1-D kernel argument of its elements
        (``lanes`` 1) or of vectors of ``lanes`` elements."""
        key = (host, lanes)
        if key not in self.views:
            element = ir.MemRefType(host.type).element_type
            if lanes > 1:
                element = ir.VectorType.get([lanes], element)
            mtype = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], element)
            self.views[key] = self.entry.add_argument(mtype, self.segment.location)
            self.bindings.append(["flat", self.segment.binding(host), lanes])
        return self.views[key]

    def value(self, host: ir.Value) -> ir.Value:
        """``host`` (a value of the segment function) inside this kernel."""
        if host in self.mapping:
            return self.mapping[host]
        owner = host.owner
        if isinstance(owner, ir.Block) or isinstance(host.type, ir.ShapedType):
            return self.argument(host)  # an argument, a temporary or a view
        if owner.name == "memref.dim" or owner.name.startswith(_PURE_PREFIXES):
            if owner.regions:
                raise CompileError(f"the GPU schedulers cannot recompute '{owner.name}' (it has regions) inside a kernel")
            operands = [self.value(v) for v in owner.operands]
            clone = owner.clone(ip=ir.InsertionPoint(self.anchor.owner))
            for i, v in enumerate(operands):
                clone.operands[i] = v
            for old, new in zip(owner.results, clone.results):
                self.mapping[old] = new
            return self.mapping[host]
        raise CompileError(f"a kernel needs a value that '{owner.name}' computes on the host; the GPU schedulers cannot pass it")

    def finish(
        self, grid: list, block: Sequence[int] = (THREADS, 1, 1), when: list | None = None, blocks_per_sm: int = 1,
        shared_bytes: list | int = 0, max_registers: int = 0, declare_threads: bool = True,
    ) -> None:
        with ir.InsertionPoint(self.entry), self.segment.location:
            gpu.ReturnOp([])
        types = [a.type for a in self.entry.arguments]
        self.func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(types, []))
        if block[0] != THREADS and declare_threads:
            # ptxas then budgets registers for this many threads (a 1024-thread block gets at most 64 each;
            # not declared by the blocks of one warp: see WARP_BLOCK_THREADS).
            # Not on the 256-thread kernels: an RMS norm of 1024 columns ran at 0.80 of copy with
            # .maxntid (or known_block_size) and at 0.98 without (H200, bench/results/h200-sweeps.txt)
            self.func.attributes["nvvm.maxntid"] = ir.DenseI32ArrayAttr.get(list(block))
        if blocks_per_sm > 1:  # ptxas then keeps registers low enough for that many blocks on an SM
            self.func.attributes["nvvm.minctasm"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), blocks_per_sm)
        if max_registers:
            self.func.attributes["nvvm.maxnreg"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), max_registers)
        if self.evict_last:
            self.func.attributes[EVICT_LAST_ATTRIBUTE] = ir.UnitAttr.get()
        self.segment.launches.append(
            KernelLaunch(kernel=self.name, grid=grid, block=list(block), args=self.bindings, shared_bytes=shared_bytes, when=when)
        )

    # -- indices --------------------------------------------------------------------

    def special(self, kind: str, dim: str = "x") -> ir.Value:
        op = {"thread": gpu.ThreadIdOp, "block": gpu.BlockIdOp, "block_dim": gpu.BlockDimOp, "grid_dim": gpu.GridDimOp}[kind]
        return op(_dimension(dim)).result

    def loop_sizes(self, g: Generic) -> list[ir.Value]:
        """The size of every iteration dim, from the operand shapes."""
        sizes = []
        for d in range(len(g.iterators)):
            operand, position = self.segment.operand_for_dim(g, d)
            sizes.append(memref.DimOp(self.value(operand), _index(position)).result)
        return sizes

    @staticmethod
    def product(values: Sequence[ir.Value]) -> ir.Value:
        if not values:
            return _index(1)
        total = values[0]
        for v in values[1:]:
            total = arith.MulIOp(total, v).result
        return total

    @staticmethod
    def delinearize(linear: ir.Value, sizes: Sequence[ir.Value]) -> list[ir.Value]:
        """Indices of ``linear`` in a row-major space of ``sizes`` (last fastest)."""
        indices: list[ir.Value] = [None] * len(sizes)
        remaining = linear
        for d in range(len(sizes) - 1, 0, -1):
            indices[d] = arith.RemUIOp(remaining, sizes[d]).result
            remaining = arith.DivUIOp(remaining, sizes[d]).result
        if sizes:
            indices[0] = remaining
        return indices

    # -- the generic's body -----------------------------------------------------------

    def indices(self, amap: ir.AffineMap, ivs: Sequence[ir.Value]) -> list[ir.Value]:
        result = []
        for expr in amap.results:
            if isinstance(expr, ir.AffineDimExpr):
                result.append(ivs[ir.AffineDimExpr(expr).position])
            elif isinstance(expr, ir.AffineConstantExpr):
                result.append(_index(ir.AffineConstantExpr(expr).value))
            else:
                raise CompileError(f"the GPU schedulers take only dims and constants in indexing maps, not {expr}")
        return result

    def load(self, operand: ir.Value, amap: ir.AffineMap, ivs: Sequence[ir.Value]) -> ir.Value:
        if not isinstance(operand.type, ir.ShapedType):
            return self.value(operand)
        return memref.LoadOp(self.value(operand), self.indices(amap, ivs)).result

    def body(self, g: Generic, ivs: Sequence[ir.Value], outs: Sequence[ir.Value] | None, given: dict | None = None) -> list[ir.Value]:
        """Clone the generic's body at ``ivs``; ``outs`` are the values of its
        output block arguments (accumulators), loaded from the outputs when
        None and used by the body; ``given``: the values of inputs (by
        operand) that are not loaded. Returns the yielded values."""
        arguments = list(g.body.arguments)
        values = self.input_values(g, ivs, given)
        for i, arg in enumerate(arguments[len(g.inputs) :]):
            if outs is not None:
                values.append(outs[i])
            else:
                values.append(self.load(g.outputs[i], g.maps[len(g.inputs) + i], ivs) if list(arg.uses) else None)
        return self.apply(g, values, ivs)

    def input_values(self, g: Generic, ivs: Sequence[ir.Value], given: dict | None = None) -> list[ir.Value | None]:
        """The generic's input values at ``ivs`` (None for unused ones), but
        those ``given`` (by operand)."""
        given = given or {}
        return [
            (given[operand] if operand in given else self.load(operand, amap, ivs)) if list(arg.uses) else None
            for arg, operand, amap in zip(g.body.arguments, g.inputs, g.maps)
        ]

    def apply(
        self, g: Generic, values: Sequence[ir.Value | None], ivs: Sequence[ir.Value] | None = None, uniform=frozenset()
    ) -> list[ir.Value]:
        """Clone the generic's body with ``values`` for its block arguments
        (None for unused ones); returns the yielded values. ``uniform``: the
        values that are the same along the row; a division by one (or by a
        value computed from them) becomes a multiplication by its reciprocal
        (see :data:`RECIPROCAL_DIVISORS`)."""
        arguments, body, yielded = g.body_ops
        local: dict[ir.Value, ir.Value] = {arg: v for arg, v in zip(arguments, values) if v is not None}
        same = {arg for arg, v in local.items() if v in uniform}
        for op, name, op_operands, results, regions in body:
            if name == "linalg.index":
                if ivs is None:
                    raise CompileError("a generic that reads its iteration indices was given no indices")
                local[results[0]] = ivs[ir.IntegerAttr(op.attributes["dim"]).value]
                continue
            if regions:
                raise CompileError(f"the GPU schedulers cannot clone '{name}' (it has regions) into a kernel")
            operands = [local[v] if v in local else self.value(v) for v in op_operands]
            if uniform and all(v in same or v not in local for v in op_operands):
                same.update(results)
            reciprocal = RECIPROCAL_DIVISORS and name == "arith.divf" and isinstance(operands[1].type, ir.F32Type)
            if reciprocal and op_operands[1] in same and op_operands[0] not in same:
                local[results[0]] = _divided(*operands)
                continue
            clone = op.clone()
            for i, v in enumerate(operands):
                clone.operands[i] = v
            for old, new in zip(results, clone.results):
                local[old] = new
        return [local[v] if v in local else self.value(v) for v in yielded]

    def linear_index(self, operand: ir.Value, indices: Sequence[ir.Value]) -> ir.Value:
        """The flat (row-major) index of ``indices`` in a dense ``operand``."""
        buffer = self.value(operand)
        flat = indices[0] if indices else _index(0)
        for d in range(1, len(indices)):
            size = memref.DimOp(buffer, _index(d)).result
            flat = arith.AddIOp(arith.MulIOp(flat, size).result, indices[d]).result
        return flat

    def store(self, g: Generic, values: Sequence[ir.Value | None], ivs: Sequence[ir.Value]) -> None:
        """Store ``values`` to ``g``'s outputs at ``ivs`` (None: that output not)."""
        for i, (value, output) in enumerate(zip(values, g.outputs)):
            if value is None:
                continue
            amap = g.maps[len(g.inputs) + i]
            memref.StoreOp(value, self.value(output), self.indices(amap, ivs))


@dataclass(frozen=True)
class _Epilogue:
    """A pointwise generic run in an outer reduction's combining kernel
    (:meth:`_SegmentScheduler.epilogue_of`); ``kept``: by output of the
    reduction, whether its results are stored too."""

    generic: Generic
    kept: list[bool]


@dataclass(frozen=True)
class _Slot:
    """``lanes`` consecutive columns of a row that one lane handles: the
    ``index``-th slot of its chunk, from column ``col`` (iteration indices
    ``ivs``); ``inside``: whether they are in the row (the row length is a
    multiple of ``lanes``)."""

    index: int
    col: ir.Value
    inside: ir.Value
    ivs: list
    safe: ir.Value | None = None  # with CLAMPED_LOADS: the column loaded, ``col`` inside the row, else the row's last vector
    narrow: tuple | None = None  # with NARROW_COLUMNS: (col, safe) as 32-bit integers
    vector: ir.Value | None = None  # a flat walk's (FLAT_ROWS): the slot's vector, counted from the row's first
    chunk: ir.Value | None = None  # ... its chunk's first (see _RowWalk.fresh)
    whole: ir.Value | None = None  # ... and whether all its columns are in the row (``col`` may be below 0)


class _RowWalk:
    """How one lane of a row kernel walks the columns of its row: in slots of
    ``lanes`` consecutive columns (16-byte vectors when ``lanes`` > 1),
    ``width`` lanes side by side. A chunk of a lane's slots is unrolled: its
    loads (each guarded by the slot being inside the row) are all issued
    before its arithmetic and stores, so they are in flight together, and a
    reduction keeps one partial result per slot. The loaded values of a chunk
    are kept by (operand, map, slot), so the generics of a row that fits in one
    chunk (the *cached* variants) read each input from memory once.
    ``registers``: row values kept in registers (per-row temporaries);
    ``clamped``: vector loads of slots past the row's end read its last
    vector instead of being guarded (:data:`CLAMPED_LOADS`; rows of at least
    one vector)."""

    def __init__(
        self, k: "_Kernel", row_ivs: list, row_sizes: list, lane, width, lanes: int, registers: dict, store_group: int = 1, clamped: bool = False
    ):
        self.k = k
        self.row_ivs = row_ivs
        self.row_sizes = row_sizes  # sizes of the row's (trailing) dims
        self.cols = k.product(row_sizes)
        self.lane, self.width, self.lanes = lane, width, lanes
        self.registers = registers
        self.store_group = store_group  # slots whose small operands a cached pass loads together
        self.clamped = clamped and len(row_sizes) == 1
        self.uniform: set[ir.Value] = set()  # values read once per row (the same for every column)
        self.staged: dict[tuple, ir.Value] = {}  # (operand, map) -> its region of shared memory (staged variant)
        self.staged_slots: dict[tuple, int] = {}  # (operand, map) -> a lane's slots its region holds, where not all
        self.filled: set[tuple] = set()  # staged keys written by the generics walked so far
        self.filling: set[tuple] = set()  # ... and by the one being walked
        self.keeping: list[tuple] = []  # (vector, region, slot) loaded and yet to be stored in shared memory
        self.reductions = 0  # group reductions of the row so far
        self.row_parity: ir.Value | None = None  # see _RowGroup.reduce
        self.after_first_reduction = None  # a buffered variant's _RowBuffer.release
        self.narrow_rows = False  # see _RowGroup.narrow_rows
        self.noncoherent = False  # see _RowGroup.noncoherent
        self.piece = None  # (start, stop): the columns of the row to walk, where not all (ROW_PIECE_CHUNKS)
        self.flat: _FlatRow | None = None  # see flatten
        self.span = self.cols  # the columns a chunk loop walks (a flat walk's start before the row's first)
        self.chunk_slots = CHUNK_SLOTS  # slots a lane of a chunk loop's chunk (a group's where it says: WRITE_ONLY_BLOCK)

    def flatten(self, row: ir.Value, count: ir.Value) -> None:
        """Walk the row (the ``row``-th of a dense tensor of ``count``
        elements) over the tensor's flat vectors (:data:`FLAT_ROWS`): its
        columns from ``-shift``, where ``shift`` is its first element's place
        in its vector."""
        lanes = _index(self.lanes)
        start = arith.MulIOp(row, self.cols).result
        first = arith.DivUIOp(start, lanes).result
        shift = arith.SubIOp(start, _scaled(first, self.lanes)).result
        end = arith.DivUIOp(arith.SubIOp(arith.AddIOp(start, self.cols).result, _index(1)).result, lanes).result
        last_whole = arith.SubIOp(arith.DivUIOp(count, lanes).result, _index(1)).result
        self.flat = _FlatRow(first, arith.SubIOp(end, first).result, end, shift, last_whole, arith.SubIOp(count, _index(1)).result)
        self.span = arith.AddIOp(self.cols, shift).result

    def stage(self, regions: dict[tuple, tuple[ir.Type, int]], at: ir.Value | None = None, span: ir.Value | None = None, slots: int = 0) -> None:
        """Keep the operands of ``regions`` ((operand, map) -> (element type,
        bytes per column before its region)) in dynamic shared memory: the
        first generic to read one stores what it loads there, and later
        generics read it there. A lane touches only its own columns' places,
        so no barrier is needed (see :meth:`_SegmentScheduler.staged_regions`).
        With ``at`` (a byte offset in shared memory), the regions there
        already hold the row (a buffered variant's row buffer): every
        generic reads them. With ``span`` (columns a region holds, not the
        row's padded columns) and ``slots``, a region holds each lane's first
        ``slots`` slots (the row's first ``span`` columns, see
        :data:`SHARED_WEIGHT_BYTES`); the others are read from memory."""
        base = _shared_bytes()
        padded = span if span is not None else _padded(self.cols if self.flat is None else _index_plus(self.cols, self.lanes))
        count = arith.DivUIOp(padded, _index(self.lanes)).result
        for key, (element, offset) in regions.items():
            if slots:
                self.staged_slots[key] = slots
            vtype = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.VectorType.get([self.lanes], element), memory_space=_workgroup())
            start = _scaled(padded, offset)
            self.staged[key] = memref.ViewOp(vtype, base, start if at is None else arith.AddIOp(at, start).result, [count]).result
        if at is not None:
            self.filled |= set(regions)

    def holds(self, key: tuple, slot: _Slot) -> bool:
        """Whether the staged region of ``key`` holds ``slot`` (all of a lane's slots, or its first :attr:`staged_slots`)."""
        return key not in self.staged_slots or slot.index < self.staged_slots[key]

    def stages(self, g: Generic) -> bool:
        """Whether ``g`` is the first to read a staged operand."""
        return any((o, str(m)) in self.staged and (o, str(m)) not in self.filled for o, m in zip(g.inputs, g.maps))

    def settle(self) -> None:
        """The generic just walked has written its staged values."""
        self.filled |= self.filling

    def slots(self, base: ir.Value, count: int) -> list[_Slot]:
        """The lane's ``count`` slots of the chunk from column ``base``: slot
        ``j`` starts at ``base + (lane + j * width) * lanes``; computed in 32
        bits where the loads are clamped or the walk is over a piece of the
        row, from its start (:data:`NARROW_COLUMNS`)."""
        if self.flat is not None:
            return self._flat_slots(base, count)
        narrow = NARROW_COLUMNS and (self.clamped or self.piece is not None)
        index, i32 = ir.IndexType.get(), ir.IntegerType.get_signless(32)

        def word(value: ir.Value) -> ir.Value:
            return arith.IndexCastOp(i32, value).result if narrow else value

        def wide(value: ir.Value) -> ir.Value:
            return arith.IndexCastUIOp(index, value).result if narrow else value

        if self.piece is not None:  # columns from the piece's start: 32-bit, whatever the row's length
            start, stop = self.piece
            cols, base = word(arith.SubIOp(stop, start).result), arith.SubIOp(base, start).result
        else:
            cols = word(self.cols)
        first = arith.AddIOp(word(base), _scaled(word(self.lane), self.lanes)).result
        stride = _scaled(word(self.width), self.lanes)
        last = arith.SubIOp(cols, arith.ConstantOp(cols.type, self.lanes).result).result if self.clamped else None
        slots = []
        for j in range(count):
            col = first if j == 0 else arith.AddIOp(first, _scaled(stride, j)).result
            inside = arith.CmpIOp(arith.CmpIPredicate.ult, col, cols).result
            safe = arith.MinUIOp(col, last).result if self.clamped else None
            column = wide(col) if self.piece is None else arith.AddIOp(self.piece[0], wide(col)).result  # as an index
            columns = [column] if len(self.row_sizes) == 1 else self.k.delinearize(column, self.row_sizes)
            safe_index = wide(safe) if safe is not None else None
            slots.append(_Slot(j, column, inside, self.row_ivs + columns, safe_index, (col, safe) if narrow else None))
        return slots

    def _flat_slots(self, base: ir.Value, count: int) -> list[_Slot]:
        """A flat walk's slots: slot ``j`` is the row's vector ``base / lanes
        + lane + j * width``, from column ``vector * lanes - shift``."""
        flat, lanes = self.flat, self.lanes
        chunk = arith.DivUIOp(base, _index(lanes)).result
        room = arith.SubIOp(self.cols, _index(lanes - 1)).result  # columns a whole vector may start at (rows of more than a vector)
        slots = []
        for j in range(count):
            at, col = self._place(chunk, self.lane, j)  # (col below 0 by the shift in the row's first vector)
            inside = arith.CmpIOp(arith.CmpIPredicate.ule, at, flat.last).result
            whole = arith.CmpIOp(arith.CmpIPredicate.ult, col, room).result  # (a column below 0 compares as a large one)
            slots.append(_Slot(j, col, inside, self.row_ivs + [col], vector=at, chunk=chunk, whole=whole))
        return slots

    def fresh(self, slot: _Slot) -> tuple[ir.Value, ir.Value]:
        """A flat walk's (vector, first column) of the slot, computed here
        from the lane through :func:`_opaque`: else LLVM computes them once
        for the row and keeps them (64-bit each, for every slot) in the
        registers the row's values need; ptxas spilled 300-1200 B in 8-slot
        blocks."""
        return self._place(slot.chunk, _opaque(self.lane), slot.index)

    def _place(self, chunk: ir.Value, lane: ir.Value, index: int) -> tuple[ir.Value, ir.Value]:
        """(vector, first column) of a flat walk's slot ``index`` of ``lane``, in the chunk from vector ``chunk``."""
        at = arith.AddIOp(chunk, lane).result
        if index:
            at = arith.AddIOp(at, _scaled(self.width, index)).result
        return at, arith.SubIOp(_scaled(at, self.lanes), self.flat.shift).result

    def columns_inside(self, slot: _Slot) -> list[ir.Value]:
        """Whether each column of a flat walk's slot is in the row (see :meth:`fresh`)."""
        col = self.fresh(slot)[1]
        return [arith.CmpIOp(arith.CmpIPredicate.ult, _index_plus(col, i), self.cols).result for i in range(self.lanes)]

    def vector_index(self, operand: ir.Value, amap: ir.AffineMap, slot: _Slot, safe: bool) -> ir.Value:
        """The index of the vector of ``operand`` (read through ``amap``) at
        the slot, or with ``safe`` at its clamped column (:data:`CLAMPED_LOADS`):
        with :data:`NARROW_COLUMNS`, where the map ends with the row's column
        dim, the row's first vector plus the column's, the latter in 32 bits
        (for operands that vary along rows, only with :attr:`narrow_rows`)."""
        k, lanes, ivs = self.k, self.lanes, slot.ivs
        n = len(ivs)
        results = list(amap.results)
        last = results[-1] if results else None
        split = isinstance(last, ir.AffineDimExpr) and ir.AffineDimExpr(last).position == n - 1
        if split and not self.narrow_rows:  # a weight's only (its row part is 0)
            split = self.weight(amap)
        if slot.narrow is None or not split:
            return _vector_index(k.linear_index(operand, k.indices(amap, ivs[:-1] + [slot.safe] if safe else ivs)), lanes)
        narrow = slot.narrow[1] if safe else slot.narrow[0]
        row = _vector_index(k.linear_index(operand, k.indices(amap, ivs[:-1] + [k.zero if self.piece is None else self.piece[0]])), lanes)
        return arith.AddIOp(row, arith.IndexCastUIOp(ir.IndexType.get(), _vector_index(narrow, lanes)).result).result

    def chunk(self) -> tuple[ir.Value, int]:
        """(columns per chunk of the whole group, slots per lane) of a loop
        over the row in chunks of :attr:`chunk_slots` slots per lane
        (:data:`CHUNK_SLOTS` unless a group says otherwise)."""
        return _scaled(self.width, self.lanes * self.chunk_slots), self.chunk_slots

    def inputs(self, g: Generic, slot: _Slot, cache: dict) -> list[list]:
        """The generic's input values for the columns of ``slot``: one list
        per column (operands that vary along the row loaded as one vector,
        the others once), loads kept in ``cache``."""
        k, lanes, ivs = self.k, self.lanes, slot.ivs
        n = len(g.iterators)
        row_dims = range(n - len(self.row_sizes), n)
        columns = [[] for _ in range(lanes)]
        for arg, operand, amap in zip(g.body.arguments, g.inputs, g.maps):
            varies = False
            if operand in self.registers or not list(arg.uses):
                values = [self.registers.get(operand)] * lanes
            elif not isinstance(operand.type, ir.ShapedType):
                values = [k.value(operand)] * lanes
            else:
                varies = any(_uses_dim(amap, d) for d in row_dims)
                key = (operand, str(amap), slot.index if varies else None)
                if key not in cache:
                    cache[key] = self._load(operand, amap, ivs, slot) if varies else [k.load(operand, amap, ivs)] * lanes
                values = cache[key]
            if not varies:
                self.uniform.add(values[0])
            for column, value in zip(columns, values):
                column.append(value)
        return columns

    def load_weights(self, g: Generic, slots: list[_Slot], cache: dict) -> None:
        """Load the generic's weights (inputs that vary along the row alone)
        at ``slots`` into ``cache`` now, ahead of the generic
        (:data:`EARLY_WEIGHTS`). A row kernel writes full-size and per-row
        values only, so nothing it stores can alias them."""
        row_dims = range(len(g.iterators) - len(self.row_sizes), len(g.iterators))
        for slot in slots:
            for arg, operand, amap in zip(g.body.arguments, g.inputs, g.maps):
                if operand in self.registers or not list(arg.uses) or not isinstance(operand.type, ir.ShapedType):
                    continue
                key = (operand, str(amap), slot.index)
                if self.weight(amap) and any(_uses_dim(amap, d) for d in row_dims) and key not in cache:
                    cache[key] = self._load(operand, amap, slot.ivs, slot)

    def _load(self, operand: ir.Value, amap: ir.AffineMap, ivs: list, slot: _Slot) -> list[ir.Value]:
        k, lanes = self.k, self.lanes
        element = ir.MemRefType(operand.type).element_type
        if self.flat is not None and amap != ir.AffineMap.get_identity(len(ivs)):
            return self._flat_elements(operand, amap, slot)
        if lanes == 1 and slot.safe is None:  # a column of any layout, where the row has it
            buffer, indices = k.value(operand), k.indices(amap, ivs)
            return [_guarded(slot.inside, element, lambda: memref.LoadOp(buffer, indices).result)]
        key = (operand, str(amap))
        staged = self.staged.get(key)
        if self.flat is not None:  # the slot's vector, the row's last where the slot is past it
            if staged is not None and key in self.filled:
                loaded = memref.LoadOp(staged, [arith.MinUIOp(slot.vector, self.flat.last).result]).result
            else:  # (the row's first vector plus the slot's, clamped: no index a slot keeps)
                loaded = self._flat_vector(operand, arith.MinUIOp(arith.AddIOp(self.flat.first, slot.vector).result, self.flat.end).result, element)
        else:
            col = slot.col if slot.safe is None else slot.safe  # the row's own column or its last vector (CLAMPED_LOADS)
            if staged is not None and key in self.filled and self.holds(key, slot):
                view, index = staged, self.staged_index(col)
            else:
                view, index = k.view_argument(operand, lanes), self.vector_index(operand, amap, slot, slot.safe is not None)
            if slot.safe is not None and self.noncoherent and view is not staged and self.weight(amap) and lanes * element_bytes(element) == VECTOR_BYTES:
                loaded = _noncoherent_vector(view, index)
            elif slot.safe is not None:  # clamped: a dense operand (a scalar one too: SCALAR_CACHED_ROWS)
                loaded = memref.LoadOp(view, [index]).result
            else:
                loaded = _guarded(slot.inside, ir.VectorType.get([lanes], element), lambda: memref.LoadOp(view, [index]).result)
        if staged is not None and key not in self.filled:  # the first generic to read it keeps it
            self.keeping.append((loaded, staged, slot))
            self.filling.add(key)
        return [loaded] if lanes == 1 else [vector.ExtractOp(loaded, [], [j]).result for j in range(lanes)]

    def weight(self, amap: ir.AffineMap) -> bool:
        """Whether an operand read through ``amap`` varies along the row alone (a weight)."""
        return not any(_uses_dim(amap, d) for d in range(amap.n_dims - len(self.row_sizes)))

    def _flat_elements(self, operand: ir.Value, amap: ir.AffineMap, slot: _Slot) -> list[ir.Value]:
        """A flat walk's values at the slot of an operand not read at the
        generic's own indices (a weight): each column's element, at a column
        in the row."""
        k = self.k
        last, col = arith.SubIOp(self.cols, _index(1)).result, self.fresh(slot)[1]
        columns = [arith.MinUIOp(arith.MaxSIOp(_index_plus(col, i), k.zero).result, last).result for i in range(self.lanes)]
        view = k.view_argument(operand, 1)
        return [memref.LoadOp(view, [k.linear_index(operand, k.indices(amap, slot.ivs[:-1] + [c]))]).result for c in columns]

    def _flat_vector(self, operand: ir.Value, at: ir.Value, element: ir.Type) -> ir.Value:
        """The tensor's vector ``at``: past its last whole vector (the
        elements of a partial one), an element at a time."""
        k, lanes, flat = self.k, self.lanes, self.flat
        whole = arith.MinUIOp(at, flat.last_whole).result
        vtype = ir.VectorType.get([lanes], element)
        loaded = memref.LoadOp(k.view_argument(operand, lanes), [whole]).result
        branch = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.ne, at, whole).result, [vtype], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            view, start = k.view_argument(operand, 1), _scaled(at, lanes)
            elements = [memref.LoadOp(view, [arith.MinUIOp(_index_plus(start, i), flat.last_element).result]).result for i in range(lanes)]
            scf.YieldOp([vector.FromElementsOp(vtype, elements).result])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([loaded])
        return branch.results[0]

    def keep_loaded(self) -> None:
        """Store the values loaded to be staged, after all the loads of the
        slots at hand were issued (a store waits for its value: one right
        behind each load would leave one load in flight per lane)."""
        for loaded, staged, slot in self.keeping:
            branch = scf.IfOp(slot.inside)
            with ir.InsertionPoint(branch.then_block):
                memref.StoreOp(loaded, staged, [slot.vector if slot.vector is not None else self.staged_index(slot.col)])
                scf.YieldOp([])
        self.keeping = []

    def staged_index(self, col: ir.Value) -> ir.Value:
        """The place in a staged region of the vector from column ``col`` (its index in the row)."""
        return _vector_index(col, self.lanes)

    def reduce(self, g: Generic, inits: list[ir.Value], slots: list[_Slot] | None = None, cache: dict | None = None) -> list[ir.Value]:
        """This lane's partial results of reduction ``g`` over the row (to be
        combined over the group), from ``inits`` (neutral, see
        :func:`_neutral`): over the given ``slots`` (the whole row), or in a
        loop of chunks."""
        ops = g.combining_ops()
        if slots is not None:
            return _combine_all(self._reduce_slots(g, slots, [list(inits)] * len(slots), cache), ops)
        step, count = self.chunk()
        n = len(inits)
        loop = scf.ForOp(self.k.zero, self.span, step, list(inits) * count)
        with ir.InsertionPoint(loop.body):
            carried = list(loop.inner_iter_args)
            accs = [carried[j * n : (j + 1) * n] for j in range(count)]
            updated = self._reduce_slots(g, self.slots(loop.induction_variable, count), accs, {})
            scf.YieldOp([v for partial in updated for v in partial])
        results = list(loop.results)
        return _combine_all([results[j * n : (j + 1) * n] for j in range(count)], ops)

    def _reduce_slots(self, g: Generic, slots: list[_Slot], accs: list[list], cache: dict) -> list[list]:
        """Each slot's partial results updated with its columns (unchanged
        where the slot is outside the row)."""
        loaded = [self.inputs(g, slot, cache) for slot in slots]  # every load first
        self.keep_loaded()
        updated = []
        for slot, acc, columns in zip(slots, accs, loaded):
            partial = acc
            if slot.whole is not None:  # a flat walk's: the columns in the row (selects: a branch a slot ran slower)
                for column, inside in zip(columns, self.columns_inside(slot)):
                    new = self.k.apply(g, column + partial, slot.ivs, self.uniform)
                    partial = [arith.SelectOp(inside, a, b).result for a, b in zip(new, partial)]
                updated.append(partial)
                continue
            for column in columns:
                partial = self.k.apply(g, column + partial, slot.ivs, self.uniform)
            updated.append([arith.SelectOp(slot.inside, new, old).result for new, old in zip(partial, acc)])
        return updated

    def pointwise(self, g: Generic, slots: list[_Slot] | None = None, cache: dict | None = None, keep=frozenset()) -> None:
        """A pointwise generic over the row: over the given ``slots`` (the
        whole row; outputs in ``keep`` stay in ``cache`` instead of memory),
        or in a loop of chunks over the row or its :attr:`piece`."""
        if slots is not None:  # what is left to load (small operands like weights): a few slots at a time
            for at in range(0, len(slots), self.store_group):
                self._pointwise_slots(g, slots[at : at + self.store_group], cache, keep)
            return
        step, count = self.chunk()
        start, stop = self.piece or (self.k.zero, self.span)
        loop = scf.ForOp(start, stop, step)
        with ir.InsertionPoint(loop.body):
            self._pointwise_slots(g, self.slots(loop.induction_variable, count), {}, frozenset())
            scf.YieldOp([])

    def _pointwise_slots(self, g: Generic, slots: list[_Slot], cache: dict, keep) -> None:
        """The generic at ``slots``: every load before any store (a store may
        alias a later load, so nothing would move a load above it)."""
        loaded = [self.inputs(g, slot, cache) for slot in slots]
        self.keep_loaded()
        for slot, columns in zip(slots, loaded):
            results = [self.k.apply(g, c + [None] * len(g.outputs), slot.ivs, self.uniform) for c in columns]
            self._store(g, slot, results, cache, keep)

    def _store(self, g: Generic, slot: _Slot, results: list[list], cache: dict, keep) -> None:
        k, lanes, ivs = self.k, self.lanes, slot.ivs
        stores = []
        for i, output in enumerate(g.outputs):
            amap = g.maps[len(g.inputs) + i]
            values = [r[i] for r in results]
            if output in keep:
                cache[(output, str(amap), slot.index)] = values
                continue
            if self.flat is not None:
                self._flat_store(output, values, slot)
                continue
            if lanes == 1 and not self.clamped:  # a column of any layout
                stores.append((values[0], k.value(output), k.indices(amap, ivs)))
                continue
            element = ir.MemRefType(output.type).element_type  # at its flat index (a dense output; SCALAR_CACHED_ROWS: a column)
            packed = values[0] if lanes == 1 else vector.FromElementsOp(ir.VectorType.get([lanes], element), values).result
            stores.append((packed, k.view_argument(output, lanes), [self.vector_index(output, amap, slot, False)]))
        if not stores:
            return
        branch = scf.IfOp(slot.inside)
        with ir.InsertionPoint(branch.then_block):
            for value, buffer, indices in stores:
                memref.StoreOp(value, buffer, indices)
            scf.YieldOp([])

    def _flat_store(self, output: ir.Value, values: list[ir.Value], slot: _Slot) -> None:
        """A flat walk's store of the slot's columns: one vector where they
        are all in the row, else each column in the row on its own."""
        k, lanes = self.k, self.lanes
        at = arith.AddIOp(self.flat.first, self.fresh(slot)[0]).result
        element = ir.MemRefType(output.type).element_type
        branch = scf.IfOp(slot.whole, has_else=True)
        with ir.InsertionPoint(branch.then_block):
            memref.StoreOp(vector.FromElementsOp(ir.VectorType.get([lanes], element), values).result, k.view_argument(output, lanes), [at])
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            start = _scaled(at, lanes)
            for i, (value, inside) in enumerate(zip(values, self.columns_inside(slot))):
                column = scf.IfOp(inside)
                with ir.InsertionPoint(column.then_block):
                    memref.StoreOp(value, k.view_argument(output, 1), [_index_plus(start, i)])
                    scf.YieldOp([])
            scf.YieldOp([])


@dataclass(frozen=True)
class _FlatRow:
    """Where a flat walk's row lies (:meth:`_RowWalk.flatten`), as index
    values: its first vector in the tensor, its last counted from the first
    and in the tensor, its first element's place in its vector, the
    tensor's last whole vector and its last element."""

    first: ir.Value
    last: ir.Value
    end: ir.Value  # (its last vector in the tensor)
    shift: ir.Value
    last_whole: ir.Value
    last_element: ir.Value


class _RowBuffer:
    """A buffered variant's row buffers in dynamic shared memory
    (:data:`BUFFER_NEXT_ROW`): ``rows`` (inputs read by the row's first
    reduction or a step before it) and ``weights`` (inputs that vary along
    the row alone), both (operand, map text) -> map. The weights' regions
    come first, then ``depth`` buffers of a region of the row's columns for
    each of ``rows``; bulk copies fill them, each buffer completing on its
    own mbarrier.

    Before the row loop, thread 0 asks for the weights and the block's first
    ``depth`` rows (:meth:`open`). Row ``t`` of the block (counting from 0)
    is in buffer ``t mod depth``: it waits for that buffer's mbarrier to
    complete phase ``t div depth`` (parity ``t div depth mod 2``). Once
    every lane has read it (past the barrier of the row's first reduction:
    the cached variants load all of a row's inputs in the generic that reads
    them first), thread 0 asks for row ``t + depth`` into the same buffer
    (:meth:`release`). With ``depth`` 0 and no rows, the weights alone
    (:data:`SHARED_WEIGHTS_ALONE`): every row waits for phase 0 of the one
    mbarrier, complete from the block's first row on. ``weight_columns``
    (weights alone only; 0: all): each weight keeps at most its row's first
    so many columns (:data:`SHARED_WEIGHT_BYTES`)."""

    def __init__(self, rows: dict, weights: dict, weight_columns: int = 0):
        if weight_columns and rows:
            raise ValueError("a row buffer keeps its weights whole: weight_columns is for weights alone")
        self.rows, self.weights, self.weight_columns = rows, weights, weight_columns
        self.weight_regions, self.weight_bytes = self._regions(weights, 0)  # (operand, map text) -> (element, bytes a column before it)
        self.row_regions, end = self._regions(rows, self.weight_bytes)  # buffer 0's
        self.row_bytes = end - self.weight_bytes
        self.bytes = (self.row_bytes, tuple(element_bytes(element) for element, _ in self.weight_regions.values()))  # a column: a row buffer's, each weight's
        self.regions = {**self.weight_regions, **self.row_regions}

    @staticmethod
    def _regions(inputs: dict, offset: int) -> tuple[dict, int]:
        regions = {}
        for key in inputs:
            element = ir.MemRefType(key[0].type).element_type
            regions[key] = (element, offset)
            offset += element_bytes(element)
        return regions, offset

    def open(self, k: "_Kernel", loop: scf.ForOp, sizes: list, p: int, lanes: int, depth: int) -> ir.Value:
        """The prologue, before ``loop`` (the row loop), and the wait for the
        row at the insertion point (the start of the loop's body); returns
        the byte offset of the row's buffer from buffer 0 (0 where ``depth``
        is 0: the weights alone)."""
        self.k, self.loop, self.sizes, self.p, self.lanes, self.depth = k, loop, sizes, p, lanes, depth
        count = max(depth, 1)  # mbarriers: one a buffer, or the weights' alone
        with ir.InsertionPoint(loop.operation):
            self.barriers = _mbarriers(k, "rows", count)
            self.base = _shared_bytes()
            self.columns = k.product(sizes[p:])
            self.padded = _padded(self.columns)
            #: columns a weight's region holds (its row's, padded, or weight_columns), and the columns copied there
            self.weight_span, self.weight_copied = self.padded, self.columns
            if self.weight_columns:
                self.weight_span = arith.MinUIOp(self.padded, _index(self.weight_columns)).result
                self.weight_copied = arith.MinUIOp(self.columns, _index(self.weight_columns)).result
            for j in range(count):
                row = arith.AddIOp(loop.lowerBound, _scaled(loop.step, j)).result
                there = arith.CmpIOp(arith.CmpIPredicate.ult, row, loop.upperBound).result
                branch = scf.IfOp(arith.AndIOp(_thread_0(k), there).result)
                with ir.InsertionPoint(branch.then_block):
                    if j == 0:
                        _init_mbarriers(self.barriers, count)
                    self._ask(row, _index(j), {**self.weights, **self.rows} if j == 0 else self.rows)
                    scf.YieldOp([])
            gpu.BarrierOp()
        if not depth:
            _wait(_mbarrier(self.barriers, k.zero), k.zero)
            return k.zero
        done = _iterations_done(loop)
        self.which = arith.RemUIOp(done, _index(depth)).result
        parity = arith.AndIOp(arith.DivUIOp(done, _index(depth)).result, _index(1)).result
        _wait(_mbarrier(self.barriers, self.which), parity)
        return self._buffer(self.which)

    def release(self) -> None:
        """Thread 0 asks for the row ``depth`` rows on into this row's buffer
        (every lane has read this row)."""
        row = arith.AddIOp(self.loop.induction_variable, _scaled(self.loop.step, self.depth)).result
        more = arith.CmpIOp(arith.CmpIPredicate.ult, row, self.loop.upperBound).result
        branch = scf.IfOp(arith.AndIOp(_thread_0(self.k), more).result)
        with ir.InsertionPoint(branch.then_block):
            nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)  # after the lanes' reads
            self._ask(row, self.which, self.rows)
            scf.YieldOp([])

    def _buffer(self, which: ir.Value) -> ir.Value:
        """Byte offset of row buffer ``which`` from buffer 0."""
        return arith.MulIOp(which, _scaled(self.padded, self.row_bytes)).result

    def _ask(self, row: ir.Value, which: ir.Value, inputs: dict) -> None:
        """Copies of ``row`` of ``inputs`` into their regions (the rows' in
        buffer ``which``), completing on its mbarrier, which expects their
        bytes (thread 0)."""
        k = self.k
        n = len(self.sizes)
        ivs = k.delinearize(row, self.sizes[: self.p]) + [k.zero] * (n - self.p)
        regions = self.regions
        weight_bytes = sum(element_bytes(regions[key][0]) for key in inputs if key in self.weight_regions)
        row_bytes = sum(element_bytes(regions[key][0]) for key in inputs if key in self.row_regions)
        barrier = _mbarrier(self.barriers, which)
        _expect_bytes(barrier, arith.AddIOp(_scaled(self.weight_copied, weight_bytes), _scaled(self.columns, row_bytes)).result)
        buffer = self._buffer(which)
        for (operand, text), amap in inputs.items():
            element, offset = regions[(operand, text)]
            size = element_bytes(element)
            flat = k.linear_index(operand, k.indices(amap, ivs))
            source = _pointer(k.view_argument(operand, self.lanes), _scaled(flat, size), 1)
            if (operand, text) in self.row_regions:
                start, count = arith.AddIOp(buffer, _scaled(self.padded, offset)).result, self.columns
            else:
                start, count = _scaled(self.weight_span, offset), self.weight_copied
            _bulk_copy(source, self.base, start, _scaled(count, size), barrier)


def _opaque(value: ir.Value) -> ir.Value:
    """``value`` (an index below 2**32) through an inline-asm move with side
    effects, so that LLVM keeps what is computed from it where it is
    computed: not hoisted out of the loop it is in (into registers live
    across the loop), not folded."""
    i32 = ir.IntegerType.get_signless(32)
    moved = llvm.InlineAsmOp(i32, [arith.IndexCastUIOp(i32, value).result], "mov.u32 $0, $1;", "=r,r", has_side_effects=True).result
    return arith.IndexCastUIOp(ir.IndexType.get(), moved).result


def _packed_again(cache: dict, lanes: int) -> None:
    """Each slot's 16-bit row values in ``cache`` replaced by the same bits
    through an inline-asm move of their packed 32-bit words (with side
    effects: LLVM cannot see through it), so that the generic after a
    reduction converts them to float32 again instead of reusing the
    conversions before it: a lane keeps its row across the reduction's
    barrier as loaded, half a word a column, not a float32 register a
    column (:data:`PACKED_ROWS`)."""
    i32 = ir.IntegerType.get_signless(32)
    words = lanes // 2
    for key, values in list(cache.items()):
        if key[2] is None or element_bytes(values[0].type) != 2:
            continue  # a value per row, or not 16-bit
        loaded = vector.FromElementsOp(ir.VectorType.get([lanes], values[0].type), values).result
        packed = vector.BitCastOp(ir.VectorType.get([words], i32), loaded).result
        parts = [vector.ExtractOp(packed, [], [w]).result for w in range(words)]
        text = " ".join(f"mov.b32 ${w}, ${words + w};" for w in range(words))
        again = _asm_words(loaded.type, parts, text, ["r"] * words)
        cache[key] = [vector.ExtractOp(again, [], [j]).result for j in range(lanes)]


def _asm_words(vtype: ir.Type, operands: list, text: str, constraints: list[str]) -> ir.Value:
    """A vector of ``vtype`` whose 32-bit words are the outputs ``$0, $1,
    ...`` of inline asm ``text`` (with side effects) on ``operands`` (of
    ``constraints``, numbered after the outputs)."""
    i32 = ir.IntegerType.get_signless(32)
    vtype = ir.VectorType(vtype)
    count = vtype.shape[0] * element_bytes(vtype.element_type) // 4
    # LLVM takes the one output of an asm as its value, and several as a struct (a struct of one aborts its codegen).
    result = i32 if count == 1 else ir.Type.parse("!llvm.struct<(" + ", ".join(["i32"] * count) + ")>")
    asm = llvm.InlineAsmOp(result, operands, text, ",".join(["=r"] * count + constraints), has_side_effects=True).result
    outputs = [asm] if count == 1 else [llvm.ExtractValueOp(i32, asm, [w]).result for w in range(count)]
    words = vector.FromElementsOp(ir.VectorType.get([count], i32), outputs).result
    return vector.BitCastOp(vtype, words).result


def _thread_0(k: "_Kernel") -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.eq, k.special("thread"), _index(0)).result


def _mbarriers(k: "_Kernel", name: str, count: int) -> ir.Value:
    """An ``!llvm.ptr<3>`` to ``count`` mbarriers (8-byte words) in a workgroup global ``{kernel}_{name}``."""
    return _pointer(k.workgroup_global(name, count, ir.IntegerType.get_signless(64)), k.zero, 3)


def _mbarrier(barriers: ir.Value, which: ir.Value) -> ir.Value:
    """The ``which``-th mbarrier of ``barriers``."""
    i64 = ir.IntegerType.get_signless(64)
    return llvm.GEPOp(barriers.type, barriers, [arith.IndexCastOp(i64, which).result], [_DYNAMIC_INDEX], i64, 0).result


def _init_mbarriers(barriers: ir.Value, count: int) -> None:
    """Thread 0: the ``count`` mbarriers, each completing a phase on one
    arrival (and the bytes it expects), made visible to the copy engine."""
    i32 = ir.IntegerType.get_signless(32)
    for i in range(count):
        nvvm.MBarrierInitOp(_mbarrier(barriers, _index(i)), arith.ConstantOp(i32, 1).result)
    nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)


def _wait(barrier: ir.Value, parity: ir.Value) -> None:
    """Wait until ``barrier`` completes its phase of ``parity`` (0 or 1, an index)."""
    i32 = ir.IntegerType.get_signless(32)
    nvvm.MBarrierTryWaitParityOp(barrier, arith.IndexCastOp(i32, parity).result, arith.ConstantOp(i32, 0).result)


def _expect_bytes(barrier: ir.Value, count: ir.Value) -> None:
    """Thread 0 arrives at ``barrier``, whose phase then also waits for ``count`` bytes of bulk copies."""
    i32 = ir.IntegerType.get_signless(32)
    nvvm.MBarrierArriveExpectTxOp(ir.IntegerType.get_signless(64), barrier, arith.IndexCastOp(i32, count).result)


def _bulk_copy(source: ir.Value, base: ir.Value, target: ir.Value, count: ir.Value, barrier: ir.Value) -> None:
    """A bulk copy of ``count`` bytes from ``source`` (a global pointer) to
    ``target`` bytes into ``base`` (dynamic shared memory), completing on
    ``barrier``."""
    i32 = ir.IntegerType.get_signless(32)
    into = _pointer(base, target, 7)  # the .shared::cluster form: PTX 8.0 (::cta needs 8.6)
    nvvm.CpAsyncBulkGlobalToSharedClusterOp(into, source, barrier, arith.IndexCastOp(i32, count).result)


def _bulk_rows(operand: ir.Value, lanes: int) -> bool:
    """Whether a row kernel's rows of ``operand``, read in vectors of
    ``lanes`` columns, start and end on 16 bytes, as bulk copies and
    prefetches need: its vectors are 16 bytes (a bfloat16 input among
    float32 ones has 8-byte vectors, its rows 8-byte multiples)."""
    return element_bytes(ir.MemRefType(operand.type).element_type) * lanes == VECTOR_BYTES


#: ``llvm.getelementptr``'s marker of an index taken from its dynamic operands.
_DYNAMIC_INDEX = -(2**31)


def _iterations_done(loop: scf.ForOp) -> ir.Value:
    """The iterations of ``loop`` before this one (rows of a block before its row)."""
    return arith.DivUIOp(arith.SubIOp(loop.induction_variable, loop.lowerBound).result, loop.step).result


def _pointer(buffer: ir.Value, byte_offset: ir.Value, space: int) -> ir.Value:
    """An ``!llvm.ptr<space>`` to ``byte_offset`` bytes into ``buffer`` (a
    memref in global memory for space 1, in shared memory for 3, or for 7:
    the same address in the block's window of its cluster's shared memory)."""
    start = arith.AddIOp(memref.ExtractAlignedPointerAsIndexOp(buffer).result, byte_offset).result
    address = arith.IndexCastOp(ir.IntegerType.get_signless(64), start).result
    pointer = llvm.IntToPtrOp(ir.Type.parse(f"!llvm.ptr<{3 if space == 7 else space}>"), address).result
    return llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr<7>"), pointer).result if space == 7 else pointer


def _noncoherent_vector(view: ir.Value, index: ir.Value) -> ir.Value:
    """The 16-byte vector ``index`` of ``view`` (a global memref of vectors)
    loaded through the non-coherent cache: ``ld.global.nc.v4.b32`` in inline
    asm (see :data:`NONCOHERENT_WEIGHTS`)."""
    address = _pointer(view, _scaled(index, VECTOR_BYTES), 1)
    return _asm_words(ir.MemRefType(view.type).element_type, [address], "ld.global.nc.v4.b32 {$0, $1, $2, $3}, [$4];", ["l"])


# -- one segment ----------------------------------------------------------------------


class _SegmentScheduler:
    """Schedules the linalg ops of one segment function into kernels."""

    def __init__(self, func: ir.Operation, gpu_module_body: ir.Block, prefix: str, layouts: Sequence | None = None, arch: str = "sm_90"):
        self.func = func
        self.layouts = list(layouts or [])
        self.bulk_prefetch = bulk_prefetch(arch)  # the target has cp.async.bulk.prefetch
        self.gpu_module_body = gpu_module_body
        self.prefix = prefix
        self.location = func.location
        self.arguments = list(func.regions[0].blocks[0].arguments)
        self.temps: list[Temp] = []
        self.launches: list[KernelLaunch] = []
        self.temp_of: dict[ir.Value, int] = {}
        self.views: dict[ir.Value, list] = {}  # memref.reshape result -> binding
        self.stored: dict[tuple, ir.Value | int] = {}  # (shape buffer, position) -> stored value (int: a constant global's)
        self.pending_fills: dict[ir.Value, ir.Value] = {}  # output buffer -> fill scalar
        self.folded: Generic | None = None  # the generic an outer reduction's combining kernels ran (epilogue_of)
        self._holder: ir.Block | None = None

    # -- host values as data -----------------------------------------------------------

    def binding(self, host: ir.Value) -> list:
        if host in self.temp_of:
            return ["temp", self.temp_of[host]]
        if isinstance(host.owner, ir.Block):
            return ["arg", self.arguments.index(host)]
        if host in self.views:
            return self.views[host]
        raise CompileError(f"a kernel takes a buffer made by '{host.owner.name}', which the GPU launch program cannot express")

    def dim_formula(self, buffer: ir.Value, position: int) -> list:
        static = ir.ShapedType(buffer.type).get_dim_size(position) if not ir.ShapedType(buffer.type).is_dynamic_dim(position) else None
        if static is not None:
            return ["const", static]
        binding = self.binding(buffer)
        if binding[0] == "arg":
            return ["argdim", binding[1], position]
        if binding[0] == "temp":
            return self.temps[binding[1]].shape[position]
        return binding[2][position]  # a view's shape

    def formula(self, value: ir.Value) -> list:
        """A host size (index or integer value) as a formula of argument sizes."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            return ["arg", self.arguments.index(value)]
        number = _constant_number(value)
        if number is not None:
            return ["const", number]
        if owner.name == "memref.dim":
            position = _constant_number(owner.operands[1])
            if position is None:
                raise CompileError("a memref.dim with a dynamic dim index on the host")
            return self.dim_formula(owner.operands[0], int(position))
        if owner.name in _FORMULA_CASTS:
            return self.formula(owner.operands[0])
        if owner.name in _FORMULA_OPS:
            return [_FORMULA_OPS[owner.name], self.formula(owner.operands[0]), self.formula(owner.operands[1])]
        raise CompileError(f"a buffer size is computed by '{owner.name}', which the GPU launch program cannot express")

    def operand_for_dim(self, g: Generic, d: int) -> tuple[ir.Value, int]:
        for operand, amap in zip([*g.inputs, *g.outputs], g.maps):
            if not isinstance(operand.type, ir.ShapedType):
                continue
            for position, expr in enumerate(amap.results):
                if isinstance(expr, ir.AffineDimExpr) and ir.AffineDimExpr(expr).position == d:
                    return operand, position
        raise CompileError(f"no operand of '{g.op.name}' has iteration dim {d}")

    def size_formulas(self, g: Generic) -> list[list]:
        return [self.dim_formula(*self.operand_for_dim(g, d)) for d in range(len(g.iterators))]

    def layout(self, buffer: ir.Value) -> tuple[bool, int]:
        """(dense, alignment in bytes) of a buffer the kernels read or write."""
        binding = self.binding(buffer)
        if binding[0] == "arg":
            known = self.layouts[binding[1]] if binding[1] < len(self.layouts) else None
            return tuple(known) if known else (False, 1)
        return FRESH_LAYOUT  # temporaries and views of them: allocated by the runtime

    def kernel(self, evict_last: bool = True) -> _Kernel:
        """A new kernel of the segment; ``evict_last``: its loads take the L2
        eviction priority of :data:`L2_EVICT_LAST` (the reductions' do not)."""
        return _Kernel(self, f"{self.prefix}_k{len(self.launches)}", evict_last and L2_EVICT_LAST)

    # -- the walk -----------------------------------------------------------------------

    def run(self) -> SegmentProgram:
        generics = []
        for op in list(self.func.regions[0].blocks[0].operations):
            op = op.operation
            name = op.name
            if name == "memref.alloc":
                self.allocate(op)
            elif name == "memref.store":
                self.stored[(op.operands[1], tuple(_constant_number(v) for v in list(op.operands)[2:]))] = op.operands[0]
            elif name == "memref.reshape":
                self.reshape(op)
            elif name == "memref.get_global" and isinstance(ir.MemRefType(op.results[0].type).element_type, ir.IndexType):
                self.constant_shape(op)
            elif name == "linalg.generic":
                generics.append(Generic.of(op))
            elif name in ("memref.dealloc", "func.return", "memref.dim") or name.startswith(_PURE_PREFIXES):
                continue
            else:
                raise CompileError(f"the GPU schedulers cannot run '{name}' in segment @{self.prefix}")
        plan = _RowPlan.of(self, generics)
        short = plan is not None and plan.plain and ROW_PLAN_REDUCTIONS == "short"
        if plan is not None:
            self.persistent_rows(plan, spans_only=short)
        if plan is None or short:
            taken = [launch.when for launch in self.launches]  # the rows the row plan's groups of lanes take
            first = len(self.launches)
            for i, g in enumerate(generics):
                if g is not self.folded:  # else run by the outer reduction before it
                    self.generic(g, generics[i + 1 :])
            for buffer in list(self.pending_fills):
                self.flush_fill(buffer)
            for launch in self.launches[first:] if taken else ():
                launch.when = _both(launch.when, ["sub", ["const", 1], _sum_of(taken)])
        return self.program()

    def program(self) -> SegmentProgram:
        """The launch program, without the temporaries no launch binds (the
        row values a persistent kernel keeps in registers)."""
        used: dict[int, int] = {}

        def renumber(binding: list) -> list:
            if binding[0] in ("temp", "view"):
                used.setdefault(binding[1], len(used))
                return [binding[0], used[binding[1]], *binding[2:]]
            if binding[0] == "flat":
                return ["flat", renumber(binding[1]), binding[2]]
            return binding

        for launch in self.launches:
            launch.args = [renumber(b) for b in launch.args]
        order = sorted(used, key=used.get)
        return SegmentProgram(temps=[self.temps[j] for j in order], launches=self.launches)

    def allocate(self, op: ir.Operation) -> None:
        result = op.results[0]
        mtype = ir.MemRefType(result.type)
        if isinstance(mtype.element_type, ir.IndexType):
            return  # a shape buffer of memref.reshape: its stores are read as formulas
        dynamic = iter(op.operands)
        shape = []
        for position in range(mtype.rank):
            shape.append(["const", mtype.get_dim_size(position)] if not mtype.is_dynamic_dim(position) else self.formula(next(dynamic)))
        self.temp_of[result] = len(self.temps)
        self.temps.append(Temp(dtype=str(mtype.element_type), shape=shape))

    def constant_shape(self, op: ir.Operation) -> None:
        """A shape buffer of memref.reshape whose sizes are all constants (a
        reshape to a static shape): bufferization makes it a constant global,
        whose values are read here as the sizes stored into it."""
        name = ir.FlatSymbolRefAttr(op.attributes["name"]).value
        table = ir.SymbolTable(self.func.parent)
        values = ir.DenseIntElementsAttr(table[name].attributes["initial_value"])
        for position, value in enumerate(values):
            self.stored[(op.results[0], (position,))] = int(value)

    def reshape(self, op: ir.Operation) -> None:
        source, shape_buffer = op.operands[0], op.operands[1]
        binding = self.binding(source)
        if binding[0] != "temp":
            raise CompileError("memref.reshape of a buffer that is not a fresh contiguous temporary")
        rank = ir.MemRefType(op.results[0].type).rank
        shape = []
        for position in range(rank):
            stored = self.stored.get((shape_buffer, (position,)))
            if stored is None:
                raise CompileError("memref.reshape with a shape that is not stored element by element on the host")
            shape.append(["const", stored] if isinstance(stored, int) else self.formula(stored))
        self.views[op.results[0]] = ["view", binding[1], shape]

    # -- scheduling ---------------------------------------------------------------------

    def base(self, buffer: ir.Value) -> object:
        binding = self.binding(buffer) if isinstance(buffer.type, ir.ShapedType) else None
        if binding is None:
            return None
        return ("temp", binding[1]) if binding[0] == "view" else tuple(binding[:2])

    def generic(self, g: Generic, after: Sequence[Generic] = ()) -> None:
        """Kernels for ``g``; ``after``: the generics that follow it in the
        segment (an outer reduction may run the first: :meth:`epilogue_of`)."""
        if not g.outputs:
            return  # computes nothing that is kept
        fill = g.fill_value()
        if fill is not None and len(g.outputs) == 1:
            for buffer in [b for b in self.pending_fills if self.base(b) == self.base(g.outputs[0])]:
                del self.pending_fills[buffer]
            self.pending_fills[g.outputs[0]] = fill
            return
        inits = self.take_fills(g) if g.reduction else None
        touched = {self.base(v) for v in [*g.inputs, *g.outputs]}
        for buffer in [b for b in self.pending_fills if self.base(b) in touched]:
            self.flush_fill(buffer)
        if not g.reduction:
            self.pointwise(g)
            return
        combiners = g.combiners()
        ps, rs = g.parallel, g.reduction
        if inits is not None and combiners is not None:
            if ps == list(range(len(ps))) and ps:
                self.inner_reduction(g, inits, combiners)
                return
            if rs == list(range(len(rs))):
                epilogue = self.epilogue_of(g, after)
                self.outer_reduction(g, inits, combiners, epilogue)
                if epilogue is not None:
                    self.folded = epilogue.generic
                return
        if inits is not None:
            for buffer, value in zip(g.outputs, inits):
                self.fill_kernel(buffer, value)
        self.serial_reduction(g)

    def take_fills(self, g: Generic) -> list[ir.Value] | None:
        """The fill scalars of all of ``g``'s outputs, removed from the pending
        fills, if each output was just filled with a value the combiner allows."""
        combiners = g.combiners()
        if combiners is None or any(o not in self.pending_fills for o in g.outputs):
            return None
        values = [self.pending_fills[o] for o in g.outputs]
        if not all(_neutral(value, combiner) for value, combiner in zip(values, combiners)):
            return None
        for o in g.outputs:
            del self.pending_fills[o]
        return values

    def flush_fill(self, buffer: ir.Value) -> None:
        self.fill_kernel(buffer, self.pending_fills.pop(buffer))

    def fill_kernel(self, buffer: ir.Value, value: ir.Value) -> None:
        k = self.kernel()
        rank = ir.MemRefType(buffer.type).rank
        with ir.InsertionPoint(k.entry), self.location:
            out = k.value(buffer)
            sizes = [memref.DimOp(out, _index(d)).result for d in range(rank)]
            loop = self._grid_stride_loop(k, k.product(sizes))
            with ir.InsertionPoint(loop.body):
                memref.StoreOp(k.value(value), out, k.delinearize(loop.induction_variable, sizes))
                scf.YieldOp([])
        count = _product([self.dim_formula(buffer, d) for d in range(rank)])
        k.finish([self._capped_blocks(count), ["const", 1], ["const", 1]])

    @staticmethod
    def _capped_blocks(count: list) -> list:
        return ["min", _ceildiv(count, THREADS), ["const", MAX_BLOCKS]]

    @staticmethod
    def _grid_stride(k: _Kernel) -> tuple[ir.Value, ir.Value]:
        """(this thread's global index, threads in the grid)."""
        start = arith.AddIOp(arith.MulIOp(k.special("block"), k.special("block_dim")).result, k.special("thread")).result
        return start, arith.MulIOp(k.special("grid_dim"), k.special("block_dim")).result

    def _grid_stride_loop(self, k: _Kernel, count: ir.Value) -> scf.ForOp:
        start, step = self._grid_stride(k)
        return scf.ForOp(start, count, step)

    def flat_lanes(self, g: Generic, gathered: bool = False) -> int | None:
        """Vector lanes of the flat pointwise scheme for ``g`` (1: scalar), or
        None when it does not apply: every tensor operand must be read and
        written at the same (identity) index and be dense, and the body must
        not read the outputs or the iteration indices. With ``gathered``,
        inputs read at another index (broadcast: a weight, a column) are
        allowed too, loaded one element at a time (:meth:`flat_pointwise`),
        and the lanes count the others only."""
        rank = len(g.iterators)
        identity = ir.AffineMap.get_identity(rank)
        tensors = [(v, m) for v, m in zip([*g.inputs, *g.outputs], g.maps) if isinstance(v.type, ir.ShapedType)]
        if gathered:
            outputs = set(g.outputs)
            tensors = [(v, m) for v, m in tensors if m == identity or v in outputs]
        if any(m != identity for _, m in tensors) or any(not self.layout(v)[0] for v, _ in tensors):
            return None
        outs = list(g.body.arguments)[len(g.inputs) :]
        if any(list(a.uses) for a in outs) or any(op.name == "linalg.index" for op in g.body.operations):
            return None
        return _vector_lanes([(element_bytes(ir.MemRefType(v.type).element_type), self.layout(v)[1]) for v, _ in tensors])

    def flat_pointwise(self, g: Generic, lanes: int, when: list | None = None, whole_rows: bool = False) -> None:
        """Dense operands read at a flat index, ``lanes`` elements per load and
        store (16-byte vectors where the alignment allows), one vector per
        thread (the grid covers the tensor: measured on the H200, this beat
        fewer blocks looping, and unrolling); the last ``size % lanes``
        elements in a scalar tail loop. Inputs read at another index than
        the output's (broadcast along some dims: see :meth:`flat_lanes`) are
        loaded one element at a time from each element's indices: its row
        (every dim but the last) and column, found once a vector by a
        division, a vector's columns crossing at most one row's end (rows
        of at least ``lanes`` elements: the launch condition ``when`` of
        :meth:`row_pointwise` says so; with ``whole_rows``, rows of whole
        vectors, so a vector is inside one row: see :meth:`_gathered`)."""
        k = self.kernel()
        rank = len(g.iterators)
        identity = ir.AffineMap.get_identity(rank)
        flat = [isinstance(v.type, ir.ShapedType) and m == identity for v, m in zip(g.inputs, g.maps)]
        gathered = [isinstance(v.type, ir.ShapedType) and m != identity for v, m in zip(g.inputs, g.maps)]
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            count = k.product(sizes)
            start, step = self._grid_stride(k)
            done = _index(0)
            if lanes > 1:
                vectors = arith.DivUIOp(count, _index(lanes)).result
                loop = scf.ForOp(start, vectors, step)
                with ir.InsertionPoint(loop.body):
                    j = loop.induction_variable
                    loaded = [memref.LoadOp(k.view_argument(v, lanes), [j]).result if f else None for v, f in zip(g.inputs, flat)]
                    elements = self._gathered(k, g, sizes, _scaled(j, lanes), lanes, gathered, whole_rows) if any(gathered) else [[None] * len(g.inputs)] * lanes
                    columns = [  # every load before any arithmetic, so they are in flight together
                        [vector.ExtractOp(x, [], [lane]).result if f else e if gather else k.value(v) for x, e, v, f, gather in zip(loaded, elements[lane], g.inputs, flat, gathered)]
                        for lane in range(lanes)
                    ]
                    results = [k.apply(g, values + [None] * len(g.outputs)) for values in columns]
                    for i, output in enumerate(g.outputs):
                        element = ir.MemRefType(output.type).element_type
                        packed = vector.FromElementsOp(ir.VectorType.get([lanes], element), [r[i] for r in results]).result
                        memref.StoreOp(packed, k.view_argument(output, lanes), [j])
                    scf.YieldOp([])
                done = _scaled(vectors, lanes)
            tail = scf.ForOp(arith.AddIOp(done, start).result, count, step)
            with ir.InsertionPoint(tail.body):
                i = tail.induction_variable
                ivs = k.delinearize(i, sizes) if any(gathered) else None
                values = [
                    memref.LoadOp(k.view_argument(v, 1), [i]).result if f else self._gather(k, v, m, ivs) if gather else k.value(v)
                    for v, m, f, gather in zip(g.inputs, g.maps, flat, gathered)
                ]
                for value, output in zip(k.apply(g, values + [None] * len(g.outputs)), g.outputs):
                    memref.StoreOp(value, k.view_argument(output, 1), [i])
                scf.YieldOp([])
        blocks = _ceildiv(_product(self.size_formulas(g)), THREADS * lanes)
        k.finish([["min", blocks, ["const", MAX_GRID_X]], ["const", 1], ["const", 1]], when=when)

    def _gathered(self, k: _Kernel, g: Generic, sizes: list, first: ir.Value, lanes: int, gathered: list[bool], whole_rows: bool = False) -> list[list]:
        """The ``gathered`` inputs' elements for each of the ``lanes``
        elements from flat index ``first``, a list per lane in the order of
        ``g.inputs`` (None for the others): the row and column of the first
        by a division; element ``l`` is ``l`` columns on, in the next row
        where that passes the row's end (at most once: rows of at least
        ``lanes`` elements). An input whose last dim is the column and that
        is dense is read at one of two flat indices plus ``l`` (the first
        element's, or the next row's as if it went on), so the loads of a
        vector's lanes differ by a constant offset; one that does not read
        the column, once at the row and once at the next (the last row
        again where there is none), each lane taking one of the two. With
        ``whole_rows`` (rows of whole vectors from aligned starts: the
        ``lanes`` elements are in one row), an input read along the row is
        one vector load (aligned: :meth:`row_lanes` counts it), one that
        does not read the column a value."""
        cols, inner = sizes[-1], len(sizes) - 1
        row = arith.DivUIOp(first, cols).result
        col = arith.SubIOp(first, arith.MulIOp(row, cols).result).result
        operands = [(v, m) for v, m, gather in zip(g.inputs, g.maps, gathered) if gather]
        reads_rows = any(_uses_dim(m, d) for _, m in operands for d in range(inner))
        here = k.delinearize(row, sizes[:-1]) if reads_rows else [None] * inner
        if whole_rows:
            return self._gathered_in_row(k, g, here + [col], lanes, gathered)
        left = arith.SubIOp(cols, col).result  # the row's elements from the first on
        last = arith.SubIOp(k.product(sizes[:-1]), _index(1)).result
        following = k.delinearize(arith.MinUIOp(arith.AddIOp(row, _index(1)).result, last).result, sizes[:-1]) if reads_rows else [None] * inner
        starts, constant = {}, {}  # the two flat indices of each input read along the row; the two values of one read per row
        for v, m in operands:
            if _column_last(m, inner) and self.layout(v)[0]:
                back = arith.SubIOp(k.linear_index(v, k.indices(m, following + [col])), cols).result
                starts[(v, str(m))] = (k.linear_index(v, k.indices(m, here + [col])), back)
            elif not _uses_dim(m, inner):
                constant[(v, str(m))] = (self._gather(k, v, m, here + [col]), self._gather(k, v, m, following + [col]))
        elements = []
        for lane in range(lanes):
            past = arith.CmpIOp(arith.CmpIPredicate.ule, left, _index(lane)).result if lane else None
            values = []
            for v, m, gather in zip(g.inputs, g.maps, gathered):
                if not gather:
                    values.append(None)
                elif (v, str(m)) in starts:
                    at, back = starts[(v, str(m))]
                    flat = _index_plus(arith.SelectOp(past, back, at).result if past is not None else at, lane)
                    values.append(memref.LoadOp(k.view_argument(v, 1), [flat]).result)
                elif (v, str(m)) in constant:
                    at, then = constant[(v, str(m))]
                    values.append(arith.SelectOp(past, then, at).result if past is not None else at)
                else:  # at its own row and column
                    column = _index_plus(col, lane)
                    ivs = here + [column]
                    if past is not None:
                        ivs = [arith.SelectOp(past, b, a).result if a is not None else None for a, b in zip(here, following)]
                        ivs.append(arith.SelectOp(past, arith.SubIOp(column, cols).result, column).result)
                    values.append(self._gather(k, v, m, ivs))
            elements.append(values)
        return elements

    def _gathered_in_row(self, k: _Kernel, g: Generic, ivs: list, lanes: int, gathered: list[bool]) -> list[list]:
        """:meth:`_gathered` for ``lanes`` elements of one row from ``ivs``
        (a multiple of ``lanes`` columns in): an input that does not read
        the column is one value, one that does reads it as its own last,
        dense dim from a buffer aligned to the vector (as :meth:`row_lanes`
        asks of the vector variants), so its elements are one vector."""
        inner = len(ivs) - 1
        columns = []  # per input: its lanes' values (None for the inputs not gathered)
        for v, m, gather in zip(g.inputs, g.maps, gathered):
            if not gather:
                columns.append([None] * lanes)
            elif not _uses_dim(m, inner):
                columns.append([self._gather(k, v, m, ivs)] * lanes)
            else:
                at = _vector_index(k.linear_index(v, k.indices(m, ivs)), lanes)
                loaded = memref.LoadOp(k.view_argument(v, lanes), [at]).result
                columns.append([vector.ExtractOp(loaded, [], [lane]).result for lane in range(lanes)])
        return [list(values) for values in zip(*columns)]

    def _gather(self, k: _Kernel, operand: ir.Value, amap: ir.AffineMap, ivs: list) -> ir.Value:
        """The element of ``operand`` read through ``amap`` at ``ivs``: at its flat index where it is dense."""
        if self.layout(operand)[0]:
            return memref.LoadOp(k.view_argument(operand, 1), [k.linear_index(operand, k.indices(amap, ivs))]).result
        return k.load(operand, amap, ivs)

    def pointwise(self, g: Generic) -> None:
        lanes = self.flat_lanes(g)
        if lanes is not None:
            self.flat_pointwise(g, lanes)
            return
        space = self.size_formulas(g)
        when = None
        if len(space) >= 2:
            self.row_pointwise(g)
            when = ["le", space[-1], ["const", ROW_POINTWISE_MIN - 1]]
        k = self.kernel()
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            loop = self._grid_stride_loop(k, k.product(sizes))
            with ir.InsertionPoint(loop.body):
                ivs = k.delinearize(loop.induction_variable, sizes)
                k.store(g, k.body(g, ivs, None), ivs)
                scf.YieldOp([])
        k.finish([self._capped_blocks(_product(space)), ["const", 1], ["const", 1]], when=when)

    def row_pointwise(self, g: Generic) -> None:
        """A pointwise generic with rows of at least :data:`ROW_POINTWISE_MIN`
        elements: a warp per row shorter than a block's chunk and a block per
        piece of the longer rows (:data:`ROW_PIECE_CHUNKS`; a block per row
        where the body reads its outputs), rows or pieces in a grid-stride
        loop, lanes walking the row or piece in unrolled chunks (16-byte
        vectors of columns where :meth:`row_lanes` allows; see
        :class:`_RowWalk`), so no thread divides its index by the sizes, and
        an operand broadcast along the row (a ``[rows, 1]`` column) is one
        value per row. Rows that are not whole vectors run on the tensor's
        flat vectors where the output allows (:data:`FLAT_SCALAR_ROWS`), and
        so do rows of whole vectors that read a full-size input
        (:data:`FLAT_WHOLE_ROWS`)."""
        space = self.size_formulas(g)
        long_rows = ["gt", space[-1], ["const", ROW_POINTWISE_MIN - 1]]
        reads_outputs = any(list(a.uses) for a in list(g.body.arguments)[len(g.inputs) :])
        flat = None if reads_outputs else self.flat_lanes(g, gathered=True)
        identity = ir.AffineMap.get_identity(len(g.iterators))
        reads_full = any(isinstance(v.type, ir.ShapedType) and m == identity for v, m in zip(g.inputs, g.maps))
        for lanes, condition in self.vector_variants(self.row_lanes([g]), space[-1]):
            if lanes == 1 and FLAT_SCALAR_ROWS and flat and flat > 1:  # rows that are not whole vectors
                self.flat_pointwise(g, flat, when=_both(long_rows, condition))
                continue
            if lanes > 1 and FLAT_WHOLE_ROWS and reads_full and flat:  # rows of whole vectors (flat >= lanes: fewer operands)
                self.flat_pointwise(g, lanes, when=_both(long_rows, condition), whole_rows=True)
                continue
            chunk_columns = THREADS * lanes * CHUNK_SLOTS  # a block's chunk
            piece_columns = chunk_columns * (SCALAR_PIECE_CHUNKS if lanes == 1 else ROW_PIECE_CHUNKS)  # 0: whole rows
            if reads_outputs:
                groups = [_RowGroup("block", None)]
            elif piece_columns:  # warps for rows shorter than a block's chunk, blocks for pieces of the others
                groups = self._piece_groups(space[-1], lanes, chunk_columns, write_only=not reads_full)
            else:
                groups = self.row_groups(space[-1], narrow=True)
            for group in groups:
                k = self.kernel()
                with ir.InsertionPoint(k.entry), self.location:
                    sizes = k.loop_sizes(g)
                    if piece_columns and group.kind == "block" and not reads_outputs:
                        row_loop, row_ivs, lane, width, span = self._piece_loop(k, sizes, piece_columns)
                        grid = group.grid(_product([*space[:-1], _ceildiv(space[-1], piece_columns)]))
                    else:
                        (row_loop, row_ivs, lane, width), span = self._row_loop(k, group, sizes[:-1]), None
                        grid = group.grid(_product(space[:-1]))
                    with ir.InsertionPoint(row_loop.body):
                        if reads_outputs:  # one column at a time (row_lanes gives 1), outputs loaded
                            loop = scf.ForOp(lane, sizes[-1], width)
                            with ir.InsertionPoint(loop.body):
                                ivs = row_ivs + [loop.induction_variable]
                                k.store(g, k.body(g, ivs, None), ivs)
                                scf.YieldOp([])
                        else:
                            walk = _RowWalk(k, row_ivs, [sizes[-1]], lane, width, lanes, {})
                            walk.piece, walk.narrow_rows = span, span is not None
                            if group.chunk_slots:
                                walk.chunk_slots = group.chunk_slots
                            walk.pointwise(g)
                        scf.YieldOp([])
                k.finish(grid, block=(group.threads, 1, 1), when=_both(long_rows, _both(group.when, condition)))

    @staticmethod
    def _piece_groups(cols: list, lanes: int, chunk_columns: int, write_only: bool) -> list[_RowGroup]:
        """The groups of a row-pointwise generic's rows of ``lanes``-column
        slots, by length: a warp a row shorter than a block's chunk
        (``chunk_columns``), a block a piece of the others; and for a
        write-only broadcast (``write_only``) of vectors (``lanes`` > 1), a
        block of :data:`WRITE_ONLY_BLOCK` a row between the rows its chunk
        fills and a block's chunk."""
        pieces = _RowGroup("block", ["gt", cols, ["const", chunk_columns - 1]])
        shorter = ["le", cols, ["const", chunk_columns - 1]]
        threads, slots = WRITE_ONLY_BLOCK
        least = threads * slots * lanes  # columns of a chunk of the block
        if not write_only or lanes == 1 or least >= chunk_columns:
            return [_RowGroup("warp", shorter), pieces]
        fills = ["gt", cols, ["const", least - 1]]
        return [
            _RowGroup("warp", ["le", cols, ["const", least - 1]]),
            _RowGroup("block", _both(fills, shorter), threads=threads, chunk_slots=slots),
            pieces,
        ]

    @staticmethod
    def _row_parity(loop: scf.ForOp) -> ir.Value:
        """0 or 1: the parity of the loop's iteration."""
        return arith.AndIOp(_iterations_done(loop), _index(1)).result

    @staticmethod
    def _piece_loop(k: _Kernel, sizes: list, columns: int) -> tuple:
        """The grid-stride loop of a row-pointwise block variant over pieces
        of rows, ``columns`` each (:data:`ROW_PIECE_CHUNKS`; the last of a
        row may be shorter): (the loop, the piece's row indices inside it,
        this thread's lane, lanes per block, the piece's (start, stop)
        columns)."""
        cols, lane, width = sizes[-1], k.special("thread"), k.special("block_dim")
        pieces = arith.DivUIOp(arith.AddIOp(cols, _index(columns - 1)).result, _index(columns)).result
        total = arith.MulIOp(k.product(sizes[:-1]), pieces).result
        loop = scf.ForOp(k.special("block"), total, k.special("grid_dim"))
        with ir.InsertionPoint(loop.body):
            unit = loop.induction_variable
            row = arith.DivUIOp(unit, pieces).result
            # by hand, not k.delinearize and a ceildivui: that PTX ran 1% slower for bfloat16 pieces (sweep 19e)
            start = _scaled(arith.SubIOp(unit, arith.MulIOp(row, pieces).result).result, columns)
            stop = arith.MinUIOp(arith.AddIOp(start, _index(columns)).result, cols).result
            row_ivs = k.delinearize(row, sizes[:-1])
        return loop, row_ivs, lane, width, (start, stop)

    @staticmethod
    def _row_loop(k: _Kernel, group: _RowGroup, row_sizes: list, cols: ir.Value | None = None) -> tuple[scf.ForOp, list, ir.Value, ir.Value]:
        """The grid-stride loop of a ``group`` (warps or blocks) over the rows (``row_sizes``:
        the sizes of the row dims; ``cols``: the row's length, where the
        group's warps are split, see :meth:`_RowGroup.span`): (the loop, the
        row's indices inside it, this thread's lane, lanes per group)."""
        worker, workers, lane, width = group.ids(k, cols)
        loop = scf.ForOp(worker, k.product(row_sizes), workers)
        with ir.InsertionPoint(loop.body):
            row_ivs = k.delinearize(loop.induction_variable, row_sizes)
        return loop, row_ivs, lane, width

    def _accumulate(self, k: _Kernel, g: Generic, start, stop, step, inits, ivs_at) -> list[ir.Value]:
        """``for i in range(start, stop, step): accs = body(ivs_at(i), accs)``."""
        loop = scf.ForOp(start, stop, step, inits)
        with ir.InsertionPoint(loop.body):
            values = k.body(g, ivs_at(loop.induction_variable), list(loop.inner_iter_args))
            scf.YieldOp(values)
        return list(loop.results)

    def inner_reduction(self, g: Generic, inits: list[ir.Value], combiners: list[str]) -> None:
        """A warp per row for rows up to :data:`WARP_ROW_LIMIT` elements (when
        every accumulator is 32-bit), a block per row otherwise: two kernels
        (each in a vector and a scalar variant), the launch program picks one
        by the row length."""
        ps, rs = g.parallel, g.reduction
        size = self.size_formulas(g)
        rows_f, cols_f = _product([size[d] for d in ps]), _product([size[d] for d in rs])
        lanes = self.row_lanes([g]) if len(rs) == 1 else 1
        for group in self.row_groups(cols_f, _narrow([g])):
            for vector_lanes, condition in self.vector_variants(lanes, cols_f):
                k = self.kernel(evict_last=False)
                with ir.InsertionPoint(k.entry), self.location:
                    sizes = k.loop_sizes(g)
                    row_loop, row_ivs, lane, width = self._row_loop(k, group, [sizes[d] for d in ps])
                    with ir.InsertionPoint(row_loop.body):
                        walk = _RowWalk(k, row_ivs, [sizes[d] for d in rs], lane, width, vector_lanes, {})
                        totals = group.reduce(k, walk.reduce(g, [k.value(v) for v in inits]), g.combining_ops())
                        branch = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.eq, lane, _index(0)).result)
                        with ir.InsertionPoint(branch.then_block):
                            k.store(g, totals, row_ivs + [k.zero] * len(rs))
                            scf.YieldOp([])
                        scf.YieldOp([])
                k.finish(group.grid(rows_f), when=_both(group.when, condition))

    def row_lanes(self, generics: Sequence[Generic], skip: set = frozenset()) -> int:
        """Columns per vector access in a row kernel over ``generics`` (whose
        last iteration dim is the row): every operand that varies along the
        row must read it as its own last, dense dim, from a buffer aligned to
        the vector; 1 (scalar access) otherwise. The launch program adds the
        condition that the row length is a multiple of it."""
        widths = []
        for g in generics:
            inner = len(g.iterators) - 1
            outs = list(g.body.arguments)[len(g.inputs) :]
            if any(op.name == "linalg.index" for op in g.body.operations) or (not g.reduction and any(list(a.uses) for a in outs)):
                return 1  # the body reads its indices, or a pointwise body reads its outputs
            these = self.column_widths([(o, m) for o, m in zip([*g.inputs, *g.outputs], g.maps) if o not in skip], inner)
            if these is None:
                return 1
            widths += these
        return _vector_lanes(widths)

    def column_widths(self, operands: Sequence[tuple[ir.Value, ir.AffineMap]], inner: int) -> list[tuple[int, int]] | None:
        """(element bytes, alignment) of each of the (operand, map)
        ``operands`` that varies along dim ``inner`` (a row's column), or
        None where one does not read it as its own last, dense dim (no
        vector of consecutive columns to load)."""
        widths = []
        for operand, amap in operands:
            if not isinstance(operand.type, ir.ShapedType) or not _uses_dim(amap, inner):
                continue
            if not _column_last(amap, inner) or not self.layout(operand)[0]:
                return None
            widths.append((element_bytes(ir.MemRefType(operand.type).element_type), self.layout(operand)[1]))
        return widths

    def outer_lanes(self, g: Generic) -> int:
        """Columns per vector load of an outer reduction's tiles
        (:data:`OUTER_VECTORS`): every input read along its one column dim
        reads it as its own last, dense dim from a buffer aligned to the
        vector; 1 otherwise. The launch program adds the condition that the
        column count is a multiple of it."""
        inner = len(g.iterators) - 1
        if not OUTER_VECTORS or len(g.parallel) != 1 or any(op.name == "linalg.index" for op in g.body.operations):
            return 1
        widths = self.column_widths([(o, m) for a, o, m in zip(g.body.arguments, g.inputs, g.maps) if list(a.uses)], inner)
        return 1 if widths is None else _vector_lanes(widths)

    @staticmethod
    def vector_variants(lanes: int, cols_f: list, nonempty: bool = False) -> list[tuple[int, list | None]]:
        """(lanes, condition) of the vector and the scalar variant of a row
        kernel (``nonempty``: the vector variant takes rows of at least one
        vector only)."""
        if lanes == 1:
            return [(1, None)]
        divisible = ["eq", ["mod", cols_f, ["const", lanes]], ["const", 0]]
        if nonempty:
            divisible = ["mul", divisible, ["gt", cols_f, ["const", 0]]]
        return [(lanes, divisible), (1, ["sub", ["const", 1], divisible])]

    @staticmethod
    def flat_ends(groups: list[_RowGroup]) -> list[tuple[int, _RowGroup]]:
        """(columns, group) of the flat ``groups``' cached and staged
        variants whose rows the scalar variants keep in registers too
        (:data:`SCALAR_CACHED_ROWS`: the ladder's most slots times its
        columns a slot): rows within a vector of those columns would take
        the next variant, of twice the slots (see :data:`FLAT_ROWS`)."""
        kept = max(threads * slots for threads, slots in BLOCK_CACHED) * SCALAR_CACHED_ROWS
        ends = {(WARP if g.kind == "warp" else g.threads) * g.columns: g for g in groups if g.cached or g.staged}
        return [(end, ends[end]) for end in sorted(ends) if end <= kept]

    @staticmethod
    def _within_a_vector(end: int, lanes: int, cols_f: list) -> list:
        """1 for rows of ``end - lanes + 1`` to ``end - 1`` columns, else 0."""
        return ["mul", ["gt", cols_f, ["const", end - lanes]], ["le", cols_f, ["const", end - 1]]]

    def flat_boundary(self, groups: list[_RowGroup], lanes: int, cols_f: list) -> list | None:
        """1 for rows that the flat ``groups`` (:data:`FLAT_ROWS`) leave to
        the scalar variants, else 0 (None: no such rows): those within a
        vector of :meth:`flat_ends`' columns, but for cached variants' with
        an edge slot (:data:`FLAT_EDGE_SLOTS`)."""
        terms = [self._within_a_vector(end, lanes, cols_f) for end, g in self.flat_ends(groups) if not (g.cached and FLAT_EDGE_SLOTS)]
        return _sum_of(terms) if terms else None

    def edge_groups(self, groups: list[_RowGroup], lanes: int, cols_f: list) -> list[_RowGroup]:
        """The flat ``groups`` with, for each cached variant of
        :meth:`flat_ends`, a copy of it with an edge slot for the rows within
        a vector of its columns, which the others leave (:data:`FLAT_EDGE_SLOTS`)."""
        if not FLAT_EDGE_SLOTS:
            return groups
        edges = [(self._within_a_vector(end, lanes, cols_f), g) for end, g in self.flat_ends(groups) if g.cached]
        if not edges:
            return groups
        others = ["sub", ["const", 1], _sum_of([when for when, _ in edges])]
        return [dataclasses.replace(g, when=_both(g.when, others)) for g in groups] + [
            dataclasses.replace(g, when=when, edge_slot=True, max_registers=self.edge_registers(g, lanes)) for when, g in edges
        ]

    @staticmethod
    def edge_registers(g: _RowGroup, lanes: int) -> int:
        """``.maxnreg`` of the edge-slot copy of cached group ``g`` (:data:`EDGE_MAX_REGISTERS`)."""
        if g.kind == "warp" and g.columns == max(WARP_CACHED) * lanes:
            return EDGE_MAX_REGISTERS
        return g.max_registers

    def row_variants(self, lanes: int, cols_f: list, flat_groups: list[_RowGroup] | None) -> list[tuple[int, list | None, bool]]:
        """(lanes, launch condition, whether the walk is flat) of each variant
        of a row kernel: :meth:`vector_variants`; with ``flat_groups`` (see
        :meth:`flat_rows`), rows that are not whole vectors but longer than
        one (and than :data:`SCALAR_SHORT_ROWS`) walk the tensor's flat
        vectors but for :meth:`flat_boundary`'s, which take the scalar
        variant with the shorter."""
        variants = [(n, condition, False) for n, condition in self.vector_variants(lanes, cols_f, nonempty=CLAMPED_LOADS)]
        if flat_groups is None:
            return variants
        (_, whole, _), (_, rest, _) = variants
        flat = ["mul", rest, ["gt", cols_f, ["const", max(lanes, SCALAR_SHORT_ROWS)]]]  # (rows of more than a vector, or than SCALAR_SHORT_ROWS, that are not whole vectors)
        boundary = self.flat_boundary(flat_groups, lanes, cols_f)
        if boundary is not None:
            flat = ["mul", flat, ["sub", ["const", 1], boundary]]
        return [(lanes, whole, False), (lanes, flat, True), (1, ["sub", rest, flat], False)]

    @staticmethod
    def row_groups(
        cols_f: list, narrow: bool, lanes: int = 0, registers=lambda columns: (0, 0, None, None), staged_bytes: int = 0, buffered_bytes=(0, ()),
        scalar: bool = False, flat: bool = False, streamed: bool = False,
    ) -> list[_RowGroup]:
        """The row schemes to compile, each with its launch condition (exactly
        one holds): a warp per row for short rows when every accumulator is
        32-bit (``narrow``: warp shuffles move 32 bits), else a block per row.
        With ``lanes`` (columns per vector access, from 2), rows that fit in
        the lanes' registers get cached variants (warps as
        :data:`WARP_CACHED` says, then blocks as :data:`BLOCK_CACHED` says,
        those whose row values fit: ``registers(columns)``, see
        :meth:`_SegmentScheduler.row_registers`, with :data:`REGISTER_ROOM`); longer rows whose
        staged values (``staged_bytes`` a column) fit in
        :data:`SHARED_ROW_BYTES` get the staged variant; longer rows still
        are read per generic. Cached blocks of :data:`BUFFERED_THREADS` are
        buffered (:data:`BUFFER_NEXT_ROW`) where a row buffer fits in
        :data:`SHARED_ROW_BYTES`: ``buffered_bytes`` is (a row buffer's
        bytes a column, each weight's), (0, ()) for none; the weights are
        kept too where they fit with a buffer, and as many as fit where no
        buffer does (:data:`SHARED_WEIGHTS_ALONE`). With ``scalar``, the
        cached variants walk a row's columns one at a time, ``lanes``
        sizing their slots only (:data:`SCALAR_CACHED_ROWS`); rows of no columns
        then take an uncached group of their own (a cached block loads a
        column whether or not the row has it). With ``flat`` (:data:`FLAT_ROWS`),
        a row takes a variant whose lanes hold a vector more than its
        columns (its first and last vectors may be partial). With
        ``streamed`` (the row read by one generic, nothing kept), the cached
        warps run in blocks of :data:`STREAMED_WARP_THREADS`."""
        if lanes < 2 and not scalar:
            if not narrow:
                return [_RowGroup("block", None)]
            return [
                _RowGroup("warp", ["le", cols_f, ["const", WARP_ROW_LIMIT]]),
                _RowGroup("block", ["gt", cols_f, ["const", WARP_ROW_LIMIT]]),
            ]
        groups, below = [], 0  # rows longer than `below` columns are not taken yet
        if scalar:
            groups.append(_RowGroup("warp" if narrow else "block", ["eq", cols_f, ["const", 0]]))

        def up_to(limit: int) -> list:  # the rows not taken yet that are at most `limit` columns long
            fits = ["le", cols_f, ["const", limit]]
            return fits if below == 0 and not scalar else ["mul", ["gt", cols_f, ["const", below]], fits]

        def reach(columns: int) -> int:  # the longest row a variant of these columns takes
            return columns - lanes if flat else columns

        warp_threads = STREAMED_WARP_THREADS if streamed else WARP_BLOCK_THREADS
        for slots in WARP_CACHED if narrow else ():
            if SPAN_ROWS and slots == min(WARP_CACHED) and (FLAT_SPAN_ROWS or not flat):  # rows that half a warp's lanes hold: groups of lanes
                half = reach(WARP // 2 * slots * lanes)
                groups.append(
                    _RowGroup("warp", up_to(half), cached=True, columns=slots * lanes, threads=warp_threads, spans=True, span_less=lanes if flat else 0)
                )
                below = half
            groups.append(_RowGroup("warp", up_to(reach(WARP * slots * lanes)), cached=True, columns=slots * lanes, threads=warp_threads))
            below = reach(WARP * slots * lanes)
        for threads, slots in BLOCK_CACHED:
            columns = slots * lanes
            values, words, packed, early_words = registers(columns)
            allowed = REGISTER_FILE // (threads * _blocks_per_sm(threads)) // 2
            limit = allowed * REGISTER_ROOM
            packed_rows = words > limit and not flat and packed is not None and packed <= limit
            if packed_rows:  # its row fits as loaded, not as float32 (PACKED_ROWS)
                words = packed
            if reach(threads * columns) <= below or words > limit:
                continue
            capped, cap = threads == THREADS and values > BLOCK_CAPPED_ABOVE, 0
            if capped and HALVE_CAPPED_BLOCKS:  # the same row on half the threads, uncapped
                threads, columns = threads // 2, columns * 2
            elif capped:
                cap = BLOCK_MAX_REGISTERS
            elif threads == THREADS and BLOCK_OCCUPANCY_CAP[1] and values > BLOCK_OCCUPANCY_CAP[0]:
                cap = BLOCK_OCCUPANCY_CAP[1]
            buffered, shared_weights, weight_slots, noncoherent = 0, 0, 0, False
            row_bytes, weight_sizes = buffered_bytes
            weight_bytes = sum(weight_sizes)
            if BUFFER_NEXT_ROW and threads >= BUFFERED_THREADS and row_bytes:  # for a row of the most columns it takes
                room = SHARED_ROW_BYTES // (threads * columns * _blocks_per_sm(threads))  # bytes a column
                shared_weights = len(weight_sizes) if room >= weight_bytes + row_bytes else 0
                buffered = min(BUFFER_DEPTH, (room - weight_bytes * bool(shared_weights)) // row_bytes)
                if buffered == 1 and not (shared_weights and weight_bytes):
                    buffered = 0  # one buffer alone: see BUFFER_DEPTH
                if weight_sizes and not BUFFER_WITH_WEIGHTS:
                    buffered = 0  # the weights alone: see BUFFER_WITH_WEIGHTS
            alone = bool(BUFFER_NEXT_ROW and threads >= BUFFERED_THREADS and row_bytes and not buffered and SHARED_WEIGHTS_ALONE)

            def kept_weights(budget: int) -> tuple[int, int, bool]:  # every weight, alone (SPLIT_WEIGHTS_BYTES): (shared_weights, weight_slots, noncoherent)
                kept, slots_kept = len(weight_sizes), 0
                budget = min(budget, SHARED_ROW_BYTES // _blocks_per_sm(threads))
                per_slot = threads * lanes * weight_bytes  # bytes of a slot of every lane, each weight
                if per_slot * (columns // lanes) > budget:  # each keeps its lanes' first slots that fit (of the block's, halved or not)
                    slots_kept = budget // per_slot
                    if not slots_kept:
                        kept = 0
                if kept and slots_kept and NONCOHERENT_WEIGHTS and weight_bytes <= row_bytes:
                    return 0, 0, True
                return kept, slots_kept, False

            def add_group(longest: int, shared_weights: int, weight_slots: int, noncoherent: bool) -> None:
                early = (
                    EARLY_WEIGHTS and early_words is not None and early_words <= limit and columns // lanes >= EARLY_WEIGHT_SLOTS
                    and not (flat or buffered or shared_weights or noncoherent)
                )
                groups.append(
                    _RowGroup(
                        "block", up_to(longest), cached=True, threads=threads, columns=columns, max_registers=cap, buffered=buffered,
                        shared_weights=shared_weights, weight_slots=weight_slots, noncoherent=noncoherent,
                        packed_rows=packed_rows or (early and packed is not None),  # the weights too stay as loaded across the reductions
                        early_weights=early,
                        narrow_rows=words < limit if NARROW_ROW_OPERANDS is None else NARROW_ROW_OPERANDS,
                    )
                )

            if alone:
                shared_weights, weight_slots, noncoherent = kept_weights(SHARED_WEIGHT_BYTES if len(weight_sizes) == 1 else SPLIT_WEIGHTS_BYTES)
            longer, long_budget = LONG_ROW_WEIGHTS
            if long_budget and shared_weights > 1 and weight_slots and below < longer < reach(threads * columns):  # (weights kept in part: alone)
                add_group(longer, shared_weights, weight_slots, noncoherent)  # rows up to `longer` columns keep SPLIT_WEIGHTS_BYTES
                below = longer
                shared_weights, weight_slots, noncoherent = kept_weights(long_budget)
            add_group(reach(threads * columns), shared_weights, weight_slots, noncoherent)
            below = reach(threads * columns)
        columns = SHARED_SLOTS * lanes
        staged = 0
        if staged_bytes >= SHARED_MIN_BYTES:
            staged = reach(min(SHARED_THREADS * columns, SHARED_ROW_BYTES // staged_bytes // SHARED_PAD * SHARED_PAD))
        if staged > below:
            groups.append(_RowGroup("block", up_to(staged), threads=SHARED_THREADS, columns=columns, staged=True))
            below = staged
        groups.append(_RowGroup("block", ["gt", cols_f, ["const", below]]))
        return groups

    def outer_reduction(self, g: Generic, inits: list[ir.Value], combiners: list[str], epilogue: "_Epilogue | None" = None) -> None:
        ps, rs = g.parallel, g.reduction
        size = self.size_formulas(g)
        cols_f, rows_f = _product([size[d] for d in ps]), _product([size[d] for d in rs])
        lanes = self.outer_lanes(g)
        variants = self.vector_variants(lanes, cols_f)

        def splits_for(width: int) -> list:  # splits filling at most OUTER_BLOCKS_PER_SM blocks an SM of `width` columns
            target = ["mul", ["sms"], ["const", OUTER_BLOCKS_PER_SM]]
            return ["max", ["const", 1], ["min", _ceildiv(rows_f, OUTER_MIN_ROWS), ["div", target, _ceildiv(cols_f, width)]]]

        splits = splits_for(THREADS)
        if lanes > 1 and WARP * lanes != THREADS:  # one scratch shape for both variants: each its own splits
            (_, divisible), (_, rest) = variants
            splits = ["add", ["mul", divisible, splits_for(WARP * lanes)], ["mul", rest, splits]]
        partials = []
        for output in g.outputs:
            element = ir.MemRefType(output.type).element_type
            partials.append(self.scratch(element, [splits, cols_f]))

        # kernel A: partial results of each split of the reduced rows
        for n, when in variants:
            if n > 1:
                self.outer_tiles(g, inits, partials, n, [_ceildiv(cols_f, WARP * n), splits, ["const", 1]], when)
                continue
            k = self.kernel(evict_last=False)
            with ir.InsertionPoint(k.entry), self.location:
                sizes, cols, buffers, count = self._partials_in(k, g, partials)
                rows = k.product([sizes[d] for d in rs])
                col = arith.AddIOp(arith.MulIOp(k.special("block"), k.special("block_dim")).result, k.special("thread")).result
                split = k.special("block", "y")
                inside = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.ult, col, cols).result)
                with ir.InsertionPoint(inside.then_block):
                    start, stop = self._split_rows(rows, count, split)
                    col_ivs = k.delinearize(col, [sizes[d] for d in ps])
                    accs = self._unrolled_rows(k, g, start, stop, [k.value(v) for v in inits], lambda row: k.delinearize(row, [sizes[d] for d in rs]) + col_ivs)
                    for acc, buffer in zip(accs, buffers):
                        memref.StoreOp(acc, buffer, [split, col])
                    scf.YieldOp([])
            k.finish([_ceildiv(cols_f, THREADS), splits, ["const", 1]], when=when)

        # kernel B: combine the splits of each column
        tiled = ["gt", splits, ["const", OUTER_COMBINE_TILES - 1]] if OUTER_COMBINE_TILES else None
        if tiled is not None:
            self.combine_tiles(g, inits, partials, [_ceildiv(cols_f, WARP), ["const", 1], ["const", 1]], tiled, epilogue)
        k = self.kernel(evict_last=False)
        with ir.InsertionPoint(k.entry), self.location:
            sizes, cols, buffers, count = self._partials_in(k, g, partials)
            loop = self._grid_stride_loop(k, cols)
            with ir.InsertionPoint(loop.body):
                col = loop.induction_variable
                combine = scf.ForOp(_index(0), count, _index(1), [k.value(v) for v in inits])
                with ir.InsertionPoint(combine.body):
                    values = []
                    for acc, buffer, combiner_op in zip(combine.inner_iter_args, buffers, g.combining_ops()):
                        partial = memref.LoadOp(buffer, [combine.induction_variable, col]).result
                        values.append(ir.Operation.create(combiner_op, results=[acc.type], operands=[acc, partial]).result)
                    scf.YieldOp(values)
                self._column_results(k, g, list(combine.results), k.delinearize(col, [sizes[d] for d in ps]), epilogue)
                scf.YieldOp([])
        k.finish([self._capped_blocks(cols_f), ["const", 1], ["const", 1]], when=None if tiled is None else ["sub", ["const", 1], tiled])

    def epilogue_of(self, g: Generic, after: Sequence[Generic]) -> "_Epilogue | None":
        """The generic after the outer reduction ``g`` that its combining
        kernel runs too (:data:`OUTER_EPILOGUES`), or None: a pointwise
        generic over ``g``'s columns, each dim of them in order, that reads
        one or more of ``g``'s outputs at the column ``g`` writes (its own
        other operands anywhere), with no fill pending on what it touches.
        ``g``'s results are then stored only where a later generic reads them
        or they are not temporaries."""
        if not OUTER_EPILOGUES or not after:
            return None
        p, later = after[0], after[1:]
        if p.reduction or not p.outputs or p.fill_value() is not None:
            return None
        touched = {self.base(v) for v in [*p.inputs, *p.outputs]}
        if any(self.base(b) in touched for b in self.pending_fills):
            return None
        ps, read = g.parallel, False
        for operand, amap in zip(p.inputs, p.maps):
            if operand not in g.outputs:
                continue
            written = g.maps[len(g.inputs) + g.outputs.index(operand)]
            if amap != _renumbered(written, ps) or set(range(len(ps))) - _dims_of(amap):
                return None
            read = True
        if not read:
            return None
        bases = {self.base(v) for h in later for v in [*h.inputs, *h.outputs]}
        kept = [self.binding(o)[0] != "temp" or self.base(o) in bases for o in g.outputs]
        return _Epilogue(p, kept)

    def _column_results(self, k: _Kernel, g: Generic, totals: list[ir.Value], col_ivs: list[ir.Value], epilogue: "_Epilogue | None") -> None:
        """Store an outer reduction's ``totals`` at the column ``col_ivs``
        (its parallel indices) and run its ``epilogue`` there."""
        kept = [True] * len(totals) if epilogue is None else epilogue.kept
        k.store(g, [total if keep else None for total, keep in zip(totals, kept)], [k.zero] * len(g.reduction) + col_ivs)
        if epilogue is not None:
            p = epilogue.generic
            k.store(p, k.body(p, col_ivs, None, dict(zip(g.outputs, totals))), col_ivs)

    @staticmethod
    def _partials_in(k: _Kernel, g: Generic, partials: list[ir.Value]) -> tuple[list, ir.Value, list, ir.Value]:
        """In kernel ``k`` of an outer reduction (either pass): ``g``'s
        iteration sizes, its column count, the ``partials`` buffers and
        their count of splits."""
        sizes = k.loop_sizes(g)
        cols = k.product([sizes[d] for d in g.parallel])
        buffers = [k.value(p) for p in partials]
        return sizes, cols, buffers, memref.DimOp(buffers[0], _index(0)).result

    def combine_tiles(
        self, g: Generic, inits: list[ir.Value], partials: list[ir.Value], grid: list, when: list, epilogue: "_Epilogue | None" = None
    ) -> None:
        """Kernel B of an outer reduction of many splits (:data:`OUTER_COMBINE_TILES`):
        a block's warps take ``WARP`` columns, warp ``w`` combining the
        splits ``w``, ``w + THREADS // WARP``, ... of its lane's column
        (:data:`OUTER_UNROLL` at a time), and the warps' results meet in
        shared memory (:meth:`_warps_combined`) before the first warp
        stores the columns' results."""
        ps, ops, warps = g.parallel, g.combining_ops(), THREADS // WARP
        k = self.kernel(evict_last=False)
        with ir.InsertionPoint(k.entry), self.location:
            sizes, cols, buffers, count = self._partials_in(k, g, partials)
            thread = k.special("thread")
            lane, warp = _lane_and_warp(thread)
            first = arith.MulIOp(k.special("block"), _index(WARP)).result
            col = arith.AddIOp(first, lane).result
            mine = _warp_share(count, warp)
            neutral = [k.value(v) for v in inits]
            inside = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.ult, col, cols).result, [v.type for v in neutral], has_else=True)
            with ir.InsertionPoint(inside.then_block):
                (accs,) = self._unrolled_rows(
                    k, g, k.zero, mine, neutral,
                    lambda i: [[arith.AddIOp(warp, _scaled(i, warps)).result]],  # the warp's i-th split
                    lambda columns: [[memref.LoadOp(buffer, [columns[0][0], col]).result for buffer in buffers]],
                    apply=lambda values, accs, ivs: _combine(ops, accs, values),
                )
                scf.YieldOp(accs)
            with ir.InsertionPoint(inside.else_block):
                scf.YieldOp(neutral)

            def store(column: ir.Value, totals: list[ir.Value]) -> None:
                self._column_results(k, g, totals, k.delinearize(column, [sizes[d] for d in ps]), epilogue)

            self._warps_combined(k, g, list(inside.results), 1, first, cols, store)
        k.finish(grid, when=when)

    @staticmethod
    def _split_rows(rows: ir.Value, count: ir.Value, split: ir.Value) -> tuple[ir.Value, ir.Value]:
        """The rows ``[start, stop)`` of split ``split`` of ``count``."""
        chunk = arith.CeilDivUIOp(rows, count).result
        start = arith.MinUIOp(rows, arith.MulIOp(split, chunk).result).result  # the last splits may start past the rows
        return start, arith.MinUIOp(rows, arith.AddIOp(start, chunk).result).result

    def outer_tiles(self, g: Generic, inits: list[ir.Value], partials: list[ir.Value], lanes: int, grid: list, when: list) -> None:
        """Kernel A of an outer reduction whose columns are whole vectors
        (:data:`OUTER_VECTORS`): a block of ``THREADS // WARP`` warps takes
        ``WARP`` vectors of columns; lane ``l`` of warp ``w`` reads vector
        ``l`` of the split's rows ``w``, ``w + THREADS // WARP``, ... (a
        warp reads 512 consecutive bytes of a row), keeping a result per
        column; the warps' results meet in shared memory, and thread ``t``
        combines column ``t`` of the block's over the warps into the split's
        partial result (:meth:`_warps_combined`)."""
        rs = g.reduction
        warps, width = THREADS // WARP, WARP * lanes
        inner = len(g.iterators) - 1
        k = self.kernel(evict_last=False)
        with ir.InsertionPoint(k.entry), self.location:
            sizes, cols, buffers, count = self._partials_in(k, g, partials)  # (one column dim)
            rows = k.product([sizes[d] for d in rs])
            thread, split = k.special("thread"), k.special("block", "y")
            lane, warp = _lane_and_warp(thread)
            first = arith.MulIOp(k.special("block"), _index(width)).result  # the block's first column
            col = arith.AddIOp(first, _scaled(lane, lanes)).result
            start, stop = self._split_rows(rows, count, split)
            mine = _warp_share(arith.SubIOp(stop, start).result, warp)

            def ivs_at(i: ir.Value) -> list[list]:  # each column's indices at the warp's i-th row
                row = k.delinearize(arith.AddIOp(arith.AddIOp(start, warp).result, _scaled(i, warps)).result, [sizes[d] for d in rs])
                return [row + [_index_plus(col, j)] for j in range(lanes)]

            def values_at(columns: list[list]) -> list[list]:  # each column's input values
                loaded = []
                for arg, operand, amap in zip(g.body.arguments, g.inputs, g.maps):
                    if not list(arg.uses):
                        loaded.append([None] * lanes)
                    elif isinstance(operand.type, ir.ShapedType) and _uses_dim(amap, inner):
                        flat = _vector_index(k.linear_index(operand, k.indices(amap, columns[0])), lanes)
                        whole = memref.LoadOp(k.view_argument(operand, lanes), [flat]).result
                        loaded.append([vector.ExtractOp(whole, [], [j]).result for j in range(lanes)])
                    else:
                        loaded.append([k.load(operand, amap, columns[0])] * lanes)
                return [[values[j] for values in loaded] for j in range(lanes)]

            neutral = [k.value(v) for v in inits]
            inside = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.ult, col, cols).result, [v.type for v in neutral] * lanes, has_else=True)
            with ir.InsertionPoint(inside.then_block):
                accs = self._unrolled_rows(k, g, k.zero, mine, neutral, ivs_at, values_at, lanes)
                scf.YieldOp([acc for column in accs for acc in column])
            with ir.InsertionPoint(inside.else_block):
                scf.YieldOp(neutral * lanes)

            def store(column: ir.Value, totals: list[ir.Value]) -> None:
                for total, buffer in zip(totals, buffers):
                    memref.StoreOp(total, buffer, [split, column])

            self._warps_combined(k, g, list(inside.results), lanes, first, cols, store)
        k.finish(grid, when=when)

    @staticmethod
    def _warps_combined(k: _Kernel, g: Generic, results: list[ir.Value], lanes: int, first: ir.Value, cols: ir.Value, store) -> None:
        """A tile's warps' results (a lane's ``lanes`` columns' accumulators,
        column by column, from column ``first`` plus ``lanes`` times the
        lane) combined through shared memory: after a barrier, thread ``t``
        combines columns ``t``, ``t + THREADS``, ... of the tile's
        ``WARP * lanes`` (two for 16 one-byte lanes: a Boolean tile is wider
        than the block) over the warps and calls ``store(column, totals)``
        for each one below ``cols``."""
        warps, width, n = THREADS // WARP, WARP * lanes, len(results) // lanes
        thread = k.special("thread")
        lane, warp = _lane_and_warp(thread)
        tiles = [k.workgroup_global(f"tile{i}", warps * width, v.type) for i, v in enumerate(results[:n])]
        mine = arith.AddIOp(_scaled(warp, width), _scaled(lane, lanes)).result
        for j in range(lanes):
            for i, tile in enumerate(tiles):
                memref.StoreOp(results[j * n + i], tile, [_index_plus(mine, j)])
        gpu.BarrierOp()
        for base in range(0, width, THREADS):
            at = _index_plus(thread, base)  # the tile's column
            column = arith.AddIOp(first, at).result
            owner = arith.AndIOp(
                arith.CmpIOp(arith.CmpIPredicate.ult, at, _index(width)).result, arith.CmpIOp(arith.CmpIPredicate.ult, column, cols).result
            ).result
            branch = scf.IfOp(owner)
            with ir.InsertionPoint(branch.then_block):
                over = [[memref.LoadOp(tile, [_index_plus(at, w * width)]).result for tile in tiles] for w in range(warps)]
                store(column, _combine_all(over, g.combining_ops()))
                scf.YieldOp([])

    @staticmethod
    def _unrolled_rows(k: _Kernel, g: Generic, start, stop, inits, ivs_at, values_at=None, width: int = 1, apply=None) -> list:
        """``g``'s accumulators over rows ``[start, stop)``, :data:`OUTER_UNROLL`
        rows per iteration with their loads issued first and one partial
        result each (from ``inits``, neutral), the rest one by one, the
        partials combined at the end. With ``values_at``, a row is ``width``
        columns: ``ivs_at(row)`` gives each column's indices, ``values_at``
        of those each column's values, and the result is a list of
        accumulators per column; ``apply(values, accumulators, ivs)`` (else
        ``g``'s body) gives a column's new accumulators."""
        columns_of = values_at is not None
        if not columns_of:
            one_ivs_at = ivs_at
            ivs_at = lambda row: [one_ivs_at(row)]  # noqa: E731
            values_at = lambda columns: [k.input_values(g, columns[0])]  # noqa: E731
        if apply is None:
            apply = lambda values, accs, ivs: k.apply(g, values + accs, ivs)  # noqa: E731
        unroll, n = OUTER_UNROLL, len(inits)
        step = n * width  # accumulators a row
        whole = arith.MulIOp(arith.DivUIOp(arith.SubIOp(stop, start).result, _index(unroll)).result, _index(unroll)).result
        middle = arith.AddIOp(start, whole).result
        loop = scf.ForOp(start, middle, _index(unroll), list(inits) * (unroll * width))
        with ir.InsertionPoint(loop.body):
            rows = [ivs_at(arith.AddIOp(loop.induction_variable, _index(j)).result) for j in range(unroll)]
            loaded = [values_at(columns) for columns in rows]
            carried = list(loop.inner_iter_args)
            updated = []
            for j, (columns, values) in enumerate(zip(rows, loaded)):
                for c, (ivs, column) in enumerate(zip(columns, values)):
                    at = j * step + c * n
                    updated += apply(column, carried[at : at + n], ivs)
            scf.YieldOp(updated)
        results = list(loop.results)
        rest = scf.ForOp(middle, stop, _index(1), results[:step])
        with ir.InsertionPoint(rest.body):
            columns, carried = ivs_at(rest.induction_variable), list(rest.inner_iter_args)
            updated = []
            for c, (ivs, column) in enumerate(zip(columns, values_at(columns))):
                updated += apply(column, carried[c * n : (c + 1) * n], ivs)
            scf.YieldOp(updated)
        last = list(rest.results)
        accs = [
            _combine_all([last[c * n : (c + 1) * n]] + [results[j * step + c * n : j * step + (c + 1) * n] for j in range(1, unroll)], g.combining_ops())
            for c in range(width)
        ]
        return accs if columns_of else accs[0]

    def scratch(self, element: ir.Type, shape: list[list]) -> ir.Value:
        """A new temporary, as a host value: an argument of a scratch block
        that only kernels of this segment use."""
        mtype = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * len(shape), element)
        holder = self._scratch_holder()
        value = holder.add_argument(mtype, self.location)
        self.temp_of[value] = len(self.temps)
        self.temps.append(Temp(dtype=str(element), shape=shape))
        return value

    def _scratch_holder(self) -> ir.Block:
        """A detached block whose arguments stand for the scratch temporaries."""
        if self._holder is None:
            self._holder_op = ir.Operation.create("scf.execute_region", results=[], regions=1, loc=self.location)
            self._holder = self._holder_op.regions[0].blocks.append()
        return self._holder

    def persistent_rows(self, plan: "_RowPlan", spans_only: bool = False) -> None:
        """The whole segment as one kernel, a warp or a block per row (rows in
        a grid-stride loop; the launch program picks the scheme by the row
        length): each generic runs in turn for the row, lanes strided over
        its columns; a reduction's result is combined over the group (warp
        shuffles; :func:`_block_reduce` in the cached block variants,
        ``gpu.all_reduce`` in the other blocks) and stays in a register for the rest
        of the row, as does every value computed per row. In the cached
        variants (rows that fit in the lanes' registers) the row's inputs are
        loaded once and full-size temporaries never reach memory; in the
        others each generic reads the row again, and full-size buffers are
        written and read back by the same lane (same column mapping), so no
        barrier is needed between generics. With ``spans_only``, the
        variants of groups of a warp's lanes alone (:data:`ROW_PLAN_REDUCTIONS`
        ``"short"``: the launches that follow take the other rows)."""
        p = plan.rank_p
        reductions = [g for g, role in plan.steps if role == "reduce"]
        cols_f = _product(self.size_formulas(plan.anchor)[p:])
        n = len(plan.anchor.iterators)
        wide = [g for g, role in plan.steps if role in ("full", "reduce")]
        lanes = self.row_lanes(wide, plan.row_temps) if n - p == 1 else 1
        keep = self.kept_temps(plan)
        regions, staged_bytes = self.staged_regions(plan)
        buffer = self.row_buffer(plan, lanes)
        streamed = len(wide) == 1  # the row read by one generic (STREAMED_WARP_THREADS)
        flat_groups = None
        if lanes > 1 and self.flat_rows(plan):
            flat_groups = self.row_groups(
                cols_f, _narrow(reductions), lanes, self.row_registers(plan, keep, lanes), staged_bytes, flat=True, streamed=streamed
            )
        variant_groups = None if flat_groups is None else self.edge_groups(flat_groups, lanes, cols_f)
        variants = []
        for vector_lanes, condition, flat in self.row_variants(lanes, cols_f, flat_groups):
            scalar = vector_lanes == 1 and SCALAR_CACHED_ROWS > 0 and n - p == 1 and self.rows_dense(plan)
            registers = self.row_registers(plan, keep, vector_lanes, scalar)
            groups = variant_groups if flat else self.row_groups(  # a scalar variant: the ladder's slots times SCALAR_CACHED_ROWS
                cols_f, _narrow(reductions), SCALAR_CACHED_ROWS if scalar else vector_lanes, registers, 0 if scalar else staged_bytes,
                buffer.bytes if buffer and vector_lanes > 1 else (0, ()), scalar=scalar, streamed=streamed,
            )
            variants += [(group, vector_lanes, _both(group.when, condition), flat) for group in groups if group.spans or not spans_only]
        writes_rows = any(role == "full" and any(self.binding(o)[0] != "temp" for o in g.outputs) for g, role in plan.steps)
        for group, vector_lanes, when, flat in variants:
            k = self.kernel(evict_last=writes_rows)  # a reduction to row values alone (a bfloat16 sum): see L2_EVICT_LAST
            with ir.InsertionPoint(k.entry), self.location:
                sizes = k.loop_sizes(plan.anchor)
                row_loop, row_ivs, lane, width = self._row_loop(k, group, sizes[:p], k.product(sizes[p:]) if group.spans else None)
                with ir.InsertionPoint(row_loop.body):
                    if OPAQUE_LANE and group.kind == "block" and group.cached:
                        lane = _opaque(lane)
                    if group.prefetches and vector_lanes > 1 and self.bulk_prefetch and not flat:
                        self._prefetch_next_row(k, plan, row_loop, sizes, p, lane, vector_lanes)
                    clamped = CLAMPED_LOADS and group.cached and (group.kind == "block" or group.spans) and not flat
                    if flat and group.kind == "block":  # the block's threads as a constant: a lane's slots are then a constant apart
                        width = _index(group.threads)
                    walk = _RowWalk(k, row_ivs, sizes[p:], lane, width, vector_lanes, {}, group.store_group(vector_lanes), clamped)
                    if flat:
                        walk.flatten(row_loop.induction_variable, k.product(sizes))
                    walk.narrow_rows, walk.noncoherent = group.narrow_rows, group.noncoherent
                    if group.one_barrier and len(reductions) % 2:
                        walk.row_parity = self._row_parity(row_loop)
                    if group.staged:
                        walk.stage(regions)
                    if group.persistent:
                        weights = dict(list(buffer.weights.items())[: group.shared_weights])
                        kept = _RowBuffer(buffer.rows if group.buffered else {}, weights, group.weight_columns(vector_lanes))
                        at = kept.open(k, row_loop, sizes, p, vector_lanes, group.buffered)
                        walk.stage(kept.weight_regions, k.zero, kept.weight_span, group.weight_slots)
                        if group.buffered:
                            walk.stage(kept.row_regions, at)
                            walk.after_first_reduction = kept.release
                    first = arith.CmpIOp(arith.CmpIPredicate.eq, lane, _index(0)).result
                    whole = group.cached or group.staged  # a lane's slots of the row walked at once
                    slots = walk.slots(k.zero, group.columns // vector_lanes + group.edge_slot) if whole else None
                    cache: dict = {}
                    packed = 0  # the reductions the row's cached values were last packed after (PACKED_ROWS)
                    for g, role in plan.steps:
                        at = slots
                        if group.early_weights and role == "reduce" and not walk.reductions:  # with the row's first loads
                            for later, kind in plan.steps:
                                if kind == "full":
                                    walk.load_weights(later, slots, cache)
                        if group.packed_rows and role in ("full", "reduce") and walk.reductions > packed:
                            _packed_again(cache, vector_lanes)
                            packed = walk.reductions
                        if group.staged:  # the generics that load staged values get the whole row in flight; then chunks
                            cache, at = {}, slots if walk.stages(g) else None
                        self._row_step(walk, g, role, plan, first, group, at, cache, keep if group.cached else frozenset())
                        walk.settle()
                    scf.YieldOp([])
            shared = 0
            if group.staged or group.persistent:
                per_column = staged_bytes if group.staged else kept.weight_bytes + group.buffered * kept.row_bytes
                columns = _product([_ceildiv(["add", cols_f, ["const", vector_lanes]] if flat else cols_f, SHARED_PAD), ["const", SHARED_PAD]])
                if group.weight_slots:  # weights alone, each its row's first columns (_RowBuffer.weight_span)
                    columns = ["min", columns, ["const", group.weight_columns(vector_lanes)]]
                shared = ["mul", columns, ["const", per_column]]
            k.finish(
                group.grid(_product(plan.row_formulas), group.prefetches, cols_f), block=(group.threads, 1, 1), when=when,
                blocks_per_sm=group.blocks_per_sm, shared_bytes=shared, max_registers=group.max_registers, declare_threads=group.kind != "warp",
            )

    def _prefetch_next_row(self, k: _Kernel, plan: "_RowPlan", row_loop: scf.ForOp, sizes: list, p: int, lane: ir.Value, lanes: int) -> None:
        """Lane 0 of the block asks the L2 for the block's next row of every
        input that varies along rows and columns (see :data:`PREFETCH_NEXT_ROW`):
        one bulk prefetch per input whose vectors are 16 bytes, from the
        row's first column (16-byte aligned: the vector variant's buffers are
        aligned to a vector, and its rows are a whole number of vectors) for
        the row's bytes (a multiple of 16, as the prefetch needs). A bfloat16
        input among float32 ones has 8-byte vectors: not prefetched."""
        n = len(plan.anchor.iterators)
        row = arith.AddIOp(row_loop.induction_variable, row_loop.step).result
        last = arith.CmpIOp(arith.CmpIPredicate.ult, row, row_loop.upperBound).result
        first = arith.CmpIOp(arith.CmpIPredicate.eq, lane, _index(0)).result
        branch = scf.IfOp(arith.AndIOp(first, last).result)
        with ir.InsertionPoint(branch.then_block):
            ivs = k.delinearize(row, sizes[:p]) + [k.zero] * (n - p)
            columns = k.product(sizes[p:])
            done = set()
            for _, operand, amap in plan.full_inputs():  # not a weight or a per-row value: a row of its own
                if operand in done or not _bulk_rows(operand, lanes):
                    continue
                done.add(operand)
                element = element_bytes(ir.MemRefType(operand.type).element_type)
                view = k.view_argument(operand, lanes)  # (before the descriptor linear_index may add: the kernel's argument order)
                flat = k.linear_index(operand, k.indices(amap, ivs))
                address = _pointer(view, _scaled(flat, element), 1)
                size = arith.IndexCastOp(ir.IntegerType.get_signless(32), _scaled(columns, element))
                nvvm.CpAsyncBulkPrefetchOp(address, size.result)
            scf.YieldOp([])

    def row_buffer(self, plan: "_RowPlan", lanes: int) -> "_RowBuffer | None":
        """What a buffered variant keeps in its row buffer (:data:`BUFFER_NEXT_ROW`):
        the inputs that the row's first reduction or the steps before it read
        at each (row, column), and the inputs that vary along the row alone
        (weights), none of them written by the segment; None where there are
        no such row inputs, the target has no bulk copies, or one of them
        has vectors of ``lanes`` columns other than 16 bytes (a bulk copy's
        source and size must be multiples of 16 bytes: so are those rows)."""
        if not self.bulk_prefetch:
            return None
        p, n = plan.rank_p, len(plan.anchor.iterators)
        written = {o for g, _ in plan.steps for o in g.outputs}
        anchor = next(step for step, (g, _) in enumerate(plan.steps) if g is plan.anchor)
        rows, weights = {}, {}
        for step, operand, amap in plan.row_inputs():
            if operand in written or not all(_uses_dim(amap, d) for d in range(p, n)):
                continue  # written by the segment, or constant along the row
            if all(_uses_dim(amap, d) for d in range(p)):
                if step <= anchor:
                    rows[(operand, str(amap))] = amap
            elif not any(_uses_dim(amap, d) for d in range(p)):
                weights[(operand, str(amap))] = amap
        if not rows or not all(_bulk_rows(o, lanes) for o, _ in [*rows, *weights]):
            return None
        return _RowBuffer(rows, weights)

    def flat_rows(self, plan: "_RowPlan") -> bool:
        """Whether a row kernel can walk the tensor's flat vectors
        (:data:`FLAT_ROWS`): rows of one dim, every tensor read or written
        along the row dense (:meth:`rows_dense`), and those read along rows
        and columns both read at the generic's own indices."""
        n, p = len(plan.anchor.iterators), plan.rank_p
        if not FLAT_ROWS or n - p != 1 or not self.rows_dense(plan):
            return False
        identity = ir.AffineMap.get_identity(n)
        return all(amap == identity for _, amap in plan.tensors() if all(_uses_dim(amap, d) for d in range(n)))

    def rows_dense(self, plan: "_RowPlan") -> bool:
        """Whether every tensor a row kernel reads or writes along the row is
        dense, so that a scalar variant can load it at a flat index."""
        n, p = len(plan.anchor.iterators), plan.rank_p
        return all(self.layout(operand)[0] for operand, amap in plan.tensors() if any(_uses_dim(amap, d) for d in range(p, n)))

    def staged_regions(self, plan: "_RowPlan") -> tuple[dict[tuple, tuple[ir.Type, int]], int]:
        """What the staged variant keeps in shared memory, and its bytes per
        column: every operand read at each (row, column) by more than one
        generic and written by none, each in a region of the row's (padded)
        columns. Full-size temporaries stay in memory, read back by the lane
        that wrote them (after elementwise fusion, the normalizations have
        none). Regions: (operand, map) -> (element type, bytes per column
        before the region)."""
        written = {o for g, _ in plan.steps for o in g.outputs}
        readers: dict[tuple, set[int]] = {}
        elements: dict[tuple, ir.Type] = {}
        for step, operand, amap in plan.full_inputs():
            if operand not in written:
                readers.setdefault((operand, str(amap)), set()).add(step)
                elements[(operand, str(amap))] = ir.MemRefType(operand.type).element_type
        layout, offset = {}, 0
        for key, steps in readers.items():
            if len(steps) > 1:
                layout[key] = (elements[key], offset)
                offset += element_bytes(elements[key])
        return layout, offset

    def row_registers(self, plan: "_RowPlan", keep: set, lanes: int, scalar: bool = False):
        """Registers per lane a cached variant keeps for row values, as a
        function of its columns per lane, in two measures: (float32 values,
        loaded words). Float32 values: every operand read at each (row,
        column) and every kept temporary, one a column for all of them; an
        operand read per column only (a weight), for
        :data:`BLOCK_STORE_GROUP` slots. Loaded words: the same operands as
        loaded, a column of each its element's bytes over 4 (a bfloat16
        column half a word, a float64 one two), but at least one a column
        (the values computed from them); with ``scalar`` (columns loaded
        one at a time: :data:`SCALAR_CACHED_ROWS`) the values, each
        column a register of its own. Third, where a variant may keep its
        row packed (:data:`PACKED_ROWS`), the loaded words without that
        floor; else None. Fourth, where the row has weights, the words a
        lane keeps loading every slot's weights with its row
        (:data:`EARLY_WEIGHTS`): the row as loaded where it may stay packed,
        else a float32 value a column, and each weight as loaded; else
        None."""
        p = plan.rank_p
        full, weights = set(keep), set()
        for g, role in plan.steps:
            if role not in ("full", "reduce"):
                continue
            row_dims = range(p, len(g.iterators))
            for operand, amap in zip(g.inputs, g.maps):
                if operand in keep or not isinstance(operand.type, ir.ShapedType) or not any(_uses_dim(amap, d) for d in row_dims):
                    continue
                (full if all(_uses_dim(amap, d) for d in range(p)) else weights).add((operand, str(amap)))

        def words(entries) -> float:  # 32-bit words a column of each (kept temporaries: computed values)
            return sum(element_bytes(ir.MemRefType(e[0].type).element_type) / 4 if isinstance(e, tuple) else 1 for e in entries)

        full_words, weight_words = words(full), words(weights)
        reductions = [g for g, role in plan.steps if role == "reduce"]
        packable = (  # PACKED_ROWS: every row operand 16-bit, no kept temporary, no function in a reduction
            PACKED_ROWS and not scalar and not keep and full
            and all(element_bytes(ir.MemRefType(o.type).element_type) == 2 for o, _ in full)
            and not any(op.name == "func.call" or op.name.startswith("math.") for g in reductions for op in g.body.operations)
        )

        def registers(columns: int) -> tuple[int, float, float | None, float | None]:
            group = min(columns, BLOCK_STORE_GROUP * lanes)
            values = len(full) * columns + len(weights) * group
            if scalar:
                return values, values, None, None
            loaded = full_words * columns + weight_words * group
            early = ((full_words if packable else len(full)) + weight_words) * columns if weights else None
            return values, max(loaded, columns if full else 0), loaded if packable else None, early

        return registers

    def kept_temps(self, plan: "_RowPlan") -> set:
        """Full-size temporaries a cached variant keeps in registers: written
        by a full generic, read only by generics of the row's columns (not
        through a reshape, not by a per-row generic)."""
        viewed = {v[1] for v in self.views.values()}
        read_per_row = {o for g, role in plan.steps if role == "row" for o in g.inputs}
        return {
            o
            for g, role in plan.steps
            if role == "full"
            for o in g.outputs
            if self.binding(o)[0] == "temp" and self.binding(o)[1] not in viewed and o not in read_per_row
        }

    def _row_step(self, walk: _RowWalk, g, role, plan, first, group, slots, cache, keep) -> None:
        k, registers = walk.k, walk.registers
        at_row = walk.row_ivs + [k.zero] * (len(g.iterators) - plan.rank_p)
        if role == "fill":
            registers[g.outputs[0]] = k.value(g.fill_value())
            return
        if role == "row":  # a value per row: every thread computes it (uniform)
            values = [
                registers[o] if o in registers else (k.load(o, amap, at_row) if list(arg.uses) else None)
                for arg, o, amap in zip(g.body.arguments, g.inputs, g.maps)
            ]
            results = k.apply(g, values + [None] * len(g.outputs), at_row)
            self._row_results(k, g, results, registers, plan, at_row, first)
            return
        if role == "reduce":
            partials = walk.reduce(g, [registers.pop(o) for o in g.outputs], slots, cache)
            totals = group.reduce(k, partials, g.combining_ops(), walk.reductions, walk.row_parity, walk.width if group.spans else None)
            if walk.reductions == 0 and walk.after_first_reduction is not None:
                walk.after_first_reduction()  # past the reduction's barrier: every lane has loaded the row
            walk.reductions += 1
            self._row_results(k, g, totals, registers, plan, at_row, first)
            return
        walk.pointwise(g, slots, cache, keep)  # role == "full"

    @staticmethod
    def _row_results(k, g, values, registers, plan, ivs, first) -> None:
        """Row values: kept in registers when they are temporaries, stored by
        thread 0 when they are segment outputs."""
        stores = []
        for value, output, amap in zip(values, g.outputs, g.maps[len(g.inputs) :]):
            if output in plan.row_temps:
                registers[output] = value
            else:
                stores.append((value, output, amap))
        if stores:
            branch = scf.IfOp(first)
            with ir.InsertionPoint(branch.then_block):
                for value, output, amap in stores:
                    memref.StoreOp(value, k.value(output), k.indices(amap, ivs))
                scf.YieldOp([])

    def serial_reduction(self, g: Generic) -> None:
        """One thread per output element, looping over the whole reduction space
        (the outputs hold the initial values)."""
        k = self.kernel(evict_last=False)
        ps, rs = g.parallel, g.reduction
        with ir.InsertionPoint(k.entry), self.location:
            sizes = k.loop_sizes(g)
            loop = self._grid_stride_loop(k, k.product([sizes[d] for d in ps]))
            with ir.InsertionPoint(loop.body):
                p_ivs = k.delinearize(loop.induction_variable, [sizes[d] for d in ps])

                def ivs_at(r):
                    ivs = [None] * len(g.iterators)
                    for d, v in zip(ps, p_ivs):
                        ivs[d] = v
                    for d, v in zip(rs, k.delinearize(r, [sizes[d] for d in rs])):
                        ivs[d] = v
                    return ivs

                at_zero = ivs_at(k.zero)
                first = [k.load(o, g.maps[len(g.inputs) + i], at_zero) for i, o in enumerate(g.outputs)]
                accs = self._accumulate(k, g, k.zero, k.product([sizes[d] for d in rs]), _index(1), first, ivs_at)
                k.store(g, accs, at_zero)
                scf.YieldOp([])
        size = self.size_formulas(g)
        k.finish([self._capped_blocks(_product([size[d] for d in ps])), ["const", 1], ["const", 1]])


@dataclass
class _RowPlan:
    """A segment that fits the persistent normalization scheme: every generic
    runs over the full space ``[P..., R...]`` of its first reduction (which
    reduces the trailing dims R) or over one row value per ``P`` point, and
    values per row that are temporaries live in registers."""

    anchor: Generic  # the first reduction: its operands give the sizes
    rank_p: int
    row_formulas: list[list]
    steps: list[tuple[Generic, str]]  # (generic, fill | reduce | row | full)
    row_temps: set
    plain: bool = False  # fills and reductions alone, whose results it stores (:data:`ROW_PLAN_REDUCTIONS`)

    @classmethod
    def of(cls, scheduler: "_SegmentScheduler", generics: list[Generic]) -> "_RowPlan | None":
        generics = [g for g in generics if g.outputs]
        reductions = [g for g in generics if g.reduction]
        plain = not any(g.fill_value() is None and not g.reduction for g in generics)
        if not reductions or (plain and not ROW_PLAN_REDUCTIONS):
            return None  # a plain reduction (the reduction schedulers) or nothing to fuse
        anchor = reductions[0]
        p = len(anchor.parallel)
        n = len(anchor.iterators)
        if anchor.parallel != list(range(p)) or p == 0 or p == n:
            return None
        sizes = scheduler.size_formulas(anchor)
        rows = sizes[:p]

        def row_shaped(buffer: ir.Value) -> bool:
            if not isinstance(buffer.type, ir.ShapedType):
                return False
            rank = ir.MemRefType(buffer.type).rank
            dims = [scheduler.dim_formula(buffer, d) for d in range(rank)]
            return rank >= p and dims[:p] == rows and all(d == ["const", 1] for d in dims[p:])

        row_temps = {v for v in scheduler.temp_of if row_shaped(v) and scheduler.binding(v)[0] == "temp"}
        results = _RowPlan.stored_results(scheduler, generics, p) if plain else set()
        steps, written, fills = [], set(), {}
        for g in generics:
            fill = g.fill_value()
            space = scheduler.size_formulas(g)
            if fill is not None:
                if g.outputs[0] not in row_temps | results:
                    return None
                steps.append((g, "fill"))
                written.add(g.outputs[0])
                fills[g.outputs[0]] = fill
                continue
            if g.reduction:
                combiners = g.combiners()
                if g.parallel != list(range(p)) or space != sizes or combiners is None:
                    return None
                if any(o not in row_temps | results or not _neutral(fills.pop(o, None), c) for o, c in zip(g.outputs, combiners)):
                    return None  # accumulates into a row temporary (or stored result) just filled with a neutral value
                role = "reduce"
            elif space == sizes:
                role = "full"
            elif space[:p] == rows and all(d == ["const", 1] for d in space[p:]):
                role = "row"
            else:
                return None
            for operand, amap in zip(g.inputs, g.maps):
                if operand in row_temps:  # read at its row (a row generic's trailing dims have size 1)
                    if operand not in written or not (role == "row" or _row_map(amap, p)):
                        return None
                elif isinstance(operand.type, ir.ShapedType) and scheduler.binding(operand)[0] == "temp" and role != "row":
                    if amap != ir.AffineMap.get_identity(len(g.iterators)):
                        return None  # a full temporary is read by the thread that wrote it, at the same index
            for output, amap in zip(g.outputs, g.maps[len(g.inputs) :]):
                if role == "full" and output in row_temps:
                    return None
                if role == "full" and scheduler.binding(output)[0] == "temp" and amap != ir.AffineMap.get_identity(n):
                    return None
                written.add(output)
            steps.append((g, role))
        if any(o in results for o in fills):
            return None  # a stored result filled and never reduced into
        return cls(anchor, p, rows, steps, row_temps, plain)

    @staticmethod
    def stored_results(scheduler: "_SegmentScheduler", generics: list[Generic], p: int) -> set:
        """The buffers a plain reduction's row plan stores its results in
        (:data:`ROW_PLAN_REDUCTIONS`): the outputs of its reductions written
        at their row (``(d0, ..., d{p-1}, 0, ...)``, trailing dims of size
        1), none of them a temporary, and none read by a generic of the
        segment (thread 0 of the group stores a row's result; nothing in the
        kernel may read it back)."""
        results = set()
        for g in [g for g in generics if g.reduction]:
            for output, amap in zip(g.outputs, g.maps[len(g.inputs) :]):
                rank = ir.MemRefType(output.type).rank
                trailing = [scheduler.dim_formula(output, d) for d in range(p, rank)]
                if scheduler.binding(output)[0] == "temp" or not _row_map(amap, p) or any(d != ["const", 1] for d in trailing):
                    return set()
                results.add(output)
        read = {scheduler.base(v) for g in generics for v in g.inputs if isinstance(v.type, ir.ShapedType)}
        return set() if any(scheduler.base(o) in read for o in results) else results

    def row_inputs(self) -> list[tuple[int, ir.Value, ir.AffineMap]]:
        """(step, operand, map) of each tensor input that a full-size step
        (``full`` or ``reduce``) reads and uses."""
        return [
            (step, operand, amap)
            for step, (g, role) in enumerate(self.steps)
            if role in ("full", "reduce")
            for arg, operand, amap in zip(g.body.arguments, g.inputs, g.maps)
            if list(arg.uses) and isinstance(operand.type, ir.ShapedType)
        ]

    def tensors(self) -> list[tuple[ir.Value, ir.AffineMap]]:
        """(operand, map) of every tensor read or written by the generics over the full space."""
        return [
            (operand, amap)
            for g, role in self.steps
            if role in ("full", "reduce")
            for operand, amap in zip([*g.inputs, *g.outputs], g.maps)
            if isinstance(operand.type, ir.ShapedType)
        ]

    def full_inputs(self) -> list[tuple[int, ir.Value, ir.AffineMap]]:
        """:meth:`row_inputs` read at every (row, column)."""
        n = len(self.anchor.iterators)
        return [(step, operand, amap) for step, operand, amap in self.row_inputs() if all(_uses_dim(amap, d) for d in range(n))]


def _row_map(amap: ir.AffineMap, p: int) -> bool:
    """``(d0, ..., d{p-1}, 0, ...)``: a row value read at its row."""
    results = list(amap.results)
    for i, expr in enumerate(results):
        if i < p and not (isinstance(expr, ir.AffineDimExpr) and expr.position == i):
            return False
        if i >= p and not (isinstance(expr, ir.AffineConstantExpr) and expr.value == 0):
            return False
    return len(results) >= p


def schedule_segment(
    func: ir.Operation, gpu_module_body: ir.Block, prefix: str, layouts: Sequence | None = None, arch: str = "sm_90"
) -> SegmentProgram:
    """Kernels for the segment function ``func`` (linalg on memrefs, generalised)
    appended to ``gpu_module_body``; returns its launch program. ``layouts``
    has the (dense, alignment) of each argument (None: unknown, strided);
    ``arch`` is the target (``sm_XY``: what its instructions allow)."""
    return _SegmentScheduler(func, gpu_module_body, prefix, layouts, arch).run()


def bulk_prefetch(arch: str) -> bool:
    """Whether ``arch`` (``sm_XY``, maybe with a suffix: ``sm_90a``) has
    ``cp.async.bulk.prefetch`` (sm_90 and later). LLVM aborts the process
    ("Cannot select") when asked for it on an older target."""
    return sm_number(arch) >= 90
