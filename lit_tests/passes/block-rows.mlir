// RUN: %fuser-opt %s -p 'fuser-block-rows{block-bytes=4096}' --split-input-file | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-block-rows{block-bytes=0}' --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: %exit-status %fuser-opt %s -p 'fuser-block-rows{block-bytes=-1}' --split-input-file | FileCheck %s --check-prefix=NEGATIVE

// fuser-block-rows moves the body of a segment that splits along dim 0 of
// its split arguments, and whose loop nests share a buffer, into a private
// function, and calls it on blocks of at most `block-bytes` of those
// arguments' rows (at least one row); other functions stay as they are.

// OFF-LABEL: func.func @max_then_shift(
// OFF-NOT:     func.call
// NEGATIVE: error: fuser-block-rows: block-bytes must be 0 (leave every segment as it is) or more, got -1
// NEGATIVE: exit status: 1

// A row max and the input less it: both nests read %x, so the segment runs
// block by block of rows. A row of %x and %out holds 4 * cols + 4 * cols
// bytes; %w (a broadcast along the rows) is passed whole. Where %out has
// another number of rows than %x, the body runs once on the whole arrays.
// CHECK-LABEL: func.func private @max_then_shift_rows(
// CHECK-SAME:    %[[BX:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[BW:[^:]*]]: memref<?xf32>, %[[BOUT:[^:]*]]: memref
// CHECK-NOT:     fuser.num_inputs
// CHECK:         memref.alloc
// CHECK:         linalg.generic {{.*}} ins(%[[BX]] :
// CHECK:         linalg.generic {{.*}} ins(%[[BX]], %{{.*}}, %[[BW]] :
// CHECK-SAME:      outs(%[[BOUT]] :
// CHECK-LABEL: func.func @max_then_shift(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[W:[^:]*]]: memref<?xf32>, %[[OUT:[^:]*]]: memref
// CHECK-SAME:    fuser.num_inputs = 2
// CHECK:         %[[ROWS:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[XCOLS:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[OROWS:.*]] = memref.dim %[[OUT]], %{{.*}}
// CHECK:         %[[OCOLS:.*]] = memref.dim %[[OUT]], %{{.*}}
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[XROW:.*]] = arith.muli %[[FOUR]], %[[XCOLS]]
// CHECK:         %[[OROW:.*]] = arith.muli %{{.*}}, %[[OCOLS]]
// CHECK:         %[[ROW:.*]] = arith.addi %[[XROW]], %[[OROW]]
// CHECK:         %[[BUDGET:.*]] = arith.constant 4096 : index
// CHECK:         %[[NONZERO:.*]] = arith.maxui %{{.*}}, %[[ROW]]
// CHECK:         %[[FIT:.*]] = arith.divui %[[BUDGET]], %[[NONZERO]]
// CHECK:         %[[STEP:.*]] = arith.maxui %{{.*}}, %[[FIT]]
// CHECK:         %[[SAME:.*]] = arith.cmpi eq, %[[OROWS]], %[[ROWS]]
// CHECK:         scf.if %[[SAME]] {
// CHECK:           scf.for %[[R:.*]] = %{{.*}} to %[[ROWS]] step %[[STEP]] {
// CHECK:             %[[LEFT:.*]] = arith.subi %[[ROWS]], %[[R]]
// CHECK:             %[[N:.*]] = arith.minui %[[STEP]], %[[LEFT]]
// CHECK:             %[[XB:.*]] = memref.subview %[[X]][%[[R]], %{{.*}}] [%[[N]], %{{.*}}] [%{{.*}}, %{{.*}}]
// CHECK:             %[[OB:.*]] = memref.subview %[[OUT]][%[[R]], %{{.*}}] [%[[N]], %{{.*}}] [%{{.*}}, %{{.*}}]
// CHECK:             func.call @max_then_shift_rows(%[[XB]], %[[W]], %[[OB]])
// CHECK:         } else {
// CHECK:           func.call @max_then_shift_rows(%[[X]], %[[W]], %[[OUT]])
func.func @max_then_shift(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %w: memref<?xf32>, %out: memref<?x?xf32, strided<[?, ?], offset: ?>>)
    attributes {fuser.num_inputs = 2 : i64, llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0xFF800000 : f32
  %rows = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, ?], offset: ?>>
  %max = memref.alloc(%rows) : memref<?x1xf32>
  linalg.fill ins(%cst : f32) outs(%max : memref<?x1xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%max : memref<?x1xf32>) {
  ^bb0(%a: f32, %m: f32):
    %0 = arith.maximumf %a, %m : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %max, %w : memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x1xf32>, memref<?xf32>) outs(%out : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %m: f32, %b: f32, %o: f32):
    %0 = arith.subf %a, %m : f32
    %1 = arith.mulf %0, %b : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %max : memref<?x1xf32>
  return
}

// -----

