"""fuser-segment and fuser-outline-segments on hand-written fusions.

Segment counts for representative fusions (so a change in cutting shows up
here), outlined IR that passes fuser-verify, determinism, the host
description of ``analysis.segments.describe_host``, and, through a small
NumPy interpreter of fuser IR, that outlining preserves what a fusion
computes (also on randomly generated fusions).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.segments import (
    DestRef,
    EmptyRef,
    InputRef,
    ResultRef,
    ScalarRef,
    collect_segments,
    describe_host,
    fusion_functions,
)
from fuser_mlir.dialect import make_context
from fuser_mlir.errors import PipelineError, VerificationError
from fuser_mlir.passes.segment import _Assigner, reduction_domain, segment_ops
from fuser_mlir.pipeline import run_pipeline

SEGMENT = "fuser-verify,fuser-segment"
OUTLINE = "fuser-verify,fuser-segment,fuser-outline-segments,fuser-verify"

# -- hand-written fusions ------------------------------------------------------------

F2 = "tensor<?x?xf32>"
R1 = "tensor<?x1xf32>"
C1 = "tensor<1x?xf32>"
F3 = "tensor<?x?x?xf32>"


def fusion(name: str, args: str, results: str, num_inputs: int, body: str) -> str:
    return (
        f"func.func @{name}({args}) -> ({results}) attributes {{fuser.num_inputs = {num_inputs} : i64}} {{\n"
        f"{body}\n}}\n"
    )


POINTWISE = fusion("pointwise", f"%x: {F2}, %y: {F2}, %out: {F2}", F2, 2, f"""
  %c = "fuser.constant"() {{value = 0.5 : f32}} : () -> f32
  %0 = "fuser.mul"(%x, %c) : ({F2}, f32) -> {F2}
  %1 = "fuser.tanh"(%0) : ({F2}) -> {F2}
  %2 = "fuser.add"(%1, %y) : ({F2}, {F2}) -> {F2}
  %3 = "fuser.mul"(%2, %y) : ({F2}, {F2}) -> {F2}
  %r = "fuser.store"(%3, %out) : ({F2}, {F2}) -> {F2}
  return %r : {F2}""")

SOFTMAX = fusion("softmax", f"%x: {F2}", F2, 1, f"""
  %m = "fuser.max"(%x) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %d = "fuser.sub"(%x, %m) : ({F2}, {R1}) -> {F2}
  %e = "fuser.exp"(%d) : ({F2}) -> {F2}
  %s = "fuser.sum"(%e) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %y = "fuser.div"(%e, %s) : ({F2}, {R1}) -> {F2}
  %n0 = "fuser.size"(%x) {{dim = 0 : i64}} : ({F2}) -> i64
  %n1 = "fuser.size"(%x) {{dim = 1 : i64}} : ({F2}) -> i64
  %o = "fuser.empty"(%n0, %n1) : (i64, i64) -> {F2}
  %r = "fuser.store"(%y, %o) : ({F2}, {F2}) -> {F2}
  return %r : {F2}""")

# Softmax over the columns (dim 0): an outer-dim normalization, so every
# broadcast of a reduced value back to x's iteration space cuts (rule 2b
# covers rows only): max | sub exp sum | div.
SOFTMAX_COLUMNS = fusion("softmax_columns", f"%x: {F2}", F2, 1, f"""
  %m = "fuser.max"(%x) {{dims = array<i64: 0>, keepdim = true}} : ({F2}) -> {C1}
  %d = "fuser.sub"(%x, %m) : ({F2}, {C1}) -> {F2}
  %e = "fuser.exp"(%d) : ({F2}) -> {F2}
  %s = "fuser.sum"(%e) {{dims = array<i64: 0>, keepdim = true}} : ({F2}) -> {C1}
  %y = "fuser.div"(%e, %s) : ({F2}, {C1}) -> {F2}
  %n0 = "fuser.size"(%x) {{dim = 0 : i64}} : ({F2}) -> i64
  %n1 = "fuser.size"(%x) {{dim = 1 : i64}} : ({F2}) -> i64
  %o = "fuser.empty"(%n0, %n1) : (i64, i64) -> {F2}
  %r = "fuser.store"(%y, %o) : ({F2}, {F2}) -> {F2}
  return %r : {F2}""")

# Two-pass layer norm from primitives, with affine weight and bias and the
# mean as a second output: mean, centre + variance and normalise + affine
# are one segment (rule 2b; before it, three).
LAYER_NORM = fusion("layer_norm", f"%x: {F2}, %w: tensor<?xf32>, %b: tensor<?xf32>, %n: f32, %out: {F2}", f"{F2}, {R1}", 4, f"""
  %s = "fuser.sum"(%x) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %mean = "fuser.div"(%s, %n) : ({R1}, f32) -> {R1}
  %c = "fuser.sub"(%x, %mean) : ({F2}, {R1}) -> {F2}
  %c2 = "fuser.mul"(%c, %c) : ({F2}, {F2}) -> {F2}
  %s2 = "fuser.sum"(%c2) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %var = "fuser.div"(%s2, %n) : ({R1}, f32) -> {R1}
  %eps = "fuser.constant"() {{value = 1.0e-05 : f32}} : () -> f32
  %ve = "fuser.add"(%var, %eps) : ({R1}, f32) -> {R1}
  %rstd = "fuser.rsqrt"(%ve) : ({R1}) -> {R1}
  %y = "fuser.mul"(%c, %rstd) : ({F2}, {R1}) -> {F2}
  %wb = "fuser.broadcast_in_dim"(%w) {{broadcast_dims = array<i64: 1>}} : (tensor<?xf32>) -> tensor<1x?xf32>
  %bb = "fuser.broadcast_in_dim"(%b) {{broadcast_dims = array<i64: 1>}} : (tensor<?xf32>) -> tensor<1x?xf32>
  %yw = "fuser.mul"(%y, %wb) : ({F2}, tensor<1x?xf32>) -> {F2}
  %z = "fuser.add"(%yw, %bb) : ({F2}, tensor<1x?xf32>) -> {F2}
  %n0 = "fuser.size"(%x) {{dim = 0 : i64}} : ({F2}) -> i64
  %o2 = "fuser.empty"(%n0) : (i64) -> {R1}
  %r = "fuser.store"(%z, %out) : ({F2}, {F2}) -> {F2}
  %r2 = "fuser.store"(%mean, %o2) : ({R1}, {R1}) -> {R1}
  return %r, %r2 : {F2}, {R1}""")

# One-pass variance (E[x^2] - E[x]^2): both reductions share a domain.
LAYER_NORM_ONE_PASS = fusion("layer_norm_one_pass", f"%x: {F2}, %n: f32, %out: {F2}", F2, 2, f"""
  %s = "fuser.sum"(%x) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %x2 = "fuser.mul"(%x, %x) : ({F2}, {F2}) -> {F2}
  %s2 = "fuser.sum"(%x2) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %mean = "fuser.div"(%s, %n) : ({R1}, f32) -> {R1}
  %msq = "fuser.div"(%s2, %n) : ({R1}, f32) -> {R1}
  %mm = "fuser.mul"(%mean, %mean) : ({R1}, {R1}) -> {R1}
  %var = "fuser.sub"(%msq, %mm) : ({R1}, {R1}) -> {R1}
  %rstd = "fuser.rsqrt"(%var) : ({R1}) -> {R1}
  %c = "fuser.sub"(%x, %mean) : ({F2}, {R1}) -> {F2}
  %y = "fuser.mul"(%c, %rstd) : ({F2}, {R1}) -> {F2}
  %r = "fuser.store"(%y, %out) : ({F2}, {F2}) -> {F2}
  return %r : {F2}""")

# RMS norm with an affine weight: sum of squares, rsqrt, scale.
RMS_NORM = fusion("rms_norm", f"%x: {F2}, %w: tensor<?xf32>, %n: f32, %out: {F2}", F2, 3, f"""
  %x2 = "fuser.mul"(%x, %x) : ({F2}, {F2}) -> {F2}
  %s = "fuser.sum"(%x2) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %ms = "fuser.div"(%s, %n) : ({R1}, f32) -> {R1}
  %eps = "fuser.constant"() {{value = 1.0e-06 : f32}} : () -> f32
  %ve = "fuser.add"(%ms, %eps) : ({R1}, f32) -> {R1}
  %rrms = "fuser.rsqrt"(%ve) : ({R1}) -> {R1}
  %y = "fuser.mul"(%x, %rrms) : ({F2}, {R1}) -> {F2}
  %wb = "fuser.broadcast_in_dim"(%w) {{broadcast_dims = array<i64: 1>}} : (tensor<?xf32>) -> {C1}
  %z = "fuser.mul"(%y, %wb) : ({F2}, {C1}) -> {F2}
  %r = "fuser.store"(%z, %out) : ({F2}, {F2}) -> {F2}
  return %r : {F2}""")

# A normalization over the two innermost dims of a 3-D tensor (a suffix).
SOFTMAX_INNER_TWO = fusion("softmax_inner_two", f"%x: {F3}, %out: {F3}", F3, 1, f"""
  %m = "fuser.max"(%x) {{dims = array<i64: 1, 2>, keepdim = true}} : ({F3}) -> tensor<?x1x1xf32>
  %d = "fuser.sub"(%x, %m) : ({F3}, tensor<?x1x1xf32>) -> {F3}
  %e = "fuser.exp"(%d) : ({F3}) -> {F3}
  %s = "fuser.sum"(%e) {{dims = array<i64: 1, 2>, keepdim = true}} : ({F3}) -> tensor<?x1x1xf32>
  %y = "fuser.div"(%e, %s) : ({F3}, tensor<?x1x1xf32>) -> {F3}
  %r = "fuser.store"(%y, %out) : ({F3}, {F3}) -> {F3}
  return %r : {F3}""")

# A middle dim of a 3-D tensor is not a suffix: broadcasting its max back cuts.
MIDDLE_DIM = fusion("middle_dim", f"%x: {F3}, %out: {F3}", F3, 1, f"""
  %m = "fuser.max"(%x) {{dims = array<i64: 1>, keepdim = true}} : ({F3}) -> tensor<?x1x?xf32>
  %d = "fuser.sub"(%x, %m) : ({F3}, tensor<?x1x?xf32>) -> {F3}
  %r = "fuser.store"(%d, %out) : ({F3}, {F3}) -> {F3}
  return %r : {F3}""")

# A row sum broadcast back (rule 2b, same segment), then reduced over the
# columns: another domain, so that reduction cuts.
ROW_THEN_COLUMNS = fusion("row_then_columns", f"%x: {F2}, %out: tensor<?xf32>", "tensor<?xf32>", 1, f"""
  %s = "fuser.sum"(%x) {{dims = array<i64: 1>, keepdim = true}} : ({F2}) -> {R1}
  %d = "fuser.sub"(%x, %s) : ({F2}, {R1}) -> {F2}
  %t = "fuser.sum"(%d) {{dims = array<i64: 0>, keepdim = false}} : ({F2}) -> tensor<?xf32>
  %r = "fuser.store"(%t, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>""")

# A keepdim row max expanded to full size by a broadcast_in_dim (a layout op
# on a reduced value) cuts, although the sub reading the max directly would not.
BROADCAST_ROW = fusion("broadcast_row", "%x: tensor<?x8xf32>, %out: tensor<?x8xf32>", "tensor<?x8xf32>", 1, """
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %mb = "fuser.broadcast_in_dim"(%m) {broadcast_dims = array<i64: 0, 1>} : (tensor<?x1xf32>) -> tensor<?x8xf32>
  %d = "fuser.sub"(%x, %mb) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = "fuser.store"(%d, %out) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>""")

T4 = "tensor<32x64x8x128xf64>"
REDUCE3 = fusion("reduce3", f"%x: {T4}, %y: {T4}, %out: tensor<8xf64>", "tensor<8xf64>", 2, f"""
  %0 = "fuser.add"(%x, %y) : ({T4}, {T4}) -> {T4}
  %1 = "fuser.sum"(%0) {{dims = array<i64: 0>, keepdim = false}} : ({T4}) -> tensor<64x8x128xf64>
  %2 = "fuser.sum"(%1) {{dims = array<i64: 2>, keepdim = false}} : (tensor<64x8x128xf64>) -> tensor<64x8xf64>
  %3 = "fuser.sum"(%2) {{dims = array<i64: 0>, keepdim = false}} : (tensor<64x8xf64>) -> tensor<8xf64>
  %r = "fuser.store"(%3, %out) : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  return %r : tensor<8xf64>""")

# exp | div by its column sums: the output %e is read by the second segment.
OUTPUT_READ_LATER = fusion("output_read_later", f"%x: {F2}, %o0: {F2}, %o1: {F2}", f"{F2}, {F2}", 1, f"""
  %e = "fuser.exp"(%x) : ({F2}) -> {F2}
  %s = "fuser.sum"(%e) {{dims = array<i64: 0>, keepdim = true}} : ({F2}) -> {C1}
  %y = "fuser.div"(%e, %s) : ({F2}, {C1}) -> {F2}
  %r0 = "fuser.store"(%e, %o0) : ({F2}, {F2}) -> {F2}
  %r1 = "fuser.store"(%y, %o1) : ({F2}, {F2}) -> {F2}
  return %r0, %r1 : {F2}, {F2}""")

# A hidden in-place update of %x (not returned) next to a reduction of %x.
IN_PLACE = fusion("in_place", f"%x: {F2}, %out: tensor<?xf32>", "tensor<?xf32>", 1, f"""
  %r = "fuser.relu"(%x) : ({F2}) -> {F2}
  %s = "fuser.sum"(%x) {{dims = array<i64: 1>, keepdim = false}} : ({F2}) -> tensor<?xf32>
  %w = "fuser.store"(%r, %x) : ({F2}, {F2}) -> {F2}
  %o = "fuser.store"(%s, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %o : tensor<?xf32>""")

RESHAPE = fusion("reshape", "%x: tensor<?x4xf32>, %out: tensor<?xf32>", "tensor<?xf32>", 1, """
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
  %c4 = "fuser.constant"() {value = 4 : i64} : () -> i64
  %n4 = "fuser.mul"(%n, %c4) : (i64, i64) -> i64
  %p = "fuser.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %f = "fuser.reshape"(%p, %n4) : (tensor<4x?xf32>, i64) -> tensor<?xf32>
  %c = "fuser.segment_set"(%f) : (tensor<?xf32>) -> tensor<?xf32>
  %y = "fuser.neg"(%c) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>""")


def segment_set_chain(cuts: int, trailing: bool = False) -> str:
    """``cuts`` segment_sets between pointwise ops: ``cuts + 1`` segments.
    With ``trailing``, the last segment_set feeds the output directly (the
    lead's twelve-segment chain): still ``cuts + 1``, the last one a copy."""
    lines = ['  %v0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>']
    for i in range(cuts):
        source = f"%v{i}"
        if trailing:
            lines.append(f'  %p{i} = "fuser.tanh"(%v{i}) : (tensor<?xf32>) -> tensor<?xf32>')
            source = f"%p{i}"
        lines.append(f'  %c{i} = "fuser.segment_set"({source}) : (tensor<?xf32>) -> tensor<?xf32>')
        op = "neg" if i % 2 else "tanh"
        if trailing:
            lines.append(f'  %v{i + 1} = "fuser.set"(%c{i}) : (tensor<?xf32>) -> tensor<?xf32>')
        else:
            lines.append(f'  %v{i + 1} = "fuser.{op}"(%c{i}) : (tensor<?xf32>) -> tensor<?xf32>')
    last = f"%c{cuts - 1}" if trailing else f"%v{cuts}"
    lines.append(f'  %r = "fuser.store"({last}, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>')
    lines.append("  return %r : tensor<?xf32>")
    return fusion("chain", "%x: tensor<?xf32>, %out: tensor<?xf32>", "tensor<?xf32>", 1, "\n".join(lines))


#: name -> (IR text, expected number of segments)
FUSIONS = {
    "pointwise": (POINTWISE, 1),
    # row normalizations are one segment (rule 2b)
    "softmax": (SOFTMAX, 1),
    "layer_norm": (LAYER_NORM, 1),
    "layer_norm_one_pass": (LAYER_NORM_ONE_PASS, 1),
    "rms_norm": (RMS_NORM, 1),
    "softmax_inner_two": (SOFTMAX_INNER_TWO, 1),
    # what still cuts
    "softmax_columns": (SOFTMAX_COLUMNS, 3),  # max(0) | sub exp sum(0) | div
    "middle_dim": (MIDDLE_DIM, 2),  # max(1) | sub
    "row_then_columns": (ROW_THEN_COLUMNS, 2),  # sum(1) sub | sum(0)
    "broadcast_row": (BROADCAST_ROW, 2),  # max(1) | broadcast_in_dim sub
    "reduce3": (REDUCE3, 3),  # add sum(0) | sum(-1) | sum(0)
    "output_read_later": (OUTPUT_READ_LATER, 2),  # exp sum(0) | div
    "in_place": (IN_PLACE, 1),
    "reshape": (RESHAPE, 2),
    "chain12": (segment_set_chain(12), 13),
    "chain11_trailing": (segment_set_chain(11, trailing=True), 12),
}

# -- helpers -----------------------------------------------------------------------------


def run(text: str, pipeline: str) -> str:
    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module, pipeline)
        return str(module)


def parse(text: str) -> ir.Module:
    context = make_context()
    with context, ir.Location.unknown():
        return ir.Module.parse(text)


def segment_ids(text: str) -> list[int]:
    return [int(k) for k in re.findall(r"fuser\.segment = (\d+) : i64", text)]


def segment_functions(text: str) -> list[str]:
    return re.findall(r"func\.func private @(\w+_seg\d+)\(", text)


# -- segment counts, structure, determinism ----------------------------------------------


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_segment_count(name):
    text, expected = FUSIONS[name]
    ids = segment_ids(run(text, SEGMENT))
    assert sorted(set(ids)) == list(range(expected))


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_outlined_ir_verifies_and_has_one_function_per_segment(name):
    text, expected = FUSIONS[name]
    outlined = run(text, OUTLINE)
    fn = name if not name.startswith("chain") else "chain"
    assert segment_functions(outlined) == [f"{fn}_seg{k}" for k in range(expected)]
    assert "fuser.segment =" not in outlined


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_deterministic(name):
    text, _ = FUSIONS[name]
    assert run(text, OUTLINE) == run(text, OUTLINE)
    assert run(text, SEGMENT) == run(text, SEGMENT)


def test_segment_ids_are_a_topological_order():
    for name, (text, _) in FUSIONS.items():
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            run_pipeline(module, SEGMENT)
            for func in fusion_functions(module.operation):
                for info in collect_segments(func):
                    for value in info.inputs:
                        owner = value.owner
                        if isinstance(owner, ir.Block) or "fuser.segment" not in owner.attributes:
                            continue
                        assert ir.IntegerAttr(owner.attributes["fuser.segment"]).value < info.id, name


def test_one_reduction_domain_per_segment():
    for name, (text, _) in FUSIONS.items():
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            run_pipeline(module, SEGMENT)
            for func in fusion_functions(module.operation):
                for info in collect_segments(func):
                    domains = {reduction_domain(op) for op in info.ops if op.name in ("fuser.sum", "fuser.max")}
                    assert len(domains) <= 1, name


def test_outlining_twice_changes_nothing():
    once = run(SOFTMAX_COLUMNS, OUTLINE)
    assert run(once, "fuser-segment,fuser-outline-segments") == once


def test_name_clash_is_reported():
    text = SOFTMAX_COLUMNS + 'func.func private @softmax_columns_seg1() {\n  return\n}\n'
    with pytest.raises(PipelineError, match=r"cannot outline segment 1: the module already has a symbol @softmax_columns_seg1"):
        run(text, OUTLINE)


# -- describe_host ----------------------------------------------------------------------------


def host_plan(text: str):
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module, OUTLINE)
        return describe_host(module)


def test_describe_host_softmax_columns():
    plan = host_plan(SOFTMAX_COLUMNS)
    assert plan.name == "softmax_columns" and plan.num_inputs == 1
    assert plan.arg_types == ("tensor<?x?xf32>",)
    assert [s.op for s in plan.scalars] == ["size", "size"]
    assert plan.scalars[0].operands == (InputRef(0),) and plan.scalars[0].dim == 0
    assert plan.scalars[1].dim == 1
    # the output (an executor-allocated fuser.empty) and two intermediates: the
    # last segment computes exp again from x and the max (rule 6)
    assert [b.type for b in plan.buffers] == ["tensor<?x?xf32>", "tensor<1x?xf32>", "tensor<1x?xf32>"]
    assert plan.buffers[0].sizes == (ScalarRef(0), ScalarRef(1))
    assert plan.buffers[1].dims == (1, ScalarRef(1))
    assert [s.callee for s in plan.steps] == ["softmax_columns_seg0", "softmax_columns_seg1", "softmax_columns_seg2"]
    assert plan.steps[0].inputs == (InputRef(0),) and plan.steps[0].dests == (EmptyRef(1),)
    assert plan.steps[1].inputs == (InputRef(0), ResultRef(0, 0))
    assert plan.steps[1].dests == (EmptyRef(2),)
    assert set(plan.steps[2].inputs) == {InputRef(0), ResultRef(0, 0), ResultRef(1, 0)}
    assert plan.steps[2].dests == (EmptyRef(0),)
    assert plan.steps[1].ops == ("fuser.sub", "fuser.exp", "fuser.sum")
    assert plan.steps[2].ops == ("fuser.sub", "fuser.exp", "fuser.div")
    assert plan.returns == (ResultRef(2, 0),)
    assert plan.storage(plan.returns[0]) == EmptyRef(0)
    assert plan.last_use(EmptyRef(1)) == 2
    assert plan.last_use(EmptyRef(2)) == 2
    assert set(plan.reads(2)) == {InputRef(0), EmptyRef(1), EmptyRef(2)}
    assert plan.writes(2) == [EmptyRef(0)]
    assert ResultRef(1, 1).as_tuple() == ("result", 1, 1)


def test_describe_host_softmax_is_one_step():
    plan = host_plan(SOFTMAX)
    assert [s.callee for s in plan.steps] == ["softmax_seg0"]
    assert plan.steps[0].ops == ("fuser.max", "fuser.sub", "fuser.exp", "fuser.sum", "fuser.div")
    assert [b.type for b in plan.buffers] == ["tensor<?x?xf32>"]  # the output, no intermediates
    assert plan.steps[0].dests == (EmptyRef(0),)


def test_describe_host_output_is_the_intermediate():
    plan = host_plan(OUTPUT_READ_LATER)
    # exp goes straight into the caller's first output; the second segment reads it back
    assert plan.steps[0].dests == (DestRef(0), EmptyRef(0))
    assert plan.steps[1].inputs == (ResultRef(0, 0), ResultRef(0, 1))
    assert plan.steps[1].dests == (DestRef(1),)
    assert plan.returns == (ResultRef(0, 0), ResultRef(1, 0))
    assert [plan.storage(r) for r in plan.returns] == [DestRef(0), DestRef(1)]


def test_describe_host_in_place_and_scalars():
    plan = host_plan(IN_PLACE)
    assert plan.steps[0].operands == (InputRef(0), InputRef(0), DestRef(0))
    assert plan.writes(0) == [InputRef(0), DestRef(0)]
    reshape = host_plan(RESHAPE)
    assert [(s.op, s.value) for s in reshape.scalars] == [("size", None), ("constant", 4), ("mul", None)]
    assert reshape.scalars[2].operands == (ScalarRef(0), ScalarRef(1))
    assert reshape.steps[0].inputs == (InputRef(0),)  # the segment recomputes the size
    assert reshape.buffers[0].sizes == (ScalarRef(2),)


def test_reduce3_intermediates_are_freed_after_last_use():
    plan = host_plan(REDUCE3)
    assert len(plan.steps) == 3
    assert [b.shape for b in plan.buffers] == [(64, 8, 128), (64, 8)]
    assert plan.last_use(EmptyRef(0)) == 1
    assert plan.last_use(EmptyRef(1)) == 2
    assert plan.reads(1) == [EmptyRef(0)] and plan.writes(1) == [EmptyRef(1)]


def test_describe_host_rejects_a_function_that_is_not_outlined():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(SOFTMAX)
        with pytest.raises(VerificationError, match=r"holds 'fuser.max'.*run fuser-segment,fuser-outline-segments first"):
            describe_host(module)


# -- outlining preserves semantics: a NumPy interpreter of fuser IR --------------------------


def _attr_ints(op, name):
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


_UNARY = {"exp": np.exp, "neg": np.negative, "tanh": np.tanh, "relu": lambda a: np.maximum(a, 0), "rsqrt": lambda a: 1 / np.sqrt(a), "abs": np.abs}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum}
_REDUCE = {"sum": np.sum, "max": np.max}


