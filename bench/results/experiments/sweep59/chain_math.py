"""What torch.compile's kernel of the 6-step chain computes sin and tanh
with, against ours (the 4% gap on compute-bound chains, session 58): the
approximate PTX instructions and libdevice calls in each PTX, counted.

    TRITON_CACHE_DIR=/tmp/tc python3 bench/results/experiments/sweep59/chain_math.py

Run with a fresh TRITON_CACHE_DIR: every .ptx under it is torch.compile's."""

import os
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "test"), str(root / "test" / "lowering"), str(root / "bench" / "results" / "experiments" / "sweep58")]
import torch  # noqa: E402
from fuse_shared import torch_chain  # noqa: E402
from test_fuse_shared import chain  # noqa: E402

PATTERNS = ["sin.approx", "cos.approx", "tanh.approx", "ex2.approx", "lg2.approx", "rcp.approx", "div.full", "div.rn", "fma.rn", "mul.wide"]


def counts(ptx: str) -> str:
    return ", ".join(f"{p} {len(re.findall(re.escape(p), ptx))}" for p in PATTERNS)


x = torch.rand(4096, 1024, device="cuda") * 0.2 - 0.1
b = torch.rand(4096, 1024, device="cuda") * 0.2 - 0.1
torch.compile(torch_chain(6))(x, b)
torch.cuda.synchronize()
for path in sorted(Path(os.environ["TRITON_CACHE_DIR"]).rglob("*.ptx")):
    ptx = path.read_text()
    print(f"torch.compile {path.name}: {len(ptx.splitlines())} lines; {counts(ptx)}")
fd = chain(6)
ptx = fd.compile([x, b]).ptx
print(f"ours: {len(ptx.splitlines())} lines; {counts(ptx)}")
