"""fuser-opt: exit statuses and messages of the driver, mostly in-process
through ``main(argv)``; a few runs in a subprocess check the real entry point."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from fuser_mlir import __version__
from fuser_mlir.passes import REGISTRY
from fuser_mlir.tools.fuser_opt import main, silent_parse_failure, split_input

ROOT = Path(__file__).resolve().parents[1]

VALID = """func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
"""
INVALID = """func.func @g(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
BROADCAST_ERROR = "'fuser.add' op operand 1 has shape [5], which does not broadcast with dim 0 of size 4"


def fuser_opt(capsys, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    """Run the driver in-process; (exit status, stdout, stderr)."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def valid(tmp_path):
    path = tmp_path / "valid.mlir"
    path.write_text(VALID)
    return path


@pytest.fixture
def invalid(tmp_path):
    path = tmp_path / "invalid.mlir"
    path.write_text(INVALID)
    return path


# -- success paths --------------------------------------------------------------------


def test_prints_the_module(capsys, valid):
    code, out, err = fuser_opt(capsys, str(valid), "-p", "fuser-verify,canonicalize,cse")
    assert code == 0, err
    assert '"fuser.exp"(%arg0)' in out
    assert out.startswith("module {")
    assert err == ""


def test_output_file_is_written(capsys, valid, tmp_path):
    target = tmp_path / "out.mlir"
    code, out, err = fuser_opt(capsys, str(valid), "-o", str(target), "-p", "fuser-verify")
    assert code == 0, err
    assert out == ""
    assert '"fuser.exp"(%arg0)' in target.read_text()


def test_reads_stdin(capsys, monkeypatch):
    code, out, _ = fuser_opt(capsys, "-p", "fuser-verify", stdin=VALID, monkeypatch=monkeypatch)
    assert code == 0
    assert '"fuser.exp"' in out


def test_generic_form(capsys, valid):
    code, out, _ = fuser_opt(capsys, str(valid), "--mlir-print-op-generic")
    assert code == 0
    assert '"func.func"() <{function_type' in out


def test_list_passes_gives_every_pass_one_line_with_its_summary(capsys):
    code, out, _ = fuser_opt(capsys, "--list-passes")
    assert code == 0
    lines = out.splitlines()
    for name, entry in REGISTRY.items():
        matching = [line for line in lines if line.split()[:1] == [name]]
        assert len(matching) == 1, f"{name} is not listed once:\n{out}"
        assert matching[0].split(None, 1)[1] == entry.summary


def test_show_dialects_lists_fuser(capsys):
    code, out, _ = fuser_opt(capsys, "--show-dialects")
    assert code == 0
    assert {"fuser", "builtin", "func"} <= set(out.split())


def test_version(capsys):
    code, out, _ = fuser_opt(capsys, "--version")
    assert code == 0
    assert out.startswith(f"fuser-opt {__version__} (MLIR bindings ")


# -- usage errors: exit 2 -----------------------------------------------------------


def test_missing_input_file(capsys, tmp_path):
    missing = tmp_path / "nope.mlir"
    code, out, err = fuser_opt(capsys, str(missing))
    assert code == 2
    assert out == ""
    assert err == f"fuser-opt: error: cannot read input file '{missing}': No such file or directory\n"


def test_unwritable_output_file(capsys, valid, tmp_path):
    target = tmp_path / "no-such-dir" / "out.mlir"
    code, _, err = fuser_opt(capsys, str(valid), "-o", str(target))
    assert code == 2
    assert f"fuser-opt: error: cannot write output file '{target}': No such file or directory" in err


def test_input_that_is_not_utf8_is_a_usage_error(capsys, tmp_path):
    # It was a UnicodeDecodeError traceback (a file) or a TypeError from the parser (stdin).
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\nmodule {}\n")
    code, out, err = fuser_opt(capsys, str(path))
    assert (code, out) == (2, "")
    assert err == f"fuser-opt: error: cannot read input file '{path}': it is not UTF-8 text (invalid continuation byte at byte 6)\n"
    child = subprocess.run(
        [sys.executable, "-m", "fuser_mlir.tools.fuser_opt", "-p", "fuser-verify"], input=path.read_bytes(), capture_output=True, cwd=ROOT, timeout=60
    )
    assert child.returncode == 2 and b"cannot read input file <stdin>: it is not UTF-8 text" in child.stderr


def test_a_failed_run_leaves_the_output_file_as_it_was(capsys, invalid, valid, tmp_path):
    # -o truncated the file before anything ran, so a failure left it empty.
    target = tmp_path / "out.mlir"
    target.write_text("OLD\n")
    code, out, err = fuser_opt(capsys, str(invalid), "-o", str(target), "-p", "fuser-verify")
    assert code == 1 and BROADCAST_ERROR in err
    assert target.read_text() == "OLD\n"
    code, _, err = fuser_opt(capsys, str(valid), "-o", str(target), "-p", "fuser-verify")
    assert code == 0, err
    assert '"fuser.exp"(%arg0)' in target.read_text()


def test_an_output_file_that_is_a_directory(capsys, valid, tmp_path):
    code, _, err = fuser_opt(capsys, str(valid), "-o", str(tmp_path))
    assert code == 2
    assert err == f"fuser-opt: error: cannot write output file '{tmp_path}': Is a directory\n"


def test_a_named_pipeline_refuses_options(capsys, valid):
    # They were dropped: fuser-gpu-pipeline{chip=sm_80} compiled for sm_90.
    code, out, err = fuser_opt(capsys, str(valid), "-p", "fuser-gpu-pipeline{chip=sm_80}")
    assert (code, out) == (2, "")
    assert "pipeline 'fuser-gpu-pipeline' takes no options (got 'fuser-gpu-pipeline{chip=sm_80}')" in err
    assert "fuser-opt --list-passes prints them" in err


def test_unknown_fuser_pass_suggests_the_close_match(capsys, valid):
    code, out, err = fuser_opt(capsys, str(valid), "-p", "fuser-verfy")
    assert code == 2
    assert out == ""
    assert err.startswith("fuser-opt: error: unknown pass or pipeline 'fuser-verfy'; did you mean 'fuser-verify'?")
    assert "fuser-opt --list-passes" in err


def test_unknown_upstream_pass_suggests_the_close_match(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "fuser-verify,func.func(csee)")
    assert code == 2
    assert "unknown pass or pipeline 'csee'; did you mean 'cse'?" in err


def test_unknown_pass_without_close_match_has_no_suggestion(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "frobnicate")
    assert code == 2
    assert "unknown pass or pipeline 'frobnicate' (fuser-opt --list-passes" in err
    assert "did you mean" not in err


def test_bad_fuser_pass_option(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "fuser-verify{bogus=1}")
    assert code == 2
    assert err == "fuser-opt: error: pass 'fuser-verify' has no option 'bogus' (options: none)\n"


def test_unclosed_option_brace(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "fuser-verify{bogus=1")
    assert code == 2
    assert "pipeline element 'fuser-verify{bogus=1' has an unclosed '{'" in err


def test_bad_upstream_pass_option(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "canonicalize{bogus=1}")
    assert code == 2
    assert "fuser-opt: error: invalid pipeline element 'canonicalize{bogus=1}'" in err
    assert "no such option bogus" in err


def test_fuser_pass_nested_under_an_op_is_a_usage_error(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "-p", "func.func(fuser-verify)")
    assert code == 2
    assert (
        "'fuser-verify' is a fuser-mlir pass, which runs on the whole module and cannot be nested in "
        "'func.func(...)'; list it at the top level of the pipeline"
    ) in err


def test_unknown_flag(capsys, valid):
    code, _, err = fuser_opt(capsys, str(valid), "--no-such-flag")
    assert code == 2
    assert "unrecognized arguments: --no-such-flag" in err


# -- failures: exit 1 ------------------------------------------------------------------


def test_failed_pipeline_prints_diagnostics_on_stderr(capsys, invalid):
    code, out, err = fuser_opt(capsys, str(invalid), "-p", "fuser-verify")
    assert code == 1
    assert out == ""
    assert err == f"{invalid}:2:8: error: {BROADCAST_ERROR}\n"


def test_parse_error(capsys, tmp_path):
    path = tmp_path / "broken.mlir"
    path.write_text('func.func @f() {\n  %0 = "fuser.frobnicate"() : () -> f32\n  return\n}\n')
    code, out, err = fuser_opt(capsys, str(path))
    assert code == 1
    assert out == ""
    assert err.startswith(f"{path}:2:8: error: unregistered operation 'fuser.frobnicate'")


def test_a_fuser_op_in_custom_form_is_named_with_the_form_to_write(capsys, tmp_path):
    """MLIR fails such a parse without a word (the IRDL dialect has no custom
    assembly): the driver names the op and its line, in each chunk."""
    path = tmp_path / "custom.mlir"
    custom = VALID.replace('"fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>', "fuser.exp %x : tensor<?x4xf32>")
    path.write_text(VALID + "// -----\n" + custom)
    code, out, err = fuser_opt(capsys, str(path), "--split-input-file")
    assert code == 1
    assert out.count('"fuser.exp"') == 1  # the first chunk still prints
    assert err == (
        f"{path}:7:8: error: 'fuser.exp' is written in custom form, which fuser ops do not have (the dialect is defined in IRDL); "
        'write it in generic form: "fuser.exp"(%operands) : (operand types) -> result type\n'
    )


def test_a_silent_parse_failure_without_a_custom_fuser_op_still_says_it_failed():
    assert silent_parse_failure("func.func @f() {\n  // fuser.exp %x\n}\n", "in.mlir") == (
        "in.mlir: error: the input does not parse, and MLIR gave no reason"
    )


def test_verify_diagnostics_prints_to_stdout_and_exits_0(capsys, invalid):
    code, out, err = fuser_opt(capsys, str(invalid), "-p", "fuser-verify", "--verify-diagnostics")
    assert code == 0
    assert out == f"{invalid}:2:8: error: {BROADCAST_ERROR}\n"
    assert err == ""


def test_split_input_file_keeps_line_numbers_and_runs_every_chunk(capsys, tmp_path):
    path = tmp_path / "split.mlir"
    path.write_text(INVALID + "// -----\n" + VALID + "// -----\n" + INVALID)
    code, out, err = fuser_opt(capsys, str(path), "-p", "fuser-verify", "--split-input-file")
    assert code == 1
    assert '"fuser.exp"' in out
    assert "// -----" not in out  # only one chunk printed
    errors = [line.split(": error:")[0] for line in err.splitlines()]
    assert errors == [f"{path}:2:8", f"{path}:12:8"]


def test_split_input_pads_each_chunk_to_its_line():
    chunks = split_input("a\n// -----\nb\nc\n// -----\nd\n")
    assert chunks == ["a\n", "\n\nb\nc\n", "\n" * 5 + "d\n"]


# -- the real entry point -------------------------------------------------------------


def run_module(*argv: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fuser_mlir.tools.fuser_opt", *argv],
        input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=60,
    )


def test_module_entry_point_lists_passes_one_line_each():
    result = run_module("--list-passes")
    assert result.returncode == 0, result.stderr
    for name, entry in REGISTRY.items():
        assert f"{name} " in result.stdout
        line = next(line for line in result.stdout.splitlines() if line.split()[:1] == [name])
        assert line.split(None, 1)[1] == entry.summary


def test_module_entry_point_exit_statuses():
    assert run_module("-p", "fuser-verify", stdin=VALID).returncode == 0
    failed = run_module("-p", "fuser-verify", stdin=INVALID)
    assert failed.returncode == 1
    assert f"<stdin>:2:8: error: {BROADCAST_ERROR}" in failed.stderr
    unknown = run_module("-p", "fuser-verfy", stdin=VALID)
    assert unknown.returncode == 2
    assert "did you mean 'fuser-verify'?" in unknown.stderr


def test_pipeline_is_checked_before_the_input_is_read(capsys, tmp_path):
    code, _, err = fuser_opt(capsys, str(tmp_path / "nope.mlir"), "-p", "fuser-verfy")
    assert code == 2
    assert "unknown pass or pipeline 'fuser-verfy'" in err
    assert "cannot read input file" not in err


WHOLE_FUSION = """func.func @fusion(%x: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?xf32>) -> i64
  %2 = "fuser.empty"(%1) : (i64) -> tensor<?xf32>
  %3 = "fuser.store"(%0, %2) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %3 : tensor<?xf32>
}
"""


@pytest.mark.parametrize("pipeline", ["fuser-cpu-pipeline", "fuser-gpu-pipeline"])
def test_a_lowering_pipeline_given_a_whole_fusion_names_the_passes_to_run_first(capsys, tmp_path, pipeline):
    source = tmp_path / "whole.mlir"
    source.write_text(WHOLE_FUSION)  # as fd.fusion_ir() prints a fusion with a new output
    code, out, err = fuser_opt(capsys, str(source), "-p", pipeline)
    assert code == 1 and out == ""
    step = pipeline.replace("pipeline", "").replace("fuser-", "fuser-lower-to-").rstrip("-")
    assert f"error: {step}: @fusion stores into buffers it makes (fuser.empty): it is a whole fusion" in err
    assert "run -p fuser-segment,fuser-outline-segments first" in err


UNREAD_I8_ARGUMENT = """func.func @fusion(%a: tensor<f32>, %b: tensor<i8>, %out: tensor<f32>) -> tensor<f32> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.neg"(%a) : (tensor<f32>) -> tensor<f32>
  %1 = "fuser.store"(%0, %out) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
"""


@pytest.mark.parametrize("pipeline", ["fuser-cpu-pipeline", "fuser-gpu-pipeline"])
def test_a_lowering_pipeline_refuses_an_argument_of_another_element_type_that_no_op_reads(capsys, tmp_path, pipeline):
    # found by sweep64/opt_fuzz.py (seed 684): the GPU lowering's argument kinds raised a KeyError on i8
    source = tmp_path / "unread.mlir"
    source.write_text(UNREAD_I8_ARGUMENT)
    code, out, err = fuser_opt(capsys, str(source), "-p", pipeline)
    assert code == 1 and out == ""
    assert err == f"{source}:1:1: error: 'func.func' op argument 1 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1\n"
