"""scripts/kernel_sass.py: the SASS of the kernel a bench case launches,
read on a machine without a GPU (ptxas assembles, nvdisasm disassembles)."""

import shutil

import pytest

from bench_scripts import load_script as script

SASS = """\
\t.section\t.text.k1,"ax",@progbits
.text.k1:
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;       /* 0x000000040204798e */
        /*0020*/                   FMUL R5, R4, R4 ;                      /* 0x0000000404057220 */
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;          /* 0x0000000000007b1d */
        /*0040*/                   STG.E.128 desc[UR4][R8.64+0x4000], R4 ; /* 0x0040000408007986 */
        /*0050*/                   EXIT ;                                 /* 0x000000000000794d */
\t.section\t.text.k0,"ax",@progbits
.text.k0:
        /*0000*/                   LDG.E R3, desc[UR4][R2.64] ;           /* 0x0000000402037981 */
"""

PTXAS_LOG = """\
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 272 bytes smem
ptxas info    : Compiling entry function 'k0' for 'sm_90'
"""


def test_the_listing_keeps_one_kernels_memory_and_barrier_instructions_in_order(monkeypatch):
    sass = script("kernel_sass", monkeypatch)
    section = sass.kernel_section(SASS, "k1")
    assert sass.instructions(section) == [
        "/*0010*/ LDG.E.128 R4, desc[UR4][R2.64]",
        "/*0030*/ BAR.SYNC.DEFER_BLOCKING 0x0",
        "/*0040*/ STG.E.128 desc[UR4][R8.64+0x4000], R4",
        "/*0050*/ EXIT",
    ]
    assert len(sass.instructions(section, everything=True)) == 6  # k0's load is not k1's
    assert sass.resources(PTXAS_LOG, "k1") == "8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads | Used 64 registers, used 1 barriers, 272 bytes smem"
    with pytest.raises(ValueError, match="no .text section for k2"):
        sass.kernel_section(SASS, "k2")


def test_load_waves_say_whether_a_rows_loads_are_issued_together(monkeypatch):
    """The loads (L) and runs of arithmetic (a) from the first 16-byte load to
    the barrier after it: a load issued after arithmetic on the first ones
    (a second wave) shows as an L after an a; 4-byte loads, integer
    instructions and what follows the barrier do not count."""
    sass = script("kernel_sass", monkeypatch)
    listing = [f"/*{i:04x}*/ {op}" for i, op in enumerate([
        "LDG.E R3, desc[UR4][R2.64]", "LDG.E.128 R4, desc[UR4][R2.64]", "LDG.E.128 R8, desc[UR4][R6.64]", "FMUL R5, R4, R4",
        "@!P1 FFMA R5, R5, R5, R4", "IMAD.WIDE.U32 R6, R3, 0x10, R6", "LDG.E.128 R12, desc[UR4][R6.64]", "HFMA2 R7, R12, R12, R7",
        "LDG.E.128.CONSTANT R16, desc[UR4][R6.64]", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDG.E.128 R20, desc[UR4][R6.64]",
    ])]
    assert sass.load_waves(listing) == "LLaLaL"
    assert sass.load_waves(sass.instructions(sass.kernel_section(SASS, "k1"), everything=True)) == "La"
    assert sass.load_waves(listing[:1]) == ""


def test_the_command_line_and_its_errors(monkeypatch):
    sass = script("kernel_sass", monkeypatch)
    assert sass.parse_args(["rms_norm:float32:32768"]) == ("rms_norm:float32:32768", 256, "", False)
    assert sass.parse_args(["softmax:bfloat16:8192", "1024", "--all", "--setting", "CHUNK_SLOTS = 8"]) == (
        "softmax:bfloat16:8192", 1024, "CHUNK_SLOTS = 8", True,
    )
    with pytest.raises(SystemExit, match="--setting needs the code"):
        sass.parse_args(["rms_norm:float32:32768", "--setting"])
    with pytest.raises(SystemExit, match="CASE:DTYPE:HIDDEN"):
        sass.parse_args(["rms_norm:float32:32768", "lots"])
    with pytest.raises(SystemExit, match="one of pointwise, .*rms_norm : float32 or bfloat16"):
        sass.main("rms_norm:float64:1024")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit or the cuda extra) is not on PATH")
def test_the_rms_norm_reads_its_weight_through_the_noncoherent_cache_and_a_setting_lasts_one_compile(monkeypatch, capsys):
    """The bench's RMS norm of 32K float32 columns: the kernel its launch picks
    loads a row's 8 vectors a lane before the block's barrier and stores
    after it, and reads its weight's 8 through the non-coherent cache
    (LDG.E.128.CONSTANT; gpu_schedule.NONCOHERENT_WEIGHTS), with no copy to
    shared memory. A setting (4-byte vectors: a pointwise kernel of scalar
    accesses) holds for its compile alone."""
    sass = script("kernel_sass", monkeypatch)
    from fuser_mlir.lowering import gpu_schedule

    sass.main("rms_norm:float32:32768")
    kept = capsys.readouterr().out.splitlines()
    assert kept[0].startswith("rms_norm_float32_seg0_k") and "registers" in kept[0] and "spill stores" in kept[0]
    assert kept[0].split("loads to the first barrier: ")[1].count("L") >= 8
    body = [line.split("*/ ", 1)[1] for line in kept[1:]]
    first_store = next(i for i, op in enumerate(body) if "STG.E.128" in op)
    loads = [i for i, op in enumerate(body[:first_store]) if op.startswith("LDG.E.128 ")]
    assert len(loads) == 8 and any(op.startswith("BAR.SYNC") for op in body[loads[-1] : first_store])
    assert sum("STG.E.128" in op for op in body) == 8 and sum(op.startswith("LDG.E.128.CONSTANT") for op in body) == 8
    assert not any(op.startswith("UBLKCP") for op in body)

    before = gpu_schedule.VECTOR_BYTES
    sass.main("pointwise:float32:1024", setting="VECTOR_BYTES = 4; ADDED = 1")  # a scalar kernel, for this compile alone
    scalar = capsys.readouterr().out
    assert "LDG.E " in scalar and ".128" not in scalar
    assert gpu_schedule.VECTOR_BYTES == before and not hasattr(gpu_schedule, "ADDED")


def test_missing_tools_are_named_with_where_to_get_them(monkeypatch):
    """Without ptxas on PATH the script says where it comes from; without
    nvdisasm (neither on PATH nor from the dev extra's wheel), likewise."""
    import sys

    sass = script("kernel_sass", monkeypatch)
    monkeypatch.setattr(sass.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="ptxas is not on PATH .*nvidia-cuda-nvcc-cu12"):
        sass.main("rms_norm:float32:1024")
    monkeypatch.setitem(sys.modules, "nvidia", None)  # `import nvidia` raises ImportError
    with pytest.raises(SystemExit, match=r"nvdisasm not found: install the dev extra .*nvidia-cuda-nvdisasm"):
        sass.nvdisasm()
