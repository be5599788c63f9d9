// RUN: %fuser-opt %s -p 'fuser-verify,fuser-segment,fuser-resolve-alias-hazards{policy=reject}' --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not %fuser-opt %s -p 'fuser-resolve-alias-hazards{policy=sideways}' 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: option 'policy' must be one of auto, reorder, copy, reject, got 'sideways'

// reject names the write (at the store), the read and the op defining the
// stored value, each with its location, and the kind of hazard.
// CHECK: resolve-alias-hazards-invalid.mlir:[[# @LINE + 4]]:8: error: 'fuser.store' op writes input 0 in place, but 'fuser.broadcast_in_dim' op at {{.*}}:[[# @LINE + 3]]:8 reads input 0's entry value (intra-kernel: it reads it at other indices in segment 0, which writes it); the stored value is defined by 'fuser.relu' op at {{.*}}:[[# @LINE + 2]]:8. Use policy=auto to reorder or copy
func.func @issue_2839(%t0: tensor<4x5xf32>, %t1: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> attributes {fuser.num_inputs = 2 : i64} {
  %0 = "fuser.relu"(%t0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %1 = "fuser.broadcast_in_dim"(%t0) {broadcast_dims = array<i64: 1, 2>} : (tensor<4x5xf32>) -> tensor<1x4x5xf32>
  %2 = "fuser.store"(%0, %t0) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %3 = "fuser.add"(%1, %t1) : (tensor<1x4x5xf32>, tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  %e = "fuser.empty"() : () -> tensor<3x4x5xf32>
  %4 = "fuser.store"(%3, %e) : (tensor<3x4x5xf32>, tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  return %4 : tensor<3x4x5xf32>
}

// -----

// Two outputs aliased to one input: the verifier rejects the second store.
// CHECK: error: 'fuser.store' op destination %arg0 is already written by an earlier 'fuser.store'; each buffer holds one output
func.func @two_aliases(%x: tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %2 = "fuser.neg"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %3 = "fuser.store"(%2, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// An alias between tensors of different shapes: the verifier rejects it.
// CHECK: error: 'fuser.store' op destination type tensor<4x5xf32> does not match value type tensor<4x1xf32>
func.func @alias_shape(%x: tensor<4x5xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<4x5xf32>) -> tensor<4x1xf32>
  %1 = "fuser.store"(%0, %x) : (tensor<4x1xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// An alias between tensors of different dtypes: the verifier rejects it.
// CHECK: error: 'fuser.store' op destination type tensor<?xf32> does not match value type tensor<?xf64>
func.func @alias_dtype(%x: tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.cast"(%x) : (tensor<?xf32>) -> tensor<?xf64>
  %1 = "fuser.store"(%0, %x) : (tensor<?xf64>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// An alias source that is not a fusion input (an op's result): rejected.
// CHECK: error: 'fuser.store' op destination must be a function argument or a 'fuser.empty', not the result of 'fuser.exp'
func.func @alias_not_input(%x: tensor<?xf32>) attributes {fuser.num_inputs = 1 : i64} {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "fuser.store"(%x, %0) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}