class Interpreter:
    """Runs fuser functions on NumPy arrays; stores write into their destination."""

    def __init__(self, module: ir.Module):
        self.funcs = {}
        for op in module.body.operations:
            self.funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation

    def call(self, name, args):
        func = self.funcs[name]
        block = func.regions[0].blocks[0]
        env = dict(zip(block.arguments, args))
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                return [env[v] for v in op.operands]
            operands = [env[v] for v in op.operands]
            results = self.step(op, operands)
            for value, result in zip(op.results, results):
                env[value] = result
        raise AssertionError("no return")

    def step(self, op, x):
        name = op.name.split(".", 1)[1]
        if op.name == "func.call":
            return self.call(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, x)
        if name in _UNARY:
            return [_UNARY[name](x[0])]
        if name in _BINARY:
            return [_BINARY[name](x[0], x[1])]
        if name in _REDUCE:
            keep = bool(ir.IntegerAttr(op.attributes["keepdim"]).value)
            return [np.asarray(_REDUCE[name](x[0], axis=tuple(_attr_ints(op, "dims")), keepdims=keep))]
        if name in ("set", "segment_set"):
            return [np.array(x[0])]
        if name in ("store", "copy"):
            np.copyto(x[1], x[0])
            return [x[1]]
        if name == "constant":
            attr = op.attributes["value"]
            return [ir.FloatAttr(attr).value if "f" in str(attr.type) else ir.IntegerAttr(attr).value]
        if name == "size":
            return [x[0].shape[ir.IntegerAttr(op.attributes["dim"]).value]]
        shape = self.result_shape(op, x)
        if name == "empty":
            return [np.full(shape, np.nan)]
        if name == "broadcast_in_dim":
            dims = _attr_ints(op, "broadcast_dims")
            expanded = [1] * len(shape)
            for i, d in enumerate(dims):
                expanded[d] = x[0].shape[i]
            return [np.array(np.broadcast_to(x[0].reshape(expanded), shape))]
        if name == "permute":
            return [np.transpose(x[0], _attr_ints(op, "dims"))]
        if name == "reshape":
            return [x[0].reshape(shape)]
        raise NotImplementedError(op.name)

    @staticmethod
    def result_shape(op, x):
        t = ir.RankedTensorType(op.results[0].type)
        sizes = iter(x[1:] if op.name == "fuser.reshape" else x)
        if op.name == "fuser.broadcast_in_dim":
            dims = _attr_ints(op, "broadcast_dims")
            return [x[0].shape[dims.index(d)] if t.is_dynamic_dim(d) else t.get_dim_size(d) for d in range(t.rank)]
        return [next(sizes) if t.is_dynamic_dim(d) else t.get_dim_size(d) for d in range(t.rank)]


