"""``fuser-lower-to-cpu{fuse-shared=true}``: each elementwise value lowered as
one generic of its whole cone, so that a value read twice is computed once,
in registers, rather than written to a full-size buffer (off by default; the
CPU and GPU pipelines do not ask for it yet).

The chain of bench/results/experiments/sweep57/multi_use_chains.py: over
``x + b``, ``y = tanh(y) - y * 0.5`` and ``y = y * y + sin(y)`` in turn, a row
max taken away every 25 steps. Without the option, six steps run on the GPU
through 5 full-size temporaries, and 50 steps make a row kernel whose
parameters pass PTX ISA 8.0's limit (ptxas rejects it); with it, none. On
the CPU its results match the float64 reference, and six steps are one loop
nest. It stays off on the CPU: there the six steps ran 1.7x slower fused
(8.0 against 4.6 ms on 1024x1024 float32, one thread), and on the GPU it is
not measured yet.
"""

import numpy as np
import pytest
from reference import evaluate

import fuser_mlir.lowering.cpu as cpu
import fuser_mlir.lowering.gpu as gpu
from fuser_mlir import FusionDefinition
from fuser_mlir.compiler import compile_fusion

OPTION = "fuse-shared=true"


def chain(steps: int) -> FusionDefinition:
    with FusionDefinition(name=f"chain{steps}") as fd:
        x = fd.define_tensor(shape=[-1, -1])
        b = fd.define_tensor(shape=[-1, -1])
        y = x + b
        for k in range(steps):
            y = y * y + fd.ops.sin(y) if k % 2 else fd.ops.tanh(y) - y * 0.5
            if k % 25 == 24:
                y = y - fd.ops.max(y, dims=[1], keepdim=True)
        fd.add_output(y)
    return fd


@pytest.fixture
def fused_on_the_cpu(monkeypatch):
    made = cpu.cpu_pipeline
    monkeypatch.setattr(cpu, "cpu_pipeline", lambda *args, **kwargs: made(*args, **kwargs).replace("segments-only=true", f"segments-only=true {OPTION}", 1))
    monkeypatch.setenv("FUSER_CACHE", "0")
    assert OPTION in cpu.cpu_pipeline("")


@pytest.fixture
def fused_on_the_gpu(monkeypatch):
    monkeypatch.setattr(gpu, "BUFFERS_PIPELINE", gpu.BUFFERS_PIPELINE.replace("float-extremum=maximumf", f"float-extremum=maximumf {OPTION}", 1))
    assert OPTION in gpu.BUFFERS_PIPELINE


def llvm_loops(fd, inputs) -> int:
    return fd.compile(inputs).program.llvm_dialect.count("llvm.cond_br")


@pytest.mark.parametrize("steps", [6, 30])
def test_a_chain_of_values_read_twice_runs_right_on_the_cpu(fused_on_the_cpu, steps):
    rng = np.random.default_rng()
    x, b = (rng.standard_normal((37, 101)).astype(np.float32) * 0.1 for _ in range(2))
    entry = [x.copy(), b.copy()]
    fd = chain(steps)
    (expected,) = evaluate(fd, [x, b])
    out = np.full(expected.shape, np.nan, np.float32)
    (got,) = fd.execute([x, b], outputs=[out])
    assert got is out
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(x, entry[0])
    np.testing.assert_array_equal(b, entry[1])


def test_the_cpu_kernel_of_six_steps_is_one_loop_nest(fused_on_the_cpu, monkeypatch):
    x = np.zeros((4, 8), np.float32)
    fused = llvm_loops(chain(6), [x, x])
    monkeypatch.undo()
    monkeypatch.setenv("FUSER_CACHE", "0")
    assert fused < llvm_loops(chain(6), [x, x])


@pytest.mark.parametrize("steps", [6, 50])
def test_a_chain_of_values_read_twice_compiles_for_the_gpu_without_temporaries(fused_on_the_gpu, steps):
    compiled = compile_fusion(chain(steps), device="cuda:0", layouts={"input": [(False, 16)] * 2, "given": {}})
    (program,) = compiled.program.programs.values()
    assert program.temps == []


def test_without_the_option_six_steps_take_temporaries_on_the_gpu():
    """What the option is for (README, the third slow spot)."""
    compiled = compile_fusion(chain(6), device="cuda:0", layouts={"input": [(False, 16)] * 2, "given": {}})
    (program,) = compiled.program.programs.values()
    assert len(program.temps) == 5
