"""Try scheduler constants on the GPU: python3 scripts/gpu_schedule_sweep.py

For each setting of the constants of fuser_mlir.lowering.gpu_schedule
(module attributes, set before a fresh fusion is compiled) and each case
(bench/run.py's cases, float32), prints the time of one call (after an L2
flush and a synchronisation, host time included, as bench/run.py measures)
and of one call within 20 back-to-back calls (host time hidden behind the
device: the kernels' own time), each against a copy of the same bytes. A
development tool for choosing the constants; bench/run.py is the benchmark.
"""
import statistics
import sys

import torch

sys.path.insert(0, "bench")
import run as bench  # noqa: E402
from fuser_mlir.lowering import gpu_schedule  # noqa: E402

#: What was tried last (bench/results/h200-sweeps.txt has what each sweep found).
SETTINGS = [{}, {"CACHED_STORE_GROUP": 1}, {"CACHED_STORE_GROUP": 2}, {"CACHED_STORE_GROUP": 8}, {"MAX_BLOCKS": 1056 * 4}]
CASES = [("pointwise", 256), ("broadcast_add", 256), ("softmax", 256), ("layer_norm", 256), ("rms_norm", 256), ("outer_sum", 256)]
flush = torch.empty(bench.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")


def timed(fn, batch, repeat=15):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        flush.zero_()
        torch.cuda.synchronize()
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / batch)
    return statistics.median(times)


defaults = {name: getattr(gpu_schedule, name) for s in SETTINGS for name in s}
by_name = {c.name: c for c in bench.CASES}
inputs_of = {}
for setting in SETTINGS:
    for name, value in defaults.items():
        setattr(gpu_schedule, name, setting.get(name, value))
    for case_name, mb in CASES:
        case = by_name[case_name]
        fd = bench.fusion_for(case, "float32")
        inputs = bench.random_inputs(case, torch.float32, mb << 20, seed=1)
        outs = [torch.empty_like(case.torch_fn(*inputs))]
        bench.check_correct(fd, case, inputs, "float32")
        model = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outs)
        src = torch.empty(model // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ours1, ours20 = timed(lambda: fd.execute(inputs, outputs=outs), 1), timed(lambda: fd.execute(inputs, outputs=outs), 20)
        copy1, copy20 = timed(lambda: dst.copy_(src), 1), timed(lambda: dst.copy_(src), 20)
        print(f"{str(setting):<42} {case_name:<11} {mb:5} MB  one call {ours1:7.1f} us ({copy1 / ours1:.2f} of copy)  back-to-back {ours20:7.1f} us ({copy20 / ours20:.2f} of copy)", flush=True)
        del inputs, outs, src, dst
        torch.cuda.empty_cache()
