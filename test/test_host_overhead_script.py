"""bench/host_overhead.py on a machine without a GPU: its CPU rows run, each
with NumPy timed side by side, and its JSON holds both."""

import json

import numpy as np
import pytest

from bench_scripts import load


@pytest.fixture(scope="module")
def host_overhead():
    return load("host_overhead")


@pytest.mark.parametrize("case", ["add1", "seg3", "seg10"])
def test_the_reference_computes_each_case_with_numpy_as_the_check_does(host_overhead, case):
    rng = np.random.default_rng()
    x, y = rng.standard_normal(8), rng.standard_normal(8)
    expected = {"add1": x + y, "seg3": np.exp(x + y) * y}.get(case)
    if expected is None:
        t = x + y
        for k in range(8):
            t = np.tanh(t) * 1.5 if k % 2 == 0 else t - y * 0.5
        expected = t * y
    np.testing.assert_array_equal(host_overhead.reference(case, x, y, np), expected)


def test_timing_calls_with_and_without_keywords(host_overhead):
    calls = []
    result = host_overhead.time_batches(lambda *a, **k: calls.append((a, k)), (1, 2), "cpu", 5, 3)
    assert calls == [((1, 2), {})] * (100 + 15)
    calls.clear()
    host_overhead.time_batches(lambda *a, **k: calls.append((a, k)), (1,), "cpu", 2, 2, cuda_graph=True)
    assert calls == [((1,), {"cuda_graph": True})] * (100 + 4)
    assert set(result) == {"cpu_us", "wall_us", "cpu_us_min", "wall_us_min"}
    assert 0 <= result["cpu_us_min"] <= result["cpu_us"] and 0 <= result["wall_us_min"] <= result["wall_us"]


def test_cpu_rows_carry_numpy_side_by_side(host_overhead, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(host_overhead, "gpu_available", lambda: (False, "no GPU in this test"))
    out = tmp_path / "host.json"
    assert host_overhead.main(["--calls", "3", "--batches", "2", "--json", str(out), "--commit", "abc1234"]) == 0
    text = capsys.readouterr().out
    assert "x ref" in text and "GPU rows skipped: no GPU in this test" in text
    result = json.loads(out.read_text())
    assert result["commit"] == "abc1234" and result["gpu"] is None
    rows = result["rows"]
    assert [r["case"] for r in rows] == ["1-op", "3-segment", "10-segment"]
    for r in rows:
        assert r["device"] == "cpu" and r["cuda_graph"] is False and r["reference"] == "numpy"
        assert r["cpu_us"] > 0 and r["reference_cpu_us"] > 0 and r["reference_wall_us"] > 0
        assert f"{r['reference_cpu_us'] / r['cpu_us']:>6.2f}" in text
