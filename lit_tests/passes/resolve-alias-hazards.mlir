// RUN: %fuser-opt %s -p fuser-segment,fuser-resolve-alias-hazards --split-input-file | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-segment,fuser-resolve-alias-hazards{policy=copy}' --split-input-file | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-segment,fuser-resolve-alias-hazards{policy=reject}' --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=REJECT

// A same-index pointwise update in one kernel has no hazard: nothing is added.
// CHECK-LABEL: func.func @same_index
// CHECK: %[[E:.*]] = "fuser.exp"(%arg0) {fuser.segment = 0 : i64}
// CHECK-NEXT: "fuser.store"(%[[E]], %arg0) {fuser.segment = 0 : i64}
// CHECK-NOT: fuser.set
// REJECT-NOT: error: {{.*}}same_index
func.func @same_index(%x: tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// An intra-kernel race: the transpose reads x at other indices than the one
// the same kernel writes. The value is computed into a temporary and copied
// into x by a trailing segment.
// CHECK-LABEL: func.func @transpose
// CHECK: %[[P:.*]] = "fuser.permute"(%arg0) {{.*}}fuser.segment = 0
// CHECK: %[[C:.*]] = "fuser.set"(%[[P]]) {fuser.segment = 1 : i64}
// CHECK-NEXT: "fuser.store"(%[[C]], %arg0) {fuser.segment = 1 : i64}
// REJECT: error: 'fuser.store' op writes input 0 in place, but 'fuser.permute' op at {{.*}} reads input 0's entry value and the writing kernel reads it at other indices; the stored value is defined by 'fuser.permute' op
func.func @transpose(%x: tensor<4x4xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// A cross-segment write-after-read: segment 1 reads x's entry value after the
// broadcast-back cut, but segment 0 computes the update. The copy into x moves
// to a segment after both.
// CHECK-LABEL: func.func @cross_segment
// CHECK: %[[N:.*]] = "fuser.neg"(%arg0) {fuser.segment = 0 : i64}
// CHECK: "fuser.sub"(%arg0, %{{.*}}) {fuser.segment = 1 : i64}
// CHECK: %[[C:.*]] = "fuser.set"(%[[N]]) {fuser.segment = 2 : i64}
// CHECK-NEXT: "fuser.store"(%[[C]], %arg0) {fuser.segment = 2 : i64}
// REJECT: error: 'fuser.store' op writes input 0 in place, but 'fuser.sub' op at {{.*}} reads input 0's entry value and segment 1 reads it, and segment 0 writes it; the stored value is defined by 'fuser.neg' op
func.func @cross_segment(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.neg"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %2 = "fuser.sum"(%y) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %3 = "fuser.sub"(%x, %2) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %c0 = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf32>) -> i64
  %c1 = "fuser.size"(%x) {dim = 1 : i64} : (tensor<?x?xf32>) -> i64
  %e = "fuser.empty"(%c0, %c1) : (i64, i64) -> tensor<?x?xf32>
  %4 = "fuser.store"(%3, %e) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %4 : tensor<?x?xf32>
}
