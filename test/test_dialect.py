"""The fuser dialect: loading into a Context, the op tables against the IRDL
file, the lit round trip covering every op, and the dialect file shipping as
package data in a wheel."""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

import fuser_mlir.dialect as dialect
from fuser_mlir._mlir import ir
from fuser_mlir.dialect import DIALECT_NAME, dialect_source, load_dialect, make_context, op_specs
from fuser_mlir.dialect import ops as O
from fuser_mlir.errors import DialectError

ROOT = Path(__file__).resolve().parents[1]
IRDL_FILE = ROOT / "dialect" / "fuser.irdl.mlir"
ROUNDTRIP = ROOT / "lit_tests" / "dialect" / "roundtrip.mlir"

ADD = """func.func @f(%a: tensor<?x4xf32>, %b: f32) -> tensor<?x4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}"""


def irdl_op_names() -> list[str]:
    """The op names in the IRDL file, read as text (independent of op_specs)."""
    return re.findall(r"^\s*irdl\.operation @(\w+)", IRDL_FILE.read_text(), re.MULTILINE)


# -- loading --------------------------------------------------------------------------


def test_fresh_context_parses_fuser_ops():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(ADD)
        assert module.operation.verify()
        assert '"fuser.add"' in str(module)


def test_plain_context_does_not_know_fuser():
    """IRDL dialects are per Context: one not made by make_context rejects fuser ops."""
    with ir.Context(), ir.Location.unknown():
        with pytest.raises(ir.MLIRError, match="unregistered dialect"):
            ir.Module.parse(ADD)


