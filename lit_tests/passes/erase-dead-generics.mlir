// RUN: %fuser-opt %s -p 'fuser-erase-dead-generics' | FileCheck %s

// fuser-erase-dead-generics erases a linalg.generic on memrefs that has no
// outputs where its body only holds arith/math ops and calls of functions
// declared llvm.readnone; every other generic stays.

func.func private @expf(f32) -> f32 attributes {llvm.readnone, no_unwind, will_return}
func.func private @log_the_value(f32) -> f32

// The producer linalg-fuse-elementwise-ops leaves behind (exp(x - max)) is
// erased; the generic that writes %out, and the one calling a function not
// declared readnone, stay.
// CHECK-LABEL: func.func @softmax_leftovers(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?xf32>, %[[M:[^:]*]]: memref<?x1xf32>, %[[OUT:[^:]*]]: memref<?x?xf32>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[X]], %[[M]] : {{.*}}) outs(%[[OUT]] : memref<?x?xf32>)
// CHECK:         func.call @expf
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<?x?xf32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      func.call @log_the_value
// CHECK-NOT:     linalg.generic
func.func @softmax_leftovers(%x: memref<?x?xf32>, %max: memref<?x1xf32>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) {
  ^bb0(%a: f32, %m: f32):
    %0 = arith.subf %a, %m : f32
    %1 = func.call @expf(%0) : (f32) -> f32
    %2 = math.absf %1 : f32
    linalg.yield
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %0 = arith.subf %a, %m : f32
    %1 = func.call @expf(%0) : (f32) -> f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) {
  ^bb0(%a: f32):
    %0 = func.call @log_the_value(%a) : (f32) -> f32
    linalg.yield
  }
  return
}

// A body with an op that has a region (scf.if) stays: only arith and math
// ops without regions count as free of side effects.
// CHECK-LABEL: func.func @a_body_with_a_region(
// CHECK:         linalg.generic
// CHECK:           scf.if
func.func @a_body_with_a_region(%x: memref<?xf32>, %flag: i1) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<?xf32>) {
  ^bb0(%a: f32):
    %0 = scf.if %flag -> (f32) {
      %1 = func.call @log_the_value(%a) : (f32) -> f32
      scf.yield %1 : f32
    } else {
      scf.yield %a : f32
    }
    linalg.yield
  }
  return
}
