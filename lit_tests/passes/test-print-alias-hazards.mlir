// RUN: %fuser-opt %s -p fuser-segment,fuser-test-print-alias-hazards --split-input-file | FileCheck %s

// A same-index pointwise update in one kernel: no hazard.
// CHECK-LABEL: func.func @safe
// CHECK: "fuser.store"(%{{.*}}, %arg0) {fuser.alias_hazards = [], fuser.segment = 0 : i64}
func.func @safe(%x: tensor<?xf32>, %y: tensor<?xf32>) attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.mul"(%x, %y) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.exp"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.store"(%1, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// A reader in an earlier segment is no hazard: the host runs it first.
// CHECK-LABEL: func.func @earlier_reader
// CHECK: "fuser.store"(%{{.*}}, %arg0) {fuser.alias_hazards = [], fuser.segment = 1 : i64}
func.func @earlier_reader(%x: tensor<?x?xf32>) -> tensor<?x1xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf32>) -> i64
  %e = "fuser.empty"(%n) : (i64) -> tensor<?x1xf32>
  %1 = "fuser.store"(%0, %e) : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %2 = "fuser.sub"(%1, %0) : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %3 = "fuser.segment_set"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %4 = "fuser.neg"(%3) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %5 = "fuser.store"(%4, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %1 : tensor<?x1xf32>
}

// -----

// Each kind of hazard, one store: a reduction reads x in the writing kernel
// (intra-kernel), and x feeds a later segment (cross-segment: the column
// sum broadcast back over x cuts).
// CHECK-LABEL: func.func @both_kinds
// CHECK: "fuser.store"(%{{.*}}, %arg0) {fuser.alias_hazards = ["cross-segment: 'fuser.sub' at {{.*}} in segment 1 reads the entry value after segment 0 writes it", "intra-kernel: 'fuser.sum' at {{.*}} reads it at other indices in segment 0, which writes it"]
func.func @both_kinds(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.relu"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %2 = "fuser.sum"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %3 = "fuser.sub"(%x, %2) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %c0 = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf32>) -> i64
  %c1 = "fuser.size"(%x) {dim = 1 : i64} : (tensor<?x?xf32>) -> i64
  %e = "fuser.empty"(%c0, %c1) : (i64, i64) -> tensor<?x?xf32>
  %4 = "fuser.store"(%3, %e) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %4 : tensor<?x?xf32>
}

// -----

// A value computed from x in the writing kernel and read by a later segment
// is a hazard: outlining stores it into a buffer of its own, another loop of
// that kernel, which may run after the in-place write. The stored value
// itself is not one: a later reader reads it back from x.
// CHECK-LABEL: func.func @read_later
// CHECK: "fuser.store"(%{{.*}}, %arg0) {fuser.alias_hazards = ["intra-kernel: 'fuser.mul' at {{.*}} computes a value from it in segment 0, which writes it, and segment 1 reads that value", "intra-kernel: 'fuser.neg' at {{.*}} computes a value from it in segment 0, which writes it, and segment 1 reads that value"], fuser.segment = 0 : i64}
func.func @read_later(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 2 : i64} {
  %half = "fuser.constant"() {value = 5.000000e-01 : f32} : () -> f32
  %t = "fuser.mul"(%x, %half) : (tensor<?xf32>, f32) -> tensor<?xf32>
  %k = "fuser.segment_set"(%y) : (tensor<?xf32>) -> tensor<?xf32>
  %d = "fuser.sub"(%k, %t) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %sq = "fuser.mul"(%t, %t) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %m = "fuser.neg"(%t) : (tensor<?xf32>) -> tensor<?xf32>
  %u = "fuser.mul"(%m, %k) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %n = "fuser.size"(%y) {dim = 0 : i64} : (tensor<?xf32>) -> i64
  %e = "fuser.empty"(%n) : (i64) -> tensor<?xf32>
  %r = "fuser.store"(%u, %e) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %s = "fuser.store"(%sq, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %s2 = "fuser.store"(%d, %y) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