def _arguments(module: ir.Module, name: str, rng: np.random.Generator, sizes: dict[str, int]):
    func = Interpreter(module).funcs[name]
    args = []
    for i, t in enumerate(func.regions[0].blocks[0].arguments):
        t = t.type
        if not isinstance(t, ir.RankedTensorType):
            args.append(7.0)
            continue
        shape = [sizes.get(f"{i}.{d}", 5 + 2 * d) if t.is_dynamic_dim(d) else t.get_dim_size(d) for d in range(t.rank)]
        args.append(rng.uniform(0.5, 1.5, size=shape))
    return args


def outputs_before_and_after(text: str, name: str, seed: int = 0, sizes: dict[str, int] | None = None):
    """Run ``@name`` before and after outlining on the same random arguments
    (dynamic dim d of argument i has size ``sizes["i.d"]``, default 5 + 2d);
    return (results, arguments after the call) for each."""
    runs = []
    for pipeline in ("fuser-verify", OUTLINE):
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            run_pipeline(module, pipeline)
            args = _arguments(module, name, np.random.default_rng(seed), sizes or {})
            results = Interpreter(module).call(name, args)
            runs.append(([np.array(r) for r in results], args))
    return runs


#: name -> sizes of the dynamic dims that must agree with others
SEMANTIC_CASES = {
    "pointwise": {},
    "softmax": {},
    "softmax_columns": {},
    "softmax_inner_two": {},
    "middle_dim": {},
    "row_then_columns": {"1.0": 7},
    "broadcast_row": {},
    "layer_norm": {"1.0": 7, "2.0": 7},
    "layer_norm_one_pass": {},
    "rms_norm": {"1.0": 7},
    "output_read_later": {},
    "in_place": {},
    "reshape": {"1.0": 20},
    "chain12": {},
    "chain11_trailing": {},
}


