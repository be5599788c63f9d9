// RUN: %fuser-opt %s -p fuser-verify --split-input-file --verify-diagnostics | FileCheck %s
// RUN: %fuser-opt %s -p fuser-verify --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=LOC
// RUN: not %fuser-opt %s -p fuser-verify --split-input-file > %t.stdout 2> %t.stderr
// RUN: FileCheck %s --check-prefix=STDOUT < %t.stdout
// RUN: FileCheck %s --check-prefix=STDERR < %t.stderr
// RUN: %exit-status %fuser-opt %s -p fuser-verify --split-input-file | FileCheck %s --check-prefix=FAIL

// With --verify-diagnostics, diagnostics go to stdout, in input order between
// the printed modules, and the exit status is 0 (lit fails a RUN line that
// exits otherwise), so FileCheck can match them.
// Without it they go to stderr and the status is 1. Either way the location
// is the line in the whole file, not in the chunk; the LOC prefix checks
// that, since CHECK-LABEL lines cannot use @LINE.
// FAIL:   exit status: 1

// A valid chunk prints its module.
// CHECK-LABEL: func.func @ok(
// STDOUT-LABEL: func.func @ok(
func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A verifier error prints the diagnostic and no module.
// CHECK-LABEL: error: 'fuser.add' op operand 1 has shape [5], which does not broadcast with dim 0 of size 4
// CHECK-NOT:   func.func @bad_shape
// LOC:         verify-diagnostics.mlir:[[@LINE+3]]:8: error: 'fuser.add'
// STDERR:      verify-diagnostics.mlir:[[@LINE+2]]:8: error: 'fuser.add'
func.func @bad_shape(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = "fuser.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A parse error is a diagnostic too; the chunks after it still run.
// CHECK-LABEL: error: unregistered operation 'fuser.nope' found in dialect ('fuser')
// LOC:         verify-diagnostics.mlir:[[@LINE+3]]:8: error: unregistered operation
// STDERR:      verify-diagnostics.mlir:[[@LINE+2]]:8: error: unregistered operation
func.func @bad_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.nope"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The last chunk is valid and printed after the diagnostics of the others.
// CHECK-LABEL: func.func @also_ok(
// STDOUT:      // -----
// STDOUT-LABEL: func.func @also_ok(
func.func @also_ok(%x: f32) -> f32 {
  return %x : f32
}
