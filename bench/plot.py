"""Plot a bench/run.py result: bandwidth (GB/s) against size, one subplot per case.

    python3 bench/plot.py bench/results/h200.json [-o bench/results/h200.png]

Each subplot shows ours, the device-to-device copy, PyTorch eager and
torch.compile (one colour each) for every dtype in the file (one line style
each), GB/s of model bytes against the size of the case's largest tensor, both
axes logarithmic. When the rows carry the host cost per call (``host_us``,
written by bench/run.py since issue 9; older files have none) the subplot
title gives its range. Needs matplotlib (``pip install -e '.[bench]'``); the
default output is the JSON path with ``.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import case_label  # noqa: E402  (bench/ is not a package)

SERIES = {"ours": "tab:blue", "copy": "tab:gray", "eager": "tab:orange", "compile": "tab:green"}
LINE_STYLES = ["-", "--", ":", "-."]


def series(rows: list[dict]) -> dict[str, dict[str, dict[str, list[tuple[int, float]]]]]:
    """``{case: {dtype: {series: [(size_bytes, GB/s), ...] sorted by size}}}``,
    cases and dtypes in the order they first appear; a series a row lacks is skipped."""
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        for name, value in row.get("GBps", {}).items():
            if name in SERIES and value is not None:
                out[case_label(row)][row["dtype"]][name].append((row["size_bytes"], value))
    for dtypes in out.values():
        for by_series in dtypes.values():
            for points in by_series.values():
                points.sort()
    return out


def host_range(rows: list[dict], case: str) -> str:
    """``host 6.1-7.4 us/call`` over a case's rows, or "" when none has it."""
    values = [r["host_us"] for r in rows if case_label(r) == case and r.get("host_us") is not None]
    if not values:
        return ""
    low, high = min(values), max(values)
    return f"host {low:.1f} us/call" if math.isclose(low, high, rel_tol=0.05) else f"host {low:.1f}-{high:.1f} us/call"


def size_label(nbytes: float) -> str:
    return f"{nbytes / (1 << 30):g} GB" if nbytes >= 1 << 30 else f"{nbytes / (1 << 20):g} MB"


def plot(result: dict, out: Path) -> Path:
    """Draw ``result`` (a bench/run.py JSON object) into the PNG ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullLocator

    rows = result.get("rows", [])
    data = series(rows)
    if not data:
        raise ValueError("no rows with GBps in the result: nothing to plot")
    dtypes = list(dict.fromkeys(dtype for by_dtype in data.values() for dtype in by_dtype))
    styles = {dtype: LINE_STYLES[i % len(LINE_STYLES)] for i, dtype in enumerate(dtypes)}
    columns = min(3, len(data))
    grid_rows = math.ceil(len(data) / columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(5 * columns, 3.8 * grid_rows), squeeze=False)
    for ax, (case, by_dtype) in zip(axes.flat, data.items()):
        for dtype, by_series in by_dtype.items():
            for name, points in by_series.items():
                sizes, gbps = zip(*points)
                ax.plot(sizes, gbps, color=SERIES[name], linestyle=styles[dtype], marker="o", markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sorted({size for by_series in by_dtype.values() for points in by_series.values() for size, _ in points}))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: size_label(value)))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(" - ".join(part for part in (case, host_range(rows, case)) if part), fontsize=10)
        ax.set_xlabel("largest tensor")
        ax.set_ylabel("GB/s (model bytes)")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(data) :]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=color, label=name) for name, color in SERIES.items()]
    handles += [Line2D([], [], color="black", linestyle=styles[d], label=d) for d in dtypes]
    title = " ".join(str(part) for part in (result.get("gpu"), result.get("commit") and f"at {result['commit']}") if part)
    fig.suptitle(f"bench/run.py: bandwidth vs size{' - ' + title if title else ''}")
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="a JSON file written by bench/run.py")
    parser.add_argument("-o", "--output", type=Path, default=None, help="PNG path (default: the JSON path with .png)")
    args = parser.parse_args(argv)
    result = json.loads(args.result.read_text())
    out = plot(result, args.output or args.result.with_suffix(".png"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
