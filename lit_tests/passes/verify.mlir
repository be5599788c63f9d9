// RUN: %fuser-opt %s -p fuser-verify --split-input-file --verify-diagnostics | FileCheck %s

// fuser-verify checks what IRDL cannot express (dialect/README.md, "Verifier
// messages"). One case per message; test/test_verify.py checks that every
// message in fuser_mlir/passes/verify.py has a case here. Only "requires
// attribute" is missing: IRDL rejects such IR at parse time, so that one is
// tested through the Python API.

// Valid fuser IR passes unchanged.
// CHECK-LABEL: func.func @valid(
// CHECK-SAME:    %[[X:.*]]: tensor<?x4xf32>, %[[S:.*]]: f32, %[[OUT:.*]]: tensor<?xf32>)
// CHECK:         %[[E:.*]] = "fuser.exp"(%[[X]])
// CHECK:         %[[M:.*]] = "fuser.mul"(%[[E]], %[[S]])
// CHECK:         %[[SUM:.*]] = "fuser.sum"(%[[M]]) {dims = array<i64: 1>, keepdim = false}
// CHECK:         %[[R0:.*]] = "fuser.store"(%[[SUM]], %[[OUT]])
// CHECK:         %[[R1:.*]] = "fuser.store"(%[[E]], %[[X]])
// CHECK:         return %[[R0]], %[[R1]]
func.func @valid(%x: tensor<?x4xf32>, %s: f32, %out: tensor<?xf32>) -> (tensor<?xf32>, tensor<?x4xf32>)
    attributes {fuser.num_inputs = 2 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = "fuser.mul"(%e, %s) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %sum = "fuser.sum"(%m) {dims = array<i64: 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
  %r0 = "fuser.store"(%sum, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %r1 = "fuser.store"(%e, %x) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r0, %r1 : tensor<?xf32>, tensor<?x4xf32>
}

// -----

// A pointwise operand must have the result's rank.
// CHECK-LABEL: error: 'fuser.add' op operand 1 has rank 1, but the result has rank 2
func.func @pointwise_rank(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Static sizes other than 1 must agree in each dim.
// CHECK-LABEL: error: 'fuser.add' op operand 1 has shape [5], which does not broadcast with dim 0 of size 4
func.func @pointwise_broadcast(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The result shape is the broadcast shape of the operands.
// CHECK-LABEL: error: 'fuser.mul' op result shape [?, 5] does not match the expected [?, 4]
func.func @pointwise_result_shape(%a: tensor<?x1xf32>, %b: tensor<1x4xf32>) -> tensor<?x5xf32> {
  %0 = "fuser.mul"(%a, %b) : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

// An op on scalars only produces a scalar.
// CHECK-LABEL: error: 'fuser.add' op has only scalar operands, so its result must be a scalar
func.func @pointwise_scalar_result(%a: f32, %b: f32) -> tensor<f32> {
  %0 = "fuser.add"(%a, %b) : (f32, f32) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// An op with a tensor operand produces a tensor.
// CHECK-LABEL: error: 'fuser.neg' op has a tensor operand, so its result must be a tensor
func.func @pointwise_tensor_result(%a: tensor<?x4xf32>) -> f32 {
  %0 = "fuser.neg"(%a) : (tensor<?x4xf32>) -> f32
  return %0 : f32
}

// -----

// where's condition is i1.
// CHECK-LABEL: error: 'fuser.where' op condition has element type f32, but must be i1
func.func @where_condition(%c: tensor<?x4xf32>, %a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.where"(%c, %a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// There is no implicit promotion: value operands share one element type.
// CHECK-LABEL: error: 'fuser.sub' op operand 1 has element type f16, but operand 0 has f32; insert a fuser.cast
func.func @pointwise_mixed_types(%a: tensor<?x4xf32>, %b: tensor<?x4xf16>) -> tensor<?x4xf32> {
  %0 = "fuser.sub"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf16>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Float-only ops reject integers.
// CHECK-LABEL: error: 'fuser.exp' op operand 0 has element type i32, but 'exp' needs a floating-point type
func.func @float_op_on_int(%a: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %0 = "fuser.exp"(%a) : (tensor<?x4xi32>) -> tensor<?x4xi32>
  return %0 : tensor<?x4xi32>
}

// -----

// Numeric ops reject i1.
// CHECK-LABEL: error: 'fuser.add' op operand 0 has element type i1, but 'add' needs a number
func.func @numeric_op_on_bool(%a: tensor<?x4xi1>, %b: tensor<?x4xi1>) -> tensor<?x4xi1> {
  %0 = "fuser.add"(%a, %b) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  return %0 : tensor<?x4xi1>
}

// -----

// Logical ops take i1 only.
// CHECK-LABEL: error: 'fuser.logical_and' op operand 0 has element type i32, but 'logical_and' needs i1
func.func @logical_op_on_int(%a: tensor<?x4xi32>, %b: tensor<?x4xi32>) -> tensor<?x4xi1> {
  %0 = "fuser.logical_and"(%a, %b) : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi1>
  return %0 : tensor<?x4xi1>
}

// -----

// Bitwise ops reject floats.
// CHECK-LABEL: error: 'fuser.bitwise_xor' op operand 0 has element type f32, but 'bitwise_xor' needs an integer or i1
func.func @bitwise_op_on_float(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.bitwise_xor"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Comparisons produce i1.
// CHECK-LABEL: error: 'fuser.lt' op result element type f32 should be i1
func.func @compare_result_type(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.lt"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Reductions work on tensors; a full reduction gives a 0-d tensor, not a scalar.
// CHECK-LABEL: error: 'fuser.sum' op operand and result must be tensors (a full reduction gives a 0-d tensor)
func.func @reduction_scalar_result(%a: tensor<?x4xf32>) -> f32 {
  %0 = "fuser.sum"(%a) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<?x4xf32>) -> f32
  return %0 : f32
}

// -----

// dims must be an array of i64.
// CHECK-LABEL: error: 'fuser.sum' op attribute 'dims' must be an array<i64: ...>, got array<i32: 1>
func.func @reduction_dims_i32(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  %0 = "fuser.sum"(%a) {dims = array<i32: 1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A reduction reduces at least one dim.
// CHECK-LABEL: error: 'fuser.max' op reduces no dims; 'dims' must name at least one
func.func @reduction_no_dims(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.max"(%a) {dims = array<i64>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Reduction dims are within the rank (negative dims are not normalised).
// CHECK-LABEL: error: 'fuser.sum' op reduction dim -1 is out of range for rank 2 (dims must be non-negative)
func.func @reduction_dim_range(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  %0 = "fuser.sum"(%a) {dims = array<i64: -1>, keepdim = false} : (tensor<?x4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Reduction dims are sorted and unique.
// CHECK-LABEL: error: 'fuser.prod' op reduction dims [1, 0] must be sorted and unique
func.func @reduction_dims_order(%a: tensor<?x4xf32>) -> tensor<f32> {
  %0 = "fuser.prod"(%a) {dims = array<i64: 1, 0>, keepdim = false} : (tensor<?x4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// With keepdim, the reduced dims stay as size 1.
// CHECK-LABEL: error: 'fuser.sum' op result shape [?] does not match the expected [?, 1]
func.func @reduction_keepdim_shape(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  %0 = "fuser.sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<?x4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A reduction keeps the element type; the frontend casts around it.
// CHECK-LABEL: error: 'fuser.sum' op result element type f32 differs from the operand's f16; cast before reducing
func.func @reduction_elem_type(%a: tensor<?x4xf16>) -> tensor<?xf32> {
  %0 = "fuser.sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<?x4xf16>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// broadcast_in_dim produces a tensor.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op result must be a tensor
func.func @broadcast_scalar_result(%a: f32) -> f32 {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64>} : (f32) -> f32
  return %0 : f32
}

// -----

// broadcast_dims has one entry per operand dim.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op broadcast_dims has 1 entry, but the operand has rank 2
func.func @broadcast_dims_count(%a: tensor<?x4xf32>) -> tensor<?x4x2xf32> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 0>} : (tensor<?x4xf32>) -> tensor<?x4x2xf32>
  return %0 : tensor<?x4x2xf32>
}

// -----

// broadcast_dims increase and stay within the result rank.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op broadcast_dims [1, 0] must be increasing and within the result rank 3
func.func @broadcast_dims_order(%a: tensor<?x4xf32>) -> tensor<4x?x2xf32> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?x2xf32>
  return %0 : tensor<4x?x2xf32>
}

// -----

// An operand dim keeps its size unless it is a broadcast dim of size 1.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op operand dim 1 of size 4 cannot become result dim 2 of size 8
func.func @broadcast_dim_size(%a: tensor<?x4xf32>) -> tensor<?x2x8xf32> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 0, 2>} : (tensor<?x4xf32>) -> tensor<?x2x8xf32>
  return %0 : tensor<?x2x8xf32>
}

// -----

// A size-1 operand dim expands only to a static size.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op operand dim 0 has size 1 and can only be expanded to a static size, not '?'
func.func @broadcast_expand_dynamic(%a: tensor<1xf32>) -> tensor<?xf32> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 0>} : (tensor<1xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A new result dim has a static size.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op new result dim 0 must have a static size (1 for a broadcast dim)
func.func @broadcast_new_dim_dynamic(%a: tensor<?x4xf32>) -> tensor<?x?x4xf32> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 1, 2>} : (tensor<?x4xf32>) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}

// -----

// Layout ops keep the element type.
// CHECK-LABEL: error: 'fuser.broadcast_in_dim' op result element type differs from the operand's
func.func @broadcast_elem_type(%a: tensor<?x4xf32>) -> tensor<1x?x4xf64> {
  %0 = "fuser.broadcast_in_dim"(%a) {broadcast_dims = array<i64: 1, 2>} : (tensor<?x4xf32>) -> tensor<1x?x4xf64>
  return %0 : tensor<1x?x4xf64>
}

// -----

// permute's dims are a permutation of the operand dims.
// CHECK-LABEL: error: 'fuser.permute' op dims [0, 0] is not a permutation of 0..1
func.func @permute_dims(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.permute"(%a) {dims = array<i64: 0, 0>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// reshape takes one size operand per dynamic result dim.
// CHECK-LABEL: error: 'fuser.reshape' op has 0 size operands, but the result has 1 dynamic dims
func.func @reshape_sizes(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  %0 = "fuser.reshape"(%a) : (tensor<?x4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A static reshape keeps the element count.
// CHECK-LABEL: error: 'fuser.reshape' op cannot reshape [2, 4] into [3, 3]: element counts differ
func.func @reshape_count(%a: tensor<2x4xf32>) -> tensor<3x3xf32> {
  %0 = "fuser.reshape"(%a) : (tensor<2x4xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Size operands are i64.
// CHECK-LABEL: error: 'fuser.reshape' op size operands must be i64, got i32
func.func @reshape_size_type(%a: tensor<?x4xf32>, %n: i32) -> tensor<?xf32> {
  %0 = "fuser.reshape"(%a, %n) : (tensor<?x4xf32>, i32) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// set and segment_set return their operand's type.
// CHECK-LABEL: error: 'fuser.set' op result type tensor<?x4xf16> differs from the operand type tensor<?x4xf32>
func.func @set_type(%a: tensor<?x4xf32>) -> tensor<?x4xf16> {
  %0 = "fuser.set"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf16>
  return %0 : tensor<?x4xf16>
}

// -----

// A cast only changes the element type.
// CHECK-LABEL: error: 'fuser.cast' op changes the shape from [?, 4] to [?, 8]; a cast only changes the element type
func.func @cast_shape(%a: tensor<?x4xf32>) -> tensor<?x8xf16> {
  %0 = "fuser.cast"(%a) : (tensor<?x4xf32>) -> tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

// A cast converts between the supported element types only.
// CHECK-LABEL: error: 'fuser.cast' op result 0 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'func.func' op result 0 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
func.func @cast_elem_type(%a: tensor<?x4xf32>) -> tensor<?x4xi8> {
  %0 = "fuser.cast"(%a) : (tensor<?x4xf32>) -> tensor<?x4xi8>
  return %0 : tensor<?x4xi8>
}

// -----

// So does every other op, on tensors and scalars alike: the lowerings have no
// storage for other types.
// CHECK-LABEL: error: 'fuser.neg' op operand 0 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'fuser.store' op operand 0 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'fuser.add' op operand 0 has type i16, which is neither a ranked tensor nor a scalar of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'func.func' op argument 0 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
func.func @other_elem_types(%a: tensor<i8>, %s: i16, %out: tensor<i8>) -> (tensor<i8>, i16) {
  %0 = "fuser.neg"(%a) : (tensor<i8>) -> tensor<i8>
  %1 = "fuser.store"(%0, %out) : (tensor<i8>, tensor<i8>) -> tensor<i8>
  %2 = "fuser.add"(%s, %s) : (i16, i16) -> i16
  return %1, %2 : tensor<i8>, i16
}

// -----

// Values are ranked tensors or scalars: not memrefs, vectors or indices.
// CHECK-LABEL: error: 'fuser.exp' op operand 0 has type memref<4xf32>, which is neither a ranked tensor nor a scalar of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'fuser.size' op result 0 has type index, which is neither a ranked tensor nor a scalar of f16, bf16, f32, f64, i32, i64, i1
// CHECK:       error: 'func.func' op argument 0 has type memref<4xf32>, which is neither a ranked tensor nor a scalar of f16, bf16, f32, f64, i32, i64, i1
func.func @other_types(%a: memref<4xf32>, %t: tensor<?xf32>) -> (memref<4xf32>, index) {
  %0 = "fuser.exp"(%a) : (memref<4xf32>) -> memref<4xf32>
  %1 = "fuser.size"(%t) {dim = 0 : i64} : (tensor<?xf32>) -> index
  return %0, %1 : memref<4xf32>, index
}

// -----

// A function that holds fuser ops takes and returns the same types, also an
// argument no op reads: the lowerings bind a buffer to each. One message a
// function, for its first such type.
// CHECK-LABEL: error: 'func.func' op argument 1 has element type i8, which is not one of f16, bf16, f32, f64, i32, i64, i1
func.func @unread_argument(%a: tensor<f32>, %b: tensor<i8>, %c: vector<4xf32>, %out: tensor<f32>) -> tensor<f32>
    attributes {fuser.num_inputs = 3 : i64} {
  %0 = "fuser.neg"(%a) : (tensor<f32>) -> tensor<f32>
  %1 = "fuser.store"(%0, %out) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// CHECK-LABEL: error: 'func.func' op result 1 has type index, which is neither a ranked tensor nor a scalar of f16, bf16, f32, f64, i32, i64, i1
func.func @index_result(%a: tensor<?xf32>) -> (tensor<?xf32>, index) {
  %0 = "fuser.exp"(%a) : (tensor<?xf32>) -> tensor<?xf32>
  %c = arith.constant 0 : index
  return %0, %c : tensor<?xf32>, index
}

// -----

// A constant is a scalar.
// CHECK-LABEL: error: 'fuser.constant' op result must be a scalar
func.func @constant_tensor() -> tensor<f32> {
  %0 = "fuser.constant"() {value = 1.000000e+00 : f32} : () -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A constant's value has the result type.
// CHECK-LABEL: error: 'fuser.constant' op value 1 : i32 does not have the result type f32
func.func @constant_value_type() -> f32 {
  %0 = "fuser.constant"() {value = 1 : i32} : () -> f32
  return %0 : f32
}

// -----

// size names a dim of its tensor operand.
// CHECK-LABEL: error: 'fuser.size' op dim 2 is out of range for operand type tensor<?x4xf32>
func.func @size_dim(%a: tensor<?x4xf32>) -> i64 {
  %0 = "fuser.size"(%a) {dim = 2 : i64} : (tensor<?x4xf32>) -> i64
  return %0 : i64
}

// -----

// size gives an i64.
// CHECK-LABEL: error: 'fuser.size' op result must be i64
func.func @size_result(%a: tensor<?x4xf32>) -> i32 {
  %0 = "fuser.size"(%a) {dim = 0 : i64} : (tensor<?x4xf32>) -> i32
  return %0 : i32
}

// -----

// empty makes a tensor.
// CHECK-LABEL: error: 'fuser.empty' op result must be a tensor
func.func @empty_scalar() -> f32 {
  %0 = "fuser.empty"() : () -> f32
  return %0 : f32
}

// -----

// empty takes one size operand per dynamic dim.
// CHECK-LABEL: error: 'fuser.empty' op has 1 size operands, but the result has 2 dynamic dims
func.func @empty_sizes(%n: i64) -> tensor<?x?xf32> {
  %0 = "fuser.empty"(%n) : (i64) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// A store's destination is a tensor.
// CHECK-LABEL: error: 'fuser.store' op destination must be a tensor
func.func @store_scalar_dest(%a: f32, %d: f32) -> f32 {
  %0 = "fuser.store"(%a, %d) : (f32, f32) -> f32
  return %0 : f32
}

// -----

// A store writes a value of the destination's exact type.
// CHECK-LABEL: error: 'fuser.store' op destination type tensor<4x4xf32> does not match value type tensor<?x4xf32>
func.func @store_type(%a: tensor<?x4xf32>, %d: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "fuser.store"(%a, %d) : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A store yields its destination's type.
// CHECK-LABEL: error: 'fuser.store' op result type must be the destination type
func.func @store_result_type(%a: tensor<?x4xf32>, %d: tensor<?x4xf32>) -> tensor<4x4xf32> {
  %0 = "fuser.store"(%a, %d) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A destination is a function argument or a fuser.empty, never a computed value.
// CHECK-LABEL: error: 'fuser.copy' op destination must be a function argument or a 'fuser.empty', not the result of 'fuser.exp'
func.func @copy_into_value(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.exp"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "fuser.copy"(%a, %0) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Each buffer holds one output: a second store into it is rejected.
// CHECK-LABEL: error: 'fuser.store' op destination %arg1 is already written by an earlier 'fuser.store'; each buffer holds one output
func.func @store_twice(%a: tensor<?x4xf32>, %d: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "fuser.store"(%a, %d) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "fuser.store"(%a, %d) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Fuser ops live in functions, not at module level.
// CHECK-LABEL: error: 'fuser.constant' op must be inside a func.func
%0 = "fuser.constant"() {value = 1.000000e+00 : f32} : () -> f32
