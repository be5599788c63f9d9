// RUN: %fuser-opt %s --mlir-print-op-generic | FileCheck %s

// --mlir-print-op-generic prints every op, builtin ones included, in generic form.
// CHECK-LABEL: "builtin.module"() ({
// CHECK:         "func.func"() <{function_type = (tensor<?xf32>) -> tensor<?xf32>, sym_name = "generic"}> ({
// CHECK:         ^bb0(%[[X:.*]]: tensor<?xf32>):
// CHECK:           %[[R:.*]] = "fuser.exp"(%[[X]]) : (tensor<?xf32>) -> tensor<?xf32>
// CHECK:           "func.return"(%[[R]]) : (tensor<?xf32>) -> ()
func.func @generic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
