"""Schedule every segment function into gpu.func kernels in one gpu.module.

Preconditions: ``fuser-verify`` holds; segments as for ``fuser-lower-to-cpu``
(``fuser-outline-segments`` makes them).

Effect: the module gets the ``gpu.container_module`` attribute and one
``gpu.module @fuser_kernels`` holding the kernels of every segment, written
by the GPU schedulers (:mod:`fuser_mlir.lowering.gpu_schedule`: pointwise,
inner reduction with ``gpu.all_reduce``, outer reduction in two kernels, a
serial fallback), named ``@<segment>_k<N>``; libm calls become libdevice
calls (``@__nv_expf``). Each segment function gets ``fuser.launches``, its
launch program as JSON (the temporaries to allocate and each launch's grid,
block and arguments, see :mod:`fuser_mlir.runtime.launch`); the segment
functions themselves are unchanged. ``fuser-gpu-pipeline`` continues to PTX
(``convert-gpu-to-nvvm``, ``nvvm-attach-target``, ``gpu-module-to-binary``).
Option ``segments-only`` (the pipeline sets it): a whole fusion is an error,
as for ``fuser-lower-to-cpu``.

    func.func private @f_seg0(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> ... {
      %e = "fuser.exp"(%x) ...
    ==>
    func.func private @f_seg0(...) attributes {fuser.launches = "{\\"temps\\": [], \\"launches\\": ...}", ...}
    gpu.module @fuser_kernels {
      gpu.func @f_seg0_k0(%arg0: memref<?xf32, strided<[?], offset: ?>>, %arg1: ...) kernel {
        scf.for %i = %global_thread to %size step %grid_threads { ... llvm.call @__nv_expf ... }
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fuser_mlir._mlir import ir
from fuser_mlir.errors import CompileError
from fuser_mlir.passes.base import FuserPass, PassFailure, emit_error
from fuser_mlir.passes.lower_to_cpu import symbol_name, unsegmented_errors

LAUNCHES_ATTR = "fuser.launches"


@dataclass
class LowerToGpuPass(FuserPass):
    NAME = "fuser-lower-to-gpu"
    SUMMARY = "Schedule every segment function into gpu.func kernels in one gpu.module."

    #: Refuse whole fusions (see lower_to_cpu.unsegmented_errors) instead of leaving them as they are.
    segments_only: bool = False

    def run(self, module: ir.Operation) -> None:
        from fuser_mlir.lowering.gpu import lower_to_gpu

        if self.segments_only and unsegmented_errors(module, self.NAME):
            raise PassFailure()
        try:
            scheduled = lower_to_gpu(module)
        except CompileError as err:
            emit_error(module, f"fuser-lower-to-gpu: {err.args[0] if err.args else err}")
            raise PassFailure from None
        body = module.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            for op in scheduled.module.body.operations:
                op.operation.clone()
        module.attributes["gpu.container_module"] = ir.UnitAttr.get(module.context)
        for op in body.operations:
            op = op.operation
            if op.name == "func.func" and symbol_name(op) in scheduled.programs:
                text = json.dumps(scheduled.programs[symbol_name(op)].to_dict())
                op.attributes[LAUNCHES_ATTR] = ir.StringAttr.get(text, module.context)
