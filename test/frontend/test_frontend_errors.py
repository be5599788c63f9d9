"""Every DefinitionError the frontend raises: triggered, and its message checked."""

import re
from pathlib import Path

import numpy as np
import pytest
from devices import subprocess_env

from fuser_mlir import FusionExecutorCache
from fuser_mlir.errors import DefinitionError, InputError
from fuser_mlir.frontend import DataType, FusionDefinition

ROOT = Path(__file__).resolve().parents[2]


def raises(message: str):
    return pytest.raises(DefinitionError, match=re.escape(message))


def defined():
    with FusionDefinition("f") as fd:
        t = fd.define_tensor([-1, -1])
        fd.add_output(t)
    return fd, t


# -- the with block ----------------------------------------------------------------


def test_ops_after_the_with_block():
    fd, t = defined()
    with raises("fd.ops.exp called after the `with FusionDefinition() as fd:` block of 'f'; define inputs, ops and outputs inside the block"):
        fd.ops.exp(t)
    with raises("fd.ops.add called after the `with"):
        t + 1.0
    with raises("fd.add_output called after"):
        fd.add_output(t)


def test_ops_before_the_with_block():
    fd = FusionDefinition("g")
    with raises("fd.define_tensor called before the `with FusionDefinition() as fd:` block of 'g'"):
        fd.define_tensor([-1])


def test_a_definition_is_entered_once():
    fd, _ = defined()
    with raises("FusionDefinition 'f' was already defined; create a new FusionDefinition for a new fusion"):
        with fd:
            pass


def test_execute_inside_the_block():
    with FusionDefinition() as fd:
        with raises("fd.execute called inside the `with` block of 'fusion'; run the fusion after the block ends"):
            fd.execute([])


def test_an_executor_runs_a_fusion_only_after_its_block_ended_normally():
    """A FusionExecutorCache made inside the block ran the part defined so
    far, and kept those kernels after more outputs (an in-place one too) were
    added: the input was silently not updated."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=DataType.Float)
        with raises("FusionExecutorCache called inside the `with` block of 'fusion'; run the fusion after the block ends"):
            FusionExecutorCache(fd)
        fd.add_output(x * 2.0, x)
    with raises("FusionExecutorCache called before the `with` block of 'g'; define the fusion in `with fd:` first"):
        FusionExecutorCache(FusionDefinition("g"))
    with raises("fd.execute called before the `with` block of 'g'"):
        FusionDefinition("g").execute([np.zeros(3)])
    data = np.arange(4, dtype=np.float32)
    FusionExecutorCache(fd).run([data])
    np.testing.assert_array_equal(data, [0, 2, 4, 6])


def test_a_block_that_raised_leaves_a_definition_that_refuses_to_run():
    fd = FusionDefinition("partial")
    with pytest.raises(KeyError):
        with fd:
            x = fd.define_tensor([-1], dtype=DataType.Float)
            fd.add_output(x + 1.0)
            raise KeyError("a bug before the second output")
    message = "the `with` block of 'partial' ended with KeyError: 'a bug before the second output', so the definition is incomplete"
    for run in (lambda: fd.execute([np.zeros(3, np.float32)]), lambda: fd.compile([np.zeros(3, np.float32)]), lambda: FusionExecutorCache(fd)):
        with raises(message):
            run()


def test_a_failed_op_binds_no_sizes():
    """broadcast_in_dim bound dim after dim: a call that failed at its second
    dim left the first bound, and a later valid call conflicted with it."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        square = x + fd.ops.permute(x, [1, 0])  # both dims one size
        with raises("fd.ops.broadcast_in_dim: shape[1] is 5, but operand dim 1 is bound to size 4"):
            fd.ops.broadcast_in_dim(square, [4, 5], [0, 1])
        other = fd.define_tensor([3, 7], dtype=DataType.Float)
        with raises("fd.add_output: the output has shape [-1, -1], but alias input 1 has shape [3, 7]; dim 1 is bound"):
            fd.add_output(square, other)  # binds dim 0 to 3, then fails at dim 1
        fd.add_output(fd.ops.broadcast_in_dim(square, [5, 5], [0, 1]))
    a = np.arange(25, dtype=np.float32).reshape(5, 5)
    (out,) = fd.execute([a, np.zeros((3, 7), np.float32)])
    np.testing.assert_array_equal(out, a + a.T)


