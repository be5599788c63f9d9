"""Where the 4.4 us of our cuLaunchKernel go, against torch's whole eager op (6.6 us with its allocation):
python3 bench/results/experiments/sweep53/launch_probe.py (on the GPU host, from the repository root).

Each row: CPU us per call (bench/run.py's host_us_per_call: 200 batches of 100 calls, synchronised between
batches), for one launch of the pointwise fusion's kernel (bench/run.py's pointwise case, 64K float32 elements,
output given) made in different ways."""
import ctypes
import sys

import torch

sys.path.insert(0, "bench")
import run as bench  # noqa: E402
from fuser_mlir.runtime import cuda  # noqa: E402


def per_call(label, fn, expect=0):
    """Time ``fn``; its answer must be ``expect`` (CUresult 0: launched) where it answers an int."""
    try:
        for _ in range(200):
            answer = fn()
        code = answer[0] if isinstance(answer, tuple) else answer
        if isinstance(code, int) or hasattr(code, "value"):
            code = int(getattr(code, "value", code))
            if code != expect:
                print(f"{label:<64} answered {code}, not {expect}: not timed", flush=True)
                return
        host = bench.host_us_per_call(fn, 100, 200, sync=torch.cuda.synchronize)
        print(f"{label:<64} {host['cpu_us']:8.2f} us CPU {host['wall_us']:8.2f} us wall", flush=True)
    except Exception as error:  # a variant this host cannot run: say why, go on
        print(f"{label:<64} failed: {type(error).__name__}: {error}", flush=True)


case = {c.name: c for c in bench.CASES}["pointwise"]
fd = bench.fusion_for(case, "float32")
inputs = bench.random_inputs(case, torch.float32, 1 << 16, seed=0, hidden=256)
outs = [torch.empty_like(case.torch_fn(*inputs))]
fd.execute(inputs, outputs=outs)
fd.execute(inputs, outputs=outs)
entry, args, given, pointers = fd._executor_cache()._hits.lookup(inputs, outs)
launch = entry.replay.trace.launches[0]
print(f"-- {len(launch.slots)} parameter slots, grid {launch.grid}, block {launch.block}, shared {launch.shared}")
handle, params = ctypes.c_void_p(launch.handle), ctypes.c_void_p(launch.params)
zero = ctypes.c_void_p(0)
gx, gy, gz = launch.grid
bx, by, bz = launch.block
raw = launch.raw
per_call("fd.execute hit (output given)", lambda: fd.execute(inputs, outputs=outs))
per_call("ctypes cuLaunchKernel, stream 0 (shipped)", lambda: raw(handle, gx, gy, gz, bx, by, bz, launch.shared, zero, params, None))
per_call("ctypes cuLaunchKernel, grid 0 (refused: entry cost)", lambda: raw(handle, 0, gy, gz, bx, by, bz, launch.shared, zero, params, None), expect=1)
side = torch.cuda.Stream()
side_handle = ctypes.c_void_p(side.cuda_stream)
per_call("ctypes cuLaunchKernel, a created stream", lambda: raw(handle, gx, gy, gz, bx, by, bz, launch.shared, side_handle, params, None))
libcuda = ctypes.CDLL("libcuda.so.1")
get_current = libcuda.cuCtxGetCurrent
context = ctypes.c_void_p()
ref = ctypes.byref(context)
per_call("ctypes cuCtxGetCurrent (ctypes + driver entry)", lambda: get_current(ref))
per_call("ctypes cuDriverGetVersion (a one-argument call)", lambda: libcuda.cuDriverGetVersion(ref))
try:
    ptsz = libcuda["cuLaunchKernel_ptsz"]
    ptsz.restype = ctypes.c_int
    per_call("ctypes cuLaunchKernel_ptsz, stream 0", lambda: ptsz(handle, gx, gy, gz, bx, by, bz, launch.shared, zero, params, None))
except AttributeError as error:
    print("no cuLaunchKernel_ptsz:", error)
# the entry point cuGetProcAddress gives (what the runtime API and cuda-python call)
pfn = ctypes.c_void_p()
status = ctypes.c_int()
get_proc = libcuda.cuGetProcAddress_v2
get_proc.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
code = get_proc(b"cuLaunchKernel", ctypes.byref(pfn), 12000, 0, ctypes.byref(status))
print(f"cuGetProcAddress_v2(cuLaunchKernel): {code}, status {status.value}, {pfn.value:#x} against the symbol {ctypes.cast(libcuda.cuLaunchKernel, ctypes.c_void_p).value:#x}")
if code == 0 and pfn.value:
    proc = ctypes.CFUNCTYPE(ctypes.c_int)(pfn.value)
    per_call("ctypes, cuGetProcAddress's cuLaunchKernel (no argtypes)", lambda: proc(handle, gx, gy, gz, bx, by, bz, launch.shared, zero, params, None))
typed = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3))(ctypes.cast(libcuda.cuLaunchKernel, ctypes.c_void_p).value)
h, p = launch.handle, launch.params
per_call("ctypes prototype with argtypes, plain ints", lambda: typed(h, gx, gy, gz, bx, by, bz, launch.shared, 0, p, None))
# the packed form: one buffer, CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE
try:
    from cuda.bindings import driver

    print("cuda-bindings", getattr(driver, "__version__", "?"), [n for n in dir(driver) if "aunchKernel" in n])
    f = driver.CUfunction(launch.handle)
    s0 = driver.CUstream(0)
    per_call("cuda-python driver.cuLaunchKernel, params as an address", lambda: driver.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, launch.shared, s0, p, 0))
except Exception as error:
    print("cuda-python variant:", type(error).__name__, error)
x, y = inputs[0], inputs[1]
z = outs[0]
per_call("torch.add(x, y, out=z) (one torch kernel, no allocation)", lambda: torch.add(x, y, out=z))
per_call("torch x + y (one torch kernel and its allocation)", lambda: x + y)
per_call("torch.empty_strided", lambda: torch.empty_strided((65536,), (1,), dtype=torch.float32, device="cuda"))
