"""``fuser-lower-to-cpu{fuse-shared=true}``: each elementwise value lowered as
one generic of its whole cone, so that a value read twice is computed once,
in registers, rather than written to a full-size buffer. The GPU pipeline
asks for it (gpu.BUFFERS_PIPELINE); the CPU pipeline does not.

The chain of bench/results/experiments/sweep57/multi_use_chains.py: over
``x + b``, ``y = tanh(y) - y * 0.5`` and ``y = y * y + sin(y)`` in turn, a row
max taken away every 25 steps. Without the option, six steps run on the GPU
through 5 full-size temporaries, and 50 steps make a row kernel whose
parameters pass PTX ISA 8.0's limit (ptxas rejects it); with it, one
kernel with no temporaries, and a buffer for each row max's operand. On
the CPU six steps are one loop nest with it; they ran 1.7x slower fused
(8.0 against 4.6 ms on 1024x1024 float32, one thread) until loops of libm
calls were interleaved (3.9 ms both since), and the CPU pipeline leaves it
off for now. Its results match the float64 reference either way.
"""

import numpy as np
import pytest
from devices import assert_unchanged, to_device, to_host
from reference import evaluate

import fuser_mlir.lowering.cpu as cpu
import fuser_mlir.lowering.gpu as gpu
import fuser_mlir.passes.lower_to_cpu as lower_to_cpu
from fuser_mlir import FusionDefinition
from fuser_mlir.compiler import compile_fusion
from fuser_mlir.errors import CompileError

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
def unfused_on_the_gpu(monkeypatch):
    monkeypatch.setattr(gpu, "BUFFERS_PIPELINE", gpu.BUFFERS_PIPELINE.replace(f" {OPTION}", "", 1))
    monkeypatch.setenv("FUSER_CACHE", "0")
    assert OPTION not in gpu.BUFFERS_PIPELINE


def llvm_loops(fd, inputs) -> int:
    return fd.compile(inputs).program.llvm_dialect.count("llvm.cond_br")


def test_the_gpu_pipeline_asks_for_it_and_the_cpu_pipeline_does_not():
    assert OPTION in gpu.BUFFERS_PIPELINE
    assert OPTION not in cpu.cpu_pipeline("")


def check_chain(fd, device, columns=101, padded=101):
    """``fd`` on x and b of 37 rows of ``columns``: views of arrays of
    ``padded`` columns (not dense where those are more), against the
    reference, into a NaN-poisoned output; the inputs left as they were."""
    rng = np.random.default_rng()
    x, b = (rng.standard_normal((37, padded)).astype(np.float32) * 0.1 for _ in range(2))
    entry = [x.copy(), b.copy()]
    (expected,) = evaluate(fd, [x[:, :columns], b[:, :columns]])
    out = to_device(np.full(expected.shape, np.nan, np.float32), device)
    (got,) = fd.execute([to_device(x, device)[:, :columns], to_device(b, device)[:, :columns]], outputs=[out])
    assert got is out
    np.testing.assert_allclose(to_host(got), expected, rtol=1e-4, atol=1e-5)
    assert_unchanged(x, entry[0], "x")
    assert_unchanged(b, entry[1], "b")


def test_a_chain_of_values_read_twice_runs_right(device):
    """On the GPU with the option (the pipeline's own): one kernel."""
    check_chain(chain(6), device)


@pytest.mark.parametrize("steps", [30, 50])
def test_a_chain_with_row_maxes_runs_right(device, steps):
    """Each row max's operand kept in a buffer of its own on the GPU
    (:meth:`_SegmentLowering.keeps`). The inputs are not dense: dense rows
    take 25 launch variants, each holding the chain's cone (at 25 steps a
    compile of 46 s on this project's 2-CPU host, 17 s on the H100 host),
    too slow for the GPU suite."""
    check_chain(chain(steps), device, padded=128)


@pytest.mark.parametrize("steps", [6, 30])
def test_a_chain_of_values_read_twice_runs_right_on_the_cpu_fused(fused_on_the_cpu, steps):
    check_chain(chain(steps), "cpu")


def test_the_cpu_kernel_of_six_steps_is_one_loop_nest(fused_on_the_cpu, monkeypatch):
    x = np.zeros((4, 8), np.float32)
    fused = llvm_loops(chain(6), [x, x])
    monkeypatch.undo()
    monkeypatch.setenv("FUSER_CACHE", "0")
    assert fused < llvm_loops(chain(6), [x, x])


def gpu_temporaries(steps: int) -> list:
    compiled = compile_fusion(chain(steps), device="cuda:0", layouts={"input": [(False, 16)] * 2, "given": {}})
    (program,) = compiled.program.programs.values()
    return program.temps


@pytest.mark.parametrize("steps, row_maxes", [(6, 0), (50, 2)])
def test_a_chain_of_values_read_twice_takes_a_buffer_for_each_row_max_alone_on_the_gpu(steps, row_maxes):
    assert len(gpu_temporaries(steps)) == row_maxes


def test_a_row_max_of_a_small_cone_computes_it_again(monkeypatch):
    """Below SHARE_LIMIT a reduction's operand is computed again by each
    reader, as a softmax's exp(x - max) is."""
    monkeypatch.setattr(lower_to_cpu, "SHARE_LIMIT", 1000)
    assert gpu_temporaries(50) == []


def test_without_the_option_six_steps_take_temporaries_on_the_gpu(unfused_on_the_gpu):
    """What the option is for (README, "Where it stands on the GPU")."""
    assert len(gpu_temporaries(6)) == 5


def test_without_the_option_fifty_steps_pass_the_parameter_limit_on_the_gpu(unfused_on_the_gpu):
    with pytest.raises(CompileError, match="too much parameter space"):
        compile_fusion(chain(50), device="cuda:0", layouts={"input": [(False, 16)] * 2, "given": {}})
