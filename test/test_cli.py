"""The fuser-mlir command: demo, show-segments, and the quick-start example."""

import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuser_mlir.errors import InputError
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
        "    e = sm.ops.exp(x - sm.ops.max(x, dims=[0], keepdim=True))\n"
        "    sm.add_output(e / sm.ops.sum(e, dims=[0], keepdim=True))\n"
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
    outputless = tmp_path / "outputless.py"
    outputless.write_text("from fuser_mlir import FusionDefinition\nwith FusionDefinition('none') as fd:\n    fd.define_tensor(shape=[-1])\n")
    assert main(["show-segments", str(outputless)]) == 2  # an error line, not a traceback
    assert capsys.readouterr().err == "fuser-mlir: error: fd: fusion 'none' has no outputs, so it computes nothing; add one with fd.add_output(value) in its `with` block\n"


def test_quickstart_example_runs():
    namespace = runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    assert namespace["out"].shape == (128, 512)
    assert float(np.abs(namespace["out"] - namespace["ref"]).max()) < 1e-4


def test_console_script_module_entry_point():
    result = subprocess.run([sys.executable, "-m", "fuser_mlir.tools.cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("fuser-mlir ")


@pytest.mark.parametrize("command", [["fuser_mlir.tools.cli", "demo"], ["fuser_mlir.tools.fuser_opt", "--list-passes"]], ids=["fuser-mlir", "fuser-opt"])
def test_a_reader_that_goes_away_ends_the_command_as_mlir_opt_does(command):
    # `fuser-opt FILE | head` printed a BrokenPipeError traceback. Here the pipe's read end is closed before the
    # command writes, so its first write fails.
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as stdout:
        child = subprocess.run([sys.executable, "-m", *command], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)
    assert (child.returncode, child.stderr) == (128 + signal.SIGPIPE, "")


def test_concat_example_writes_both_halves():
    namespace = runpy.run_path(str(ROOT / "examples" / "concat.py"), run_name="__main__")
    out, ref = namespace["out"], namespace["ref"]
    assert float(np.abs(out - ref).max()) < 1e-5


SOFTMAX_SCRIPT = """
import numpy as np
from fuser_mlir import DataType, FusionDefinition

with FusionDefinition(name="softmax") as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(x) * 2.0, x)
    e = fd.ops.exp(x - fd.ops.max(x, dims=[0], keepdim=True))
    fd.add_output(e / fd.ops.sum(e, dims=[0], keepdim=True))

def example_inputs():
    return [np.ones((4, 8), np.float32)]

example_outputs = [np.empty((4, 8), np.float32)]
"""


def test_compile_exports_the_script_fusion_and_inspect_prints_it(tmp_path, capsys):
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX_SCRIPT)
    out_path = tmp_path / "softmax.fsn"
    assert main(["compile", str(script), "--export", str(out_path)]) == 0
    assert f"fd: 4 segment(s), cpu; artifact written to {out_path}" in capsys.readouterr().out
    import fuser_mlir

    loaded = fuser_mlir.load(out_path)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    x0 = x.astype(np.float64)
    given = np.full((3, 5), np.nan, np.float32)
    (result,) = loaded.run([x], outputs=[given])
    e = np.exp(x0 - x0.max(0, keepdims=True))
    np.testing.assert_allclose(given, e / e.sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(x, np.exp(x0) * 2.0, rtol=1e-6)  # the in-place update
    assert main(["inspect", str(out_path)]) == 0
    text = capsys.readouterr().out
    assert "fusion 'softmax' (format 4); all " in text and "match their sha256" in text
    assert "in0: tensor f32[?, ?] contiguity [F, F] stride order [1, 0]" in text
    # what a call must match: the layout of the example it was compiled for (the definition allows any)
    assert "\n      runs arrays of stride order [1, 0], contiguity [T, T], no size-1 dim, 16-byte aligned\n" in text
    assert "out0: tensor f32[?, ?] (written into in0)" in text and "out1: tensor f32[?, ?] (visible #0)" in text
    assert "alias contract: out0 -> in0 (hidden)" in text
    assert "preallocated outputs: caller gives #0; the fusion allocates none" in text
    assert "segments: 4" in text and "steps:" in text and "kernels/cpu.so:" in text
    assert "CPU threads (kernel arguments' split dims; '-' passed whole):\n  softmax_seg0: cut into blocks along (1, 1)" in text


def test_compile_runs_the_script_as_python_would_with_its_directory_on_the_path(tmp_path, capsys):
    # `from fus import fd` in the script failed with ModuleNotFoundError: python SCRIPT finds fus.py next to it.
    (tmp_path / "fus.py").write_text(SOFTMAX_SCRIPT)
    script = tmp_path / "main_script.py"
    script.write_text("from fus import fd, example_inputs, example_outputs\n")
    before = list(sys.path)
    out_path = tmp_path / "out.fsn"
    assert main(["compile", str(script), "--export", str(out_path)]) == 0, capsys.readouterr().err
    assert sys.path == before
    import fuser_mlir

    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    x0 = x.astype(np.float64)
    (result,) = fuser_mlir.load(out_path).run([x], outputs=[np.full((3, 5), np.nan, np.float32)])
    e = np.exp(x0 - x0.max(0, keepdims=True))
    np.testing.assert_allclose(result, e / e.sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(x, np.exp(x0) * 2.0, rtol=1e-6)


def test_an_export_to_a_place_that_cannot_be_written_is_a_one_line_error(tmp_path, capsys):
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX_SCRIPT)
    (tmp_path / "a-file").write_text("")
    assert main(["compile", str(script), "--export", str(tmp_path / "a-file" / "x.fsn")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fuser-mlir: error: cannot write the artifact {tmp_path / 'a-file' / 'x.fsn'}: ") and "Traceback" not in err


def test_compile_for_a_device_the_examples_are_not_on_says_what_to_give(tmp_path, capsys):
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX_SCRIPT)
    assert main(["compile", str(script), "--export", str(tmp_path / "x.fsn"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuser-mlir: error: the arguments live on cpu") and err.endswith("(--device cuda: give example_inputs on that device)\n")
    assert not (tmp_path / "x.fsn").exists()


def test_inspect_shows_the_layout_an_artifact_of_size_1_examples_runs(tmp_path, capsys):
    # It printed the definition's stride order [1, 0] for an artifact that accepts [0, 1] only.
    script = tmp_path / "column.py"
    script.write_text(
        "import numpy as np\nfrom fuser_mlir import DataType, FusionDefinition\n"
        "with FusionDefinition() as fd:\n    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)\n    fd.add_output(fd.ops.exp(x))\n"
        "example_inputs = [np.ones((8, 1), np.float32)]\n"
    )
    out_path = tmp_path / "column.fsn"
    assert main(["compile", str(script), "--export", str(out_path)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out_path)]) == 0
    text = capsys.readouterr().out
    assert "  in0: tensor f32[?, ?] contiguity [F, F] stride order [1, 0]\n      runs arrays of stride order [0, 1], contiguity [T, -], size-1 dims [1], " in text
    import fuser_mlir

    # the size-1 dim is the cause, named first (it said "stride order (1, 0), compiled for (0, 1)")
    with pytest.raises(InputError, match=r"input 0 has size 1 in dims \[\], the artifact was compiled for size 1 in dims \[1\] "
                                         r"\(a size-1 dim is compiled as a broadcast dim"):
        fuser_mlir.load(out_path).run([np.ones((3, 4), np.float32)])


def test_compile_and_inspect_report_errors(tmp_path, capsys):
    script = tmp_path / "no_examples.py"
    script.write_text(SOFTMAX_SCRIPT.split("def example_inputs")[0])
    assert main(["compile", str(script), "--export", str(tmp_path / "a.fsn")]) == 2
    assert "must define example_inputs" in capsys.readouterr().err
    two = tmp_path / "two.py"
    two.write_text(SOFTMAX_SCRIPT + "\nfd2 = fd\n")
    assert main(["compile", str(two), "--export", str(tmp_path / "a.fsn")]) == 2
    assert "defines several fusions (fd, fd2); pick one with --fusion NAME" in capsys.readouterr().err
    assert main(["compile", str(two), "--fusion", "fd2", "--export", str(tmp_path / "a.fsn")]) == 0
    by_name = tmp_path / "by_name.py"
    by_name.write_text(SOFTMAX_SCRIPT + "\nfd2 = fd\nexample_inputs = {'fd': example_inputs}\n")
    assert main(["compile", str(by_name), "--fusion", "fd2", "--export", str(tmp_path / "b.fsn")]) == 2
    assert "example_inputs is a dict by the fusion's variable name, but has no entry for 'fd2' (it has 'fd'); add one" in capsys.readouterr().err
    assert not (tmp_path / "b.fsn").exists()
    assert main(["compile", str(by_name), "--fusion", "fd", "--export", str(tmp_path / "b.fsn")]) == 0
    bad = tmp_path / "bad.fsn"
    bad.write_bytes(b"not a zip")
    assert main(["inspect", str(bad)]) == 2
    assert "zip check failed" in capsys.readouterr().err


@pytest.mark.parametrize("reseal", [False, True])
def test_inspect_reports_an_edited_or_malformed_manifest_in_one_line(tmp_path, capsys, reseal):
    import json

    from fuser_mlir.runtime.artifact import DIGEST, manifest_digest

    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX_SCRIPT)
    assert main(["compile", str(script), "--export", str(tmp_path / "a")]) == 0
    path = tmp_path / "a" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["plan"]["buffers"] = "none"
    if reseal:  # a digest that vouches for it: the checks of the fields still refuse it
        manifest[DIGEST] = manifest_digest(manifest)
    path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["inspect", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuser-mlir: error: manifest check failed") and err.count("\n") == 1
    assert ("plan.buffers" in err) if reseal else ("was edited or damaged after export" in err)


def test_cache_stats_and_clear(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX_SCRIPT)
    namespace = runpy.run_path(str(script))
    namespace["fd"].execute(namespace["example_inputs"]())
    assert main(["cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert f"directory: {tmp_path / 'cache'}" in out and "state: on" in out and "entries: 1" in out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert main(["cache", "stats"]) == 0
    assert "entries: 0" in capsys.readouterr().out


@pytest.mark.parametrize("action", ["stats", "clear"])
def test_cache_commands_on_a_file_say_so(tmp_path, capsys, monkeypatch, action):
    blocker = tmp_path / "file"
    blocker.write_text("kept")
    monkeypatch.setenv("FUSER_CACHE_DIR", str(blocker))
    assert main(["cache", action]) == 2
    assert f"the cache cannot be used: {blocker} is a file, not a directory" in capsys.readouterr().err
    assert blocker.read_text() == "kept"
