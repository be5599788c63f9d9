"""scripts/gpu_block_times.py: the PTX probe of when each block starts and
ends (its instrumentation and the reading of its table need no GPU)."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from bench_scripts import load_script as script

PTX = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry k0(
\t.param .u64 k0_param_0
)
{
\t.reg .b32 \t%r<2>;
\tmov.u32 \t%r1, %tid.x;
\tsetp.eq.u32 \t%p1, %r1, 0;
\t@%p1 bra \t$L__BB0_2;
\tret;
$L__BB0_2:
\tret;

}
.visible .entry k1()
{
\tret;

}
"""


def table(records: list[tuple[int, int, int, int]], size: int = 8) -> bytes:
    """A probe table of ``size`` blocks holding (block, start ns, end ns, SM) records."""
    rec = np.zeros((size, 4), dtype=np.uint64)
    for block, start, end, sm in records:
        rec[block, 0], rec[block, 1] = start, end
        rec[block, 2] = np.array([sm, 1], dtype=np.uint32).view(np.uint64)[0]
    return rec.tobytes()


def test_each_kernel_records_into_its_own_table_at_its_start_and_each_return(monkeypatch):
    probe = script("gpu_block_times", monkeypatch)
    text, tables = probe.instrument(PTX)
    assert tables == {"k0": "fuser_block_times_0", "k1": "fuser_block_times_1"}
    for name in tables.values():
        assert f".global .align 8 .b8 {name}[{probe.PROBE_BLOCKS * probe.RECORD_BYTES}];" in text
    k0 = text[text.index(".entry k0") : text.index(".entry k1")]
    assert k0.count("mov.u32 %fs, %smid;") == 1 and k0.count("st.global.u64 [%fa+8], %f1;") == 2  # two returns
    assert k0.index("%smid") < k0.index("mov.u32 \t%r1, %tid.x;")  # recorded before the body's first instruction
    for ret in [m.start() for m in re.finditer(r"\tret;", k0)]:
        assert "st.global.u32 [%fa+20], 1;" in k0[max(0, ret - 700) : ret]
    assert text.count("fuser_block_times_1;") == 2  # k1: its start and its one return
    labels = re.findall(r"^(FUSER_PROBE_\d+):$", text, re.M)
    assert len(labels) == len(set(labels)) == 5 and text.count("FUSER_PROBE_") == 3 * 5  # each skipped to by two branches


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit or the cuda extra) is not on PATH")
def test_ptxas_takes_a_bench_fusions_instrumented_ptx_without_spilling_for_it(monkeypatch, tmp_path):
    """The bench's layer norm float32: none of its kernels (the persistent
    one of 32K columns included) spills, probe and all."""
    probe = script("gpu_block_times", monkeypatch)
    import run as bench
    from fuser_mlir.compiler import compile_fusion

    case = {c.name: c for c in bench.CASES}["layer_norm"]
    fd = bench.fusion_for(case, "float32")
    layouts = {"input": [(True, 16)] * 3, "given": {0: (True, 16)}}
    ptx = compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts).program.ptx
    text, tables = probe.instrument(ptx)
    assert len(tables) == ptx.count(".visible .entry")
    (tmp_path / "k.ptx").write_text(text)
    log = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert log.returncode == 0, log.stderr
    assert "0 bytes spill stores" in log.stderr and "bytes spill stores" in log.stderr
    assert not re.search(r"[1-9]\d* bytes spill stores", log.stderr), log.stderr


def test_a_persistent_grids_blocks_are_grouped_by_the_rows_they_own(monkeypatch):
    """4 blocks on 4 SMs over 10 rows: blocks 0 and 1 own 3 rows, 2 and 3 own 2;
    only ended blocks are read."""
    probe = script("gpu_block_times", monkeypatch)
    start, end, sm, blocks = probe.records(table([(0, 1000, 31000, 5), (1, 1100, 28000, 9), (2, 1000, 21000, 1), (3, 1200, 19000, 2)]))
    assert blocks.tolist() == [0, 1, 2, 3] and sm.tolist() == [5, 9, 1, 2] and end[0] - start[0] == 30000
    lines = probe.summary(start, end, sm, blocks, rows=10)
    assert lines[0].startswith("  4 blocks on 4 SMs, span 30.0 us; starts within 0.20 us")
    assert lines[1].startswith("  2 blocks of 2 rows: end 18.0..20.0 us") and lines[2].startswith("  2 blocks of 3 rows: end 27.0..30.0 us")
    assert "(0, 5, 30.0)" in lines[3]


def test_a_grid_of_more_blocks_than_sms_shows_the_blocks_running_over_time(monkeypatch):
    probe = script("gpu_block_times", monkeypatch)
    start, end, sm, blocks = probe.records(table([(0, 0, 10000, 0), (1, 0, 10000, 1), (2, 10000, 20000, 0), (3, 10000, 20000, 1)]))
    lines = probe.summary(start, end, sm, blocks, rows=4)
    assert lines[0].startswith("  4 blocks on 2 SMs, span 20.0 us")
    running = eval(lines[1].split(": ", 1)[1])
    assert len(running) == 24 and max(running) == 2 and running[0] == 2 and running[-1] == 0


def test_the_command_line(monkeypatch):
    probe = script("gpu_block_times", monkeypatch)
    assert probe.parse_args(["layer_norm:float32:32768"]) == ("layer_norm:float32:32768", 256, "")
    assert probe.parse_args(["softmax:bfloat16:8192", "1024", "--setting", "CLAMPED_LOADS = False"]) == ("softmax:bfloat16:8192", 1024, "CLAMPED_LOADS = False")
    with pytest.raises(SystemExit, match="--setting needs the code"):
        probe.parse_args(["layer_norm:float32:32768", "--setting"])
    with pytest.raises(SystemExit, match="CASE:DTYPE:HIDDEN"):
        probe.parse_args(["layer_norm:float32:32768", "lots"])
