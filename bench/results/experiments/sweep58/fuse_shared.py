"""fuser-lower-to-cpu{fuse-shared=true} on the GPU, measured: each fusion
compiled with the option and without, timed side by side with a copy of the
same model bytes, PyTorch eager and torch.compile (bench/run.py's method:
L2 flushed, the stream held, medians of 50 calls, ROUNDS rounds in turn).

    python3 bench/results/experiments/sweep58/fuse_shared.py [ROUNDS]

Fusions: the chains of test/lowering/test_fuse_shared.py (values read twice)
at 6, 12 and 25 steps on 256 MB float32 inputs of rows of 1024 (x in
[-0.1, 0.1) so no step overflows; without the option 25 steps do not compile
for dense rows: ptxas rejects the row kernel's parameters, so only with).
The bench's own fusions are left out: the option changes none of their PTX
but the bfloat16 layer norm's, where two divisions swap places
(sweep57/fuse_shared_ptx.py)."""

import statistics
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "bench"), str(root / "test"), str(root / "test" / "lowering")]
import run as bench  # noqa: E402
import torch  # noqa: E402
from test_fuse_shared import chain  # noqa: E402

import fuser_mlir.lowering.gpu as G  # noqa: E402
from fuser_mlir.errors import CompileError  # noqa: E402

OPTION = " fuse-shared=true"
ON = G.BUFFERS_PIPELINE if OPTION in G.BUFFERS_PIPELINE else G.BUFFERS_PIPELINE.replace("float-extremum=maximumf", "float-extremum=maximumf" + OPTION)
OFF = ON.replace(OPTION, "")
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
N = 256 * bench.MB // 4


def torch_chain(steps):
    def fn(x, b):
        y = x + b
        for k in range(steps):
            y = y * y + torch.sin(y) if k % 2 else torch.tanh(y) - y * 0.5
            if k % 25 == 24:
                y = y - y.amax(dim=1, keepdim=True)
        return y

    return fn


def compiled_under(pipeline, make, inputs, outs):
    """A fusion made by ``make`` and compiled under ``pipeline``, by a first
    call with the given outputs that every later call passes (the executor
    compiles once per argument signature)."""
    G.BUFFERS_PIPELINE = pipeline
    try:
        fd = make()
        fd.execute(inputs, outputs=outs)
        torch.cuda.synchronize()
    finally:
        G.BUFFERS_PIPELINE = ON
    return fd


def compare(label, make, torch_fn, inputs, dtype_name, without=True):
    case = bench.Case(label, None, torch_fn, None)
    outs = [torch.empty_like(torch_fn(*inputs))]
    start = time.perf_counter()
    fds = {"on": compiled_under(ON, make, inputs, outs)}
    print(f"{label}: compiled in {time.perf_counter() - start:.1f} s with the option", flush=True)
    if without:
        try:
            fds["off"] = compiled_under(OFF, make, inputs, outs)
        except CompileError as err:
            print(f"{label}: does not compile without the option: {str(err).splitlines()[0][:200]}", flush=True)
    for fd in fds.values():
        bench.check_correct(fd, case, inputs, dtype_name)
    model_bytes = sum(t.nbytes for t in inputs) + outs[0].nbytes
    src = torch.empty(model_bytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    torch._dynamo.reset()
    compiled = torch.compile(torch_fn, dynamic=False)
    timings = {
        **{k: (lambda fd=fd: fd.execute(inputs, outputs=outs)) for k, fd in fds.items()},
        "copy": lambda: dst.copy_(src),
        "eager": lambda: torch_fn(*inputs),
        "compile": lambda: compiled(*inputs),
    }
    flush = torch.empty(bench.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rounds = [{name: bench.median_ms(fn, 50, 5, flush) for name, fn in timings.items()} for _ in range(ROUNDS)]
    ms = {name: statistics.median(r[name] for r in rounds) for name in timings}
    spread = {k: (min(r["compile"] / r[k] for r in rounds), max(r["compile"] / r[k] for r in rounds)) for k in fds}
    line = "  ".join(f"{k} {v * 1e3:8.1f} us" for k, v in ms.items())
    ratios = "  ".join(
        f"{k}: {ms['copy'] / ms[k]:.3f} of copy, x compile {ms['compile'] / ms[k]:.3f} ({spread[k][0]:.3f}-{spread[k][1]:.3f})" for k in fds
    )
    print(f"{label:24s} {line}\n{'':24s} {ratios}", flush=True)


def main():
    rows = N // 1024
    for steps in (6, 12, 25):
        g = torch.Generator(device="cuda").manual_seed(steps)
        inputs = [torch.rand((rows, 1024), generator=g, device="cuda") * 0.2 - 0.1 for _ in range(2)]
        compare(f"chain{steps} float32", lambda s=steps: chain(s), torch_chain(steps), inputs, "float32", without=steps < 25)


if __name__ == "__main__":
    main()
