"""Runs the lit suite (lit_tests/), so that `pytest` alone runs every test.

lit 18+ has no ``python -m lit``; its entry point is ``lit.main.main``. On
failure the assertion message is lit's output, which names each failing
test with the commands it ran and FileCheck's report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIT = "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()"


def test_lit_suite():
    result = subprocess.run(
        [sys.executable, "-c", LIT, "-sv", str(ROOT / "lit_tests")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"lit failed:\n{output}"
    assert "Passed:" in output and "Failed" not in output, output
