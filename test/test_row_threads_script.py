"""scripts/row_threads.py: elements per launched thread of the row kernels
a bench case picks, read from its launch programs on a machine without a GPU."""

import pytest

from bench_scripts import load_script as script


def test_rows_that_leave_most_lanes_idle_are_flagged(monkeypatch, capsys):
    """A bfloat16 inner sum of rows of 10 columns (not whole vectors) takes a
    lane a row (10 a thread), of 128 a group of 4 lanes a row (32 a
    thread); with FLAT_SPAN_ROWS off the rows of 10 run a warp a row, 0.3
    elements a thread, flagged, and the setting is undone after."""
    threads = script("row_threads", monkeypatch)
    threads.main(["inner_sum:bfloat16"], [10, 128])
    threads.main(["inner_sum:bfloat16"], [10], setting="FLAT_SPAN_ROWS = False")
    threads.main(["inner_sum:bfloat16"], [10])
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("inner_sum")]
    assert lines == [["inner_sum:bfloat16", "10:10.0", "128:32.0"], ["inner_sum:bfloat16", "10:0.3!"], ["inner_sum:bfloat16", "10:10.0"]]


def test_the_command_line(monkeypatch):
    threads = script("row_threads", monkeypatch)
    assert threads.parse_args(["softmax:float32", "--hidden", "10,77", "64"]) == (["softmax:float32"], [10, 77], 64, "")
    specs, hidden, megabytes, setting = threads.parse_args(["--setting", "FLAT_SPAN_ROWS = True"])
    assert (specs, hidden, megabytes, setting) == (threads.CASES, threads.HIDDEN, 256, "FLAT_SPAN_ROWS = True")
    with pytest.raises(SystemExit, match="--hidden takes positive row lengths"):
        threads.parse_args(["--hidden", "10,0"])
    with pytest.raises(SystemExit, match="CASE:DTYPE is one of"):
        threads.main(["softmax:float64"], [10])
