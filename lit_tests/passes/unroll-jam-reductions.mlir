// RUN: %fuser-opt %s -p 'fuser-unroll-jam-reductions{factor=2}' --split-input-file --verify-diagnostics | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-unroll-jam-reductions{factor=1}' --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: %exit-status %fuser-opt %s -p 'fuser-unroll-jam-reductions{factor=0}' --split-input-file | FileCheck %s --check-prefix=ZERO

// fuser-unroll-jam-reductions splits a generic on memrefs whose one reduced
// loop has parallel loops inside it into a generic that takes `factor` rows
// an iteration (strided views; the copies of the body combined as a tree
// where the body is `yield combine(acc, value)`, else chained) and one for
// the rows left over; other generics stay as they are.

// ONE-LABEL: func.func @column_sum(
// ONE-COUNT-1: linalg.generic
// ONE-NOT:     memref.subview
// ZERO: error: fuser-unroll-jam-reductions: factor must be 1 or more (1 leaves every generic as it is), got 0
// ZERO: exit status: 1

// A sum over dim 0 with a weight read along the columns: the rows split into
// pairs (stride 2 from rows 0 and 1) and the rest from the pairs' end; the
// weight, which the reduced loop does not index, is read whole by every copy;
// the two rows' products are added together, then to the accumulator.
// CHECK-DAG:   #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[COLS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_sum(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[W:[^:]*]]: memref<?xf32>, %[[OUT:[^:]*]]: memref
// CHECK:         %[[R:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[C:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         %[[PAIRS:.*]] = arith.divui %[[R]], %[[TWO]]
// CHECK:         %[[MAIN:.*]] = arith.muli %[[PAIRS]], %[[TWO]]
// CHECK:         %[[REST:.*]] = arith.subi %[[R]], %[[MAIN]]
// CHECK:         %[[EVEN:.*]] = memref.subview %[[X]][%{{.*}}, %{{.*}}] [%[[PAIRS]], %[[C]]] [%[[TWO]], %{{.*}}]
// CHECK:         %[[ODD:.*]] = memref.subview %[[X]][%{{.*}}, %{{.*}}] [%[[PAIRS]], %[[C]]] [%[[TWO]], %{{.*}}]
// CHECK:         linalg.generic {indexing_maps = [#[[ROWS]], #[[COLS]], #[[ROWS]], #[[COLS]], #[[COLS]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME:      ins(%[[EVEN]], %[[W]], %[[ODD]], %[[W]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK-NEXT:    ^bb0(%[[A0:.*]]: f32, %[[W0:.*]]: f32, %[[A1:.*]]: f32, %[[W1:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:      %[[P0:.*]] = arith.mulf %[[A0]], %[[W0]]
// CHECK-NEXT:      %[[P1:.*]] = arith.mulf %[[A1]], %[[W1]]
// CHECK-NEXT:      %[[T:.*]] = arith.addf %[[P0]], %[[P1]] fastmath<reassoc>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[T]] fastmath<reassoc>
// CHECK-NEXT:      linalg.yield %[[S]]
// CHECK:         %[[LEFT:.*]] = memref.subview %[[X]][%[[MAIN]], %{{.*}}] [%[[REST]], %[[C]]]
// CHECK:         linalg.generic {indexing_maps = [#[[ROWS]], #[[COLS]], #[[COLS]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME:      ins(%[[LEFT]], %[[W]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK-NEXT:    ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      linalg.yield
// CHECK-NOT:     linalg.generic
func.func @column_sum(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %w: memref<?xf32>, %out: memref<?xf32, strided<[?], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x, %w : memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32>) outs(%out : memref<?xf32, strided<[?], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two accumulators (a float max's order key and NaN flag) over the middle dim
// of a 3-D buffer: each combines its two rows' values, then its accumulator.
// CHECK-LABEL: func.func @middle_max(
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-NEXT:    ^bb0(%[[A0:[^:]*]]: i32, %[[A1:[^:]*]]: i32, %[[K:[^:]*]]: i32, %[[N:[^:]*]]: i1):
// CHECK-NEXT:      %[[KT:.*]] = arith.maxsi %[[A0]], %[[A1]]
// CHECK-NEXT:      %[[NT:.*]] = arith.ori %[[TRUE:.*]], %[[TRUE]]
// CHECK-NEXT:      %[[K1:.*]] = arith.maxsi %[[K]], %[[KT]]
// CHECK-NEXT:      %[[N1:.*]] = arith.ori %[[N]], %[[NT]]
// CHECK-NEXT:      linalg.yield %[[K1]], %[[N1]]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
func.func @middle_max(%x: memref<?x?x?xi32>, %keys: memref<?x?xi32>, %nans: memref<?x?xi1>) {
  %true = arith.constant true
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<?x?x?xi32>) outs(%keys, %nans : memref<?x?xi32>, memref<?x?xi1>) {
  ^bb0(%a: i32, %k: i32, %n: i1):
    %m = arith.maxsi %k, %a : i32
    %o = arith.ori %n, %true : i1
    linalg.yield %m, %o : i32, i1
  }
  return
}

// -----

// A body that is not `combine(acc, value)` (the accumulator is scaled before
// the row is added) is chained: the second copy takes the first's result, in
// row order.
// CHECK-LABEL: func.func @decaying_sum(
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[A0:[^:]*]]: f32, %[[A1:[^:]*]]: f32, %[[ACC:[^:]*]]: f32):
// CHECK-NEXT:      %[[H0:.*]] = arith.mulf %[[ACC]], %[[HALF:.*]] : f32
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %[[H0]], %[[A0]]
// CHECK-NEXT:      %[[H1:.*]] = arith.mulf %[[S0]], %[[HALF]] : f32
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[H1]], %[[A1]]
// CHECK-NEXT:      linalg.yield %[[S1]]
func.func @decaying_sum(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %h = arith.mulf %acc, %half : f32
    %s = arith.addf %h, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A float sum not marked reassoc is chained too: its rows are added in order.
// CHECK-LABEL: func.func @ordered_sum(
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[A0:[^:]*]]: f32, %[[A1:[^:]*]]: f32, %[[ACC:[^:]*]]: f32):
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %[[ACC]], %[[A0]] : f32
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[S0]], %[[A1]] : f32
// CHECK-NEXT:      linalg.yield %[[S1]]
func.func @ordered_sum(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum over dims 0 and 1 of a 3-D buffer, marked reassoc: dim 1, the last
// reduced one, is jammed; a sum over the same dims not marked reassoc is left
// alone (its rows left over would come after dim 0's other iterations).
// CHECK-LABEL: func.func @two_reduced_dims(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?x?xf32>
// CHECK:         %[[R:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         memref.dim %[[X]]
// CHECK:         memref.dim %[[X]]
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         %[[PAIRS:.*]] = arith.divui %{{.*}}, %[[TWO]]
// CHECK:         memref.subview %[[X]][%{{.*}}, %{{.*}}, %{{.*}}] [%{{.*}}, %[[PAIRS]], %{{.*}}] [%{{.*}}, %[[TWO]], %{{.*}}]
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]
// CHECK-NEXT:    ^bb0(%[[A0:[^:]*]]: f32, %[[A1:[^:]*]]: f32, %[[ACC:[^:]*]]: f32):
// CHECK-NEXT:      %[[T:.*]] = arith.addf %[[A0]], %[[A1]] fastmath<reassoc>
// CHECK-NEXT:      arith.addf %[[ACC]], %[[T]] fastmath<reassoc>
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]
// CHECK-NEXT:    ^bb0(%{{[^:]*}}: f32, %{{[^:]*}}: f32):
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]
// CHECK-NEXT:    ^bb0(%{{[^:]*}}: f32, %{{[^:]*}}: f32):
// CHECK-NEXT:      arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     linalg.generic
func.func @two_reduced_dims(%x: memref<?x?x?xf32>, %out: memref<?xf32>, %ordered: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : memref<?x?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : memref<?x?x?xf32>) outs(%ordered : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left alone: a sum along the innermost dim (no parallel loop inside the
// reduced one), a sum over two dims, and a generic that reads a loop index.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     memref.subview
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     linalg.generic
func.func @left_alone(%x: memref<?x?xf32>, %rows: memref<?xf32>, %all: memref<f32>, %cols: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%rows : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%all : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%cols : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %p = arith.mulf %a, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
