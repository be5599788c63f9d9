// RUN: %fuser-opt %s -p fuser-segment,fuser-outline-segments,fuser-verify --split-input-file | FileCheck %s

// fuser-outline-segments moves segment K of @f into
// `func.func private @f_segK(%in..., %dest...)`; the host keeps its scalar
// ops and fuser.empty, gets an empty per intermediate, and calls the
// segments in order. Store destinations go straight to the calls.

// One pointwise segment: the caller's output buffer is the call's
// destination; the scalar constant is recomputed inside the segment.
// CHECK-LABEL: func.func @pointwise(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[S:.*]]: f32, %[[OUT:.*]]: tensor<?x4xf32>)
// CHECK-SAME:    attributes {fuser.num_inputs = 2 : i64}
// CHECK-NEXT:    %[[R:.*]] = call @pointwise_seg0(%[[X]], %[[S]], %[[OUT]]) : (tensor<?x4xf32>, f32, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<?x4xf32>
// CHECK-LABEL: func.func private @pointwise_seg0(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[S:.*]]: f32, %[[D:.*]]: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-SAME:    attributes {fuser.num_inputs = 2 : i64}
// CHECK-NEXT:    %[[C:.*]] = "fuser.constant"() {value = 2.000000e+00 : f32}
// CHECK-NEXT:    %[[SC:.*]] = "fuser.mul"(%[[S]], %[[C]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[V:.*]] = "fuser.mul"(%[[X]], %[[SC]]) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
// CHECK-NEXT:    %[[W:.*]] = "fuser.store"(%[[V]], %[[D]])
// CHECK-NEXT:    return %[[W]] : tensor<?x4xf32>
func.func @pointwise(%x: tensor<?x4xf32>, %s: f32, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {fuser.num_inputs = 2 : i64} {
  %c = "fuser.constant"() {value = 2.0 : f32} : () -> f32
  %sc = "fuser.mul"(%s, %c) : (f32, f32) -> f32
  %0 = "fuser.mul"(%x, %sc) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %r = "fuser.store"(%0, %out) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// segment_set: the value crossing the cut gets a host fuser.empty sized from
// the input; the executor-allocated output (a fuser.empty) is the second
// call's destination.
// CHECK-LABEL: func.func @segment_set(
// CHECK-SAME:    %[[X:.*]]: tensor<?xf32>)
// CHECK-NEXT:    %[[N:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64} : (tensor<?xf32>) -> i64
// CHECK-NEXT:    %[[OUT:.*]] = "fuser.empty"(%[[N]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    %[[TMP:.*]] = "fuser.empty"(%[[N]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    %[[A:.*]] = call @segment_set_seg0(%[[X]], %[[TMP]]) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[B:.*]] = call @segment_set_seg1(%[[A]], %[[OUT]]) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:    return %[[B]] : tensor<?xf32>
// CHECK-LABEL: func.func private @segment_set_seg0(
// CHECK-SAME:    %[[X:.*]]: tensor<?xf32>, %[[D:.*]]: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64}
// CHECK-NEXT:    %[[E:.*]] = "fuser.exp"(%[[X]])
// CHECK-NEXT:    %[[SS:.*]] = "fuser.segment_set"(%[[E]])
// CHECK-NEXT:    %[[W:.*]] = "fuser.store"(%[[SS]], %[[D]])
// CHECK-NEXT:    return %[[W]]
// CHECK-LABEL: func.func private @segment_set_seg1(
// CHECK-SAME:    %[[T:.*]]: tensor<?xf32>, %[[D:.*]]: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64}
// CHECK-NEXT:    %[[NG:.*]] = "fuser.neg"(%[[T]])
// CHECK-NEXT:    %[[W:.*]] = "fuser.store"(%[[NG]], %[[D]])
// CHECK-NEXT:    return %[[W]]
func.func @segment_set(%x: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.segment_set"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.neg"(%1) : (tensor<?xf32>) -> tensor<?xf32>
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?xf32>) -> i64
  %o = "fuser.empty"(%n) : (i64) -> tensor<?xf32>
  %r = "fuser.store"(%2, %o) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Softmax: three segments, two intermediates (max, and the sum of exp).
// The last segment computes exp again from x and the max (fuser-segment's
// rule 6): no full-size intermediate is written and read back.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>, %[[OUT:.*]]: tensor<?x?xf32>)
// CHECK-NEXT:    %[[N0:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64}
// CHECK-NEXT:    %[[MAX:.*]] = "fuser.empty"(%[[N0]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    %[[SUM:.*]] = "fuser.empty"(%[[N0]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    %[[M:.*]] = call @softmax_seg0(%[[X]], %[[MAX]]) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[S:.*]] = call @softmax_seg1(%[[X]], %[[M]], %[[SUM]])
// CHECK-NEXT:    %[[Y:.*]] = call @softmax_seg2(%[[X]], %[[S]], %[[M]], %[[OUT]])
// CHECK-NEXT:    return %[[Y]]
// CHECK-LABEL: func.func private @softmax_seg0(
// CHECK:         "fuser.max"
// CHECK-LABEL: func.func private @softmax_seg1(
// CHECK-SAME:    attributes {fuser.num_inputs = 2 : i64}
// CHECK:         "fuser.sub"
// CHECK:         "fuser.exp"
// CHECK:         "fuser.sum"
// CHECK:         return %{{.*}} : tensor<?xf32>
// CHECK-LABEL: func.func private @softmax_seg2(
// CHECK-SAME:    attributes {fuser.num_inputs = 3 : i64}
// CHECK:         "fuser.sub"
// CHECK-NEXT:    "fuser.exp"
// CHECK-NEXT:    "fuser.div"
func.func @softmax(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %mb = "fuser.broadcast_in_dim"(%m) {broadcast_dims = array<i64: 0>} : (tensor<?xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%x, %mb) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %e = "fuser.exp"(%d) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %sb = "fuser.broadcast_in_dim"(%s) {broadcast_dims = array<i64: 0>} : (tensor<?xf32>) -> tensor<?x1xf32>
  %y = "fuser.div"(%e, %sb) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// An output that a later segment reads (exp, divided by its column sums):
// the output buffer is the intermediate. Segment 0 writes %e into the
// caller's %o0 and segment 1 reads it back from the call result; no extra
// buffer, no host copy.
// CHECK-LABEL: func.func @output_read_later(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>, %[[O0:.*]]: tensor<?x?xf32>, %[[O1:.*]]: tensor<?x?xf32>)
// CHECK-NEXT:    %[[N1:.*]] = "fuser.size"(%[[X]]) {dim = 1 : i64}
// CHECK-NEXT:    %[[SUM:.*]] = "fuser.empty"(%[[N1]]) : (i64) -> tensor<1x?xf32>
// CHECK-NEXT:    %[[A:.*]]:2 = call @output_read_later_seg0(%[[X]], %[[O0]], %[[SUM]])
// CHECK-NEXT:    %[[B:.*]] = call @output_read_later_seg1(%[[A]]#0, %[[A]]#1, %[[O1]])
// CHECK-NEXT:    return %[[A]]#0, %[[B]]
// CHECK-LABEL: func.func private @output_read_later_seg0(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>, %[[D0:.*]]: tensor<?x?xf32>, %[[D1:.*]]: tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>)
// CHECK-NEXT:    %[[E:.*]] = "fuser.exp"(%[[X]])
// CHECK-NEXT:    %[[S:.*]] = "fuser.sum"(%[[E]])
// CHECK-NEXT:    %[[W0:.*]] = "fuser.store"(%[[E]], %[[D0]])
// CHECK-NEXT:    %[[W1:.*]] = "fuser.store"(%[[S]], %[[D1]])
// CHECK-NEXT:    return %[[W0]], %[[W1]]
// CHECK-LABEL: func.func private @output_read_later_seg1(
// CHECK-SAME:    %[[E:.*]]: tensor<?x?xf32>, %[[S:.*]]: tensor<1x?xf32>, %[[D:.*]]: tensor<?x?xf32>)
// CHECK-NEXT:    %[[Y:.*]] = "fuser.div"(%[[E]], %[[S]])
// CHECK-NEXT:    %[[W:.*]] = "fuser.store"(%[[Y]], %[[D]])
func.func @output_read_later(%x: tensor<?x?xf32>, %o0: tensor<?x?xf32>, %o1: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %y = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r0 = "fuser.store"(%e, %o0) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %r1 = "fuser.store"(%y, %o1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r0, %r1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Reductions of reductions with static shapes: intermediates need no size
// operands; each segment reads only the previous one.
// CHECK-LABEL: func.func @reduction_of_reduction(
// CHECK-SAME:    %[[X:.*]]: tensor<32x64x8x128xf64>, %[[Y:.*]]: tensor<32x64x8x128xf64>, %[[OUT:.*]]: tensor<8xf64>)
// CHECK-NEXT:    %[[T1:.*]] = "fuser.empty"() : () -> tensor<64x8x128xf64>
// CHECK-NEXT:    %[[T2:.*]] = "fuser.empty"() : () -> tensor<64x8xf64>
// CHECK-NEXT:    %[[A:.*]] = call @reduction_of_reduction_seg0(%[[X]], %[[Y]], %[[T1]])
// CHECK-NEXT:    %[[B:.*]] = call @reduction_of_reduction_seg1(%[[A]], %[[T2]])
// CHECK-NEXT:    %[[C:.*]] = call @reduction_of_reduction_seg2(%[[B]], %[[OUT]])
// CHECK-NEXT:    return %[[C]]
func.func @reduction_of_reduction(%x: tensor<32x64x8x128xf64>, %y: tensor<32x64x8x128xf64>, %out: tensor<8xf64>) -> tensor<8xf64> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.add"(%x, %y) : (tensor<32x64x8x128xf64>, tensor<32x64x8x128xf64>) -> tensor<32x64x8x128xf64>
  %1 = "fuser.sum"(%0) {dims = array<i64: 0>, keepdim = false} : (tensor<32x64x8x128xf64>) -> tensor<64x8x128xf64>
  %2 = "fuser.sum"(%1) {dims = array<i64: 2>, keepdim = false} : (tensor<64x8x128xf64>) -> tensor<64x8xf64>
  %3 = "fuser.sum"(%2) {dims = array<i64: 0>, keepdim = false} : (tensor<64x8xf64>) -> tensor<8xf64>
  %r = "fuser.store"(%3, %out) : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  return %r : tensor<8xf64>
}

// -----

// A hidden in-place update (a store into input %x that is not returned)
// stays: the call writes into %x. A later segment that reads %x is not
// reordered here (fuser-resolve-alias-hazards runs before outlining).
// CHECK-LABEL: func.func @in_place(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>, %[[OUT:.*]]: tensor<?xf32>)
// CHECK-NEXT:    %[[A:.*]]:2 = call @in_place_seg0(%[[X]], %[[X]], %[[OUT]])
// CHECK-NEXT:    return %[[A]]#1 : tensor<?xf32>
// CHECK-LABEL: func.func private @in_place_seg0(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>, %[[DX:.*]]: tensor<?x?xf32>, %[[DO:.*]]: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64}
// CHECK:         "fuser.store"(%{{.*}}, %[[DX]])
// CHECK:         "fuser.store"(%{{.*}}, %[[DO]])
func.func @in_place(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %r = "fuser.relu"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %w = "fuser.store"(%r, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %o = "fuser.store"(%s, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %o : tensor<?xf32>
}

// -----

// A dynamic reshape: the host computes the size for the intermediate's
// fuser.empty; the segment recomputes it from its own input (fuser.size,
// constants and i64 arithmetic are cloned in, so no host scalar is passed).
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[OUT:.*]]: tensor<?xf32>)
// CHECK-NEXT:    %[[N:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64}
// CHECK-NEXT:    %[[C4:.*]] = "fuser.constant"() {value = 4 : i64}
// CHECK-NEXT:    %[[N4:.*]] = "fuser.mul"(%[[N]], %[[C4]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[T:.*]] = "fuser.empty"(%[[N4]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    %[[A:.*]] = call @reshape_seg0(%[[X]], %[[T]])
// CHECK-NEXT:    %[[B:.*]] = call @reshape_seg1(%[[A]], %[[OUT]])
// CHECK-LABEL: func.func private @reshape_seg0(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[D:.*]]: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64}
// CHECK-NEXT:    %[[N:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64}
// CHECK-NEXT:    %[[C4:.*]] = "fuser.constant"() {value = 4 : i64}
// CHECK-NEXT:    %[[N4:.*]] = "fuser.mul"(%[[N]], %[[C4]])
// CHECK-NEXT:    "fuser.reshape"(%[[X]], %[[N4]])
func.func @reshape(%x: tensor<?x4xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
  %c4 = "fuser.constant"() {value = 4 : i64} : () -> i64
  %n4 = "fuser.mul"(%n, %c4) : (i64, i64) -> i64
  %f = "fuser.reshape"(%x, %n4) : (tensor<?x4xf32>, i64) -> tensor<?xf32>
  %c = "fuser.segment_set"(%f) : (tensor<?xf32>) -> tensor<?xf32>
  %y = "fuser.neg"(%c) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A host fuser.size of a value a segment computes reads the function
// argument it derives from instead, so the host never waits on a segment.
// CHECK-LABEL: func.func @size_of_computed(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?xf32>)
// CHECK-NEXT:    %[[N:.*]] = "fuser.size"(%[[X]]) {dim = 0 : i64}
// CHECK-NEXT:    %[[O:.*]] = "fuser.empty"(%[[N]]) : (i64) -> tensor<?xf32>
// CHECK-NEXT:    call @size_of_computed_seg0(%[[X]], %[[O]])
func.func @size_of_computed(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %n = "fuser.size"(%s) {dim = 0 : i64} : (tensor<?xf32>) -> i64
  %o = "fuser.empty"(%n) : (i64) -> tensor<?xf32>
  %r = "fuser.store"(%s, %o) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
