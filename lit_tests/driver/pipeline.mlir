// RUN: %fuser-opt %s -p fuser-verify,canonicalize,cse | FileCheck %s
// RUN: %fuser-opt %s -p 'builtin.module(fuser-verify,func.func(canonicalize,cse))' | FileCheck %s
// RUN: %fuser-opt %s --pass-pipeline='fuser-verify, canonicalize, cse' | FileCheck %s
// RUN: %fuser-opt < %s -p fuser-verify,canonicalize,cse | FileCheck %s

// A pipeline mixes fuser passes (run in Python) with upstream passes (given
// to MLIR as text), in plain or builtin.module(...) form, from a file or stdin.
// cse merges the duplicate constant and canonicalize drops the dead arith op,
// while the dead fuser op stays: IRDL ops cannot be Pure, so upstream passes
// never erase them.
// CHECK-LABEL: func.func @mixed(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>)
// CHECK:         %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NOT:     arith.
// CHECK:         %[[E:.*]] = "fuser.exp"(%[[X]])
// CHECK-NEXT:    %[[DEAD:.*]] = "fuser.neg"(%[[X]])
// CHECK-NEXT:    %[[M0:.*]] = "fuser.mul"(%[[E]], %[[C]])
// CHECK:         %[[M1:.*]] = "fuser.mul"(%[[M0]], %[[C]])
// CHECK:         return %[[M1]]
func.func @mixed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = "fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %dead = "fuser.neg"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %c0 = arith.constant 2.0 : f32
  %c1 = arith.constant 2.0 : f32
  %unused = arith.addf %c0, %c1 : f32
  %m0 = "fuser.mul"(%e, %c0) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %m1 = "fuser.mul"(%m0, %c1) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  return %m1 : tensor<?x4xf32>
}
