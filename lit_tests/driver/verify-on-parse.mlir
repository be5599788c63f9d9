// RUN: %exit-status %fuser-opt %s -p canonicalize | FileCheck %s
// RUN: %fuser-opt %s --mlir-very-unsafe-disable-verifier-on-parsing -p canonicalize | FileCheck %s --check-prefix=UNSAFE

// As mlir-opt verifies what it parses, fuser-opt runs fuser-verify on the input
// before the pipeline: a fuser op that breaks the dialect's rules fails with the
// verifier's diagnostic at its location, exit status 1, and no pass runs.
// CHECK:       verify-on-parse.mlir:[[@LINE+8]]:8: error: 'fuser.add' op result shape [8] does not match the expected [4]
// CHECK-NOT:   func.func
// CHECK:       exit status: 1
// mlir-opt's flag to skip the verifier on parsing skips it here too, so a pass
// can be fed IR that breaks the rules.
// UNSAFE-LABEL: func.func @wrong_result_shape
// UNSAFE:       "fuser.add"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
func.func @wrong_result_shape(%a: tensor<4xf32>) -> tensor<8xf32> {
  %0 = "fuser.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
