"""The fuser IR that representative definitions build (CHECK-style string asserts)."""

import os

from frontend_helpers import check_order, op_names, verified_ir

from fuser_mlir._mlir import ir
from fuser_mlir.dialect import make_context
from fuser_mlir.frontend import DataType, FusionDefinition


def issue_example():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, 1, -1], dtype=DataType.Half)
        s = fd.define_scalar(dtype=DataType.Double)
        t2 = fd.ops.mul(fd.ops.exp(t0), s)
        t3 = fd.ops.sum(t2, dims=[1], keepdim=False)
        fd.add_output(t3)
        fd.add_output(t1 + t2)
    return fd


def test_issue_example():
    text = verified_ir(issue_example())
    check_order(
        text,
        "func.func @fusion(%arg0: tensor<?x?xf32>, %arg1: tensor<?x1x?xf16>, %arg2: f64) -> (tensor<?xf32>, tensor<?x?x?xf32>)",
        "attributes {fuser.num_inputs = 3 : i64}",
        '%0 = "fuser.exp"(%arg0) : (tensor<?x?xf32>) -> tensor<?x?xf32>',
        '%1 = "fuser.cast"(%arg2) : (f64) -> f32',
        '%2 = "fuser.mul"(%0, %1) : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>',
        '%3 = "fuser.sum"(%2) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>',
        '%4 = "fuser.cast"(%arg1) : (tensor<?x1x?xf16>) -> tensor<?x1x?xf32>',
        '%5 = "fuser.broadcast_in_dim"(%2) {broadcast_dims = array<i64: 1, 2>} : (tensor<?x?xf32>) -> tensor<1x?x?xf32>',
        '%6 = "fuser.add"(%4, %5) : (tensor<?x1x?xf32>, tensor<1x?x?xf32>) -> tensor<?x?x?xf32>',
        '%[[N0:.*]] = "fuser.size"(%arg0) {dim = 0 : i64}'.replace("%[[N0:.*]]", ""),
        '"fuser.empty"(%7) : (i64) -> tensor<?xf32>',
        '"fuser.store"(%3, %8)',
        '"fuser.size"(%arg1) {dim = 0 : i64}',
        '"fuser.size"(%arg0) {dim = 1 : i64}',
        '"fuser.empty"(%10, %7, %11) : (i64, i64, i64) -> tensor<?x?x?xf32>',
        '"fuser.store"(%6, %12)',
        "return %9, %13 : tensor<?xf32>, tensor<?x?x?xf32>",
    )


def test_given_outputs_become_destination_arguments_after_the_inputs():
    fd = issue_example()
    text = verified_ir(fd, given_outputs=(False, True))
    check_order(
        text,
        "@fusion(%arg0: tensor<?x?xf32>, %arg1: tensor<?x1x?xf16>, %arg2: f64, %arg3: tensor<?x?x?xf32>)",
        "{fuser.num_inputs = 3 : i64}",
        '"fuser.empty"',
        '%[[R1:.*]] = "fuser.store"(%6, %arg3)'.replace("%[[R1:.*]] = ", ""),
    )
    assert op_names(text).count("empty") == 1
    both = verified_ir(fd, given_outputs=(True, True))
    assert "%arg3: tensor<?xf32>, %arg4: tensor<?x?x?xf32>" in both and "fuser.empty" not in both
    assert fd.fusion_ir() == fd.fusion_ir((False, False))


def test_hidden_alias_is_stored_into_the_input_and_not_returned():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.ops.relu(x)
        fd.add_output(fd.ops.sum(x, dims=[0]))
        fd.add_output(y, alias_input=x)
    text = verified_ir(fd)
    check_order(text, "-> tensor<?xf32>", '"fuser.relu"(%arg0)', '"fuser.sum"(%arg0)', '"fuser.store"(%1, %3)', '"fuser.store"(%0, %arg0)', "return %4 : tensor<?xf32>")
    assert [(o.alias_input, o.visible) for o in fd.outputs] == [(None, True), (0, False)]