// A static number of columns: each block's views are cast back to the
// argument's type, and a row is 4 * 8 bytes of %x plus 4 * 8 of %out.
// CHECK-LABEL: func.func @static_columns(
// CHECK:         %[[X32:.*]] = arith.constant 32 : index
// CHECK:         %[[O32:.*]] = arith.constant 32 : index
// CHECK:         arith.addi %[[X32]], %[[O32]]
// CHECK:         scf.for
// CHECK:           %[[XB:.*]] = memref.subview
// CHECK:           %[[XC:.*]] = memref.cast %[[XB]] : memref<?x?xf32, strided<[?, ?], offset: ?>> to memref<?x8xf32, strided<[?, ?], offset: ?>>
// CHECK:           %[[OB:.*]] = memref.subview
// CHECK:           %[[OC:.*]] = memref.cast %[[OB]]
// CHECK:           func.call @static_columns_rows(%[[XC]], %[[OC]])
func.func @static_columns(%x: memref<?x8xf32, strided<[?, ?], offset: ?>>, %out: memref<?x8xf32, strided<[?, ?], offset: ?>>)
    attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32, strided<[?, ?], offset: ?>>) outs(%out : memref<?x8xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32, strided<[?, ?], offset: ?>>) outs(%out : memref<?x8xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %o : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A 3-D row max and shift: where one index of dim 0 holds more than a block
// (and the arguments agree on dim 1), each of its indices is cut along dim 1
// into blocks, two views deep; else blocks of dim 0, as in 2-D.
// CHECK-LABEL: func.func @max_then_shift_3d(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[OUT:[^:]*]]: memref
// CHECK:         %[[ROW:.*]] = arith.addi
// CHECK:         arith.divui
// CHECK:         %[[STEP:.*]] = arith.maxui
// CHECK:         %[[SAME:.*]] = arith.cmpi eq
// CHECK:         scf.if %[[SAME]] {
// CHECK:           %[[LONG:.*]] = arith.cmpi ugt, %[[ROW]], %{{.*}}
// CHECK:           %[[SAME1:.*]] = arith.cmpi eq
// CHECK:           arith.divui
// CHECK:           %[[INNER:.*]] = arith.maxui
// CHECK:           %[[BOTH:.*]] = arith.andi %[[LONG]], %[[SAME1]]
// CHECK:           scf.if %[[BOTH]] {
// CHECK:             scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[ONE:[^ ]*]] {
// CHECK:               scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %[[INNER]] {
// CHECK:                 %[[XI:.*]] = memref.subview %[[X]][%[[I]], %{{.*}}, %{{.*}}] [%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK:                 %[[XB:.*]] = memref.subview %[[XI]][%{{.*}}, %[[R]], %{{.*}}]
// CHECK:                 %[[OI:.*]] = memref.subview %[[OUT]][%[[I]], %{{.*}}, %{{.*}}]
// CHECK:                 %[[OB:.*]] = memref.subview %[[OI]][%{{.*}}, %[[R]], %{{.*}}]
// CHECK:                 func.call @max_then_shift_3d_rows(%[[XB]], %[[OB]])
// CHECK:           } else {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]] {
// CHECK:               func.call @max_then_shift_3d_rows(
// CHECK:         } else {
// CHECK:           func.call @max_then_shift_3d_rows(%[[X]], %[[OUT]])
func.func @max_then_shift_3d(%x: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %out: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
    attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0xFF800000 : f32
  %d0 = memref.dim %x, %c0 : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %d1 = memref.dim %x, %c1 : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %max = memref.alloc(%d0, %d1) : memref<?x?x1xf32>
  linalg.fill ins(%cst : f32) outs(%max : memref<?x?x1xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) outs(%max : memref<?x?x1xf32>) {
  ^bb0(%a: f32, %m: f32):
    %0 = arith.maximumf %a, %m : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %max : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x1xf32>) outs(%out : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %0 = arith.subf %a, %m : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %max : memref<?x?x1xf32>
  return
}

// -----

// One loop nest: nothing is read twice, so the segment stays as it is.
// CHECK-LABEL: func.func @one_nest(
// CHECK-NOT:     scf.for
// CHECK-NOT:     func.call
// CHECK:         linalg.generic
// CHECK-NOT:     _rows
func.func @one_nest(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?x?xf32, strided<[?, ?], offset: ?>>)
    attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%out : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A column max and the input less it split along the columns (dim 1): blocks
// of columns would read short pieces of every row, so the segment stays as
// it is.
// CHECK-LABEL: func.func @column_max_then_shift(
// CHECK-NOT:     scf.for
// CHECK-NOT:     func.call
func.func @column_max_then_shift(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?x?xf32, strided<[?, ?], offset: ?>>)
    attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0xFF800000 : f32
  %cols = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, ?], offset: ?>>
  %max = memref.alloc(%cols) : memref<1x?xf32>
  linalg.fill ins(%cst : f32) outs(%max : memref<1x?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%max : memref<1x?xf32>) {
  ^bb0(%a: f32, %m: f32):
    %0 = arith.maximumf %a, %m : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<1x?xf32>) outs(%out : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %0 = arith.subf %a, %m : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %max : memref<1x?xf32>
  return
}

// -----

// Not a segment (no fuser.num_inputs): left alone.
// CHECK-LABEL: func.func @not_a_segment(
// CHECK-NOT:     func.call
func.func @not_a_segment(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%out : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%out : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %o : f32
    linalg.yield %0 : f32
  }
  return
}
