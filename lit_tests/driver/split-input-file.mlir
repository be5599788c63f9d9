// RUN: %fuser-opt %s --split-input-file -p fuser-verify | FileCheck %s
// RUN: not %fuser-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// --split-input-file parses and runs each chunk in its own module and prints
// the results separated by the same marker. Without it the file is one module,
// in which the second @first is a redefinition.
// CHECK-LABEL: func.func @first(
// CHECK:       // -----
// CHECK-LABEL: func.func @second(
// CHECK:       // -----
// CHECK-LABEL: func.func @first(

// WHOLE-LABEL: error: redefinition of symbol named 'first'
// WHOLE:       note: see existing symbol definition here
func.func @first(%x: f32) -> f32 {
  %0 = "fuser.neg"(%x) : (f32) -> f32
  return %0 : f32
}

// -----

// A chunk may reuse the symbol names of another: each is its own module.
func.func @second(%x: f32) -> f32 {
  %0 = "fuser.abs"(%x) : (f32) -> f32
  return %0 : f32
}

// -----

func.func @first(%x: f32) -> f32 {
  return %x : f32
}
