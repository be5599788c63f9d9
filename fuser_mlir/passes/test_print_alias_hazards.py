"""Annotate every in-place store with the alias hazards the analysis finds.

Preconditions: ``fuser-segment`` has run (without segments every op counts as
one kernel). Effect: each ``fuser.store`` into an input gets
``fuser.alias_hazards``, an array of strings, one per hazard (kind, the
reading op, its location, why); ``[]`` when the update is safe as it stands.
Changes nothing else. For lit tests of ``analysis/hazards.py``.

    %s = "fuser.store"(%r, %x) {fuser.segment = 0}
    ==>
    %s = "fuser.store"(%r, %x) {fuser.alias_hazards = ["cross-segment: 'fuser.sub' at f.py:3:5 in segment 1 reads ..."], ...}
"""

from __future__ import annotations

from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.analysis.hazards import find_hazards
from fuser_mlir.analysis.segments import fusion_functions
from fuser_mlir.passes.base import FuserPass
from fuser_mlir.passes.resolve_alias_hazards import in_place_stores

HAZARDS_ATTR = "fuser.alias_hazards"


@dataclass
class TestPrintAliasHazardsPass(FuserPass):
    NAME = "fuser-test-print-alias-hazards"
    SUMMARY = "Annotate every in-place store with the alias hazards the analysis finds."

    def run(self, module: ir.Operation) -> None:
        for func in fusion_functions(module):
            for store in in_place_stores(func):
                found = [ir.StringAttr.get(h.describe()) for h in find_hazards(store)]
                store.attributes[HAZARDS_ATTR] = ir.ArrayAttr.get(found)
