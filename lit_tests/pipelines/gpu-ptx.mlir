// RUN: %fuser-opt %s -p fuser-segment,fuser-outline-segments,fuser-gpu-pipeline | FileCheck %s

// fuser-gpu-pipeline takes outlined segments to PTX for sm_90 on a machine
// without a GPU: the kernels are lowered through convert-gpu-to-nvvm and
// serialised by gpu-module-to-binary into a gpu.binary holding PTX text
// (PTX ISA 8.0, which has sm_90's bulk L2 prefetch).
// (The compiler also runs ptxas on it where ptxas is installed;
// test/lowering/test_gpu.py checks that ptxas accepts it.)
// CHECK-LABEL: gpu.binary @fuser_kernels
// CHECK-SAME:    #gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME:    .version 8.0
// CHECK-SAME:    .target sm_90
// CHECK-SAME:    .visible .entry rowsum_seg0_k0(
// CHECK-SAME:    shfl.sync.bfly.b32
// CHECK-SAME:    bar.sync
func.func @rowsum(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%s, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
