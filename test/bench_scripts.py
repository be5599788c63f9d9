"""The scripts of bench/ and scripts/ as modules, for tests (neither is a package)."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
ROOT = BENCH.parent


def load(name: str):
    """bench/<name>.py, imported afresh as module ``bench_<name>``."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def load_script(name: str, monkeypatch):
    """scripts/<name>.py, imported afresh from the project root as the GPU
    host runs it (it puts bench/ on ``sys.path`` and imports bench/run.py as
    ``run``: the path is restored after the test, ``run`` dropped from
    ``sys.modules`` at once where it was not there before)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    had_run = "run" in sys.modules
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        if not had_run:
            sys.modules.pop("run", None)
    return module
