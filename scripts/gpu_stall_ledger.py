"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute.

    python3 scripts/gpu_stall_ledger.py KERNEL.csv [COVER]

KERNEL.csv is ``ncu -i REPORT --page source --csv --print-source sass`` of a
report with the SourceCounters section (see scripts/gpu_profile_case.py).
Prints the kernel's stall reasons as shares of all warp samples, then its
instructions in program order that together hold COVER (default 0.8) of the
samples, each with its share and its reasons of 1% or more: e.g. a row's
loads show as the long-scoreboard wait of the first instruction that uses
them, a block reduction's barrier as the shared load after ``BAR.SYNC``.
"""

import csv
import sys
from dataclasses import dataclass

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


@dataclass(frozen=True)
class Instruction:
    position: int  # in the kernel's SASS
    source: str
    samples: int
    executed: int
    stalls: dict  # reason (without the stall_ prefix) -> samples


def read(text: str) -> tuple[str, list[Instruction]]:
    """(kernel name, its instructions) of ncu's source-page CSV."""
    rows = list(csv.reader(text.splitlines()))
    if len(rows) < 2 or rows[0][:1] != ["Kernel Name"] or SAMPLES not in rows[1]:
        raise ValueError(
            "not ncu's source page: expected a 'Kernel Name' line, then a header with "
            f"'{SAMPLES}' (export with --page source --csv --print-source sass, from a report with SourceCounters)"
        )
    header = rows[1]
    samples, executed, source = header.index(SAMPLES), header.index(EXECUTED), header.index("Source")
    reasons = [(i, h[len("stall_") :]) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]

    def number(cell: str) -> int:
        return int(cell.replace(",", "") or 0)

    instructions = [
        Instruction(n, row[source].strip(), number(row[samples]), number(row[executed]), {r: number(row[i]) for i, r in reasons})
        for n, row in enumerate(rows[2:])
        if len(row) == len(header)
    ]
    return rows[0][1], instructions


def ledger(instructions: list[Instruction], cover: float = 0.8) -> tuple[dict, list[Instruction]]:
    """(each stall reason's share of all samples, largest first; the
    instructions holding ``cover`` of the samples, in program order)."""
    total = sum(i.samples for i in instructions) or 1
    reasons: dict = {}
    for i in instructions:
        for reason, count in i.stalls.items():
            reasons[reason] = reasons.get(reason, 0) + count
    shares = {r: c / total for r, c in sorted(reasons.items(), key=lambda rc: -rc[1]) if c}
    held, chosen = 0, []
    for i in sorted(instructions, key=lambda i: -i.samples):
        if held >= cover * total or not i.samples:
            break
        chosen.append(i)
        held += i.samples
    return shares, sorted(chosen, key=lambda i: i.position)


def main(path: str, cover: float = 0.8) -> None:
    with open(path) as f:
        text = f.read()
    try:
        kernel, instructions = read(text)
    except ValueError as err:
        sys.exit(f"{path}: {err}")
    total = sum(i.samples for i in instructions) or 1
    shares, chosen = ledger(instructions, cover)
    print(f"{kernel}: {total} warp samples over {len(instructions)} instructions")
    print("  " + "  ".join(f"{r} {s:.1%}" for r, s in shares.items() if s >= 0.005))
    for i in chosen:
        reasons = ", ".join(f"{r} {c / total:.0%}" for r, c in i.stalls.items() if c >= 0.01 * total)
        print(f"{i.position:5d} {i.samples / total:6.1%}  x{i.executed:<9} {i.source[:64]:64} {reasons}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *(float(a) for a in sys.argv[2:3]))
