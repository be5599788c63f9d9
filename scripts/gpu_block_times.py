"""When each block of a bench case's kernels starts and ends, and on which SM (GPU host).

    FUSER_CACHE=0 python3 scripts/gpu_block_times.py CASE:DTYPE:HIDDEN [MB] [--setting CODE]

Compiles bench/run.py's case with every kernel instrumented
(:func:`instrument`: thread 0 of each block records ``%globaltimer`` and
``%smid`` as the block starts, and ``%globaltimer`` again at each ``ret``,
into a ``.global`` table of its kernel), runs it a few times, then three
times alone after an L2 flush, and prints for each call the kernels' span
(the first block's start to the last block's end), the spread of the
blocks' starts and ends and their durations, and the blocks running over
time (grids of more blocks than SMs) or, for a grid of at most the SMs
(the persistent row kernels, whose block ``b`` takes rows ``b``, ``b +
grid``, ...), the blocks grouped by the rows they own. Whether a
persistent kernel's blocks end together or some SMs' blocks end well
after the others shows here (sweep 36 in bench/results/h200-sweeps.txt).
FUSER_CACHE=0 keeps a cached uninstrumented module out; ``--setting`` runs
CODE in gpu_schedule's namespace first (scripts/scheduler_settings.py).
The probe's own cost: a few instructions and two 8-byte stores a block
(ptxas, sm_90: the layer norm float32 of 32K columns keeps its 64
registers and no spill).
"""

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuser_mlir.lowering import gpu  # noqa: E402

#: Blocks a kernel's table has room for (blocks past them are not recorded).
PROBE_BLOCKS = 1 << 16
#: Bytes a block's record takes: start (u64), end (u64), SM (u32), 1 once ended (u32), 8 unused.
RECORD_BYTES = 32
#: The table's name in the module.
TABLE = "fuser_block_times"
_ENTRY = re.compile(r"^\.visible \.entry ([\w$]+)")
_RET = re.compile(r"^\s*ret;\s*$")


def _record(label: int, table: str, stores: str, reads: str) -> list[str]:
    """PTX: thread 0 of a block below PROBE_BLOCKS reads ``reads`` and makes ``stores`` at its record's address %fa in ``table``."""
    return [
        "\t{",
        "\t.reg .pred %fp; .reg .b32 %ft, %fc, %fs; .reg .b64 %f1, %fa, %fo;",
        "\tmov.u32 %ft, %tid.x; mov.u32 %fc, %ctaid.x;",
        f"\tsetp.ne.u32 %fp, %ft, 0; @%fp bra FUSER_PROBE_{label}; setp.ge.u32 %fp, %fc, {PROBE_BLOCKS}; @%fp bra FUSER_PROBE_{label};",
        f"\t{reads}",
        f"\tmul.wide.u32 %fo, %fc, {RECORD_BYTES}; mov.u64 %fa, {table}; add.u64 %fa, %fa, %fo;",
        f"\t{stores}",
        f"FUSER_PROBE_{label}:",
        "\t}",
    ]


def instrument(ptx: str) -> tuple[str, dict[str, str]]:
    """``ptx`` with each ``.entry`` recording into a table of its own in
    ``.global`` memory (PROBE_BLOCKS records of :data:`RECORD_BYTES`), and
    the tables' names by kernel: as its body starts, thread 0 of block
    ``%ctaid.x`` writes ``%globaltimer`` at byte 0 and ``%smid`` at byte 16
    of its record; before each ``ret``, ``%globaltimer`` at byte 8 and 1 at
    byte 20."""
    lines = ptx.split("\n")
    kernels = [m.group(1) for m in map(_ENTRY.match, lines) if m]
    tables = {kernel: f"{TABLE}_{n}" for n, kernel in enumerate(kernels)}
    out, state, label, table = [], None, 0, None
    for line in lines:
        if line.startswith(".address_size"):
            out += [line, *(f".global .align 8 .b8 {t}[{PROBE_BLOCKS * RECORD_BYTES}];" for t in tables.values())]
            continue
        entry = _ENTRY.match(line)
        if entry:
            state, table = "header", tables[entry.group(1)]
        elif state == "header" and line == "{":
            out.append(line)
            label += 1
            out += _record(label, table, "st.global.u64 [%fa], %f1; st.global.u32 [%fa+16], %fs;", "mov.u64 %f1, %globaltimer; mov.u32 %fs, %smid;")
            state = "body"
            continue
        elif state == "body" and line == "}":
            state = None
        elif state == "body" and _RET.match(line):
            label += 1
            out += _record(label, table, "st.global.u64 [%fa+8], %f1; st.global.u32 [%fa+20], 1;", "mov.u64 %f1, %globaltimer;")
        out.append(line)
    return "\n".join(out), tables


