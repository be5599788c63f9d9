"""Run one test-suite fusion on the GPU, for debugging: python3 scripts/gpu_debug_case.py"""
import sys

import numpy as np
import torch

sys.path.insert(0, "test")
import test_segmentation as ts  # noqa: E402

for cut in (False, True):
    fd = ts.softmax(cut)
    x = torch.randn(19, 40, device="cuda")
    compiled = fd.compile([x])
    print("cut", cut, "segments", compiled.num_segments, flush=True)
    (out,) = fd.execute([x])
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), 1)
    print("err", (out.double() - ref).abs().max().item(), flush=True)
