// RUN: %fuser-opt %s -p fuser-verify,canonicalize --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s

// --mlir-print-ir-after-all prints the IR to stderr after every pass, the
// Python fuser passes included, under MLIR's usual banner.
// CHECK-LABEL: // -----// IR Dump After VerifyPass (fuser-verify) //----- //
// CHECK:       func.func @dumped(
// CHECK:         arith.addf
// CHECK-LABEL: // -----// IR Dump After Canonicalizer (canonicalize) //----- //
// CHECK:       func.func @dumped(
// CHECK-NOT:     arith.addf
func.func @dumped(%x: f32) -> f32 {
  %dead = arith.addf %x, %x : f32
  %0 = "fuser.neg"(%x) : (f32) -> f32
  return %0 : f32
}