def test_load_dialect_is_idempotent_through_any_handle():
    """Loading IRDL twice into one context aborts the process, so run it apart."""
    code = (
        "from fuser_mlir.dialect import make_context, load_dialect\n"
        "from fuser_mlir._mlir import ir\n"
        "c = make_context()\n"
        "load_dialect(c)\n"
        "with c:\n"
        "    m = ir.Module.parse('module {}')\n"
        "    load_dialect(m.context)\n"
        "    load_dialect(ir.Context.current)\n"
        "print('loaded once')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "loaded once\n"


def test_contexts_are_independent():
    first, second = make_context(), make_context()
    for context in (first, second):
        with context, ir.Location.unknown():
            assert '"fuser.add"' in str(ir.Module.parse(ADD))


# -- op specs and tables --------------------------------------------------------------


def test_op_specs_has_every_op_of_the_irdl_file_in_order():
    names = irdl_op_names()
    assert len(names) == 75
    assert list(op_specs()) == names


def test_op_specs_read_operands_attributes_and_results():
    specs = op_specs()
    assert specs["add"].operands == ("lhs", "rhs")
    assert specs["add"].full_name == f"{DIALECT_NAME}.add"
    assert specs["reshape"].operands == ("input", "sizes")
    assert specs["reshape"].variadic == (False, True)
    assert specs["empty"].variadic == (True,)
    assert specs["sum"].attributes == ("dims", "keepdim")
    assert specs["constant"].operands == ()
    assert all(spec.results == ("result",) for spec in specs.values())


def test_category_covers_exactly_the_ops():
    assert set(O.CATEGORY) == set(op_specs())


def test_category_sets_are_disjoint():
    groups = [
        O.UNARY_FLOAT, O.UNARY_NUMERIC, O.UNARY_PREDICATE, O.UNARY_LOGICAL, O.UNARY_BITWISE,
        O.BINARY_NUMERIC, O.BINARY_FLOAT, O.BINARY_COMPARE, O.BINARY_LOGICAL, O.BINARY_BITWISE,
        O.TERNARY, O.REDUCTIONS, O.COPIES, O.DESTINATION_WRITES,
    ]
    seen: set[str] = set()
    for group in groups:
        assert not (seen & group), f"in two categories: {seen & group}"
        seen |= group


def test_categories_agree_with_the_irdl_arity():
    specs = op_specs()
    for names, arity in ((O.UNARY, 1), (O.BINARY, 2), (O.TERNARY, 3), (O.REDUCTIONS, 1), (O.COPIES, 1), (O.DESTINATION_WRITES, 2)):
        for name in names:
            assert len(specs[name].operands) == arity, f"fuser.{name} has operands {specs[name].operands}"
            assert not any(specs[name].variadic), f"fuser.{name} has a variadic operand"
    for name in O.REDUCTIONS:
        assert specs[name].attributes == ("dims", "keepdim")
    for name in O.POINTWISE:
        assert specs[name].attributes == ()


def test_short_name():
    assert O.short_name("fuser.add") == "add"
    assert O.short_name("arith.addf") is None


def test_roundtrip_lit_file_covers_every_op():
    text = ROUNDTRIP.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    used = set(re.findall(r'"fuser\.(\w+)"', code))
    assert used == set(op_specs()), f"roundtrip.mlir misses {set(op_specs()) - used}"
    labels = set(re.findall(r"^// CHECK-LABEL: func\.func @(\w+)\(", text, re.MULTILINE))
    assert labels == set(op_specs()), "roundtrip.mlir needs a CHECK-LABEL case named after each op"


# -- the dialect file as package data ---------------------------------------------------


def test_dialect_file_is_found_through_importlib_resources():
    resource = resources.files("fuser_mlir.dialect") / "fuser.irdl.mlir"
    assert resource.is_file()
    assert resource.read_text() == IRDL_FILE.read_text()
    assert dialect_source() == IRDL_FILE.read_text()


def test_missing_dialect_file_is_a_dialect_error(monkeypatch, tmp_path):
    monkeypatch.setattr(dialect.resources, "files", lambda package: tmp_path)
    with pytest.raises(DialectError, match=r"cannot read the fuser dialect definition at .*fuser\.irdl\.mlir: .*"
                                           r"reinstall fuser-mlir \(pip install \.\) so the package data is present"):
        dialect_source()


def _build_isolation_flag() -> list[str]:
    """--no-build-isolation when this Python can build wheels itself (fast and
    offline); otherwise pip fetches the build requirements of pyproject.toml."""
    try:
        import wheel  # noqa: F401
    except ImportError:
        import setuptools

        major_minor = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
        return ["--no-build-isolation"] if major_minor >= (70, 1) else []
    return ["--no-build-isolation"]


@pytest.fixture(scope="module")
def wheel_file(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (the checkout stays clean)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "dialect", src / "dialect", ignore=ignore)
    shutil.copytree(ROOT / "fuser_mlir", src / "fuser_mlir", symlinks=True, ignore=ignore)
    assert (src / "fuser_mlir" / "dialect" / "fuser.irdl.mlir").is_symlink()
    out = base / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *_build_isolation_flag(), "-q", "-w", str(out), str(src)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    wheels = glob.glob(str(out / "fuser_mlir-*.whl"))
    assert len(wheels) == 1, wheels
    return Path(wheels[0])


def test_wheel_holds_the_dialect_file_as_a_regular_file(wheel_file):
    with zipfile.ZipFile(wheel_file) as archive:
        info = archive.getinfo("fuser_mlir/dialect/fuser.irdl.mlir")
        mode = info.external_attr >> 16
        assert stat.S_ISREG(mode) or mode == 0, f"mode {oct(mode)} is not a regular file"
        assert archive.read(info).decode() == IRDL_FILE.read_text()


def test_installed_wheel_loads_the_dialect(wheel_file, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel_file) as archive:
        archive.extractall(site)
    code = (
        "import fuser_mlir\n"
        "from fuser_mlir.dialect import make_context, op_specs\n"
        "make_context()\n"
        "print(fuser_mlir.__file__)\n"
        "print(len(op_specs()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert result.returncode == 0, result.stderr
    location, count = result.stdout.split()
    assert Path(location).is_relative_to(site), f"imported {location}, not the wheel's copy"
    assert int(count) == len(op_specs())