@pytest.mark.parametrize("name", sorted(SEMANTIC_CASES))
def test_outlining_preserves_results(name):
    text, _ = FUSIONS[name]
    fn = "chain" if name.startswith("chain") else name
    (before, args_before), (after, args_after) = outputs_before_and_after(text, fn, sizes=SEMANTIC_CASES[name])
    assert len(before) == len(after)
    for b, a in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for b, a in zip(args_before, args_after):  # in-place updates land in the same inputs
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- random fusions --------------------------------------------------------------------------

_SHAPES = {"full": "tensor<?x?xf64>", "col": "tensor<?x1xf64>", "row": "tensor<1x?xf64>", "one": "tensor<1x1xf64>"}


_DIMS = {"full": ("?", "?"), "col": ("?", "1"), "row": ("1", "?"), "one": ("1", "1")}
_REDUCTIONS = {"full": [(0, "row"), (1, "col")], "col": [(0, "one")], "row": [(1, "one")], "one": [(0, "one")]}


def _broadcast(a: str, b: str) -> str:
    dims = tuple("?" if "?" in pair else "1" for pair in zip(_DIMS[a], _DIMS[b]))
    return next(k for k, v in _DIMS.items() if v == dims)


def random_fusion(seed: int, length: int = 14) -> str:
    """A random fusion over x, y: tensor<?x?xf64> with pointwise ops,
    keepdim reductions, segment_sets and 1-3 outputs (one read later too)."""
    rng = random.Random(seed)
    values = [("%x", "full"), ("%y", "full")]
    lines = []
    for i in range(length):
        kind = rng.choice(["unary", "binary", "binary", "reduce", "segment_set"])
        name, shape = rng.choice(values)
        result = f"%v{i}"
        if kind == "unary":
            op = rng.choice(["tanh", "neg", "abs"])
            lines.append(f'  {result} = "fuser.{op}"({name}) : ({_SHAPES[shape]}) -> {_SHAPES[shape]}')
        elif kind == "binary":
            other, other_shape = rng.choice(values)
            out = _broadcast(shape, other_shape)
            op = rng.choice(["add", "sub", "mul", "maximum"])
            lines.append(f'  {result} = "fuser.{op}"({name}, {other}) : ({_SHAPES[shape]}, {_SHAPES[other_shape]}) -> {_SHAPES[out]}')
            shape = out
        elif kind == "reduce":
            dim, out = rng.choice(_REDUCTIONS[shape])
            op = rng.choice(["sum", "max"])
            lines.append(f'  {result} = "fuser.{op}"({name}) {{dims = array<i64: {dim}>, keepdim = true}} : ({_SHAPES[shape]}) -> {_SHAPES[out]}')
            shape = out
        else:
            lines.append(f'  {result} = "fuser.segment_set"({name}) : ({_SHAPES[shape]}) -> {_SHAPES[shape]}')
        values.append((result, shape))
    computed = values[2:]
    outputs = rng.sample(computed, k=min(len(computed), rng.randint(1, 3)))
    if computed[-1] not in outputs:
        outputs.append(computed[-1])
    lines.append('  %n0 = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf64>) -> i64')
    lines.append('  %n1 = "fuser.size"(%x) {dim = 1 : i64} : (tensor<?x?xf64>) -> i64')
    returns = []
    for j, (name, shape) in enumerate(outputs):
        sizes = {"full": "%n0, %n1", "col": "%n0", "row": "%n1", "one": ""}[shape]
        types = {"full": "i64, i64", "col": "i64", "row": "i64", "one": ""}[shape]
        lines.append(f'  %e{j} = "fuser.empty"({sizes}) : ({types}) -> {_SHAPES[shape]}')
        lines.append(f'  %r{j} = "fuser.store"({name}, %e{j}) : ({_SHAPES[shape]}, {_SHAPES[shape]}) -> {_SHAPES[shape]}')
        returns.append((f"%r{j}", _SHAPES[shape]))
    lines.append(f"  return {', '.join(r for r, _ in returns)} : {', '.join(t for _, t in returns)}")
    result_types = ", ".join(t for _, t in returns)
    return fusion("random", "%x: tensor<?x?xf64>, %y: tensor<?x?xf64>", result_types, 2, "\n".join(lines))