def test_alias_also_added_plainly_is_stored_once_and_returned_in_plain_order():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = x + 1.0
        z = x * 2.0
        fd.add_output(y, x)
        fd.add_output(z)
        fd.add_output(y)
    text = verified_ir(fd)
    assert [(o.tensor, o.alias_input, o.visible) for o in fd.outputs] == [(z.id, None, True), (y.id, 0, True)]
    assert op_names(text).count("store") == 2
    check_order(text, '"fuser.store"(%3, %5)', '"fuser.store"(%1, %arg0)', "return %6, %7")
    # the other order: plain first, then the alias keeps the plain position
    with FusionDefinition() as fd2:
        x = fd2.define_tensor([-1])
        y = x + 1.0
        fd2.add_output(y)
        fd2.add_output(x * 2.0)
        fd2.add_output(y, alias_input=x)
    assert [(o.alias_input, o.visible) for o in fd2.outputs] == [(0, True), (None, True)]
    assert op_names(verified_ir(fd2)).count("store") == 2


def test_a_given_buffer_for_an_aliased_output_gets_a_store_too():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        y = fd.ops.neg(x)
        fd.add_output(y, x)
        fd.add_output(y)
    text = verified_ir(fd, given_outputs=(True,))
    check_order(text, '"fuser.store"(%0, %arg0)', '%2 = "fuser.store"(%0, %arg1)', "return %2")


def test_alias_into_a_more_static_input_refines_the_type_with_a_reshape():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        y = fd.define_tensor([-1, -1])
        fd.add_output(y * 2.0, alias_input=x)
    text = verified_ir(fd)
    check_order(text, '"fuser.mul"(%arg1, %0) : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>', '"fuser.size"(%arg0) {dim = 0 : i64}', '"fuser.reshape"(%1, %2) : (tensor<?x?xf32>, i64) -> tensor<?x4xf32>', '"fuser.store"(%3, %arg0)')
    assert fd.size_classes == [{(0, 0), (1, 0)}, {(0, 1), (1, 1)}]  # y's dim 1 must be 4


def test_rank_2_plus_rank_3_broadcasts_from_the_right():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([-1, -1, -1])
        t1 = fd.define_tensor([-1, -1])
        fd.add_output(fd.ops.add(t0, t1))
    text = verified_ir(fd)
    check_order(text, '"fuser.broadcast_in_dim"(%arg1) {broadcast_dims = array<i64: 1, 2>} : (tensor<?x?xf32>) -> tensor<1x?x?xf32>', '"fuser.add"(%arg0, %0)')
    assert fd.size_classes == [{(0, 1), (1, 0)}, {(0, 2), (1, 1)}]


def test_static_sizes_broadcast_and_stay_static():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 1])
        b = fd.define_tensor([3])
        fd.add_output(a - b)
    check_order(verified_ir(fd), "-> tensor<4x3xf32>", '"fuser.sub"(%arg0, %0) : (tensor<4x1xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>', '"fuser.empty"() : () -> tensor<4x3xf32>')


def test_reshape_sizes_come_from_input_sizes():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 6, -1])
        fd.add_output(fd.ops.reshape(t, [3, -1]))  # inferred: size0 * 2 * size2
        fd.add_output(fd.ops.reshape(t, [-1, 4]))  # needs a division: size0 * 6 * size2 / 4
        fd.add_output(fd.ops.reshape(fd.ops.sum(t, [1, 2]), [-1, 1]))  # the one symbolic dim passes through
    text = verified_ir(fd)
    check_order(
        text,
        '%0 = "fuser.size"(%arg0) {dim = 0 : i64}',
        '%1 = "fuser.size"(%arg0) {dim = 2 : i64}',
        '%2 = "fuser.mul"(%0, %1) : (i64, i64) -> i64',
        '%3 = "fuser.constant"() {value = 2 : i64}',
        '%4 = "fuser.mul"(%2, %3)',
        '%5 = "fuser.reshape"(%arg0, %4) : (tensor<?x6x?xf32>, i64) -> tensor<3x?xf32>',
        '%6 = "fuser.constant"() {value = 6 : i64}',
        '%7 = "fuser.mul"(%2, %6)',
        '%8 = "fuser.cast"(%7) : (i64) -> f64',
        '"fuser.div"',
        '%11 = "fuser.cast"(%10) : (f64) -> i64',
        '"fuser.reshape"(%arg0, %11) : (tensor<?x6x?xf32>, i64) -> tensor<?x4xf32>',
        '"fuser.reshape"(%13, %0) : (tensor<?xf32>, i64) -> tensor<?x1xf32>',
    )


