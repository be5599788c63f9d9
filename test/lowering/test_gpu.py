"""GPU lowering without a GPU: segments become PTX that ptxas accepts, and a
host program that the JIT links against the CUDA runtime callbacks."""

import shutil
import subprocess

import pytest

from fuser_mlir import CompileError, DataType, FusionDefinition, config
from fuser_mlir._mlir import ir
from fuser_mlir.dialect import make_context
from fuser_mlir.lowering.gpu import compile_gpu, lower_to_gpu, ptx_of
from fuser_mlir.pipeline import run_pipeline


def outlined(fd):
    context = make_context()
    with context, ir.Location.unknown():
        module = fd.build_module(context)
        run_pipeline(module, "fuser-verify,fuser-segment,fuser-resolve-alias-hazards,fuser-outline-segments")
    return context, module


def softmax_bf16():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(x - m)
        fd.add_output(e / fd.ops.sum(e, dims=[1], keepdim=True))
    return fd


def mixed_math():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[1, -1, 1], dtype=DataType.Double)
        t = fd.ops.erf(x) * fd.ops.tanh(y) + fd.ops.expm1(x)
        fd.add_output(fd.ops.sum(t, dims=[0, 2]))
        fd.add_output(fd.ops.where(x > 0.0, fd.ops.log1p(fd.ops.abs(x)), x))
    return fd


CASES = {"softmax_bf16": softmax_bf16, "mixed_math": mixed_math}


def test_math_without_libdevice_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr("fuser_mlir.lowering.gpu.config.libdevice_path", lambda: None)
    context, module = outlined(mixed_math())
    with context, ir.Location.unknown(), pytest.raises(CompileError, match=r"the kernels call libdevice math functions \(__nv_erff, .*\), but libdevice was not found"):
        lower_to_gpu(module, "sm_90")


@pytest.mark.parametrize("case", sorted(CASES))
def test_segments_lower_to_ptx_that_ptxas_accepts(case, tmp_path):
    if config.libdevice_path() is None:
        pytest.skip("no libdevice here (no CUDA toolkit); the error case is tested above")
    context, module = outlined(CASES[case]())
    with context, ir.Location.unknown():
        lowered, kinds, arch = lower_to_gpu(module, "sm_90")
        ptx = ptx_of(lowered)
    assert arch == "sm_90" and kinds
    assert ptx, "no gpu.binary in the lowered module"
    for name, text in ptx.items():
        assert ".target sm_90" in text
        assert ".entry" in text
        assert ".extern .func" not in text, f"{name} calls a function that is not linked in (libdevice missing?)"
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return
    for name, text in ptx.items():
        path = tmp_path / f"{name}.ptx"
        path.write_text(text)
        result = subprocess.run([ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"{name}.cubin")], capture_output=True, text=True)
        assert result.returncode == 0, f"ptxas rejected {name}: {result.stderr}"


def test_host_code_links_against_the_runtime_callbacks_without_a_gpu():
    context, module = outlined(softmax_bf16())
    with context, ir.Location.unknown():
        program = compile_gpu(module, arch="sm_90")
    assert sorted(program.kernels) == [f"fusion_seg{i}" for i in range(len(program.kernels))]
    # intermediates inside a segment are stream-ordered device allocations
    assert "gpu.binary" in program.ptx_module


def test_loop_nests_are_collapsed_to_one_dimensional_grids():
    context, module = outlined(mixed_math())
    with context, ir.Location.unknown():
        lowered, _, _ = lower_to_gpu(module, "sm_90")
        text = str(lowered)
    launches = [line for line in text.splitlines() if "gpu.launch_func" in line]
    assert launches
    for line in launches:
        blocks = line.split("blocks in (")[1].split(")")[0].split(", ")
        threads = line.split("threads in (")[1].split(")")[0].split(", ")
        assert blocks[1] == blocks[2] == threads[1] == threads[2], line  # y and z are 1
