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
``{"factors", "scale", "divisor"}`` product of extents. ``from_json`` checks
every field as it reads it (it comes from a manifest): an ArtifactError
names the first that is wrong (``signature.classes[2] is 99, not an extent
id``). Pure Python, no MLIR.
"""

from __future__ import annotations

from collections.abc import Sequence

from fuser_mlir.frontend.datatype import DataType
from fuser_mlir.frontend.specs import InputSpec, OutputSpec
from fuser_mlir.frontend.shapes import Extent, NonemptyCheck, Product, ReshapeCheck, ShapeAnalysis
from fuser_mlir.runtime.plan import check_choice, check_count, check_index, check_record, check_type, malformed


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

    def check_finished(self, api: str) -> None:
        """A signature is of a finished fusion (``FusionDefinition.check_finished``)."""

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
        """The signature ``to_json`` wrote, checked as it is read (it comes
        from an artifact's manifest): an ArtifactError names the first field
        that is not what a signature holds."""
        check_record(raw, "signature", ("name", "inputs", "outputs", "extents", "classes", "reshapes"), ("nonempty",))
        inputs = [_input_from_json(s, i) for i, s in enumerate(check_type(raw["inputs"], list, "signature.inputs"))]
        ranks = {s.index: len(s.shape) for s in inputs if s.kind == "tensor"}
        count = len(check_type(raw["extents"], list, "signature.extents"))
        extents = [_extent_from_json(e, i, ranks, count) for i, e in enumerate(raw["extents"])]
        read = [_output_from_json(o, p, ranks, count) for p, o in enumerate(check_type(raw["outputs"], list, "signature.outputs"))]
        outputs, dims = [spec for spec, _ in read], [d for _, d in read]
        classes = check_type(raw["classes"], list, "signature.classes")
        if len(classes) != count:
            raise malformed("signature.classes", classes, f"not one extent id per extent ({count})")
        unify = [(i, check_index(root, count, f"signature.classes[{i}]", "an extent id")) for i, root in enumerate(classes) if i != root]
        reshapes = [_reshape_from_json(r, i, count) for i, r in enumerate(check_type(raw["reshapes"], list, "signature.reshapes"))]
        raw_nonempty = check_type(raw.get("nonempty", []), list, "signature.nonempty")  # older artifacts have none
        nonempty = [_nonempty_from_json(n, i, count) for i, n in enumerate(raw_nonempty)]
        return cls(check_type(raw["name"], str, "signature.name"), inputs, outputs, ShapeAnalysis(extents, unify, reshapes, nonempty), dims)


# -- reading the JSON form (checked: see plan.check_record) ---------------------------------


def _dtype(value, field: str) -> DataType:
    return DataType(check_choice(value, [t.value for t in DataType], field))


def _sizes(value, field: str) -> list[int]:
    """A list of static sizes (-1: a symbolic one)."""
    for d, size in enumerate(check_type(value, list, field)):
        check_count(size, f"{field}[{d}]", -1)
    return value


def _check_extents(value, count: int, field: str, *, rank: int | None = None) -> tuple:
    """Dims as extent ids below ``count`` (null: a broadcast dim), ``rank`` of them where given."""
    check_type(value, list, field)
    if rank is not None and len(value) != rank:
        raise malformed(field, value, f"not {rank} dims, one per dim of the shape")
    for d, extent in enumerate(value):
        if extent is not None:
            check_index(extent, count, f"{field}[{d}]", "an extent id")
    return tuple(value)


def _output_from_json(raw, position: int, ranks: dict[int, int], count: int) -> tuple[OutputSpec, tuple]:
    """An output's spec and its dims (extent ids below ``count``); ``ranks``: the tensor inputs' ranks."""
    field = f"signature.outputs[{position}]"
    check_record(raw, field, ("dtype", "shape", "dims", "alias_input", "visible"))
    shape = _sizes(raw["shape"], f"{field}.shape")
    alias = raw["alias_input"]
    if alias is not None and (type(alias) is not int or alias not in ranks):
        raise malformed(f"{field}.alias_input", alias, f"not null or a tensor input ({', '.join(map(str, sorted(ranks))) or 'there are none'})")
    visible = check_type(raw["visible"], bool, f"{field}.visible")
    spec = OutputSpec(position, -1, _dtype(raw["dtype"], f"{field}.dtype"), len(shape), tuple(shape), alias, visible)
    return spec, _check_extents(raw["dims"], count, f"{field}.dims", rank=len(shape))


def _input_from_json(raw, index: int) -> InputSpec:
    field = f"signature.inputs[{index}]"
    check_record(raw, field, ("kind", "dtype", "shape", "contiguity", "stride_order"))
    kind = check_choice(raw["kind"], ("tensor", "scalar"), f"{field}.kind")
    shape = _sizes(raw["shape"], f"{field}.shape")
    contiguity = check_type(raw["contiguity"], list, f"{field}.contiguity")
    if len(contiguity) != len(shape) or any(type(flag) is not bool and flag is not None for flag in contiguity):
        raise malformed(f"{field}.contiguity", contiguity, "not true, false or null for each dim of the shape")
    order = check_type(raw["stride_order"], list, f"{field}.stride_order")
    if any(type(d) is not int for d in order) or sorted(order) != list(range(len(shape))):
        raise malformed(f"{field}.stride_order", order, "not an order of the shape's dims")
    return InputSpec(index, kind, _dtype(raw["dtype"], f"{field}.dtype"), tuple(shape), tuple(contiguity), tuple(order))


def _extent_from_json(raw, index: int, ranks: dict[int, int], count: int) -> Extent:
    field = f"signature.extents[{index}]"
    check_record(raw, field, ("static", "input_dim", "derived", "note"))
    if raw["static"] is not None:
        check_count(raw["static"], f"{field}.static")
    input_dim = raw["input_dim"]
    if input_dim is not None:
        if not (isinstance(input_dim, list) and len(input_dim) == 2 and type(input_dim[0]) is int and input_dim[0] in ranks):
            raise malformed(f"{field}.input_dim", input_dim, "not [tensor input, dim]")
        check_index(input_dim[1], ranks[input_dim[0]], f"{field}.input_dim[1]", f"a dim of input {input_dim[0]}")
    derived = raw["derived"]
    if derived is not None:
        check_record(derived, f"{field}.derived", ("factors", "scale", "divisor"))
        factors = check_type(derived["factors"], list, f"{field}.derived.factors")
        derived = Product(tuple(check_index(f, count, f"{field}.derived.factors[{k}]", "an extent id") for k, f in enumerate(factors)),
                          check_count(derived["scale"], f"{field}.derived.scale"), check_count(derived["divisor"], f"{field}.derived.divisor", 1))
    return Extent(index, raw["static"], _opt_tuple(input_dim), derived, check_type(raw["note"], str, f"{field}.note"))


def _reshape_from_json(raw, index: int, count: int) -> ReshapeCheck:
    field = f"signature.reshapes[{index}]"
    check_record(raw, field, ("operand", "result", "new_shape", "where"))
    return ReshapeCheck(_check_extents(raw["operand"], count, f"{field}.operand"), _check_extents(raw["result"], count, f"{field}.result"),
                        tuple(_sizes(raw["new_shape"], f"{field}.new_shape")), check_type(raw["where"], str, f"{field}.where"))


def _nonempty_from_json(raw, index: int, count: int) -> NonemptyCheck:
    field = f"signature.nonempty[{index}]"
    check_record(raw, field, ("reduced", "outputs", "where"))
    outputs = tuple(_check_extents(d, count, f"{field}.outputs[{k}]") for k, d in enumerate(check_type(raw["outputs"], list, f"{field}.outputs")))
    return NonemptyCheck(_check_extents(raw["reduced"], count, f"{field}.reduced"), outputs, check_type(raw["where"], str, f"{field}.where"))


def _opt_list(value):
    return None if value is None else list(value)
