"""Host CPU time of a torch CUDA allocation each way (sweep 53): torch.empty_strided (what replays called) and
torch.compile's allocator (torch._C._dynamo.guards._empty_strided_cuda, what they call now where the fusion's
device is current), with the current-device check the replay makes. python3 bench/results/experiments/sweep53/alloc_probe.py"""
import sys

import torch

sys.path.insert(0, "bench")
from run import host_us_per_call  # noqa: E402

from fuser_mlir.runtime import cuda  # noqa: E402

fast, current = cuda._torch_fast_empty(torch)
where = torch.device("cuda", 0)
rows = {
    "torch.empty_strided((8,), (1,), dtype=, device=)": lambda: torch.empty_strided((8,), (1,), dtype=torch.float32, device=where),
    "_empty_strided_cuda((8,), (1,), dtype)": lambda: fast((8,), (1,), torch.float32),
    "the replay's expression (current device checked)": lambda: fast((8,), (1,), torch.float32) if current() == 0 else None,
}
for label, fn in rows.items():
    host = host_us_per_call(fn, 1000, 50, sync=torch.cuda.synchronize)
    print(f"{label:<52} {host['cpu_us']:6.2f} us CPU per call")
