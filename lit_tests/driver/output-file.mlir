// RUN: rm -f %t %t.stdout
// RUN: %fuser-opt %s -p fuser-verify -o %t > %t.stdout
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --allow-empty --check-prefix=STDOUT < %t.stdout

// -o writes the module to the file and nothing to stdout.
// CHECK-LABEL: func.func @written(
// CHECK:         "fuser.exp"
// STDOUT-NOT:  {{.}}
func.func @written(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fuser.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
