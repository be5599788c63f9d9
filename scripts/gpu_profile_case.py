"""Run a bench case's kernels for Nsight Compute: ours and torch.compile's.

    python3 scripts/gpu_profile_case.py CASE:DTYPE:HIDDEN [MB]

Both run a few times (torch.compile autotunes on its first calls), then once
more inside the NVTX range "final", which ncu can select, e.g. on the H200:

    ncu --nvtx --nvtx-include "final/" --clock-control none \\
        --section SourceCounters --section WarpStateStats --section SpeedOfLight \\
        --kernel-name KERNEL --launch-count 1 -o /tmp/KERNEL \\
        python3 scripts/gpu_profile_case.py rms_norm:float32:32768
    ncu -i /tmp/KERNEL.ncu-rep --page source --csv --print-source sass > KERNEL.csv
    python3 scripts/gpu_stall_ledger.py KERNEL.csv

KERNEL is one of ours as this script prints them (the launch program picks
one kernel by the row length) or torch.compile's (``triton_...``; run with
TORCH_LOGS=output_code to see its source). Sweep 28 in
bench/results/h200-sweeps.txt was measured this way.
"""

import sys

sys.path.insert(0, "bench")
import run as bench  # noqa: E402
from fuser_mlir.runtime.launch import evaluate  # noqa: E402


def launches_run(program, shapes: list, sms: int | None = None) -> list:
    """The launches of a segment's launch ``program`` whose launch condition
    holds (or that have none) for arguments of ``shapes`` on ``sms`` SMs."""
    return [launch for launch in program.launches if launch.when is None or evaluate(launch.when, shapes, [], sms)]


def launched(program, shapes: list, sms: int | None = None) -> list[str]:
    """The kernels of :func:`launches_run`."""
    return [launch.kernel for launch in launches_run(program, shapes, sms)]


def chosen_kernels(programs: dict, shapes: list) -> dict[str, list[str]]:
    """Each segment's kernels whose launch condition holds for arguments of
    ``shapes`` (the segment's inputs, then its outputs)."""
    return {segment: launched(program, shapes) for segment, program in programs.items()}


def main(spec: str, megabytes: int = 256) -> None:
    import torch

    name, dtype, hidden = spec.split(":")
    case = {c.name: c for c in bench.CASES}[name]
    inputs = bench.random_inputs(case, getattr(torch, dtype), megabytes << 20, seed=1, hidden=int(hidden))
    fd = bench.fusion_for(case, dtype)
    outs = [torch.empty_like(case.torch_fn(*inputs))]
    compiled = torch.compile(case.torch_fn, dynamic=False)
    programs = {segment: kernels.program for segment, kernels in fd.compile(inputs).kernels.items()}  # (also from the disk cache)
    for segment, chosen in chosen_kernels(programs, [list(t.shape) for t in inputs + outs]).items():
        print(f"{segment}: launches {', '.join(chosen)} (of {len(programs[segment].launches)} kernels)", flush=True)
    for _ in range(3):
        fd.execute(inputs, outputs=outs)
        compiled(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("final")
    fd.execute(inputs, outputs=outs)
    compiled(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
