// RUN: %fuser-opt %s -p 'fuser-share-call-results' --split-input-file | FileCheck %s

// fuser-share-call-results has a later generic read a value it computes
// again with a function call from the output an earlier generic stored it
// to (in segments and blocks of rows), or, in functions marked
// fuser.row_block, from a new buffer the earlier generic also writes it to
// where that buffer takes at most 4 MiB; everything else stays as it is.

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// A row softmax's sum and result: where the block's exp values take at most
// 4 MiB, the sum also writes them to a new buffer and the result reads it
// (no longer reading %x or %max); else the two run as they were.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?xf32>, %[[MAX:[^:]*]]: memref<?x1xf32>, %[[SUM:[^:]*]]: memref<?x1xf32>, %[[OUT:[^:]*]]: memref<?x?xf32>
// CHECK:         %[[ACC:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK:         %[[ROWS:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[COLS:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[ROW:.*]] = arith.muli %[[FOUR]], %[[ROWS]]
// CHECK:         %[[BYTES:.*]] = arith.muli %[[ROW]], %[[COLS]]
// CHECK:         %[[LIMIT:.*]] = arith.constant 4194304 : index
// CHECK:         %[[SMALL:.*]] = arith.cmpi ule, %[[BYTES]], %[[LIMIT]]
// CHECK:         scf.if %[[SMALL]] {
// CHECK:           %[[E:.*]] = memref.alloc(%[[ROWS]], %[[COLS]]) : memref<?x?xf32>
// CHECK:           linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #[[ID:[^,]*]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:        ins(%[[X]], %[[MAX]] : {{.*}}) outs(%[[ACC]], %[[E]] : {{.*}})
// CHECK-NEXT:      ^bb0(%[[A:[^:]*]]: f32, %[[M:[^:]*]]: f32, %[[S:[^:]*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:        %[[D:.*]] = arith.subf %[[A]], %[[M]]
// CHECK-NEXT:        %[[EXP:.*]] = func.call @expf(%[[D]])
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addf %[[S]], %[[EXP]]
// CHECK-NEXT:        linalg.yield %[[NEXT]], %[[EXP]]
// CHECK:           linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:        ins(%[[ACC]], %[[E]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK-NEXT:      ^bb0(%[[T:[^:]*]]: f32, %[[EI:[^:]*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:        %[[Q:.*]] = arith.divf %[[EI]], %[[T]]
// CHECK-NEXT:        linalg.yield %[[Q]]
// CHECK:           memref.dealloc %[[E]]
// CHECK:         } else {
// CHECK:           linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : {{.*}}) outs(%[[ACC]] : {{.*}})
// CHECK:             func.call @expf
// CHECK:           linalg.generic {{.*}} ins(%[[X]], %[[MAX]], %[[ACC]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK:             func.call @expf
// CHECK:         }
// CHECK-NOT:     func.call
func.func @softmax_rows(%x: memref<?x?xf32>, %max: memref<?x1xf32>, %unused: memref<?x1xf32>, %out: memref<?x?xf32>) attributes {fuser.row_block} {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %sum = memref.alloc(%rows) : memref<?x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%sum : memref<?x1xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %e = func.call @expf(%d) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %max, %sum : memref<?x?xf32>, memref<?x1xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %t: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %e = func.call @expf(%d) : (f32) -> f32
    %0 = arith.divf %e, %t : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// The same ops in a function that is not a block of rows: its buffers need
// not fit the cache, so nothing is shared.
// CHECK-LABEL: func.func @not_a_row_block(
// CHECK-NOT:     memref.alloc({{.*}}, {{.*}})
// CHECK-COUNT-2: func.call @expf
func.func @not_a_row_block(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %sum = memref.alloc(%rows) : memref<?x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%sum : memref<?x1xf32>) {
  ^bb0(%a: f32, %s: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<?x?xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.divf %e, %t : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// Nothing is shared where the earlier generic writes an argument (it may
// alias the input the value is computed from), where an op between the two
// writes that input, or where the value's maps do not name every loop (exp
// of the row max, per row).
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     memref.alloc({{.*}}, {{.*}})
// CHECK-COUNT-6: func.call @expf
func.func @left_alone(%x: memref<?x?xf32>, %max: memref<?x1xf32>, %arg_sum: memref<?x1xf32>, %out: memref<?x?xf32>) attributes {fuser.row_block} {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  // writes an argument
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%arg_sum : memref<?x1xf32>) {
  ^bb0(%a: f32, %s: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    linalg.yield %e : f32
  }
  // the max is written between the two
  %sum = memref.alloc(%rows) : memref<?x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%sum : memref<?x1xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %e = func.call @expf(%d) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    linalg.yield %0 : f32
  }
  linalg.copy ins(%sum : memref<?x1xf32>) outs(%max : memref<?x1xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %e = func.call @expf(%d) : (f32) -> f32
    linalg.yield %e : f32
  }
  // exp of the row max: its one map names d0 only
  %rowexp = memref.alloc(%rows) : memref<?x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%rowexp : memref<?x1xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %e = func.call @expf(%m) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    %1 = arith.addf %0, %a : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %e = func.call @expf(%m) : (f32) -> f32
    %0 = arith.mulf %e, %a : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  memref.dealloc %rowexp : memref<?x1xf32>
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// A sum over dim 0 (its reduced loop outside a parallel one) stays as it is:
// fuser-unroll-jam-reductions jams it, and a new output indexed by the
// reduced loop would stop that.
// CHECK-LABEL: func.func @column_sum_then_exp(
// CHECK-NOT:     memref.alloc({{.*}}, {{.*}})
// CHECK-COUNT-2: func.call @expf
func.func @column_sum_then_exp(%x: memref<?x?xf32>, %out: memref<?x?xf32>) attributes {fuser.row_block} {
  %c1 = arith.constant 1 : index
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  %sum = memref.alloc(%cols) : memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %e fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    linalg.yield %e : f32
  }
  memref.dealloc %sum : memref<?xf32>
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// Reread, in a segment: the middle segment of a softmax over columns stores
// exp(x - max) to %e and sums it; the sum reads %e instead of computing it,
// and no longer reads %x or %max.
// CHECK-LABEL: func.func @column_exp_and_sum(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?xf32>, %[[MAX:[^:]*]]: memref<1x?xf32>, %[[E:[^:]*]]: memref<?x?xf32>, %[[SUM:[^:]*]]: memref<1x?xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : {{.*}}) outs(%[[E]] : {{.*}})
// CHECK:           func.call @expf
// CHECK:         linalg.fill {{.*}} outs(%[[SUM]] :
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[E]] : memref<?x?xf32>) outs(%[[SUM]] : {{.*}})
// CHECK-NEXT:    ^bb0(%[[V:[^:]*]]: f32, %[[ACC:[^:]*]]: f32):
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]]
// CHECK-NEXT:      linalg.yield %[[NEXT]]
// CHECK-NOT:     func.call
func.func @column_exp_and_sum(%x: memref<?x?xf32>, %max: memref<1x?xf32>, %e: memref<?x?xf32>, %sum: memref<1x?xf32>) attributes {fuser.num_inputs = 2 : i64} {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<1x?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// No reread where an op between writes the stored output or an input of the
// value, where the earlier generic writes that input, where the later
// generic writes the stored output, where it would then read more
// full-size buffers (it still reads %x for its product), or outside a
// segment.
// CHECK-LABEL: func.func @no_reread(
// CHECK-COUNT-10: func.call @expf
// CHECK-LABEL: func.func @not_a_segment(
// CHECK-COUNT-2: func.call @expf
func.func @no_reread(%x: memref<?x?xf32>, %max: memref<1x?xf32>, %e: memref<?x?xf32>, %sum: memref<1x?xf32>, %y: memref<?x?xf32>) attributes {fuser.num_inputs = 2 : i64} {
  %zero = arith.constant 0.0 : f32
  // the stored output is overwritten between
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%e : memref<?x?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  // the value's input %y is overwritten between
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.copy ins(%x : memref<?x?xf32>) outs(%y : memref<?x?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<?x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  // the sum accumulates into row 0 of the stored output
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  // the stored output is the value's input, updated in place
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<?x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  // the sum would read %e besides %x
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x, %max : memref<?x?xf32>, memref<1x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %v = func.call @expf(%d) : (f32) -> f32
    %p = arith.mulf %v, %a : f32
    %0 = arith.addf %s, %p fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
func.func @not_a_segment(%x: memref<?x?xf32>, %e: memref<?x?xf32>, %sum: memref<1x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%sum : memref<1x?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %v = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %v fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

func.func private @expf(f32) -> f32 attributes {llvm.readnone}

// Keep, then a third nest computing the same value: the first two are
// rewritten inside an scf.if, which the pass does not look through, so the
// third computes the value itself (and never reads the kept buffer, freed
// in the if).
// CHECK-LABEL: func.func @kept_then_freed(
// CHECK:         scf.if
// CHECK:           %[[T:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf32>
// CHECK:           linalg.generic {{.*}} outs(%{{.*}}, %[[T]] :
// CHECK:           linalg.generic {{.*}} ins(%{{.*}}, %[[T]] :
// CHECK:           memref.dealloc %[[T]]
// CHECK:         } else {
// CHECK-NOT:     %[[T]]
// CHECK:         linalg.generic {{.*}} outs(%arg2 :
// CHECK:           func.call @expf
func.func @kept_then_freed(%x: memref<?x?xf32>, %out: memref<?x?xf32>, %out2: memref<?x?xf32>) attributes {fuser.row_block} {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %sum = memref.alloc(%rows) : memref<?x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%sum : memref<?x1xf32>) {
  ^bb0(%a: f32, %s: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.addf %s, %e : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<?x?xf32>, memref<?x1xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.divf %e, %t : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<?x?xf32>, memref<?x1xf32>) outs(%out2 : memref<?x?xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %e = func.call @expf(%a) : (f32) -> f32
    %0 = arith.mulf %e, %t : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  return
}
