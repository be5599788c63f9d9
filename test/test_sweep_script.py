"""scripts/gpu_schedule_sweep.py's restore(): what a setting changes in the
schedulers or the kernel lowering is undone before the next setting; and its
command line (the sweep itself needs a GPU; these parts do not)."""

import sys
import types

import pytest

from bench_scripts import load_script


@pytest.fixture
def sweep(monkeypatch):
    """The script as a module (torch stubbed where it is not installed)."""
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401  (the real one, on a GPU host)
        except ImportError:
            monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # the script imports it at the top
    return load_script("gpu_schedule_sweep", monkeypatch)


def test_restore_undoes_a_setting_in_both_lowering_modules(sweep):
    from fuser_mlir.lowering import gpu, gpu_schedule

    prefetches = gpu_schedule._RowGroup.__dict__["prefetches"]
    saved = sweep.snapshot()
    setting = (
        "import fuser_mlir.lowering.gpu as _gpu; _gpu.CONTRACT_FMA = False\n"
        "PREFETCH_NEXT_ROW = False\n"
        "ADDED = 1\n"
        "_RowGroup.prefetches = property(lambda group: True)"
    )
    exec(setting, vars(gpu_schedule))
    assert (gpu.CONTRACT_FMA, gpu_schedule.PREFETCH_NEXT_ROW, gpu_schedule.ADDED) == (False, False, 1)
    sweep.restore(saved)
    assert (gpu.CONTRACT_FMA, gpu_schedule.PREFETCH_NEXT_ROW) == (True, True)
    assert not hasattr(gpu_schedule, "ADDED") and not hasattr(gpu_schedule, "_gpu")
    assert gpu_schedule._RowGroup.__dict__["prefetches"] is prefetches


def test_command_line_takes_settings_cases_a_size_and_compile(sweep):
    assert sweep.parse_args(["s.py", "rms_norm:float32:8192"]) == ("s.py", "rms_norm:float32:8192", 256, False)
    assert sweep.parse_args(["--compile", "s.py", "softmax:bfloat16:1024", "1024"]) == ("s.py", "softmax:bfloat16:1024", 1024, True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["s.py"], "SETTINGS and CASES are required"),
        (["s.py", "c", "256", "extra"], "SETTINGS and CASES are required"),
        (["s.py", "c", "--torch"], "unknown option --torch"),
        (["s.py", "c", "1GB"], "whole megabytes"),
    ],
)
def test_a_bad_command_line_says_what_is_wrong(sweep, argv, message):
    with pytest.raises(SystemExit, match=message):
        sweep.parse_args(argv)
