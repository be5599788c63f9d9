"""The profiling helpers of scripts/: gpu_stall_ledger.py's reading of ncu's
source page, and gpu_profile_case.py's choice of the kernels a bench case
launches (ncu itself needs the GPU host; these parts do not)."""

import csv
import io

import pytest

from bench_scripts import load_script as script
from fuser_mlir._mlir import ir

HEADER = [
    "Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)", "# Samples",
    "Instructions Executed", "stall_barrier", "stall_long_sb", "stall_barrier (Not Issued)", "stall_long_sb (Not Issued)",
]


def source_page(rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(["Kernel Name", "k6", ""])
    writer.writerow(HEADER)
    writer.writerows(rows)
    return out.getvalue()


def test_the_ledger_shares_out_the_samples_and_keeps_the_instructions_that_hold_them(monkeypatch):
    ledger = script("gpu_stall_ledger", monkeypatch)
    text = source_page(
        [
            ["0x0", "  LDG.E.128 R4, desc[UR4][R2.64]", "1", "1", "1", "4096", "0", "0", "0", "0"],
            ["0x10", "  FMUL R5, R4, R4", "60", "60", "60", "4096", "0", "58", "0", "58"],
            ["0x20", "  BAR.SYNC.DEFER_BLOCKING 0x0", "0", "0", "0", "4096", "0", "0", "0", "0"],
            ["0x30", "  LDS R6, [R7]", "30", "30", "30", "4096", "29", "0", "29", "0"],
            ["0x40", "  STG.E.128 desc[UR4][R8.64], R4", "9", "9", "9", "1,024", "0", "3", "0", "3"],
        ]
    )
    kernel, instructions = ledger.read(text)
    assert kernel == "k6" and [i.position for i in instructions] == [0, 1, 2, 3, 4]
    assert instructions[4].executed == 1024 and instructions[1].stalls == {"barrier": 0, "long_sb": 58}
    shares, held = ledger.ledger(instructions, cover=0.8)
    assert shares == {"long_sb": pytest.approx(0.61), "barrier": pytest.approx(0.29)}
    assert [i.source for i in held] == ["FMUL R5, R4, R4", "LDS R6, [R7]"]  # 90 of 100 samples, in program order
    assert len(ledger.ledger(instructions, cover=1.0)[1]) == 4  # every instruction with samples


def test_the_ledger_names_what_it_needs_when_given_another_page(monkeypatch, tmp_path):
    ledger = script("gpu_stall_ledger", monkeypatch)
    details = tmp_path / "k6.details.csv"
    details.write_text('"ID","Kernel Name","Section Name","Metric Name"\n"0","k6","Occupancy","Registers Per Thread"\n')
    with pytest.raises(SystemExit, match=r"k6\.details\.csv: not ncu's source page.*--page source --csv"):
        ledger.main(str(details))


def test_profile_case_names_the_kernel_a_row_length_launches(monkeypatch):
    profile = script("gpu_profile_case", monkeypatch)
    from fuser_mlir.dialect import make_context
    from fuser_mlir.lowering.gpu import lower_to_gpu
    from fuser_mlir.pipeline import run_pipeline

    case = next(c for c in profile.bench.CASES if c.name == "rms_norm")
    context = make_context()
    with context, ir.Location.unknown():
        module = profile.bench.fusion_for(case, "float32").build_module(context)
        run_pipeline(module, "fuser-verify,fuser-segment,fuser-resolve-alias-hazards,fuser-outline-segments")
        scheduled = lower_to_gpu(module, {"rms_norm_float32_seg0": [(True, 16)] * 3})
    (program,) = scheduled.programs.values()
    blocks = {launch.kernel: launch.block[0] for launch in program.launches}
    for hidden, threads in ((1024, 32), (32768, 1024)):
        shapes = [list(s) for s in case.shapes(64 * hidden, hidden)] + [[64, hidden]]
        (chosen,) = profile.chosen_kernels(scheduled.programs, shapes).values()
        assert len(chosen) == 1 and blocks[chosen[0]] == threads


def test_profile_case_counts_a_launch_without_a_condition_as_always_launched(monkeypatch):
    """A segment of one kernel has no launch condition (``when`` None): it is launched for any shapes."""
    from types import SimpleNamespace

    profile = script("gpu_profile_case", monkeypatch)
    program = SimpleNamespace(
        launches=[SimpleNamespace(kernel="k0", when=None), SimpleNamespace(kernel="k1", when=["gt", ["argdim", 0, 1], ["const", 1024]])]
    )
    assert profile.launched(program, [[8, 1024]]) == ["k0"]
    assert profile.launched(program, [[8, 4096]]) == ["k0", "k1"]