def test_mean_divides_by_a_count_built_from_input_sizes():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, 5, -1], dtype=DataType.Double)
        fd.add_output(fd.ops.mean(t, dims=[0, 1]))
        fd.add_output(fd.ops.mean(t, dims=[1]))
    text = verified_ir(fd)
    check_order(
        text,
        '"fuser.sum"(%arg0) {dims = array<i64: 0, 1>, keepdim = false}',
        '"fuser.size"(%arg0) {dim = 0 : i64}',
        '"fuser.constant"() {value = 5 : i64}',
        '"fuser.mul"',
        '"fuser.cast"(%3) : (i64) -> f64',
        '"fuser.div"(%0, %4) : (tensor<?xf64>, f64) -> tensor<?xf64>',
        '"fuser.sum"(%arg0) {dims = array<i64: 1>',
        '"fuser.constant"() {value = 5.000000e+00 : f64}',
    )


def test_scalar_inputs_and_scalar_only_math():
    with FusionDefinition() as fd:
        flag = fd.define_scalar(dtype=DataType.Bool)
        n = fd.define_scalar(dtype=DataType.Int)
        x = fd.define_scalar()
        s = fd.ops.where(flag, n * 2, x)  # Int and Double scalars promote to Double
        fd.add_output(fd.ops.broadcast_in_dim(s, shape=[2, 3], broadcast_dims=[]))
    text = verified_ir(fd)
    check_order(
        text,
        "@fusion(%arg0: i1, %arg1: i64, %arg2: f64) -> tensor<2x3xf64>",
        '"fuser.mul"(%arg1, %0) : (i64, i64) -> i64',
        '"fuser.cast"(%1) : (i64) -> f64',
        '"fuser.where"(%arg0, %2, %arg2) : (i1, f64, f64) -> f64',
        '"fuser.broadcast_in_dim"(%3) {broadcast_dims = array<i64>} : (f64) -> tensor<2x3xf64>',
    )


def test_only_ops_that_reach_an_output_are_emitted():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1])
        fd.ops.exp(t)  # dead
        fd.add_output(fd.ops.sin(t))
    assert op_names(verified_ir(fd)) == ["sin", "size", "empty", "store"]
    assert len(fd.records) == 2 and [r.op for r in fd.live_records()] == ["sin"]


def test_locations_point_at_the_user_lines():
    fd = issue_example()
    text = fd.fusion_ir(locations=True)
    here = os.path.basename(__file__)
    first_line = issue_example.__code__.co_firstlineno
    assert f'{here}":{first_line + 2}:' in text  # define_tensor t0
    assert f'{here}":{first_line + 5}:' in text  # the exp and mul
    assert f'{here}":{first_line + 8}:' in text  # t1 + t2
    assert ".py" in text and "frontend/ops.py" not in text and "frontend/definition.py" not in text


def test_build_module_inside_the_callers_context():
    fd = issue_example()
    context = make_context()
    with context, ir.Location.unknown():
        module = fd.build_module(context, given_outputs=(True, False))
        assert module.context is context
        func_op = module.body.operations[0]
        assert ir.IntegerAttr(func_op.attributes["fuser.num_inputs"]).value == 3
        assert len(func_op.regions[0].blocks[0].arguments) == 4


def test_segment_set_and_set_are_copies():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.segment_set(fd.ops.set(t)))
    check_order(verified_ir(fd), '"fuser.set"(%arg0) : (tensor<?x?xbf16>) -> tensor<?x?xbf16>', '"fuser.segment_set"(%0)')
