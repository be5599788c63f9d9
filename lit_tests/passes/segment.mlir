// RUN: %fuser-opt %s -p fuser-segment --split-input-file --verify-diagnostics | FileCheck %s

// fuser-segment puts `fuser.segment = K` on every op that computes a tensor
// (stores take the segment of the value they store); host ops (fuser.size,
// fuser.constant, scalar arithmetic, fuser.empty) get none. One case per
// cutting rule of fuser_mlir/passes/segment.py.

// A pointwise chain with a scalar constant is one segment; the scalar ops
// and the fuser.empty stay host ops.
// CHECK-LABEL: func.func @pointwise_only(
// CHECK:         "fuser.constant"() {value = 2.000000e+00 : f32} : () -> f32
// CHECK:         "fuser.mul"({{.*}}) {fuser.segment = 0 : i64}
// CHECK:         "fuser.exp"({{.*}}) {fuser.segment = 0 : i64}
// CHECK:         "fuser.add"({{.*}}) {fuser.segment = 0 : i64}
// CHECK:         "fuser.size"(%{{.*}}) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
// CHECK-NEXT:    "fuser.empty"(%{{.*}}) : (i64) -> tensor<?x4xf32>
// CHECK-NEXT:    "fuser.store"({{.*}}) {fuser.segment = 0 : i64}
// CHECK-NOT:     fuser.segment = 1
func.func @pointwise_only(%x: tensor<?x4xf32>, %y: tensor<1x4xf32>) -> tensor<?x4xf32> attributes {fuser.num_inputs = 2 : i64} {
  %c = "fuser.constant"() {value = 2.0 : f32} : () -> f32
  %0 = "fuser.mul"(%x, %c) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %1 = "fuser.exp"(%0) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = "fuser.add"(%1, %y) : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
  %o = "fuser.empty"(%n) : (i64) -> tensor<?x4xf32>
  %r = "fuser.store"(%2, %o) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// fuser.segment_set stays with the producer of its operand; its consumers
// start a new segment.
// CHECK-LABEL: func.func @segment_set(
// CHECK:         "fuser.exp"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.segment_set"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.neg"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @segment_set(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.segment_set"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.neg"(%1) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%2, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A segment_set right before an output: the store is a consumer too, so it
// goes to a segment of its own (N segment_sets in a chain: N + 1 segments).
// CHECK-LABEL: func.func @segment_set_output(
// CHECK:         "fuser.exp"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.segment_set"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @segment_set_output(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.segment_set"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%1, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// segment_set of a function argument: a copy step of its own, the consumers
// follow in the next segment.
// CHECK-LABEL: func.func @segment_set_of_input(
// CHECK:         "fuser.segment_set"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.neg"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @segment_set_of_input(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %1 = "fuser.segment_set"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.neg"(%1) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%2, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Softmax written with keepdim = false: the broadcast_in_dim of max(x) is a
// layout op on a reduced value and cuts, and so does the one of the sum,
// rows or not: three segments [max | broadcast sub exp sum | broadcast div].
// exp is read by the sum and by the last segment's div, so that segment
// computes it again from x and the max (rule 6): clones of the broadcast, the
// sub and the exp, placed before the div.
// CHECK-LABEL: func.func @softmax(
// CHECK:         "fuser.max"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 0>, fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 1 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 0>, fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 0>, fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 2 : i64}
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

// Softmax with keepdim reductions over the rows (rule 2b): the pointwise
// ops read max and sum at x's iteration space, and sum reduces exp(x - max)
// over the same domain, so the whole softmax is one segment.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK:         "fuser.max"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NOT:     fuser.segment = 1
func.func @softmax_rows(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%x, %m) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %e = "fuser.exp"(%d) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %y = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Softmax over the columns (dim 0, not a suffix): rule 2b does not apply, so
// each pointwise op that reads max or sum at x's iteration space cuts:
// [max | sub exp sum | sub exp div], the last segment computing exp again
// (rule 6) rather than reading it back.
// CHECK-LABEL: func.func @softmax_columns(
// CHECK:         "fuser.max"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 1 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%[[X:.*]], %[[M:.*]]) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 2 : i64}
func.func @softmax_columns(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %d = "fuser.sub"(%x, %m) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %e = "fuser.exp"(%d) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %y = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// A middle dim of a 3-D tensor is not a suffix either: max over dim 1
// broadcast back cuts.
// CHECK-LABEL: func.func @middle_dim_broadcast_back(
// CHECK:         "fuser.max"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @middle_dim_broadcast_back(%x: tensor<?x?x?xf32>, %out: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?x?xf32>) -> tensor<?x1x?xf32>
  %d = "fuser.sub"(%x, %m) : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  %r = "fuser.store"(%d, %out) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// A keepdim row max expanded to full size by a broadcast_in_dim cuts: rule 2b
// admits pointwise ops, not layout ops on a reduced value. The sub then reads
// the broadcast in the next segment.
// CHECK-LABEL: func.func @broadcast_row_to_full_size(
// CHECK:         "fuser.max"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 0, 1>, fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @broadcast_row_to_full_size(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %mb = "fuser.broadcast_in_dim"(%m) {broadcast_dims = array<i64: 0, 1>} : (tensor<?x1xf32>) -> tensor<?x8xf32>
  %d = "fuser.sub"(%x, %mb) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = "fuser.store"(%d, %out) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// A row sum broadcast back stays in its segment (rule 2b), but a sum of
// that over the columns reduces another domain and cuts.
// CHECK-LABEL: func.func @row_sum_then_columns(
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 1 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @row_sum_then_columns(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%x, %s) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %t = "fuser.sum"(%d) {dims = array<i64: 0>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%t, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A reduction of a reduction cuts, each time: add + sum(dim 0) | sum(dim -1)
// | sum(dim 0) are three segments.
// CHECK-LABEL: func.func @reduction_of_reduction(
// CHECK:         "fuser.add"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 2>, fuser.segment = 1 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 2 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 2 : i64}
func.func @reduction_of_reduction(%x: tensor<32x64x8x128xf64>, %y: tensor<32x64x8x128xf64>, %out: tensor<8xf64>) -> tensor<8xf64> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.add"(%x, %y) : (tensor<32x64x8x128xf64>, tensor<32x64x8x128xf64>) -> tensor<32x64x8x128xf64>
  %1 = "fuser.sum"(%0) {dims = array<i64: 0>, keepdim = false} : (tensor<32x64x8x128xf64>) -> tensor<64x8x128xf64>
  %2 = "fuser.sum"(%1) {dims = array<i64: 2>, keepdim = false} : (tensor<64x8x128xf64>) -> tensor<64x8xf64>
  %3 = "fuser.sum"(%2) {dims = array<i64: 0>, keepdim = false} : (tensor<64x8xf64>) -> tensor<8xf64>
  %r = "fuser.store"(%3, %out) : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  return %r : tensor<8xf64>
}

// -----

// A reduction followed by pointwise ops on the reduced shape (a scalar, a
// bias read at the reduced iteration space, a cast) stays one segment.
// CHECK-LABEL: func.func @reduction_then_pointwise(
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.add"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.cast"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NOT:     fuser.segment = 1
func.func @reduction_then_pointwise(%x: tensor<?x?xf32>, %bias: tensor<?xf32>, %n: f32, %out: tensor<?xf16>) -> tensor<?xf16> attributes {fuser.num_inputs = 3 : i64} {
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %m = "fuser.div"(%s, %n) : (tensor<?xf32>, f32) -> tensor<?xf32>
  %b = "fuser.add"(%m, %bias) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %h = "fuser.cast"(%b) : (tensor<?xf32>) -> tensor<?xf16>
  %r = "fuser.store"(%h, %out) : (tensor<?xf16>, tensor<?xf16>) -> tensor<?xf16>
  return %r : tensor<?xf16>
}

// -----

// Two reductions over the same domain share a segment (mean and mean of
// squares of a layer norm), and the normalisation that reads mean and rstd
// at x's iteration space joins them (rule 2b): one segment, the weight's
// broadcast included.
// CHECK-LABEL: func.func @layer_norm(
// CHECK:         "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 1>, fuser.segment = 0 : i64}
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.add"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.rsqrt"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NOT:     fuser.segment = 1
func.func @layer_norm(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %n: f32, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 3 : i64} {
  %wb = "fuser.broadcast_in_dim"(%w) {broadcast_dims = array<i64: 1>} : (tensor<?xf32>) -> tensor<1x?xf32>
  %eps = "fuser.constant"() {value = 1.0e-05 : f32} : () -> f32
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %x2 = "fuser.mul"(%x, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %s2 = "fuser.sum"(%x2) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %mean = "fuser.div"(%s, %n) : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %meansq = "fuser.div"(%s2, %n) : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %mm = "fuser.mul"(%mean, %mean) : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %var = "fuser.sub"(%meansq, %mm) : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %ve = "fuser.add"(%var, %eps) : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %rstd = "fuser.rsqrt"(%ve) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%x, %mean) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %nrm = "fuser.mul"(%d, %rstd) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %y = "fuser.mul"(%nrm, %wb) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// RMS norm: sum of squares, rsqrt and the scaled row are one segment (rule 2b).
// CHECK-LABEL: func.func @rms_norm(
// CHECK:         "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.add"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.rsqrt"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NOT:     fuser.segment = 1
func.func @rms_norm(%x: tensor<?x?xf32>, %n: f32, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 2 : i64} {
  %eps = "fuser.constant"() {value = 1.0e-06 : f32} : () -> f32
  %x2 = "fuser.mul"(%x, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%x2) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %ms = "fuser.div"(%s, %n) : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %ve = "fuser.add"(%ms, %eps) : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %rrms = "fuser.rsqrt"(%ve) : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %y = "fuser.mul"(%x, %rrms) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Centring over the columns cuts after the mean (an outer-dim
// normalization). The weight's broadcast, written first, moves next to its
// only consumer in segment 1.
// CHECK-LABEL: func.func @centre_columns(
// CHECK:         "fuser.broadcast_in_dim"(%{{.*}}) {broadcast_dims = array<i64: 0>, fuser.segment = 1 : i64}
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @centre_columns(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %n: f32, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 3 : i64} {
  %wb = "fuser.broadcast_in_dim"(%w) {broadcast_dims = array<i64: 0>} : (tensor<?xf32>) -> tensor<?x1xf32>
  %s = "fuser.sum"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %mean = "fuser.div"(%s, %n) : (tensor<1x?xf32>, f32) -> tensor<1x?xf32>
  %d = "fuser.sub"(%x, %mean) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %y = "fuser.mul"(%d, %wb) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Reductions over different domains of one input do not share a segment.
// CHECK-LABEL: func.func @two_domains(
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 1 : i64, keepdim = false}
func.func @two_domains(%x: tensor<?x?xf32>, %o0: tensor<?xf32>, %o1: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %a = "fuser.sum"(%x) {dims = array<i64: 0>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %b = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r0 = "fuser.store"(%a, %o0) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %r1 = "fuser.store"(%b, %o1) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r0, %r1 : tensor<?xf32>, tensor<?xf32>
}

// -----

// Same dims and shape, but the dynamic sizes come from different arguments:
// nothing says the two inputs have the same size, so the reductions split.
// CHECK-LABEL: func.func @unrelated_sizes(
// CHECK:         "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 0 : i64, keepdim = false}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 1>, fuser.segment = 1 : i64, keepdim = false}
func.func @unrelated_sizes(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %o0: tensor<?xf32>, %o1: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) attributes {fuser.num_inputs = 2 : i64} {
  %a = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %b = "fuser.sum"(%y) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r0 = "fuser.store"(%a, %o0) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %r1 = "fuser.store"(%b, %o1) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r0, %r1 : tensor<?xf32>, tensor<?xf32>
}

// -----

// An output that a later segment also reads (exp, divided by its column
// sums): its store stays in the producing segment.
// CHECK-LABEL: func.func @output_read_later(
// CHECK:         "fuser.exp"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @output_read_later(%x: tensor<?x?xf32>, %o0: tensor<?x?xf32>, %o1: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %y = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r0 = "fuser.store"(%e, %o0) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %r1 = "fuser.store"(%y, %o1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r0, %r1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Layout ops on values that are not reduced stay in the segment of their
// operands (permute, reshape, broadcast of an input).
// CHECK-LABEL: func.func @layout_stays(
// CHECK:         "fuser.permute"(%{{.*}}) {dims = array<i64: 1, 0>, fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.reshape"(%{{.*}}, %{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.neg"(%{{.*}}) {fuser.segment = 0 : i64}
func.func @layout_stays(%x: tensor<?x4xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x4xf32>) -> i64
  %c4 = "fuser.constant"() {value = 4 : i64} : () -> i64
  %n4 = "fuser.mul"(%n, %c4) : (i64, i64) -> i64
  %p = "fuser.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %f = "fuser.reshape"(%p, %n4) : (tensor<4x?xf32>, i64) -> tensor<?xf32>
  %y = "fuser.neg"(%f) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A fuser.copy (an alias-hazard snapshot) is a segment of its own.
// CHECK-LABEL: func.func @copy_step(
// CHECK:         "fuser.copy"(%{{.*}}, %{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.exp"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @copy_step(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?xf32>) -> i64
  %t = "fuser.empty"(%n) : (i64) -> tensor<?xf32>
  %snap = "fuser.copy"(%x, %t) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %e = "fuser.exp"(%snap) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%e, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Only fuser ops can be placed; anything else is reported at the op.
// CHECK: error: 'arith.addf' op is not a fuser op; fuser-segment only places fuser ops into segments
func.func @foreign_op(%x: f32) -> f32 attributes {fuser.num_inputs = 1 : i64} {
  %0 = arith.addf %x, %x : f32
  return %0 : f32
}

// -----

// Rule 6 does not compute a value again from an argument written in place
// (here x, updated with the result): the last segment reads exp back.
// CHECK-LABEL: func.func @softmax_columns_in_place(
// CHECK:         "fuser.exp"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 1 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 2 : i64}
func.func @softmax_columns_in_place(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %d = "fuser.sub"(%x, %m) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %e = "fuser.exp"(%d) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%e) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %y = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %x) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Nor where that reads more: x * y, summed over the columns and divided by
// those sums in the next segment, would read two arguments instead of one
// intermediate (8 bytes an element against its write and read, 8 too).
// CHECK-LABEL: func.func @product_columns(
// CHECK:         "fuser.mul"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.store"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @product_columns(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 2 : i64} {
  %p = "fuser.mul"(%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%p) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %q = "fuser.div"(%p, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%q, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// A bfloat16 value computed from a float32 argument is not computed again
// either: 4 bytes an element read against 2 written and 2 read back.
// CHECK-LABEL: func.func @narrowed_columns(
// CHECK:         "fuser.cast"(%{{.*}}) {fuser.segment = 0 : i64}
// CHECK-NEXT:    "fuser.max"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.sub"(%{{.*}}) {fuser.segment = 1 : i64}
func.func @narrowed_columns(%x: tensor<?x?xf32>, %out: tensor<?x?xbf16>) -> tensor<?x?xbf16> attributes {fuser.num_inputs = 1 : i64} {
  %h = "fuser.cast"(%x) : (tensor<?x?xf32>) -> tensor<?x?xbf16>
  %m = "fuser.max"(%h) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xbf16>) -> tensor<1x?xbf16>
  %q = "fuser.sub"(%h, %m) : (tensor<?x?xbf16>, tensor<1x?xbf16>) -> tensor<?x?xbf16>
  %r = "fuser.store"(%q, %out) : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

// -----

// exp(x), read by two later segments and not by its own: each computes it
// again (8 bytes an element read, against 4 written and 8 read back), and
// the first segment keeps only the column sums.
// CHECK-LABEL: func.func @exp_read_twice_later(
// CHECK:         "fuser.sum"(%[[X:.*]]) {dims = array<i64: 0>, fuser.segment = 0 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.exp"(%[[X]]) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.div"(%{{.*}}) {fuser.segment = 1 : i64}
// CHECK-NEXT:    "fuser.sum"(%{{.*}}) {dims = array<i64: 0>, fuser.segment = 1 : i64, keepdim = true}
// CHECK-NEXT:    "fuser.exp"(%[[X]]) {fuser.segment = 2 : i64}
// CHECK-NEXT:    "fuser.mul"(%{{.*}}) {fuser.segment = 2 : i64}
// CHECK-NOT:     "fuser.exp"
func.func @exp_read_twice_later(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = "fuser.sum"(%x) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %q = "fuser.div"(%e, %s) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %t = "fuser.sum"(%q) {dims = array<i64: 0>, keepdim = true} : (tensor<?x?xf32>) -> tensor<1x?xf32>
  %y = "fuser.mul"(%e, %t) : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%y, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
