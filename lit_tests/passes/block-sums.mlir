// RUN: %fuser-opt %s -p 'fuser-block-sums' --split-input-file --verify-diagnostics | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-block-sums{block=64}' --split-input-file | FileCheck %s --check-prefix=B64
// RUN: %exit-status %fuser-opt %s -p 'fuser-block-sums{block=0}' --split-input-file | FileCheck %s --check-prefix=ZERO

// A row sum (the loop alone in its row): rows of more than a block sum block
// by block in registers into a float64 total, stored once; shorter rows run
// the loop as it was.
// CHECK-LABEL: func.func @row_sums(
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[BLOCK:.*]] = arith.constant 2048 : index
// CHECK:           %[[STRIDE:.*]] = arith.muli %{{.*}}, %[[BLOCK]] : index
// CHECK:           %[[LONG:.*]] = arith.cmpi sgt, %{{.*}}, %[[STRIDE]] : index
// CHECK:           scf.if %[[LONG]] {
// CHECK:             %[[OLD:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK:             %[[START:.*]] = arith.extf %[[OLD]] : f32 to f64
// CHECK:             %[[TOTAL:.*]] = scf.for %[[KB:.*]] = %{{.*}} to %[[N:.*]] step %[[STRIDE]] iter_args(%[[T:.*]] = %[[START]]) -> (f64) {
// CHECK:               %[[END:.*]] = arith.minsi %{{.*}}, %[[N]] : index
// CHECK:               %[[P:.*]] = scf.for %{{.*}} = %[[KB]] to %[[END]] step %{{.*}} iter_args(%[[Q:.*]] = %{{.*}}) -> (f32) {
// CHECK:                 %[[X:.*]] = memref.load %{{.*}}[%[[I]], %{{.*}}] : memref<?x?xf32>
// CHECK:                 %[[S:.*]] = arith.addf %[[Q]], %[[X]] fastmath<reassoc> : f32
// CHECK:                 scf.yield %[[S]] : f32
// CHECK:               %[[W:.*]] = arith.extf %[[P]] : f32 to f64
// CHECK:               %[[U:.*]] = arith.addf %[[T]], %[[W]] : f64
// CHECK:               scf.yield %[[U]] : f64
// CHECK:             %[[R:.*]] = arith.truncf %[[TOTAL]] : f64 to f32
// CHECK:             memref.store %[[R]], %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:               memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK:               arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:               memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<?xf32>
// B64-LABEL: func.func @row_sums(
// B64:         arith.constant 64 : index
func.func @row_sums(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %k = %c0 to %cols step %c1 {
      %a = memref.load %out[%i] : memref<?xf32>
      %v = memref.load %x[%i, %k] : memref<?x?xf32>
      %s = arith.addf %a, %v fastmath<reassoc> : f32
      memref.store %s, %out[%i] : memref<?xf32>
    }
  }
  return
}

// -----

// A full sum of a matrix: the loops around the sum's loop hold nothing else
// and leave its element alone, so the float64 total runs through them; each
// row sums in registers.
// CHECK-LABEL: func.func @full_sum(
// CHECK:         %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:         %[[START:.*]] = arith.extf %[[OLD]] : f32 to f64
// CHECK:         %[[TOTAL:.*]] = scf.for %[[I:.*]] = %{{.*}} iter_args(%[[T:.*]] = %[[START]]) -> (f64) {
// CHECK:           %[[P:.*]] = scf.for %{{.*}} iter_args(%[[Q:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %{{.*}}[%[[I]], %{{.*}}] : memref<?x?xf32>
// CHECK:             arith.addf %[[Q]], %[[X]] fastmath<reassoc> : f32
// CHECK:           %[[W:.*]] = arith.extf %[[P]] : f32 to f64
// CHECK:           arith.addf %[[T]], %[[W]] : f64
// CHECK:         %[[R:.*]] = arith.truncf %[[TOTAL]] : f64 to f32
// CHECK:         memref.store %[[R]], %{{.*}}[] : memref<f32>
// CHECK-NOT:     scf.if
func.func @full_sum(%x: memref<?x?xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %k = %c0 to %cols step %c1 {
      %a = memref.load %out[] : memref<f32>
      %v = memref.load %x[%i, %k] : memref<?x?xf32>
      %s = arith.addf %a, %v fastmath<reassoc> : f32
      memref.store %s, %out[] : memref<f32>
    }
  }
  return
}

// -----

// Left alone: an add without reassoc (its order is fixed), a sum whose
// element changes with the innermost loop (column sums), a buffer the loop
// also reads elsewhere, and a float64 sum.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     iter_args
// CHECK-NOT:     scf.if
// CHECK:         return
func.func @left_alone(%x: memref<?x?xf32>, %y: memref<?xf64>, %out: memref<f32>, %columns: memref<?xf32>, %copy: memref<?xf32>, %wide: memref<f64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %k = %c0 to %cols step %c1 {
    %a = memref.load %out[] : memref<f32>
    %v = memref.load %x[%c0, %k] : memref<?x?xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %a = memref.load %columns[%j] : memref<?xf32>
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      %s = arith.addf %a, %v fastmath<reassoc> : f32
      memref.store %s, %columns[%j] : memref<?xf32>
    }
  }
  scf.for %k = %c0 to %cols step %c1 {
    %a = memref.load %out[] : memref<f32>
    %v = memref.load %x[%c0, %k] : memref<?x?xf32>
    %s = arith.addf %a, %v fastmath<reassoc> : f32
    memref.store %s, %out[] : memref<f32>
    %again = memref.load %out[] : memref<f32>
    memref.store %again, %copy[%k] : memref<?xf32>
  }
  scf.for %k = %c0 to %cols step %c1 {
    %a = memref.load %wide[] : memref<f64>
    %v = memref.load %y[%k] : memref<?xf64>
    %s = arith.addf %a, %v fastmath<reassoc> : f64
    memref.store %s, %wide[] : memref<f64>
  }
  return
}

// ZERO: error: fuser-block-sums: block must be 1 or more, got 0
// ZERO: exit status: 1