def test_a_copy_or_pickle_of_a_definition_that_ran_runs_too():
    import copy
    import pickle

    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
    data = np.linspace(-1, 1, 5, dtype=np.float32)
    fd.execute([data])  # its executor holds locks and compiled code, which neither copies
    for other in (copy.deepcopy(fd), pickle.loads(pickle.dumps(fd))):
        (out,) = other.execute([data])
        np.testing.assert_allclose(out, np.exp(data.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("name", ["layer-norm v2", "model@v2", "a\x00b", "2d", "x/y"])
def test_any_name_compiles_to_plain_symbols(name):
    """A space in the name aborted the process in LLVM's NVPTX backend, '@'
    failed the CPU link (a symbol version), NUL aborted it."""
    import subprocess
    import sys

    code = f"""
import numpy as np
from fuser_mlir import DataType, FusionDefinition
from fuser_mlir.compiler import compile_fusion
with FusionDefinition({name!r}) as fd:
    x = fd.define_tensor([-1, -1], dtype=DataType.Float)
    fd.add_output(fd.ops.exp(x) + 1.0)
compiled = compile_fusion(fd, device="cuda:0")  # PTX, without a GPU (and ptxas checks it where it is installed)
assert all(k.startswith(fd.symbol + "_seg") for k in compiled.kernels), list(compiled.kernels)
(out,) = fd.execute([np.zeros((2, 3), np.float32)])
assert np.allclose(out, 2.0) and fd.compile([np.zeros((2, 3), np.float32)]).name == {name!r}
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(ROOT, FUSER_CACHE="0"))
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_fusion_without_outputs_is_rejected_before_compiling():
    """It used to reach the JIT with no kernel, whose object dump aborted
    the process (an MLIR assertion)."""
    with FusionDefinition("empty") as fd:
        fd.define_tensor([-1])
    message = "fusion 'empty' has no outputs, so it computes nothing; add one with fd.add_output(value) in its `with` block"
    for attempt in (fd.execute, fd.compile, fd.execute):  # and again: nothing was cached
        with raises(message):
            attempt([np.ones(3, np.float32)])


def test_a_handle_has_no_truth_value():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1])
        with raises("has no truth value while the fusion is being defined; use fd.ops.where(cond, a, b)"):
            if t > 0:
                pass


def test_name_must_be_a_string():
    with raises("FusionDefinition: name must be a non-empty string, got 3"):
        FusionDefinition(3)


# -- operands ------------------------------------------------------------------------


def test_a_handle_from_another_fusion():
    _, other = defined()
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1])
        with raises("fd.ops.add: operand 1 belongs to another FusionDefinition ('f', defined at test_frontend_errors.py:"):
            fd.ops.add(t, other)
        with raises("use values defined in this fusion"):
            t * other


def test_an_operand_that_is_not_a_value():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1])
        with raises("fd.ops.mul: operand 1 must be a Tensor or Scalar of this fusion or a Python number, got ndarray; define it with fd.define_tensor or fd.define_scalar"):
            fd.ops.mul(t, np.ones(3))
        with raises("fd.ops.sum: operand 0 must be a Tensor of this fusion, got a Scalar"):
            fd.ops.sum(fd.define_scalar(), dims=[0])


def test_dtype_must_be_a_datatype():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1])
        with raises("fd.ops.cast: dtype must be a DataType (e.g. DataType.Float), got 'float99'"):
            fd.ops.cast(t, "float99")
        with raises("fd.define_tensor: dtype must be a DataType"):
            fd.define_tensor([-1], dtype=object)


def test_ops_pytorch_rejects_for_the_dtype():
    with FusionDefinition() as fd:
        f = fd.define_tensor([-1])
        b = fd.define_tensor([-1], dtype=DataType.Bool)
        with raises("fd.ops.bitwise_and: needs integer or Bool operands, got Float; cast them with fd.ops.cast(t, DataType.Int)"):
            f & f
        with raises("fd.ops.sub: is not defined on Bool operands (as in PyTorch); use fd.ops.bitwise_xor for Bools"):
            b - b
        with raises("fd.ops.neg: is not defined on Bool operands (as in PyTorch); use fd.ops.logical_not for Bools"):
            -b


# -- inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape, message", [
    ([-1, 0], "fd.define_tensor: shape[1] is 0; sizes are -1 (symbolic), 1 (broadcast dim) or a static size > 1"),
    ([-2], "shape[0] is -2"),
    ([1.5], "shape[0] is 1.5"),
    (4, "fd.define_tensor: shape must be a list of ints (-1 symbolic, 1 broadcast, N static), got 4"),
])
def test_bad_tensor_shapes(shape, message):
    with FusionDefinition() as fd:
        with raises(message):
            fd.define_tensor(shape)


def test_bad_contiguity_and_stride_order():
    with FusionDefinition() as fd:
        with raises("fd.define_tensor: contiguity has 1 entry, but shape [-1, -1] has 2 dims; give one per dim (None for broadcast dims)"):
            fd.define_tensor([-1, -1], contiguity=[True])
        with raises("fd.define_tensor: contiguity[1] is None, but dim 1 has size -1, not a broadcast dim; pass True or False"):
            fd.define_tensor([-1, -1], contiguity=[True, None])
        with raises("contiguity[0] is None, but dim 1 (entry 0 in allocation order) has size 4"):
            fd.define_tensor([-1, 4], contiguity=[None, True], stride_order=[0, 1])
        with raises("fd.define_tensor: stride_order [0, 0] must be a permutation of 0..1 (0 = the fastest dim)"):
            fd.define_tensor([-1, -1], stride_order=[0, 0])


def test_bad_scalars():
    with FusionDefinition() as fd:
        with raises("fd.define_scalar: value must be a Python number (or None for a runtime input), got 'x'"):
            fd.define_scalar("x")
        with pytest.raises(DefinitionError, match=r"the constant 2\.5 at test_frontend_errors\.py:\d+ is not an integer, so it cannot be Int; pass an int"):
            fd.define_scalar(2.5, dtype=DataType.Int)
        with raises("does not fit in Int32"):
            fd.define_scalar(2**32, dtype=DataType.Int32)
        t = fd.define_tensor([-1], dtype=DataType.Int32)
        with pytest.raises(DefinitionError, match=r"the constant 1099511627776 at test_frontend_errors\.py:\d+ does not fit in Int32 \(-2147483648 to"):
            t + 2**40  # a literal must fit the type it promotes to (torch raises too)
        with pytest.raises(DefinitionError, match=r"the cast at test_frontend_errors\.py:\d+ of the constant nan to Int has no defined value"):
            fd.ops.cast(float("nan"), DataType.Int)
        with raises("of the constant 3000000000.0 to Int32 has no defined value (Int32 holds -2147483648 to 2147483647)"):
            fd.ops.cast(fd.define_scalar(3e9), DataType.Int32)
        with raises("fd.ops.broadcast: is_broadcast_dim must be a list of bools, one per result dim, got 3"):
            fd.ops.broadcast(t, 3)
        assert fd.ops.broadcast(t, np.array([True, False])).shape == (1, -1)  # a NumPy array of bools is a list of them
        with raises("broadcast_dims [0, 1] must be increasing and within the result rank 1 (shape [5])"):
            fd.ops.broadcast_in_dim(fd.define_tensor([-1, -1]), 5, [0, 1])


# -- outputs --------------------------------------------------------------------------


def test_outputs_must_be_tensors_of_this_fusion():
    _, other = defined()
    with FusionDefinition() as fd:
        s = fd.define_scalar()
        with raises("fd.add_output: the output is a Scalar, but fusion outputs are tensors; make it one with fd.ops.broadcast_in_dim(s, shape=[1], broadcast_dims=[])"):
            fd.add_output(s)
        with raises("fd.add_output: the output must be a Tensor of this fusion (from fd.define_tensor or fd.ops), got ndarray"):
            fd.add_output(np.zeros(3))
        with raises("fd.add_output: the output belongs to another FusionDefinition ('f'"):
            fd.add_output(other)


def test_alias_errors():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        h = fd.define_tensor([-1, -1], dtype=DataType.Half)
        b = fd.define_tensor([-1, 1])
        s4 = fd.define_tensor([-1, 4])
        s = fd.define_scalar()
        y = fd.ops.exp(x)
        with raises("fd.add_output: alias_input must be an input of this fusion (from fd.define_tensor), but it is the result of an op defined at test_frontend_errors.py:"):
            fd.add_output(x, alias_input=y)
        with raises("fd.add_output: alias_input must be a tensor input of this fusion (from fd.define_tensor), got a Scalar"):
            fd.add_output(y, alias_input=s)
        with raises("fd.add_output: the output has dtype Float, but alias input 1 has Half; cast it first with fd.ops.cast(t, DataType.Half)"):
            fd.add_output(y, alias_input=h)
        with raises("fd.add_output: the output has shape [-1, -1], but alias input 2 has shape [-1, 1]; dim 1 is a broadcast dim (size 1) in only one of them"):
            fd.add_output(y, alias_input=b)
        with raises("fd.add_output: the output has shape [-1], but alias input 0 has shape [-1, -1]; an in-place output must have its input's shape"):
            fd.add_output(fd.ops.sum(y, [0]), alias_input=x)
        with raises("fd.add_output: the output has shape [-1, 3], but alias input 3 has shape [-1, 4]; dim 1 differs"):
            fd.add_output(fd.ops.broadcast_in_dim(fd.define_tensor([-1, 1]), [-1, 3], [0, 1]), alias_input=s4)
        fd.add_output(y, alias_input=x)
        with raises("fd.add_output: input 0 already receives output 0; an input buffer holds one output, so alias another input or add a plain output"):
            fd.add_output(y * 2, x)


# -- dims and shapes ------------------------------------------------------------------


def test_reduction_dims():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1])
        with raises("fd.ops.sum: dims entry 2 is out of range for a tensor of rank 2 (valid: -2 to 1)"):
            fd.ops.sum(t, dims=[2])
        with raises("fd.ops.max: dims names dim 1 twice ([1, -1])"):
            fd.ops.max(t, dims=[1, -1])
        with raises("fd.ops.prod: dims is empty; pass dims=None to reduce every dim"):
            fd.ops.prod(t, dims=[])
        with raises("fd.ops.mean: dims must be a list of ints, got ['a']"):
            fd.ops.mean(t, dims=["a"])
        with raises("fd.ops.mean: dtype must be a floating-point DataType, got Int"):
            fd.ops.mean(t, dims=[0], dtype=DataType.Int)
        with raises("fd.ops.var_mean: correction must be a number, got 'x'"):
            fd.ops.var_mean(t, dims=[0], correction="x")
        with raises("fd.ops.var_mean: the operand is 0-d; there is no dim to compute a variance over"):
            fd.ops.var_mean(fd.ops.sum(t), dims=None)


def test_permute_dims():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1, -1])
        with raises("fd.ops.permute: dims [0, 1] is not a permutation of the operand's 3 dims"):
            fd.ops.permute(t, [0, 1])
        with raises("fd.ops.permute: dims entry 3 is out of range"):
            fd.ops.permute(t, [0, 1, 3])


def test_broadcast_in_dim_arguments():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 1])
        s = fd.define_tensor([-1, 4])
        bid = fd.ops.broadcast_in_dim
        with raises("fd.ops.broadcast_in_dim: broadcast_dims has 1 entry, but the operand has rank 2; give one result dim per operand dim"):
            bid(t, [-1, 3, 2], [0])
        with raises("fd.ops.broadcast_in_dim: broadcast_dims [1, 0] must be increasing and within the result rank 3"):
            bid(t, [-1, 3, 2], [1, 0])
        with raises("fd.ops.broadcast_in_dim: result dim 2 is new (not in broadcast_dims), so shape[2] must be a static size (1 for a broadcast dim), not -1"):
            bid(t, [-1, 3, -1], [0, 1])
        with raises("fd.ops.broadcast_in_dim: shape[0] is 1, but operand dim 0 (size -1) is not a broadcast dim; pass -1 to keep its size"):
            bid(t, [1, 3], [0, 1])
        with raises("fd.ops.broadcast_in_dim: shape[1] is 5, but operand dim 1 has the static size 4"):
            bid(s, [-1, 5], [0, 1])
        with raises("fd.ops.broadcast_in_dim: shape[1] is 0; sizes are -1 (keep the operand's size) or positive"):
            bid(s, [-1, 0], [0, 1])
        wide = bid(t, [3, 1], [0, 1])  # binds dim 0 of t to 3
        with raises("fd.ops.broadcast_in_dim: shape[0] is 5, but operand dim 0 is bound to size 3"):
            bid(t, [5, 1], [0, 1])
        assert wide.shape == (-1, 1)
        with raises("fd.ops.broadcast: is_broadcast_dim has 1 False entries, but the operand has rank 2; mark each operand dim False"):
            fd.ops.broadcast(t, [True, False])


def test_reshape_arguments():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 4])
        u = fd.define_tensor([2, 3])
        with raises("fd.ops.reshape: new_shape [-1, -1] has more than one -1; only one size can be inferred"):
            fd.ops.reshape(t, [-1, -1])
        with raises("fd.ops.reshape: new_shape[1] is 0; sizes are positive, or -1 once for an inferred size"):
            fd.ops.reshape(t, [4, 0])
        with raises("fd.ops.reshape: cannot reshape [2, 3] (6 elements) into [4, -1]"):
            fd.ops.reshape(u, [4, -1])
        with raises("fd.ops.reshape: cannot reshape [2, 3] (6 elements) into [7]"):
            fd.ops.reshape(u, [7])


def test_shapes_that_cannot_broadcast():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4])
        b = fd.define_tensor([5])
        c = fd.define_tensor([-1, 3])
        with raises("fd.ops.add: shapes cannot broadcast (operand 0 [4], operand 1 [5]): at dim -1 (counting from the end) operand 0 has size 4 there and operand 1 has 5; sizes must match or be 1 (a broadcast dim)"):
            a + b
        bound = fd.ops.broadcast_in_dim(fd.define_tensor([-1]), [4], [0])  # binds that input to 4
        with raises("fd.ops.where: shapes cannot broadcast (operand 1 [-1], operand 2 [5]): at dim -1 (counting from the end) operand 1 is bound to size 4 there and operand 2 to 5"):
            fd.ops.where(True, fd.ops.set(bound), b)
        with raises("fd.ops.mul: shapes cannot broadcast (operand 0 [-1, 3], operand 1 [4])"):
            c * a


def test_given_outputs_must_match_the_visible_outputs():
    fd, _ = defined()
    with pytest.raises(InputError, match=re.escape("given_outputs has 2 entries, but fusion 'f' has 1 visible output; give one bool per visible output")):
        fd.fusion_ir((True, False))


def test_the_error_and_warning_classes_are_names_of_the_package():
    # The README names them as fuser_mlir.ConfigWarning and the like; they were reachable only through fuser_mlir.errors.
    import fuser_mlir
    from fuser_mlir import errors

    for name in ("FuserError", "InputError", "DefinitionError", "CompileError", "ArtifactError", "DeviceError", "CudaError",
                 "CacheWarning", "ConfigWarning"):
        assert getattr(fuser_mlir, name) is getattr(errors, name) and name in fuser_mlir.__all__


@pytest.mark.parametrize("expression", ["x * array", "array + x", "array - x", "x == array", "array ** x"])
def test_a_numpy_array_in_an_operator_is_an_error_not_an_array_of_handles(expression):
    with FusionDefinition("f") as fd:
        x = fd.define_tensor([-1])
        array = np.ones(3, np.float32)
        with raises("must be a Tensor or Scalar of this fusion or a Python number, got ndarray; define it with fd.define_tensor"):
            eval(expression, {"x": x, "array": array})
        assert fd.records == ()  # nothing recorded on the way
        fd.add_output(x * np.float32(2.0))  # a NumPy scalar is a number
