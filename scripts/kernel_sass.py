"""The SASS of the kernels a bench case launches, on a machine without a GPU.

    python3 scripts/kernel_sass.py CASE:DTYPE:HIDDEN [MB] [--setting CODE] [--all]

Compiles bench/run.py's case for sm_90 (PTX needs no GPU; ptxas must be on
PATH), picks in each segment the kernel its launch program chooses for the
bench's inputs of MB megabytes (default 256) on an H200 (132 SMs), and
disassembles it with nvdisasm (on PATH, or the one the nvidia-cuda-nvdisasm
wheel of the ``dev`` extra installs). Prints ptxas's resource line for the
kernel (registers, spills) and the order of its first pass's 16-byte loads
(L) and arithmetic (a) up to the barrier after them (:func:`load_waves`),
then its global and shared memory, barrier and branch instructions in
program order (with ``--all``, every instruction): whether a pass issues its
loads before its stores, or waits for each load between stores, or issues a
row's loads in two waves, shows here before any GPU time is spent (sweeps 29
and 30e in bench/results/h200-sweeps.txt). ``--setting`` runs CODE in the namespace of
fuser_mlir.lowering.gpu_schedule first, as scripts/gpu_schedule_sweep.py's
settings do (scripts/scheduler_settings.py) (``--setting "SHARED_WEIGHT_BYTES = 0"``), for this compile only.
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402
from gpu_profile_case import launches_run  # noqa: E402
from fuser_mlir.compiler import compile_fusion  # noqa: E402
from scheduler_settings import applied, case_arguments  # noqa: E402

H200_SMS = 132
#: What the default listing keeps: global and shared loads and stores, bulk
#: copies and mbarrier waits, barriers, prefetches, branches and exits.
SHOWN = re.compile(r"\b(LDG|STG|LDS|STS|LDGSTS|UBLKCP|SYNCS|BAR|CCTL|BRA|EXIT|CALL|RED|ATOM)\b")
ITEMSIZE = {"float32": 4, "bfloat16": 2}


def nvdisasm() -> str:
    """nvdisasm's path: on PATH, else the nvidia-cuda-nvdisasm wheel's."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        nvidia = None
    wheel = next((p for root in getattr(nvidia, "__path__", []) for p in sorted(Path(root).glob("cu*/bin/nvdisasm"))), None)
    if wheel is not None:
        return str(wheel)
    raise SystemExit("nvdisasm not found: install the dev extra (pip install -e '.[dev]': nvidia-cuda-nvdisasm) or put it on PATH")


def chosen_launches(compiled, input_shapes: list, sms: int = H200_SMS) -> list[tuple[object, list]]:
    """(launch, its arguments' shapes) of each launch each step's launch program picks for inputs of ``input_shapes``."""
    plan, chosen = compiled.plan, []
    for step in plan.steps:
        shapes = [plan.buffer(b).shape_for(input_shapes) for kind, b in step.args if kind == "buffer"]
        chosen += [(launch, shapes) for launch in launches_run(compiled.program.programs[step.kernel], shapes, sms)]
    return chosen


def chosen_kernels(compiled, input_shapes: list, sms: int = H200_SMS) -> list[str]:
    """The kernel each step's launch program picks for inputs of ``input_shapes``."""
    return [launch.kernel for launch, _ in chosen_launches(compiled, input_shapes, sms)]


def kernel_section(sass: str, kernel: str) -> list[str]:
    """The lines of ``kernel``'s ``.text`` section in nvdisasm's output."""
    lines, inside = [], False
    for line in sass.splitlines():
        if line.startswith("\t.section\t.text."):
            inside = line.split(",")[0] == f"\t.section\t.text.{kernel}"
        if inside:
            lines.append(line)
    if not lines:
        raise ValueError(f"no .text section for {kernel} in the disassembly")
    return lines


def instructions(section: list[str], everything: bool = False) -> list[str]:
    """``/*offset*/ instruction`` of the section's instructions (all, or those :data:`SHOWN` matches)."""
    found = []
    for line in section:
        match = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*(?:/\*\s*0x[0-9a-f]+\s*\*/)?\s*$", line)
        if match and (everything or SHOWN.search(match.group(2))):
            found.append(f"/*{match.group(1)}*/ {' '.join(match.group(2).rstrip(' ;').split())}")
    return found


