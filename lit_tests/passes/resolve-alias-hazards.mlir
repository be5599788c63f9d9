// RUN: %fuser-opt %s -p fuser-segment,fuser-resolve-alias-hazards --split-input-file | FileCheck %s --check-prefixes=CHECK,AUTO
// RUN: %fuser-opt %s -p 'fuser-segment,fuser-resolve-alias-hazards{policy=copy}' --split-input-file | FileCheck %s --check-prefixes=CHECK,COPY
// RUN: %fuser-opt %s -p 'fuser-segment,fuser-resolve-alias-hazards{policy=reorder}' --split-input-file --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,REORDER

// A same-index pointwise update in one kernel has no hazard: nothing is added
// under any policy.
// CHECK-LABEL: func.func @same_index
// CHECK: %[[E:.*]] = "fuser.exp"(%arg0) {fuser.segment = 0 : i64}
// CHECK-NEXT: "fuser.store"(%[[E]], %arg0) {fuser.segment = 0 : i64}
// CHECK-NOT: fuser.alias_resolution
func.func @same_index(%x: tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// An intra-kernel race: the transpose reads x at other indices than the one
// the same kernel writes. The update cannot move (it would still read x
// transposed), so auto and copy compute it into a temporary and copy it into x
// in a trailing segment; reorder refuses.
// AUTO-LABEL: func.func @transpose
// COPY-LABEL: func.func @transpose
// AUTO: %[[P:.*]] = "fuser.permute"(%arg0) {{.*}}fuser.segment = 0
// AUTO: %[[C:.*]] = "fuser.set"(%[[P]]) {fuser.segment = 1 : i64}
// AUTO-NEXT: "fuser.store"(%[[C]], %arg0) {fuser.alias_report = "input 0 is updated in place {{.*}}intra-kernel: 'fuser.permute'{{.*}}copying it into input 0 in segment 1", fuser.alias_resolution = "copy", fuser.segment = 1 : i64}
// COPY: "fuser.set"({{.*}}) {fuser.segment = 1 : i64}
// COPY-NEXT: "fuser.store"({{.*}}fuser.alias_resolution = "copy"
// REORDER: error: 'fuser.store' op cannot be reordered after the reads of input 0: 'fuser.permute' at {{.*}} reads the input at other indices; use policy=copy or auto
func.func @transpose(%x: tensor<4x4xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// A cross-segment write-after-read: segment 1 reads x's entry value after
// the cut that a column sum broadcast back over its rows forces, but
// segment 0 writes the update. auto and reorder
// move the update (neg and its store) into segment 2, after the reader, with
// no extra buffer; copy keeps neg in segment 0 and copies in segment 2.
// CHECK-LABEL: func.func @cross_segment
// AUTO: %[[N:.*]] = "fuser.neg"(%arg0) {fuser.segment = 2 : i64}
// AUTO-NEXT: "fuser.store"(%[[N]], %arg0) {fuser.alias_report = "{{.*}}cross-segment: 'fuser.sub' at {{.*}} in segment 1 reads the entry value after segment 0 writes it; resolved by moving the update into segment 2, after every reader", fuser.alias_resolution = "reorder", fuser.segment = 2 : i64}
// REORDER: "fuser.neg"(%arg0) {fuser.segment = 2 : i64}
// REORDER-NEXT: fuser.alias_resolution = "reorder"
// AUTO: "fuser.sub"(%arg0, %{{.*}}) {fuser.segment = 1 : i64}
// COPY: %[[N:.*]] = "fuser.neg"(%arg0) {fuser.segment = 0 : i64}
// COPY: "fuser.sub"(%arg0, %{{.*}}) {fuser.segment = 1 : i64}
// COPY: %[[C:.*]] = "fuser.set"(%[[N]]) {fuser.segment = 2 : i64}
// COPY-NEXT: "fuser.store"(%[[C]], %arg0) {{.*}}fuser.alias_resolution = "copy"
func.func @cross_segment(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.neg"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %2 = "fuser.sum"(%y) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %3 = "fuser.sub"(%x, %2) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %c0 = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf32>) -> i64
  %c1 = "fuser.size"(%x) {dim = 1 : i64} : (tensor<?x?xf32>) -> i64
  %e = "fuser.empty"(%c0, %c1) : (i64, i64) -> tensor<?x?xf32>
  %4 = "fuser.store"(%3, %e) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %4 : tensor<?x?xf32>
}

// -----

// Two chained updates that read each other's inputs (a <- a + b, b <- b * a)
// plus a reduction that reads both in the writing kernel. Neither update can
// move past the other, so both are copied in one trailing segment.
// AUTO-LABEL: func.func @chained
// COPY-LABEL: func.func @chained
// AUTO-DAG: "fuser.store"({{.*}}, %arg0) {{.*}}fuser.alias_resolution = "copy", fuser.segment = 1 : i64
// AUTO-DAG: "fuser.store"({{.*}}, %arg1) {{.*}}fuser.alias_resolution = "copy", fuser.segment = 1 : i64
// REORDER: error: 'fuser.store' op cannot be reordered after the reads of input 0: 'fuser.add' at {{.*}} reads input 1, which is also updated in place
func.func @chained(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<f32> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.add"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.store"(%0, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.mul"(%b, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %3 = "fuser.store"(%2, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %4 = "fuser.mul"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %5 = "fuser.sum"(%4) {dims = array<i64: 0>, keepdim = false} : (tensor<?xf32>) -> tensor<f32>
  %e = "fuser.empty"() : () -> tensor<f32>
  %6 = "fuser.store"(%5, %e) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %6 : tensor<f32>
}