def records(table: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(start ns, end ns, SM, block index) of the blocks that ended, from the table's bytes."""
    rec = np.frombuffer(table, dtype=np.uint64).reshape(-1, RECORD_BYTES // 8)
    words = rec[:, 2].copy().view(np.uint32).reshape(-1, 2)
    ended = words[:, 1] == 1
    return rec[ended, 0].astype(np.int64), rec[ended, 1].astype(np.int64), words[ended, 0], np.nonzero(ended)[0]


def summary(start: np.ndarray, end: np.ndarray, sm: np.ndarray, blocks: np.ndarray, rows: int | None = None) -> list[str]:
    """Lines describing one launch's blocks (times in µs from the first block's start)."""
    t0 = start.min()
    st, en = (start - t0) / 1e3, (end - t0) / 1e3
    dur = en - st
    sms = len(set(sm.tolist()))
    lines = [
        f"  {len(blocks)} blocks on {sms} SMs, span {en.max():.1f} us; starts within {st.max():.2f} us; "
        f"ends {en.min():.1f} / {np.median(en):.1f} / {en.max():.1f} (min / median / max); durations {dur.min():.1f} / {np.median(dur):.1f} / {dur.max():.1f}"
    ]
    grid = int(blocks.max()) + 1
    if rows is not None and grid < rows and sms == len(blocks):  # one block an SM: a persistent grid
        owned = (rows - blocks + grid - 1) // grid
        for count in sorted(set(owned.tolist())):
            mine = owned == count
            lines.append(
                f"  {int(mine.sum())} blocks of {count} rows: end {en[mine].min():.1f}..{en[mine].max():.1f} us, "
                f"{np.median(dur[mine]) / count:.3f} us a row ({dur[mine].min() / count:.3f}..{dur[mine].max() / count:.3f})"
            )
        last = np.argsort(en)[-6:]
        lines.append("  last to end (block, SM, end us): " + ", ".join(f"({int(blocks[i])}, {int(sm[i])}, {en[i]:.1f})" for i in last))
    else:
        running = [int(((st <= t) & (en > t)).sum()) for t in np.linspace(0, en.max(), 24)]
        lines.append(f"  blocks running at 24 instants: {running}")
    return lines


def main(spec: str, megabytes: int = 256, setting: str = "") -> None:
    import torch

    import run as bench
    from fuser_mlir.runtime import cuda
    from scheduler_settings import applied

    name, dtype, hidden = spec.split(":")
    case = {c.name: c for c in bench.CASES}[name]
    hint, tables = gpu.hint_loads, {}

    def instrumented(ptx, functions):
        text, named = instrument(hint(ptx, functions))
        tables.update(named)
        return text

    gpu.hint_loads = instrumented
    try:
        with applied(setting):
            fd = bench.fusion_for(case, dtype)
            inputs = bench.random_inputs(case, getattr(torch, dtype), megabytes << 20, seed=1, hidden=int(hidden))
            outs = [torch.empty_like(case.torch_fn(*inputs))]
            error = bench.check_correct(fd, case, inputs, dtype)
    finally:
        gpu.hint_loads = hint
    if not tables:
        raise SystemExit("nothing was compiled: run with FUSER_CACHE=0 (a cached module is not instrumented)")
    rows = inputs[0].numel() // int(hidden)
    drv = cuda.driver()
    found = {}  # kernel -> (device pointer, bytes) of its table
    for module in list(cuda._modules.values()):
        for kernel, symbol in tables.items():
            code, pointer, size = drv.cuModuleGetGlobal(module, symbol.encode())
            if int(code) == 0:
                found[kernel] = (pointer, size)
    flush = torch.empty(bench.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        fd.execute(inputs, outputs=outs)
    print(f"{spec}, {megabytes} MB ({rows} rows), max error {error:.2g}")
    for call in range(3):
        for pointer, size in found.values():
            cuda.check(drv.cuMemsetD8(pointer, 0, size), "cuMemsetD8")
        flush.zero_()
        torch.cuda.synchronize()
        fd.execute(inputs, outputs=outs)
        torch.cuda.synchronize()
        for kernel, (pointer, size) in found.items():
            held = np.zeros(size, dtype=np.uint8)
            cuda.check(drv.cuMemcpyDtoH(held.ctypes.data, pointer, size), "cuMemcpyDtoH")
            start, end, sm, blocks = records(held.tobytes())
            if len(blocks):  # the kernels of the other variants did not run
                print(f"call {call + 1}, {kernel}:")
                print("\n".join(summary(start, end, sm, blocks, rows)))


def parse_args(argv: list[str]) -> tuple[str, int, str]:
    """(CASE:DTYPE:HIDDEN, MB, --setting's code); SystemExit with the usage otherwise."""
    from scheduler_settings import case_arguments

    return case_arguments(argv, __doc__)


if __name__ == "__main__":
    main(*parse_args(sys.argv[1:]))
