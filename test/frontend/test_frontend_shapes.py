"""What the executor reads: input/output specs, size classes, output shapes, shape checks."""

import re

import pytest

from fuser_mlir.errors import InputError
from fuser_mlir.frontend import DataType, FusionDefinition, InputSpec, OutputSpec


def test_input_specs():
    with FusionDefinition() as fd:
        fd.define_tensor([-1, 1, 4], dtype=DataType.Half)
        fd.define_scalar(dtype=DataType.Int32)
        fd.define_tensor([-1, 1, -1], contiguity=[True, None, False], stride_order=[0, 1, 2])
        fd.define_tensor([-1, -1], contiguity=True)
        fd.define_scalar(1.0)  # a constant, not an input
    specs = fd.inputs
    # no contiguity declared: any strides (nvFuser's default, contiguity=False)
    assert specs[0] == InputSpec(0, "tensor", DataType.Half, (-1, 1, 4), (False, None, False), (2, 1, 0), 0)
    assert specs[1] == InputSpec(1, "scalar", DataType.Int32, (), (), (), 1)
    # nvFuser's contiguity is in allocation order (outermost first); the spec holds it per logical dim
    assert specs[2].contiguity == (False, None, True) and specs[2].allocation_order == (2, 1, 0)
    assert specs[3].contiguity == (True, True)
    assert len(specs) == 4 and [s.is_tensor for s in specs] == [True, False, True, True]


def test_output_specs():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.sum(x, [1]))
        fd.add_output(fd.ops.cast(x, DataType.Bool), alias_input=None)
        fd.add_output(x * 2, alias_input=x)
    outs = fd.outputs
    assert outs[0] == OutputSpec(0, outs[0].tensor, DataType.Float, 1, (-1,), None, True)
    assert (outs[1].dtype, outs[1].rank, outs[1].visible) == (DataType.Bool, 2, True)
    assert (outs[2].alias_input, outs[2].visible, outs[2].position) == (0, False, 2)


def test_size_classes_are_transitive_and_only_from_live_ops():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1])
        b = fd.define_tensor([-1, -1])
        c = fd.define_tensor([-1])
        d = fd.define_tensor([-1, 4])
        ab = a + b
        fd.add_output(ab * c)  # c binds to dim 1 of a and b
        fd.ops.add(a, d)  # dead: binds nothing
        fd.add_output(fd.ops.permute(b, [1, 0]) - 1)
    assert fd.size_classes == [{(0, 0), (1, 0)}, {(0, 1), (1, 1), (2, 0)}]


def test_static_dims_join_size_classes():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        y = fd.define_tensor([-1, -1])
        fd.add_output(x + y)
    assert fd.size_classes == [{(0, 0), (1, 0)}, {(0, 1), (1, 1)}]
    with pytest.raises(InputError, match=re.escape("input 1 dim 1 has size 5, but the definition needs size 4 there (input 0 dim 1 is declared with that size)")):
        fd.check_input_shapes([(3, 4), (3, 5)])


def test_output_shapes_for_concrete_inputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 1, -1])
        y = fd.define_tensor([-1])
        s = fd.define_scalar()
        fd.add_output(x + y)
        fd.add_output(fd.ops.reshape(x, [2, -1]))
        fd.add_output(fd.ops.sum(x, dims=[0], keepdim=True))
        fd.add_output(fd.ops.sum(x))
        fd.add_output(fd.ops.broadcast_in_dim(y * s, [3, -1, 2], [1]))
        fd.add_output(fd.ops.permute(fd.ops.broadcast_in_dim(x, [-1, 5, -1], [0, 1, 2]), [2, 0, 1]))
    shapes = [(6, 1, 7), (7,), ()]
    assert [fd.output_shape(i, shapes) for i in range(6)] == [(6, 1, 7), (2, 21), (1, 1, 7), (), (3, 7, 2), (7, 6, 5)]
    assert fd.output_shape(1, [(2, 1, 3), (3,), None]) == (2, 3)
    with pytest.raises(IndexError, match="output position 6 is out of range: the fusion has 6 outputs"):
        fd.output_shape(6, shapes)


def test_check_input_shapes_names_the_inputs_bound_to_one_size():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.define_tensor([-1, 1, -1])
        fd.add_output(y + x)
    fd.check_input_shapes([(4, 10), (3, 1, 10)])
    with pytest.raises(InputError, match=re.escape("input 1 dim 2 has size 3, but input 0 dim 1, bound to the same size, has 10")):
        fd.check_input_shapes([(4, 10), (5, 1, 3)])
    with pytest.raises(InputError, match=re.escape("no size given for input 1 dim 2")):
        fd.check_input_shapes([(4, 10), (5, 1)])


def test_check_input_shapes_runs_reshapes_and_static_broadcasts():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.define_tensor([-1])
        z = fd.define_tensor([-1])
        flat = fd.ops.reshape(x, [-1])
        fd.add_output(flat + y)  # y must have x's element count
        fd.add_output(fd.ops.reshape(x, [4, -1]))
        fd.add_output(fd.ops.broadcast_in_dim(z, [3], [0]))  # z must have size 3
    fd.check_input_shapes([(4, 3), (12,), (3,)])
    assert fd.output_shape(1, [(4, 3), (12,), (3,)]) == (4, 3)
    with pytest.raises(InputError, match=re.escape("'reshape' at test_frontend_shapes.py:")) as err:
        fd.output_shape(1, [(3, 5), (15,), (3,)])
    assert "cannot reshape a tensor of shape [3, 5] (15 elements) into [4, -1]; the inputs' sizes do not fit this reshape" in str(err.value)
    with pytest.raises(InputError, match=re.escape("has size 12, but input 1 dim 0, bound to the same size, has 11")):
        fd.check_input_shapes([(4, 3), (11,), (3,)])
    with pytest.raises(InputError, match=re.escape("input 2 dim 0 has size 4, but the definition needs size 3 there (the static size of shape[0] of 'broadcast_in_dim' at test_frontend_shapes.py:")):
        fd.check_input_shapes([(4, 3), (12,), (4,)])


def test_derived_sizes_evaluate_through_reshape_chains():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 6])
        a = fd.ops.reshape(x, [-1, 4])  # 6n/4
        b = fd.ops.reshape(a, [-1])  # 6n
        c = fd.ops.reshape(b, [3, -1])  # 2n
        fd.add_output(c)
        fd.add_output(a)
    assert fd.output_shape(0, [(10, 6)]) == (3, 20)
    assert fd.output_shape(1, [(10, 6)]) == (15, 4)
    with pytest.raises(InputError, match="cannot reshape a tensor of shape \\[3, 6\\]"):
        fd.output_shape(0, [(3, 6)])
