"""Read sweep 43b's output (settings "", 160 KB, "", 160 KB over float32 layer norms of several row lengths) and,
where 160 KB wins (both its one-call times under both shipped ones) on every length from some L on and loses at
the length below, set LONG_ROW_WEIGHTS = (that length below, 160 * 1024) in gpu_schedule.py and print CHANGED."""
import collections
import re
import sys

sweep, source = sys.argv[1], sys.argv[2]
times = collections.defaultdict(list)
for line in open(sweep):
    m = re.match(r"(.{42}) layer_norm\s+float32\s+h=(\d+)\s+back-to-back\s+[\d.]+ us \(.*?\), one call\s+([\d.]+) us", line)
    if m and not m.group(1).startswith("torch.compile"):
        times["160" if "SPLIT" in m.group(1) else "", int(m.group(2))].append(float(m.group(3)))
lengths = sorted({h for _, h in times})
wins = {h: len(times["160", h]) == 2 and len(times["", h]) == 2 and max(times["160", h]) < min(times["", h]) for h in lengths}
for h in lengths:
    print(h, "shipped", times["", h], "160 KB", times["160", h], "win" if wins[h] else "no win")
losing = [h for h in lengths if not wins[h]]
if not lengths or not wins[lengths[-1]]:
    print("NO CHANGE: 160 KB does not win on the longest row")
elif not losing:
    print("NO CHANGE: 160 KB wins on every row measured (a question for SPLIT_WEIGHTS_BYTES, not LONG_ROW_WEIGHTS)")
else:
    threshold = max(losing)
    text = open(source).read()
    assert "LONG_ROW_WEIGHTS = (0, 0)\n" in text
    open(source, "w").write(text.replace("LONG_ROW_WEIGHTS = (0, 0)\n", f"LONG_ROW_WEIGHTS = ({threshold}, 160 * 1024)\n"))
    print(f"CHANGED: LONG_ROW_WEIGHTS = ({threshold}, 160 * 1024)")
