// RUN: %fuser-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// What the IRDL definition itself rejects, at parse time: op names, operand
// and result counts, required attributes and their attribute kinds. The type
// rules that IRDL cannot express are fuser-verify's (lit_tests/passes/verify.mlir).

// The fuser dialect accepts only the ops that fuser.irdl.mlir defines.
// CHECK-LABEL: error: unregistered operation 'fuser.frobnicate' found in dialect ('fuser') that does not allow unknown operations
func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.frobnicate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A binary op takes exactly two operands.
// CHECK-LABEL: error: op expects exactly 2 operands, but got 1
// CHECK-NEXT:  note: see current operation: %{{.*}} = "fuser.add"
func.func @operand_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.add"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Every fuser op has exactly one result.
// CHECK-LABEL: error: op expects exactly 1 results, but got 0
// CHECK-NEXT:  note: see current operation: "fuser.exp"
func.func @result_count(%x: tensor<4xf32>) {
  "fuser.exp"(%x) : (tensor<4xf32>) -> ()
  return
}

// -----

// A reduction requires its dims attribute.
// CHECK-LABEL: error: 'fuser.sum' op attribute "dims" is expected but not provided
func.func @missing_dims(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = "fuser.sum"(%x) {keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A constant requires its value attribute.
// CHECK-LABEL: error: 'fuser.constant' op attribute "value" is expected but not provided
func.func @missing_value() -> f32 {
  %0 = "fuser.constant"() : () -> f32
  return %0 : f32
}

// -----

// dims is a dense array (array<i64: ...>), not an array attribute ([...]).
// CHECK-LABEL: error: expected base attribute 'builtin.dense_array' but got 'builtin.array'
// CHECK-NEXT:  note: see current operation: %{{.*}} = "fuser.sum"
func.func @dims_kind(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = "fuser.sum"(%x) {dims = [1], keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// keepdim is an integer attribute (true/false).
// CHECK-LABEL: error: expected base attribute 'builtin.integer' but got 'builtin.string'
// CHECK-NEXT:  note: see current operation: %{{.*}} = "fuser.max"
func.func @keepdim_kind(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = "yes"} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// size's dim is an integer attribute.
// CHECK-LABEL: error: expected base attribute 'builtin.integer' but got 'builtin.float'
// CHECK-NEXT:  note: see current operation: %{{.*}} = "fuser.size"
func.func @size_dim_kind(%x: tensor<4x8xf32>) -> i64 {
  %0 = "fuser.size"(%x) {dim = 1.0 : f32} : (tensor<4x8xf32>) -> i64
  return %0 : i64
}

// -----

// Fuser ops have no custom form (IRDL defines no assembly); MLIR's parser
// fails on one without a diagnostic, so fuser-opt names the op and its line.
// CHECK: invalid.mlir:[[@LINE+2]]:8: error: 'fuser.exp' is written in custom form, which fuser ops do not have
func.func @custom_form(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fuser.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
