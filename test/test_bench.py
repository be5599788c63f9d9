"""bench/run.py and bench/plot.py on a machine without a GPU: the GPU
benchmark imports and answers --help without torch, and its pure helpers
(result path, host timing, table) and the plot run here."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bench_scripts import BENCH, load


@pytest.fixture(scope="module")
def run():
    return load("run")


def test_run_imports_and_answers_help_without_torch(run, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--host-calls" in text and "bench/results/h200.json" in text


def test_results_go_to_h200_json_on_an_h200_else_the_sanitised_gpu_name(run):
    results = Path("/r")
    assert run.default_json_path("NVIDIA H200", results) == results / "h200.json"
    assert run.default_json_path("NVIDIA H200 NVL", results) == results / "h200.json"
    assert run.default_json_path("NVIDIA A100-SXM4-80GB", results) == results / "NVIDIA_A100-SXM4-80GB.json"
    assert run.default_json_path("NVIDIA GeForce RTX 4090 (laptop)", results) == results / "NVIDIA_GeForce_RTX_4090_laptop.json"
    assert run.default_json_path("???", results) == results / "gpu.json"


def test_sizes_run_from_1_mb_in_steps_of_4x_between_min_and_max_bytes(run):
    mb = 1 << 20
    assert run.sizes(1 << 30, False) == [mb, 4 * mb, 16 * mb, 64 * mb, 256 * mb, 1024 * mb]
    assert run.sizes(1 << 30, True) == [mb, 16 * mb, 256 * mb]
    assert run.sizes(1 << 30, False, run.parse_bytes("256M")) == [256 * mb, 1024 * mb]
    assert run.sizes(1 << 30, True, 64 * mb) == [256 * mb]
    assert run.sizes(64 * mb, False, 256 * mb) == []


def test_host_timing_is_the_median_batch_per_call_and_synchronises_outside_it(run):
    # fake clocks: each call costs 3 us of CPU time and 5 us of wall time, except
    # that one batch is slow (an outlier the median drops); sync costs nothing
    clock = {"cpu": 0, "wall": 0, "batch": 0}
    events = []

    def call():
        slow = clock["batch"] == 1
        clock["cpu"] += 30_000 if slow else 3_000
        clock["wall"] += 50_000 if slow else 5_000
        events.append("call")

    def sync():
        events.append("sync")
        clock["batch"] += 1

    clock["batch"] = -1
    result = run.host_us_per_call(call, 4, 3, sync=sync, cpu_clock=lambda: clock["cpu"], wall_clock=lambda: clock["wall"])
    assert result == {"cpu_us": 3.0, "wall_us": 5.0}
    assert events == (["sync"] + ["call"] * 4) * 3 + ["sync"]
    with pytest.raises(ValueError, match="at least one call"):
        run.host_us_per_call(call, 0, 3)


def test_warm_up_runs_its_calls_then_more_until_its_time_has_passed(run):
    # a fake clock: each call costs 2 ms; sync follows every call
    clock = {"t": 0.0}
    events = []

    def call():
        clock["t"] += 0.002
        events.append("call")

    def sync():
        events.append("sync")

    assert run.warm_up(call, 3, 0.0, sync, clock=lambda: clock["t"]) == 3  # no time asked: the calls alone
    assert events == ["call", "sync"] * 3
    assert run.warm_up(call, 3, 0.0099, sync, clock=lambda: clock["t"]) == 5  # 10 ms of 2 ms calls
    assert run.warm_up(call, 8, 0.004, sync, clock=lambda: clock["t"]) == 8  # the calls outlast the time
    assert run.warm_up(call, 0, 0.0, sync, clock=lambda: clock["t"]) == 0


def test_host_timing_measures_real_calls(run):
    calls = []
    result = run.host_us_per_call(lambda: calls.append(1), 10, 3)
    assert len(calls) == 30
    assert result["cpu_us"] >= 0 and result["wall_us"] > 0


def row(case="pointwise", dtype="float32", size=1 << 20, scale=1.0, host=None):
    out = {
        "case": case, "dtype": dtype, "size_bytes": size, "max_abs_error": 1e-6,
        "ms": {"ours": 0.5, "copy": 0.25, "eager": 1.0, "compile": 0.5},
        "GBps": {"ours": 100.0 * scale, "copy": 200.0 * scale, "eager": 50.0 * scale, "compile": 100.0 * scale},
        "of_copy": 0.5, "vs_eager": 2.0, "vs_compile": 1.0,
    }
    if host is not None:
        out["host_us"], out["host_wall_us"] = host, host + 1
    return out


def test_table_shows_host_us_and_a_dash_for_rows_without_it(run, capsys):
    run.print_table([row(host=6.5), row(size=16 << 20)])
    lines = capsys.readouterr().out.splitlines()
    assert "host us" in lines[0]
    assert lines[2].split()[-2] == "6.5"
    assert lines[3].split()[-2] == "-"


def test_rounds_give_the_x_compile_range_and_the_table_shows_it_only_where_measured(run, capsys):
    rounds = [{"ours": 0.100, "compile": 0.099}, {"ours": 0.098, "compile": 0.100}, {"ours": 0.100, "compile": 0.1005}]
    low, high = run.speedup_range(rounds, "compile")
    assert low == pytest.approx(0.99) and high == pytest.approx(0.100 / 0.098)
    run.print_table([{**row(host=6.5), "vs_compile_range": [low, high]}, row(size=16 << 20)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-5:] == ["range", "host", "us", "max", "err"]
    assert "0.990-1.020" in lines[2].split() and lines[2].split()[-2] == "6.5"
    assert lines[3].split()[-3] == "-"  # a row of one round: no range
    run.print_table([row(host=6.5)])
    assert "range" not in capsys.readouterr().out.splitlines()[0].split()  # no rounds anywhere: no column
    with pytest.raises(SystemExit):
        run.main(["--rounds", "0"])
    assert "--rounds takes a count of 1 or more" in capsys.readouterr().err


def test_long_row_cases_take_each_hidden_row_length_and_tables_and_plots_tell_them_apart(run, capsys):
    softmax = {c.name: c for c in run.CASES}["softmax"]
    assert softmax.long_rows and softmax.shapes(1 << 20, 32768) == [(32, 32768)]
    assert [c.name for c in run.CASES if c.long_rows] == ["scale_bias", "inner_sum", "softmax", "layer_norm", "rms_norm"]
    long_rows = {**row(case="softmax"), "hidden": 32768}
    assert run.case_label(long_rows) == "softmax, rows of 32768"
    assert run.case_label({**row(case="softmax"), "hidden": 1024}) == run.case_label(row(case="softmax")) == "softmax"
    run.print_table([row(case="softmax"), long_rows])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("softmax ") and lines[3].startswith("softmax, rows of 32768 ")
    with pytest.raises(SystemExit):
        run.main(["--hidden", "1024,x"])
    assert "--hidden takes positive row lengths" in capsys.readouterr().err


def test_plot_writes_a_png_with_and_without_host_numbers(tmp_path):
    pytest.importorskip("matplotlib")
    plot = load("plot")
    rows = [row(size=s, scale=k, host=7.0 + k) for k, s in enumerate([1 << 20, 16 << 20, 256 << 20], 1)]
    rows += [row(dtype="bfloat16", size=1 << 20), row(case="softmax", size=1 << 20, host=9.0)]
    rows.append({**row(case="softmax", size=1 << 20, host=11.0), "hidden": 32768})
    rows.append({**row(case="outer_sum"), "GBps": {"ours": 1.0, "copy": 2.0}})  # series a row lacks are skipped
    data = plot.series(rows)
    assert list(data) == ["pointwise", "softmax", "softmax, rows of 32768", "outer_sum"]
    assert plot.host_range(rows, "softmax") == "host 9.0 us/call"
    assert data["pointwise"]["float32"]["ours"] == [(1 << 20, 100.0), (16 << 20, 200.0), (256 << 20, 300.0)]
    assert set(data["outer_sum"]["float32"]) == {"ours", "copy"}
    assert plot.host_range(rows, "pointwise") == "host 8.0-10.0 us/call"
    assert plot.host_range(rows, "outer_sum") == ""
    source = tmp_path / "result.json"
    source.write_text(json.dumps({"gpu": "NVIDIA H200", "commit": "abc1234", "rows": rows}))
    assert plot.main([str(source)]) == 0
    png = tmp_path / "result.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="nothing to plot"):
        plot.plot({"rows": []}, tmp_path / "empty.png")


def test_plot_reads_the_stored_baseline_without_host_numbers(tmp_path):
    pytest.importorskip("matplotlib")
    plot = load("plot")
    baseline = BENCH / "results" / "h200-baseline-float32.json"
    out = plot.plot(json.loads(baseline.read_text()), tmp_path / "baseline.png")
    assert out.stat().st_size > 10_000


def test_compile_time_compiles_each_case_both_ways_and_writes_json(tmp_path, capsys, monkeypatch):
    """bench/compile_time.py on a machine without a GPU: each case in both
    dtypes, a module per kernel and one module, a row each with the ratio;
    SEPARATE_KERNEL_MODULES as it was afterwards; an unknown case is named."""
    from fuser_mlir.lowering import gpu

    monkeypatch.setenv("FUSER_CACHE", "0")
    bench = load("compile_time")
    out = tmp_path / "compile-time.json"
    bench.main(["--rounds", "1", "--cases", "pointwise,outer_sum", "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["dtype"]) for r in rows] == [(c, d) for c in ("pointwise", "outer_sum") for d in ("float32", "bfloat16")]
    for row in rows:
        assert row["kernels"] >= 1 and row["one_module_s"] > 0 and row["module_per_kernel_s"] > 0
        assert row["speedup"] == pytest.approx(row["one_module_s"] / row["module_per_kernel_s"])
    assert gpu.SEPARATE_KERNEL_MODULES is True
    assert "outer_sum" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--cases", "pointwise,nonesuch", "--json", str(out)])
    assert "unknown case nonesuch" in capsys.readouterr().err


def test_cpu_bench_times_each_case_on_one_and_all_threads_and_writes_json(tmp_path, capsys):
    """bench/cpu.py at 4**4 times fewer elements: every case checked against
    its reference, timed on one thread and on FUSER_CPU_THREADS, the chain
    by size, the column sums jammed and row by row, the row softmax and
    layer norm block by block of rows and whole, and the chain as short rows,
    merged and not."""
    bench = load("cpu")
    out = tmp_path / "cpu.json"
    bench.main(["--json", str(out), "--repeat", "1", "--scale", "4"])
    result = json.loads(out.read_text())
    assert [row["case"] for row in result["rows"]] == [
        "pointwise chain (6 ops, 65536 f32)", "row softmax (256x256 f32)", "column softmax (256x256 f32, 3 segments)", "layer norm (256x256 f32)",
        "layer norm (1x256x256 f32, a batch of one)", "column sum (256x256 f32)",
    ]
    assert all(row["fuser_ms"] > 0 and row["fuser_one_thread_ms"] > 0 and row["numpy_ms"] > 0 for row in result["rows"])
    assert [row["elements"] for row in result["chain_sizes"]] == [64, 256, 1024, 4096, 16384, 65536]
    assert [(row["dtype"], row["shape"], row["dims"]) for row in result["column_sums"]] == [
        (dtype, [65536 // columns or 1, columns], [0]) for dtype in ("Float", "BFloat16") for columns in (256, 1024, 4096, 16384)
    ] + [("Float", [64, 1, 1024], [0, 1])]
    assert all(row[f"{label}{threads}_ms"] > 0 for row in result["column_sums"] for label in ("jammed", "row_by_row") for threads in ("", "_one_thread"))
    assert all((row["numpy_ms"] is not None) == (row["dtype"] == "Float") for row in result["column_sums"])
    assert [row["case"] for row in result["row_blocks"]] == ["row softmax (256x256 f32)", "layer norm (256x256 f32)", "softmax of one row (65536 f32)"]
    assert all(row[f"{label}{threads}_ms"] > 0 for row in result["row_blocks"] for label in ("blocked", "unshared", "whole") for threads in ("", "_one_thread"))
    assert [row["shape"] for row in result["short_rows"]] == [[65536, 1], [21845, 3], [9362, 7], [64, 1024]]
    assert all(row[f"{label}{threads}_ms"] > 0 for row in result["short_rows"] for label in ("merged", "unmerged") for threads in ("", "_one_thread"))
    printed = capsys.readouterr().out
    assert result["threads"] >= 1 and "the chain by size" in printed and "sums over dim 0 (or dims 0, 1) by width" in printed and "block by block of rows" in printed
    assert "the chain as rows of 1 to 1024 columns" in printed


def test_each_row_is_printed_as_measured_and_sigterm_stops_the_bench_like_ctrl_c(run):
    # A run cut short by `timeout` (SIGTERM) keeps its rows: each one's line carries its numbers,
    # and SIGTERM raises KeyboardInterrupt, which main() answers with the table of the rows so far.
    measured = {**row(host=6.5), "vs_compile_range": [0.99, 1.02]}
    line = run._summary(measured)
    assert line.startswith(f"{measured['ms']['ours'] * 1e3:.1f} us, {measured['of_copy']:.2f} of copy, {measured['vs_compile']:.2f}x compile")
    assert line.endswith("(0.990-1.020)") and "(" not in run._summary(row())
    with pytest.raises(KeyboardInterrupt):
        run._terminated(15, None)


def test_cpu_libm_bench_times_each_case_with_the_vector_library_and_scalar_libm(tmp_path, capsys, monkeypatch):
    """bench/cpu_libm.py: every case checked against NumPy's float64 result
    both ways and timed; the environment it sets is restored."""
    monkeypatch.delenv("FUSER_CPU_THREADS", raising=False)
    bench = load("cpu_libm")
    out = tmp_path / "libm.json"
    bench.main(["--json", str(out), "--repeat", "1"])
    result = json.loads(out.read_text())
    assert [row["case"] for row in result["rows"]] == [label for label, *_ in bench.cases(np.random.default_rng(0))]
    assert len(result["rows"]) == 6
    assert all(row["vector_us"] > 0 and row["scalar_us"] > 0 and row["numpy_us"] > 0 for row in result["rows"])
    assert "FUSER_CPU_THREADS" not in os.environ
    assert "sin of a transposed 256x256 float32" in capsys.readouterr().out
