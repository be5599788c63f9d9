"""FusionSignature: what the executor checks arguments against, as JSON.

The executor (:mod:`fuser_mlir.executor`, :mod:`fuser_mlir.outputs`) validates
inputs and given outputs against a FusionDefinition's plain metadata:
``inputs`` (:class:`~fuser_mlir.frontend.definition.InputSpec`), ``outputs``
(:class:`~fuser_mlir.frontend.definition.OutputSpec`), ``size_classes``,
``check_input_shapes`` and ``output_shape``. A loaded artifact has no
definition, so the artifact stores this metadata, and a FusionSignature
answers the same five questions from it. The executor's validation functions
take either, so a loaded fusion validates exactly as a fresh one (same code,
same messages).

JSON form::

    {"name": "fusion",
     "inputs":  [{"kind": "tensor", "dtype": "f32", "shape": [-1, 4],
                  "contiguity": [true, true], "stride_order": [1, 0]}, ...],
     "outputs": [{"dtype": "f32", "shape": [-1, 4], "dims": [0, 1],
                  "alias_input": null, "visible": true}, ...],
     "extents": [{"static": null, "input_dim": [0, 0], "derived": null, "note": "input 0 dim 0"}, ...],
     "classes": [0, 1, 0, ...],          # root extent of each extent's size class
     "reshapes": [{"operand": [0, 1], "result": [2], "new_shape": [-1], "where": "..."}],
     "nonempty": [{"reduced": [1], "outputs": [[0]], "where": "'max' at f.py:3"}]}  # absent in older artifacts

``dims`` are extent ids (null: a broadcast dim of size 1); ``derived`` is a
``{"factors", "scale", "divisor"}`` product of extents. Pure Python, no MLIR.
"""

from __future__ import annotations

from collections.abc import Sequence

from fuser_mlir.frontend.datatype import DataType
from fuser_mlir.frontend.specs import InputSpec, OutputSpec
from fuser_mlir.frontend.shapes import Extent, NonemptyCheck, Product, ReshapeCheck, ShapeAnalysis


def _opt_tuple(value):
    return None if value is None else tuple(value)


class FusionSignature:
    """The executor-facing metadata of a fusion, rebuilt from JSON."""

    def __init__(self, name: str, inputs: list[InputSpec], outputs: list[OutputSpec], analysis: ShapeAnalysis,
                 output_dims: list[tuple]):
        self.name = name
        self._inputs = inputs
        self._outputs = outputs
        self._analysis = analysis
        self._output_dims = output_dims

    # -- what the executor reads (the FusionDefinition interface) --------------

    @property
    def inputs(self) -> list[InputSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[OutputSpec]:
        return list(self._outputs)

    @property
    def size_classes(self) -> list[set[tuple[int, int]]]:
        return self._analysis.size_classes()

    def check_input_shapes(self, input_shapes: Sequence[Sequence[int] | None]) -> None:
        self._analysis.check(input_shapes)

    def output_shape(self, position: int, input_shapes: Sequence[Sequence[int] | None]) -> tuple[int, ...]:
        self._analysis.check(input_shapes)
        return self._analysis.evaluator(input_shapes).shape(self._output_dims[position])

    # -- JSON ------------------------------------------------------------------

    @classmethod
    def from_definition(cls, fd) -> "FusionSignature":
        """The signature of a (finished) FusionDefinition."""
        analysis = fd.shape_analysis()
        dims = [tuple(fd.value(o.tensor).dims) for o in fd.outputs]
        return cls(fd.name, fd.inputs, fd.outputs, analysis, dims)

    def to_json(self) -> dict:
        analysis = self._analysis
        return {
            "name": self.name,
            "inputs": [
                {"kind": s.kind, "dtype": s.dtype.mlir, "shape": list(s.shape), "contiguity": list(s.contiguity),
                 "stride_order": list(s.stride_order)}
                for s in self._inputs
            ],
            "outputs": [
                {"dtype": o.dtype.mlir, "shape": list(o.shape), "dims": list(d), "alias_input": o.alias_input, "visible": o.visible}
                for o, d in zip(self._outputs, self._output_dims)
            ],
            "extents": [
                {"static": e.static, "input_dim": _opt_list(e.input_dim), "note": e.note,
                 "derived": None if e.derived is None else {"factors": list(e.derived.factors), "scale": e.derived.scale, "divisor": e.derived.divisor}}
                for e in analysis.extents
            ],
            "classes": [analysis.root(e.id) for e in analysis.extents],
            "reshapes": [
                {"operand": list(r.operand), "result": list(r.result), "new_shape": list(r.new_shape), "where": r.where}
                for r in analysis.reshapes
            ],
            "nonempty": [{"reduced": list(n.reduced), "outputs": [list(d) for d in n.outputs], "where": n.where} for n in analysis.nonempty],
        }

    @classmethod
    def from_json(cls, raw: dict) -> "FusionSignature":
        inputs = [
            InputSpec(i, s["kind"], DataType(s["dtype"]), tuple(s["shape"]), tuple(s["contiguity"]), tuple(s["stride_order"]))
            for i, s in enumerate(raw["inputs"])
        ]
        outputs = [
            OutputSpec(p, -1, DataType(o["dtype"]), len(o["shape"]), tuple(o["shape"]), o["alias_input"], o["visible"])
            for p, o in enumerate(raw["outputs"])
        ]
        extents = [
            Extent(i, e["static"], _opt_tuple(e["input_dim"]),
                   None if e["derived"] is None else Product(tuple(e["derived"]["factors"]), e["derived"]["scale"], e["derived"]["divisor"]),
                   e["note"])
            for i, e in enumerate(raw["extents"])
        ]
        unify = [(i, root) for i, root in enumerate(raw["classes"]) if i != root]
        reshapes = [ReshapeCheck(tuple(r["operand"]), tuple(r["result"]), tuple(r["new_shape"]), r["where"]) for r in raw["reshapes"]]
        nonempty = [NonemptyCheck(tuple(n["reduced"]), tuple(tuple(d) for d in n["outputs"]), n["where"]) for n in raw.get("nonempty", ())]  # older artifacts have none
        dims = [tuple(o["dims"]) for o in raw["outputs"]]
        return cls(raw["name"], inputs, outputs, ShapeAnalysis(extents, unify, reshapes, nonempty), dims)


def _opt_list(value):
    return None if value is None else list(value)
