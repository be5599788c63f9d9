"""The fuser-mlir command: demo, show-segments, and the quick-start example."""

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np

from fuser_mlir.tools.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_the_example_and_prints_its_check_and_ir(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "-> OK" in out
    assert '"fuser.max"' in out and "func.func @demo_softmax" in out


def test_show_segments_writes_dot_for_each_definition(tmp_path, capsys):
    script = tmp_path / "two.py"
    script.write_text(
        "from fuser_mlir import FusionDefinition, DataType\n"
        "with FusionDefinition(name='softmax') as sm:\n"
        "    x = sm.define_tensor(shape=[-1, -1])\n"
        "    e = sm.ops.exp(x - sm.ops.max(x, dims=[1], keepdim=True))\n"
        "    sm.add_output(e / sm.ops.sum(e, dims=[1], keepdim=True))\n"
    )
    assert main(["show-segments", str(script)]) == 0
    out = capsys.readouterr().out
    assert "sm: 3 segment(s)" in out
    dot = (tmp_path / "two.sm.dot").read_text()
    assert dot.startswith('digraph "softmax"')
    # every segment is a box, and the input buffer feeds the first segment
    assert dot.count("shape=box") == 3
    assert "b0 -> s0;" in dot


def test_show_segments_reports_a_missing_file_and_a_script_without_fusions(tmp_path, capsys):
    assert main(["show-segments", str(tmp_path / "missing.py")]) == 2
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["show-segments", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "defines no FusionDefinition" in err


def test_quickstart_example_runs():
    namespace = runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    assert namespace["out"].shape == (128, 512)
    assert float(np.abs(namespace["out"] - namespace["ref"]).max()) < 1e-4


def test_console_script_module_entry_point():
    result = subprocess.run([sys.executable, "-m", "fuser_mlir.tools.cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("fuser-mlir ")


def test_concat_example_writes_both_halves():
    namespace = runpy.run_path(str(ROOT / "examples" / "concat.py"), run_name="__main__")
    out, ref = namespace["out"], namespace["ref"]
    assert float(np.abs(out - ref).max()) < 1e-5
