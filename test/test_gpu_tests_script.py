"""scripts/gpu-tests.sh: the GPU tests dealt out to N pytest processes,
their summaries added up, and a failure in any process a failed run (the
script runs on a GPU host; dealing and counting need none)."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu-tests.sh"

TESTS = '''
import pytest


@pytest.mark.gpu
@pytest.mark.parametrize("n", range(4))
def test_passes(n):
    assert n >= 0


@pytest.mark.gpu
def test_fails():
    assert 1 == 2


@pytest.mark.gpu
def test_skips():
    pytest.skip("not here")


def test_not_a_gpu_test():
    pass
'''


def run_script(tmp_path, *args):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: a GPU test\n")
    env = dict(os.environ, GPU_TEST_LOGS=str(tmp_path / "logs"), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_the_processes_summaries_are_added_up_and_a_failure_fails_the_run(tmp_path):
    (tmp_path / "test_some.py").write_text(TESTS)
    result = run_script(tmp_path, "3", "test_some.py")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "6 collected: 4 passed, 1 failed, 1 skipped"
    assert len([line for line in lines if "shard." in line]) == 3  # one summary line a process


def test_a_run_that_collects_nothing_fails(tmp_path):
    (tmp_path / "test_none.py").write_text("def test_cpu():\n    pass\n")
    result = run_script(tmp_path, "2", "test_none.py")
    assert result.returncode == 1 and "no GPU tests collected from test_none.py" in result.stdout