#: Floating-point arithmetic (float32, and packed 16-bit pairs), predicated or not.
ARITHMETIC = re.compile(r"^(@!?U?P\w+\s+)?(FFMA|FMUL|FADD|HFMA2|HMUL2|HADD2)\b")
#: A 16-byte global load (through the non-coherent cache too).
WIDE_LOAD = re.compile(r"\bLDG\.E\.128\b")


def load_waves(listing: list[str]) -> str:
    """The order of the 16-byte global loads (``L``) and arithmetic (``a``,
    a run of it as one) of a listing of :func:`instructions`, from its first
    such load to the barrier after it: ``LLLLLLLLa`` where a row's 8 loads
    are in flight together, ``LLLLaLLLLa`` where ptxas issues 4 of them after
    arithmetic that waits for the first ones (a second round trip a row;
    sweep 30e). Empty where the kernel has no such load."""
    order = ""
    for line in listing:
        op = line.split("*/ ", 1)[1]
        if WIDE_LOAD.search(op):
            order += "L"
        elif not order:
            continue
        elif op.startswith("BAR.SYNC"):
            break
        elif ARITHMETIC.match(op) and not order.endswith("a"):
            order += "a"
    return order


def resources(ptxas_log: str, kernel: str) -> str:
    """ptxas -v's lines about ``kernel``: its stack and spills, then its registers."""
    lines = ptxas_log.splitlines()
    for i, line in enumerate(lines):
        if f"Compiling entry function '{kernel}'" in line:
            return " | ".join(" ".join(l.split("ptxas info    :")[-1].split()) for l in lines[i + 2 : i + 4])
    raise ValueError(f"ptxas said nothing of {kernel}")


def main(spec: str, megabytes: int = 256, setting: str = "", everything: bool = False) -> None:
    name, dtype, hidden = spec.split(":")
    cases = {c.name: c for c in bench.CASES}
    if name not in cases or dtype not in ITEMSIZE or not hidden.isdigit():
        raise SystemExit(f"CASE:DTYPE:HIDDEN is one of {', '.join(cases)} : float32 or bfloat16 : a row length, not {spec!r}")
    if shutil.which("ptxas") is None:
        raise SystemExit("ptxas is not on PATH (it comes with the cuda extra's nvidia-cuda-nvcc-cu12, or a CUDA toolkit)")
    case = cases[name]
    input_shapes = case.shapes((megabytes << 20) // ITEMSIZE[dtype], int(hidden))
    fd = bench.fusion_for(case, dtype)
    layouts = {"input": [(True, 16)] * len(input_shapes), "given": {0: (True, 16)}}  # the bench's dense, aligned tensors
    with applied(setting):
        compiled = compile_fusion(fd, given_outputs=(True,), device="cuda:0", layouts=layouts)
    tool = nvdisasm()
    with tempfile.TemporaryDirectory() as scratch:
        ptx, cubin = Path(scratch) / "kernels.ptx", Path(scratch) / "kernels.cubin"
        ptx.write_text(compiled.program.ptx)
        log = subprocess.run(["ptxas", f"-arch={compiled.program.arch}", "-v", str(ptx), "-o", str(cubin)], capture_output=True, text=True, check=True).stderr
        sass = subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    for kernel in chosen_kernels(compiled, input_shapes):
        section = kernel_section(sass, kernel)
        print(f"{kernel} ({spec}, {megabytes} MB): {resources(log, kernel)} | loads to the first barrier: {load_waves(instructions(section, True))}")
        for line in instructions(section, everything):
            print("  " + line)


def parse_args(argv: list[str]) -> tuple[str, int, str, bool]:
    """(CASE:DTYPE:HIDDEN, MB, --setting's code, --all) from the command line."""
    args = [a for a in argv if a != "--all"]
    return (*case_arguments(args, __doc__), len(args) < len(argv))


if __name__ == "__main__":
    main(*parse_args(sys.argv[1:]))
