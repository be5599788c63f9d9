"""The pass registry agrees with the code and the tests, for every pass.

For each entry of ``fuser_mlir.passes.REGISTRY`` (so passes added later are
covered without touching this file): registry key == pass class ``NAME`` ==
module ``fuser_mlir/passes/<name without fuser-, - to _>.py`` == lit file
``lit_tests/passes/<name without fuser->.mlir``; registry summary == first
line of the module docstring == class ``SUMMARY``; options are snake_case
fields that the command line spells in kebab-case.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from fuser_mlir._mlir import PassManager
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import UnknownPassError
from fuser_mlir.passes import REGISTRY, PassEntry, pass_class
from fuser_mlir.passes.base import FuserPass
from fuser_mlir.pipeline import PIPELINES, UPSTREAM_SUGGESTIONS, build_pass_manager

ROOT = Path(__file__).resolve().parents[1]
PASSES_DIR = ROOT / "fuser_mlir" / "passes"
LIT_PASSES_DIR = ROOT / "lit_tests" / "passes"
#: Modules of fuser_mlir/passes/ that are not passes.
NOT_PASS_MODULES = {"__init__", "base"}

PASS_NAME = re.compile(r"fuser-[a-z0-9]+(-[a-z0-9]+)*")
OPTION_FIELD = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")

names = pytest.mark.parametrize("name", sorted(REGISTRY))


def stem(name: str) -> str:
    return name.removeprefix("fuser-")


def module_path(name: str) -> Path:
    return PASSES_DIR / (stem(name).replace("-", "_") + ".py")


def lit_path(name: str) -> Path:
    return LIT_PASSES_DIR / (stem(name) + ".mlir")


def test_registry_is_not_empty():
    assert "fuser-verify" in REGISTRY


@names
def test_key_is_entry_name_and_follows_the_naming_rule(name):
    assert REGISTRY[name].name == name
    assert PASS_NAME.fullmatch(name), f"'{name}' is not fuser-<verb>[-<object>] in lower-case kebab-case"


@names
def test_module_file_exists(name):
    assert REGISTRY[name].module == "fuser_mlir.passes." + module_path(name).stem
    assert module_path(name).is_file(), f"pass '{name}' needs its module at {module_path(name).relative_to(ROOT)}"


@names
def test_class_name_matches(name):
    cls = pass_class(name)
    assert issubclass(cls, FuserPass)
    assert cls.NAME == name
    assert cls.__module__ == REGISTRY[name].module


@names
def test_lit_file_exists_and_runs_the_pass(name):
    path = lit_path(name)
    assert path.is_file(), f"pass '{name}' needs a lit test at {path.relative_to(ROOT)}"
    run_lines = [line for line in path.read_text().splitlines() if "RUN:" in line]
    assert run_lines, f"{path.name} has no RUN line"
    assert any(name in line for line in run_lines), f"no RUN line of {path.name} runs '{name}'"


@names
def test_summary_is_the_docstring_first_line_and_the_class_summary(name):
    entry = REGISTRY[name]
    module = importlib.import_module(entry.module)
    doc = module.__doc__
    assert doc, f"{entry.module} has no module docstring"
    first_line = doc.strip().splitlines()[0]
    assert entry.summary == first_line == pass_class(name).SUMMARY
    assert "\n" not in entry.summary and entry.summary.endswith(".")


@names
def test_module_docstring_states_preconditions_and_effect(name):
    doc = importlib.import_module(REGISTRY[name].module).__doc__ or ""
    for word in ("Precondition", "Effect"):
        assert word in doc, f"the docstring of {REGISTRY[name].module} does not state its {word.lower()}s (STYLE.md)"


@names
def test_options_are_snake_case_fields_spelled_kebab_case(name):
    cls = pass_class(name)
    assert dataclasses.is_dataclass(cls)
    fields = dataclasses.fields(cls)
    assert cls.option_names() == [f.name.replace("_", "-") for f in fields]
    for field in fields:
        assert OPTION_FIELD.fullmatch(field.name), f"option field '{field.name}' of '{name}' is not snake_case"
        assert field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING, (
            f"option '{field.name}' of '{name}' needs a default, so '{name}' runs without options"
        )
    cls()  # every option has a default


@names
def test_each_option_is_accepted_in_kebab_case(name):
    cls = pass_class(name)
    default = cls()
    for field in dataclasses.fields(cls):
        value = getattr(default, field.name)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, str)):
            text = str(value)
        else:
            continue  # a type the command line cannot spell; nothing to round-trip
        built = cls.from_options({field.name.replace("_", "-"): text})
        assert getattr(built, field.name) == value


@names
def test_pipeline_text_builds_the_pass(name):
    with make_context() as context:
        pm = build_pass_manager(name, context)
    assert pm is not None


def test_every_pass_module_is_registered():
    registered = {module_path(name).stem for name in REGISTRY}
    for path in sorted(PASSES_DIR.glob("*.py")):
        if path.stem in NOT_PASS_MODULES or path.stem.startswith("_") or path.stem in registered:
            continue
        tree = ast.parse(path.read_text())
        passes = [
            node.name for node in tree.body
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) == "FuserPass" for b in node.bases)
        ]
        assert not passes, f"{path.name} defines pass class(es) {passes} but no REGISTRY entry names it"


def test_every_pass_lit_file_belongs_to_a_registered_pass():
    # <pass>.mlir, or <pass>-invalid.mlir for its diagnostics (MLIR's convention)
    stems = {lit_path(name).stem for name in REGISTRY}
    stray = sorted(p.name for p in LIT_PASSES_DIR.glob("*.mlir") if p.stem.removesuffix("-invalid") not in stems)
    assert not stray, f"lit_tests/passes/ has files for no registered pass: {stray}"


# -- named pipelines and upstream suggestions -----------------------------------------


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_named_pipeline_is_named_and_builds(name):
    assert re.fullmatch(r"fuser-[a-z0-9-]+-pipeline", name)
    assert name not in REGISTRY
    with make_context() as context:
        build_pass_manager(name, context)


def test_upstream_suggestions_are_real_module_passes():
    with make_context():
        for name in UPSTREAM_SUGGESTIONS:
            PassManager.parse(f"builtin.module({name})")


# -- the option conversion of FuserPass -----------------------------------------------


@dataclasses.dataclass
class _OptionsPass(FuserPass):
    NAME = "fuser-test-options"
    SUMMARY = "A pass with one option of each supported type."

    max_ops: int = 64
    fast_math: bool = False
    policy: str = "reorder"


def test_from_options_converts_kebab_case_options():
    built = _OptionsPass.from_options({"max-ops": "8", "fast-math": "", "policy": "copy"})
    assert (built.max_ops, built.fast_math, built.policy) == (8, True, "copy")
    assert _OptionsPass.from_options({"fast-math": "false"}).fast_math is False
    assert _OptionsPass.option_names() == ["max-ops", "fast-math", "policy"]


def test_from_options_rejects_an_unknown_option():
    with pytest.raises(ValueError, match=r"^pass 'fuser-test-options' has no option 'max_ops' \(options: max-ops, fast-math, policy\)$"):
        _OptionsPass.from_options({"max_ops": "1"})


def test_from_options_rejects_a_bad_integer():
    with pytest.raises(ValueError, match=r"^option 'max-ops' of pass 'fuser-test-options' expects an integer, got 'many'$"):
        _OptionsPass.from_options({"max-ops": "many"})


def test_from_options_rejects_a_bad_bool():
    with pytest.raises(ValueError, match=r"^option 'fast-math' of pass 'fuser-test-options' expects true or false, got 'yes'$"):
        _OptionsPass.from_options({"fast-math": "yes"})


def test_bad_option_value_is_a_usage_error_in_a_pipeline(monkeypatch):
    monkeypatch.setitem(REGISTRY, "fuser-test-options", PassEntry("fuser-test-options", _OptionsPass.SUMMARY))
    monkeypatch.setattr("fuser_mlir.pipeline.pass_class", lambda name: _OptionsPass)
    with make_context() as context, pytest.raises(UnknownPassError, match="expects an integer, got 'x'"):
        build_pass_manager("fuser-test-options{max-ops=x}", context)


def test_pass_class_names_a_module_without_the_pass(monkeypatch):
    monkeypatch.setitem(REGISTRY, "fuser-base", PassEntry("fuser-base", "Not a pass."))
    with pytest.raises(LookupError, match=r"^module fuser_mlir.passes.base defines no pass named 'fuser-base'$"):
        pass_class("fuser-base")
