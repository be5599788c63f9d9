// RUN: %fuser-opt %s -p fuser-segment,fuser-outline-segments,fuser-lower-to-gpu --split-input-file | FileCheck %s

// fuser-lower-to-gpu writes every segment's kernels into one
// gpu.module @fuser_kernels and records each segment's launch program
// (temporaries, grids, blocks, argument bindings) in fuser.launches.

// A pointwise segment over rows of at least 128 elements: a warp per row
// for rows shorter than a block's chunk of 1024 columns (k0), a block per
// piece of 4096 columns (4 chunks) of longer ones (k1: rows times pieces in
// a grid-stride loop, a lane's columns counted from the piece's start in 32
// bits); lanes walk the row or piece in chunks of 4 guarded columns. The column operand is read at
// index 0 of its size-1 dim, once per chunk, the row operand at index 0 of
// its own, and the scalar input is a kernel argument. Shorter rows (k2): a
// grid-stride loop over the collapsed iteration space, indices recovered by
// division. Without layouts (fuser-opt knows none), no operand counts as
// dense: no vectors.
// CHECK-LABEL: func.func private @scale_seg0(
// CHECK-SAME:    fuser.launches = "{\22temps\22: [], \22launches\22: [{\22kernel\22: \22scale_seg0_k0\22, \22grid\22: {{\[\[}}\22min\22, [\22ceildiv\22, [\22argdim\22, 0, 0], [\22const\22, 8]], [\22const\22, 2147483647]]
// CHECK-SAME:    \22args\22: {{\[\[}}\22arg\22, 0], [\22arg\22, 1], [\22arg\22, 2], [\22arg\22, 3]]
// CHECK-SAME:    \22when\22: [\22mul\22, [\22gt\22, [\22argdim\22, 1, 1], [\22const\22, 127]], [\22le\22, [\22argdim\22, 1, 1], [\22const\22, 1023]]]
// CHECK-SAME:    \22kernel\22: \22scale_seg0_k1\22, \22grid\22: {{\[\[}}\22min\22, [\22ceildiv\22, [\22mul\22, [\22argdim\22, 0, 0], [\22ceildiv\22, [\22argdim\22, 1, 1], [\22const\22, 4096]]], [\22const\22, 1]], [\22const\22, 2147483647]]
// CHECK-SAME:    \22when\22: [\22mul\22, [\22gt\22, [\22argdim\22, 1, 1], [\22const\22, 127]], [\22gt\22, [\22argdim\22, 1, 1], [\22const\22, 1023]]]
// CHECK-SAME:    \22kernel\22: \22scale_seg0_k2\22, \22grid\22: {{\[\[}}\22min\22, [\22ceildiv\22, [\22mul\22, [\22argdim\22, 0, 0], [\22argdim\22, 1, 1]], [\22const\22, 256]], [\22const\22, 1056]]
// CHECK-SAME:    \22when\22: [\22le\22, [\22argdim\22, 1, 1], [\22const\22, 127]]
// CHECK:       gpu.module @fuser_kernels
// CHECK:         gpu.func @scale_seg0_k0(%[[X:.*]]: memref<?x1xf32, strided<[?, ?], offset: ?>>, %[[Y:.*]]: memref<1x?xf32, strided<[?, ?], offset: ?>>, %[[S:.*]]: f32, %[[OUT:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>) kernel
// CHECK:           %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK:           scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[CHUNK:.*]] = %c0 to %{{.*}} step %{{.*}} {
// CHECK:               %[[C:.*]] = arith.addi %[[CHUNK]], %[[LANE]]
// CHECK:               %[[IN:.*]] = arith.cmpi ult, %[[C]]
// CHECK:               memref.load %[[X]][%[[R]], %{{.*}}]
// CHECK:               scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:            memref.load %[[Y]][%{{.*}}, %[[C]]]
// CHECK:               arith.mulf %{{.*}}, %[[S]] : f32
// CHECK:               scf.if %[[IN]] {
// CHECK-NEXT:            memref.store %{{.*}}, %[[OUT]][%[[R]], %[[C]]]
// CHECK:         gpu.func @scale_seg0_k1(%[[X1:.*]]: memref<?x1xf32, strided<[?, ?], offset: ?>>, %{{.*}}: memref<1x?xf32
// CHECK:           %[[PIECES:.*]] = arith.divui %{{.*}}, %c4096
// CHECK:           scf.for %[[U:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[ROW:.*]] = arith.divui %[[U]], %[[PIECES]]
// CHECK:             %[[START:.*]] = arith.muli %{{.*}}, %c4096
// CHECK:             %[[STOP:.*]] = arith.minui
// CHECK:             scf.for %{{.*}} = %[[START]] to %[[STOP]] step %{{.*}} {
// CHECK:               arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK:               memref.load %[[X1]][%[[ROW]], %{{.*}}]
// CHECK:         gpu.func @scale_seg0_k2(
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[C:.*]] = arith.remui %[[I]]
// CHECK:             %[[R:.*]] = arith.divui %[[I]]
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[R]], %[[C]]]
func.func @scale(%x: tensor<?x1xf32>, %y: tensor<1x?xf32>, %s: f32, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 3 : i64} {
  %a = "fuser.add"(%x, %y) : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %m = "fuser.mul"(%a, %s) : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  %r = "fuser.store"(%m, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// An inner reduction: two kernels, and the launch program picks one by the
// row length. Rows up to 4096 elements: a warp per row (8 rows per block),
// lanes walk the row in chunks of 4 columns each (4 guarded loads in
// flight, one partial sum per column slot, all starting from the fill
// value), add their 4 partials, a butterfly of shuffles combines the warp
// and lane 0 stores. Longer rows: a block per row, gpu.all_reduce, then a
// barrier before the block's next row. The fill is folded into both
// kernels: no temporaries.
// CHECK-LABEL: func.func private @rowsum_seg0(
// CHECK-SAME:    fuser.launches = "{\22temps\22: [], \22launches\22: [{\22kernel\22: \22rowsum_seg0_k0\22, \22grid\22: {{\[\[}}\22min\22, [\22ceildiv\22, [\22argdim\22, 0, 0], [\22const\22, 8]], [\22const\22, 2147483647]]
// CHECK-SAME:    \22when\22: [\22le\22, [\22argdim\22, 0, 1], [\22const\22, 4096]]
// CHECK-SAME:    \22kernel\22: \22rowsum_seg0_k1\22
// CHECK-SAME:    \22when\22: [\22gt\22, [\22argdim\22, 0, 1], [\22const\22, 4096]]
// CHECK:         gpu.func @rowsum_seg0_k0(
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK:           scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[PART:.*]]:4 = scf.for %[[CHUNK:.*]] = %c0 to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]]) -> (f32, f32, f32, f32) {
// CHECK:               %[[COL:.*]] = arith.addi %[[CHUNK]], %[[LANE]]
// CHECK:               %[[IN:.*]] = arith.cmpi ult, %[[COL]]
// CHECK:               scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:            memref.load %{{.*}}[%[[ROW]], %[[COL]]]
// CHECK-COUNT-3:       memref.load
// CHECK:               arith.select %[[IN]]
// CHECK:             %[[A:.*]] = arith.addf %[[PART]]#0, %[[PART]]#1
// CHECK:             %[[B:.*]] = arith.addf %[[PART]]#2, %[[PART]]#3
// CHECK:             %[[SUM:.*]] = arith.addf %[[A]], %[[B]]
// CHECK:             gpu.shuffle  xor %[[SUM]], %c16_i32, %c32_i32 : f32
// CHECK-COUNT-4:     gpu.shuffle  xor
// CHECK:             %[[TOTAL:.*]] = arith.addf
// CHECK:             scf.if
// CHECK-NEXT:          memref.store %[[TOTAL]], %{{.*}}[%[[ROW]]]
// CHECK:         gpu.func @rowsum_seg0_k1(
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[BID:.*]] = gpu.block_id  x
// CHECK:           scf.for %[[ROW:.*]] = %[[BID]] to %{{.*}} step %{{.*}} {
// CHECK:             %[[PART:.*]]:4 = scf.for %{{.*}} = %c0 to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]]) -> (f32, f32, f32, f32) {
// CHECK:             %[[A:.*]] = arith.addf %[[PART]]#0, %[[PART]]#1
// CHECK:             %[[B:.*]] = arith.addf %[[PART]]#2, %[[PART]]#3
// CHECK:             %[[SUM:.*]] = arith.addf %[[A]], %[[B]]
// CHECK:             %[[TOTAL:.*]] = gpu.all_reduce  add %[[SUM]] uniform
// CHECK:             gpu.barrier
// CHECK:             scf.if
// CHECK-NEXT:          memref.store %[[TOTAL]], %{{.*}}[%[[ROW]]]
// CHECK-NOT:     gpu.func
func.func @rowsum(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %s = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%s, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// An outer reduction: kernel 0 gives each thread a column and each
// blockIdx.y a chunk of the rows, and writes partial results to a
// [splits, columns] temporary; kernel 1 (where the splits are many,
// OUTER_COMBINE_TILES: a block's warps in tiles, through shared memory) or
// kernel 2 (a thread a column) combines the splits of each column.
// Float max combines with NaN-propagating arith.maximumf on the GPU (one
// accumulator; the CPU's integer order keys would need two, and a third
// kernel to turn them back into floats).
// CHECK-LABEL: func.func private @colmax_seg0(
// CHECK-SAME:    fuser.launches = "{\22temps\22: [{\22dtype\22: \22f32\22, \22shape\22: {{[^}]*}}}], \22launches\22
// CHECK-SAME:    \22kernel\22: \22colmax_seg0_k0\22
// CHECK-SAME:    \22args\22: {{\[\[}}\22arg\22, 0], [\22temp\22, 0]]
// CHECK-SAME:    \22kernel\22: \22colmax_seg0_k1\22
// CHECK-SAME:    \22args\22: {{\[\[}}\22arg\22, 0], [\22temp\22, 0], [\22arg\22, 1]]
// CHECK-SAME:    \22kernel\22: \22colmax_seg0_k2\22
// CHECK-SAME:    \22args\22: {{\[\[}}\22arg\22, 0], [\22temp\22, 0], [\22arg\22, 1]]
// CHECK-NOT:     colmax_seg0_k3
// CHECK:         gpu.func @colmax_seg0_k0(
// CHECK:           gpu.block_id  y
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK:             arith.maximumf
// CHECK:         memref.global "private" @colmax_seg0_k1_tile0 : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK:         gpu.func @colmax_seg0_k1(
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK:             arith.maximumf
// CHECK:           gpu.barrier
// CHECK:           arith.maximumf
// CHECK:         gpu.func @colmax_seg0_k2(
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK:             arith.maximumf
func.func @colmax(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %s = "fuser.max"(%x) {dims = array<i64: 0>, keepdim = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%s, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