@pytest.mark.parametrize("seed", range(40))
def test_random_fusions_outline_to_the_same_results(seed):
    text = random_fusion(seed)
    (before, _), (after, _) = outputs_before_and_after(text, "random", seed)
    for b, a in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert run(text, OUTLINE) == run(text, OUTLINE)
    segmented = run(text, SEGMENT)
    ids = segment_ids(segmented)
    assert sorted(set(ids)) == list(range(max(ids) + 1))
    assert len(segment_functions(run(text, OUTLINE))) == max(ids) + 1


def test_rule_6_keeps_every_op_it_rewires_placed():
    """Rule 6 sets the operands of the later segments' users to the clones;
    the bindings hash an operation by its operands, so a user left under its
    old key was lost to ``seg`` lookups, and the next recompute saw it
    unplaced some of the time, by where its new hash fell (random fusion 27
    outlined to two different modules, 1 run in 100 or so)."""
    context = make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(random_fusion(27))
        run_pipeline(module, "fuser-verify")
        func = module.body.operations[0].operation
        assigner = _Assigner(ops=segment_ops(func))
        for op in assigner.ops:
            assigner.place(op)
        assigner.sink()
        assigner.recompute()
        assert all(op in assigner.seg for op in assigner.ops)
    text = random_fusion(27)
    assert len({run(text, SEGMENT) for _ in range(100)}) == 1
