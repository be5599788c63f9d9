"""fuser-verify through the Python API, and the agreement between the
verifier's messages, their lit cases and the list in dialect/README.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fuser_mlir._mlir import func, ir
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import FuserError, PipelineError
from fuser_mlir.passes import pass_class
from fuser_mlir.passes import verify as verify_module
from fuser_mlir.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[1]
VERIFY_PY = ROOT / "fuser_mlir" / "passes" / "verify.py"
VERIFY_LIT = ROOT / "lit_tests" / "passes" / "verify.mlir"
README = ROOT / "dialect" / "README.md"

#: Messages that parsed text cannot trigger (IRDL rejects the text first);
#: each has a Python-API test below instead of a lit case.
PYTHON_API_ONLY = {"requires attribute '{}'"}

VALID = """
func.func @fusion(%x: tensor<?x4xf32>, %s: f32, %out: tensor<?xf32>) -> (tensor<?xf32>, tensor<?x4xf32>)
    attributes {fuser.num_inputs = 2 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = "fuser.mul"(%e, %s) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %sum = "fuser.sum"(%m) {dims = array<i64: 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
  %r0 = "fuser.store"(%sum, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %r1 = "fuser.store"(%e, %x) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r0, %r1 : tensor<?xf32>, tensor<?x4xf32>
}
"""


def verify_text(text: str, source_name: str | None = None) -> str:
    """Run fuser-verify on ``text``; the printed module afterwards."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module, "fuser-verify", source_name=source_name)
        return str(module)


def verify_error(text: str, source_name: str | None = None) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        verify_text(text, source_name)
    return info.value


# -- the pass through the Python API -----------------------------------------------


def test_valid_fusion_passes_unchanged():
    with make_context(), ir.Location.unknown():
        expected = str(ir.Module.parse(VALID))
    assert verify_text(VALID) == expected


def test_pipeline_error_carries_message_pipeline_and_location():
    text = """func.func @f(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    err = verify_error(text, source_name="bad.mlir")
    message = "'fuser.add' op operand 1 has shape [5], which does not broadcast with dim 0 of size 4"
    assert f"bad.mlir:2:8: error: {message}" in err.diagnostics
    assert err.pipeline == "fuser-verify"
    assert str(err).startswith("pass pipeline failed\npipeline: fuser-verify\n")
    assert message in str(err)
    assert isinstance(err, FuserError)


def test_every_broken_op_is_reported_in_one_run():
    text = """func.func @f(%a: tensor<4xi32>, %b: f32) -> f32 {
  %0 = "fuser.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  %1 = "fuser.lt"(%b, %b) : (f32, f32) -> f32
  return %1 : f32
}"""
    err = verify_error(text, source_name="two.mlir")
    lines = [line for line in err.diagnostics.splitlines() if ": error: " in line]
    assert lines == [
        "two.mlir:2:8: error: 'fuser.exp' op operand 0 has element type i32, but 'exp' needs a floating-point type",
        "two.mlir:3:8: error: 'fuser.lt' op result element type f32 should be i1",
    ]


def test_only_the_second_store_into_a_buffer_is_reported():
    text = """func.func @f(%a: tensor<4xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.store"(%a, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "fuser.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "fuser.store"(%1, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    err = verify_error(text, source_name="s.mlir")
    errors = [line for line in err.diagnostics.splitlines() if ": error: " in line]
    assert errors == [
        "s.mlir:4:8: error: 'fuser.store' op destination %arg1 is already written by an "
        "earlier 'fuser.store'; each buffer holds one output"
    ]


def test_store_into_an_empty_and_a_copy_into_an_argument_are_valid():
    text = """func.func @f(%a: tensor<?x4xf32>, %n: i64, %d: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = "fuser.empty"(%n) : (i64) -> tensor<?x4xf32>
  %0 = "fuser.store"(%a, %e) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "fuser.copy"(%a, %d) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}"""
    assert '"fuser.copy"' in verify_text(text)


def test_missing_attribute_is_reported_for_ir_built_in_python():
    """The parser's IRDL check rejects this as text; IR built with the
    bindings skips that check, so the verifier must catch it."""
    with make_context() as ctx, ir.Location.unknown():
        f32 = ir.F32Type.get()
        src = ir.RankedTensorType.get([4, 8], f32)
        dst = ir.RankedTensorType.get([4], f32)
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ([src], [dst]))
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                op = ir.Operation.create(
                    "fuser.sum", results=[dst], operands=[block.arguments[0]],
                    attributes={"keepdim": ir.BoolAttr.get(False, context=ctx)},
                )
                func.ReturnOp([op.result])
        with pytest.raises(PipelineError) as info:
            run_pipeline(module, "fuser-verify")
    assert "error: 'fuser.sum' op requires attribute 'dims'" in info.value.diagnostics


def test_registry_resolves_the_verify_pass():
    cls = pass_class("fuser-verify")
    assert cls is verify_module.VerifyPass
    assert cls.option_names() == []


# -- verify.py, verify.mlir and the README agree ------------------------------------


def _template(node: ast.expr) -> str | None:
    """The message text of a str/f-string node, with ``{}`` for each field."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append("{}")
        return "".join(parts)
    return None


def verifier_templates() -> set[str]:
    """Every message fuser-verify can emit, read from verify.py's source:
    the argument of each ``_Invalid(...)`` and of each ``errors.append((op, msg))``
    (a message must be a string literal or an f-string, so it can be listed)."""
    templates = set()
    for node in ast.walk(ast.parse(VERIFY_PY.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = node.func
        if isinstance(callee, ast.Name) and callee.id == "_Invalid":
            message = _template(node.args[0])
        elif isinstance(callee, ast.Attribute) and callee.attr == "append" and isinstance(node.args[0], ast.Tuple):
            text = node.args[0].elts[1]
            if isinstance(text, ast.Call) and getattr(text.func, "id", None) == "str":
                continue  # errors.append((op, str(err))) passes an _Invalid on
            message = _template(text)
        else:
            continue
        assert message is not None, f"verify.py line {node.lineno}: message is not a literal"
        templates.add(message)
    return templates


def template_regex(template: str) -> re.Pattern:
    return re.compile(".+?".join(re.escape(part) for part in template.split("{}")))


def lit_messages() -> list[str]:
    """The message part of each ``CHECK-LABEL: error: 'fuser.x' op ...`` line."""
    pattern = re.compile(r"^// CHECK-LABEL: error: '[\w.]+' op (.*)$")
    return [m.group(1) for line in VERIFY_LIT.read_text().splitlines() if (m := pattern.match(line))]


def readme_messages() -> list[str]:
    """The first backticked text of each bullet in README's "Verifier messages"."""
    section = README.read_text().split("## Verifier messages", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^- `([^`]+)`", section, re.MULTILINE)]


def test_templates_are_found():
    templates = verifier_templates()
    assert len(templates) >= 40
    assert "must be inside a func.func" in templates
    assert "operand {} has rank {}, but the result has rank {}" in templates


def test_every_verifier_message_has_a_lit_case():
    messages = lit_messages()
    missing = [
        t for t in sorted(verifier_templates() - PYTHON_API_ONLY)
        if not any(template_regex(t).fullmatch(m) for m in messages)
    ]
    assert not missing, f"messages of verify.py without a case in {VERIFY_LIT.name}: {missing}"


def test_every_lit_case_is_a_verifier_message():
    regexes = [template_regex(t) for t in verifier_templates()]
    unknown = [m for m in lit_messages() if not any(r.fullmatch(m) for r in regexes)]
    assert not unknown, f"{VERIFY_LIT.name} checks messages verify.py does not emit: {unknown}"


def test_readme_lists_exactly_the_verifier_messages():
    listed = readme_messages()
    templates = verifier_templates()
    missing = [t for t in sorted(templates) if not any(template_regex(t).fullmatch(m) for m in listed)]
    assert not missing, f"dialect/README.md does not list: {missing}"
    regexes = [template_regex(t) for t in templates]
    stale = [m for m in listed if not any(r.fullmatch(m) for r in regexes)]
    assert not stale, f"dialect/README.md lists messages verify.py does not emit: {stale}"
    assert len(listed) == len(templates)


def test_python_api_only_messages_exist():
    assert PYTHON_API_ONLY <= verifier_templates()
