// RUN: %fuser-opt %s -p fuser-lower-to-cpu --split-input-file --verify-diagnostics | FileCheck %s
// RUN: %fuser-opt %s -p 'fuser-lower-to-cpu{vector-library=libmvec-avx2}' --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=VECLIB
// RUN: %exit-status %fuser-opt %s -p 'fuser-lower-to-cpu{vector-library=svml}' --split-input-file | FileCheck %s --check-prefix=BADLIB
// RUN: %fuser-opt %s -p 'fuser-lower-to-cpu{float-extremum=maximumf}' --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=MAXF
// RUN: %exit-status %fuser-opt %s -p 'fuser-lower-to-cpu{float-extremum=keys}' --split-input-file | FileCheck %s --check-prefix=BADEXT
// RUN: %exit-status %fuser-opt %s -p 'fuser-lower-to-cpu{segments-only=true}' --split-input-file | FileCheck %s --check-prefix=WHOLE
// RUN: %fuser-opt %s -p 'fuser-lower-to-cpu{fuse-shared=true}' --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SHARED

// fuser-lower-to-cpu rewrites each segment function (fuser.num_inputs, every
// store into an argument, no calls) into a function over strided memrefs that
// computes with linalg on tensors and writes each output with
// bufferization.materialize_in_destination. One case per kind of op.

// A pointwise chain with a size-1 broadcast dim and a scalar: memref
// arguments, inputs read with to_tensor restrict, broadcast dims mapped to 0,
// the scalar captured by the body, the result materialised in the destination.
// CHECK-LABEL: func.func @pointwise_seg0(
// CHECK-SAME:    %[[A:.*]]: memref<?x4xf32, strided<[?, ?], offset: ?>>, %[[B:.*]]: memref<1x4xf32, strided<[?, ?], offset: ?>>, %[[S:.*]]: f32, %[[OUT:.*]]: memref<?x4xf32, strided<[?, ?], offset: ?>>)
// CHECK-SAME:    attributes {fuser.num_inputs = 3 : i64, llvm.emit_c_interface}
// CHECK:         %[[TA:.*]] = bufferization.to_tensor %[[A]] restrict
// CHECK:         %[[TB:.*]] = bufferization.to_tensor %[[B]] restrict
// CHECK:         %[[ADD:.*]] = linalg.generic {indexing_maps = [#[[ID:.*]], #[[BCAST:.*]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[TA]], %[[TB]] : {{.*}})
// CHECK:           arith.addf
// CHECK:         %[[MUL:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[ADD]] : tensor<?x4xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[S]] : f32
// CHECK:         bufferization.materialize_in_destination %[[MUL]] in restrict writable %[[OUT]]
// CHECK-NEXT:    return
func.func private @pointwise_seg0(%a: tensor<?x4xf32>, %b: tensor<1x4xf32>, %s: f32, %out: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {fuser.num_inputs = 3 : i64} {
  %0 = "fuser.add"(%a, %b) : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %1 = "fuser.mul"(%0, %s) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %r = "fuser.store"(%1, %out) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A reduction: the init is a linalg.fill of the identity, the reduced dim
// iterates as "reduction", and keepdim maps it to 0 in the output. Float sums
// may reassociate (LLVM vectorises them with partial sums).
// CHECK-DAG:   #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @reduce_seg0(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[EMPTY:.*]] = tensor.empty(%{{.*}}) : tensor<?x1xf32>
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x1xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[IN]], #[[KEEP]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      outs(%[[INIT]] : tensor<?x1xf32>)
// CHECK:           arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
func.func private @reduce_seg0(%x: tensor<?x?xf32>, %out: tensor<?x1xf32>) -> tensor<?x1xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %r = "fuser.store"(%m, %out) : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>
}

// -----

// A float max reduces integer order keys (maxsi, which LLVM vectorises) and
// an "any NaN" flag in one generic, then converts back, NaN where flagged.
// CHECK-LABEL: func.func @max_seg0(
// CHECK:         %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}}, %{{.*}} : tensor<i32>, tensor<i32>)
// CHECK:           %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK:           arith.maxsi
// CHECK:           %[[NAN:.*]] = arith.cmpf uno
// CHECK:           arith.ori
// CHECK:         linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<i32>, tensor<i32>) outs(%{{.*}} : tensor<f32>)
// CHECK:           arith.bitcast %{{.*}} : i32 to f32
// CHECK:           arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// With float-extremum=maximumf (the GPU's choice): one accumulator, combined
// with NaN-propagating arith.maximumf, and no conversion back.
// MAXF-LABEL: func.func @max_seg0(
// MAXF:         linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// MAXF:           arith.maximumf
// MAXF-NOT:     arith.bitcast
// MAXF:         return
func.func private @max_seg0(%x: tensor<?xf32>, %out: tensor<f32>) -> tensor<f32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 0>, keepdim = false} : (tensor<?xf32>) -> tensor<f32>
  %r = "fuser.store"(%m, %out) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A reduction gets its own copy of the elementwise ops that feed it, so that
// exp(x - m) fuses into the row sum and, separately, into the division: no
// full-size intermediate.
// CHECK-LABEL: func.func @softmax_seg0(
// CHECK:         linalg.generic {{.*}}["parallel", "reduction"]
// CHECK:           arith.maxsi
// CHECK-COUNT-2: func.call @expf
// CHECK:         linalg.generic {{.*}}["parallel", "reduction"]
// CHECK:         arith.divf
// CHECK-NOT:     func.call @expf
func.func private @softmax_seg0(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %m = "fuser.max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%x, %m) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %e = "fuser.exp"(%d) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %z = "fuser.sum"(%e) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %s = "fuser.div"(%e, %z) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %r = "fuser.store"(%s, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// permute and broadcast_in_dim are generics whose input map permutes dims or
// names the kept ones.
// CHECK-DAG:   #[[PERM:.*]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-DAG:   #[[NEW_DIM:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @layout_seg0(
// CHECK:         linalg.generic {indexing_maps = [#[[PERM]], #{{.*}}]
// CHECK:         linalg.generic {indexing_maps = [#[[NEW_DIM]], #{{.*}}]
func.func private @layout_seg0(%x: tensor<?x?x?xf32>, %v: tensor<?xf32>, %o0: tensor<?x?x?xf32>, %o1: tensor<?x3xf32>) -> (tensor<?x?x?xf32>, tensor<?x3xf32>)
    attributes {fuser.num_inputs = 2 : i64} {
  %p = "fuser.permute"(%x) {dims = array<i64: 2, 0, 1>} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %b = "fuser.broadcast_in_dim"(%v) {broadcast_dims = array<i64: 0>} : (tensor<?xf32>) -> tensor<?x3xf32>
  %r0 = "fuser.store"(%p, %o0) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r1 = "fuser.store"(%b, %o1) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %r0, %r1 : tensor<?x?x?xf32>, tensor<?x3xf32>
}

// -----

// reshape copies its source into a fresh tensor (contiguous once bufferized)
// and reshapes with a shape tensor, which works for symbolic sizes; a value
// that no linalg op produced is stored through linalg.copy, never memref.copy.
// CHECK-LABEL: func.func @reshape_seg0(
// CHECK:         %[[N:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK:         %[[SRC:.*]] = linalg.copy {{.*}}ins(%{{.*}} : tensor<?x?xf32>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK:         %[[SIZE:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK:         %[[SHAPE:.*]] = tensor.from_elements %[[SIZE]] : tensor<1xindex>
// CHECK:         %[[FLAT:.*]] = tensor.reshape %[[SRC]](%[[SHAPE]])
// CHECK:         %[[STORED:.*]] = linalg.copy {{.*}}ins(%[[FLAT]] : tensor<?xf32>)
// CHECK:         bufferization.materialize_in_destination %[[STORED]]
func.func private @reshape_seg0(%x: tensor<?x?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %n = "fuser.size"(%x) {dim = 0 : i64} : (tensor<?x?xf32>) -> i64
  %m = "fuser.size"(%x) {dim = 1 : i64} : (tensor<?x?xf32>) -> i64
  %nm = "fuser.mul"(%n, %m) : (i64, i64) -> i64
  %f = "fuser.reshape"(%x, %nm) : (tensor<?x?xf32>, i64) -> tensor<?xf32>
  %r = "fuser.store"(%f, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Booleans live in memory as i8 (NumPy's bool); bodies see i1. Half-precision
// math runs in f32. Transcendental functions call libm, declared readnone.
// CHECK-LABEL: func.func private @expf(f32) -> f32 attributes {llvm.readnone, no_unwind, will_return}
// CHECK-LABEL: func.func @types_seg0(
// CHECK-SAME:    memref<?xf16, strided<[?], offset: ?>>, %{{.*}}: memref<?xi8, strided<[?], offset: ?>>)
// CHECK:         linalg.generic
// CHECK:           %[[WIDE:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK:           %[[E:.*]] = func.call @expf(%[[WIDE]]) : (f32) -> f32
// CHECK:           arith.truncf %[[E]] : f32 to f16
// CHECK:         linalg.generic
// CHECK:           %[[LT:.*]] = arith.cmpf olt
// CHECK:           %[[BYTE:.*]] = arith.extui %[[LT]] : i1 to i8
// CHECK:           linalg.yield %[[BYTE]] : i8
// CHECK:         } -> tensor<?xi8>
func.func private @types_seg0(%x: tensor<?xf16>, %out: tensor<?xi1>) -> tensor<?xi1> attributes {fuser.num_inputs = 1 : i64} {
  %e = "fuser.exp"(%x) : (tensor<?xf16>) -> tensor<?xf16>
  %lt = "fuser.lt"(%e, %x) : (tensor<?xf16>, tensor<?xf16>) -> tensor<?xi1>
  %r = "fuser.store"(%lt, %out) : (tensor<?xi1>, tensor<?xi1>) -> tensor<?xi1>
  return %r : tensor<?xi1>
}

// -----

// With a vector library, the calls go to a wrapper that computes every
// element with the one 8-lane variant (its argument in every lane, lane 0
// back): the same bits in every loop. Its mapping offers the vectoriser that
// variant and a 4-lane wrapper of it, kept alive through @llvm.compiler.used.
// VECLIB-LABEL: llvm.func @_ZGVdN8v_tanhf(vector<8xf32>) -> vector<8xf32>
// VECLIB:       llvm.func internal @fuser.tanhf.x4(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// VECLIB:         llvm.shufflevector %{{.*}} [0, 1, 2, 3, 0, 1, 2, 3] : vector<4xf32>
// VECLIB:         llvm.call @_ZGVdN8v_tanhf(
// VECLIB:         llvm.shufflevector %{{.*}} [0, 1, 2, 3] : vector<8xf32>
// VECLIB:       llvm.mlir.global appending @llvm.compiler.used()
// VECLIB:         llvm.mlir.addressof @_ZGVdN8v_tanhf
// VECLIB:         llvm.mlir.addressof @fuser.tanhf.x4
// VECLIB:       func.func private @fuser.tanhf(%{{.*}}: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>, llvm.readnone, no_unwind,
// VECLIB-SAME:    passthrough = ["noinline", ["vector-function-abi-variant", "_ZGV_LLVM_N8v_fuser.tanhf(_ZGVdN8v_tanhf),_ZGV_LLVM_N4v_fuser.tanhf(fuser.tanhf.x4)"]]
// VECLIB:         llvm.shufflevector %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// VECLIB:         llvm.call @_ZGVdN8v_tanhf(
// VECLIB:         llvm.extractelement
// VECLIB-NOT:   func.func private @tanhf
// VECLIB-LABEL: func.func @veclib_seg0(
// VECLIB:         func.call @fuser.tanhf(
func.func private @veclib_seg0(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %t = "fuser.tanh"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %r = "fuser.store"(%t, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Functions that are not segments stay as they are: no fuser.num_inputs, or
// a store into a fuser.empty. With segments-only (fuser-cpu-pipeline sets it)
// the second, a whole fusion as fd.fusion_ir() prints it, is an error.
// WHOLE: error: fuser-lower-to-cpu: @stores_into_empty stores into buffers it makes (fuser.empty): it is a whole fusion, not a segment function; run -p fuser-segment,fuser-outline-segments first and hand this pass the segment functions (fd.compile and fuser-mlir compile run the whole pipeline from a definition)
// CHECK-LABEL: func.func @not_a_fusion(
// CHECK:         "fuser.exp"
// CHECK-LABEL: func.func @stores_into_empty(
// CHECK:         "fuser.empty"
// CHECK:         "fuser.store"
func.func @not_a_fusion(%x: tensor<?xf32>) -> tensor<?xf32> {
  %e = "fuser.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  return %e : tensor<?xf32>
}
func.func @stores_into_empty(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fuser.num_inputs = 1 : i64} {
  %d = "fuser.empty"() : () -> tensor<4xf32>
  %r = "fuser.store"(%x, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A host function that still calls a segment would be left calling a
// function whose signature changed: rejected, with the fix.
func.func private @called_seg0(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  %r = "fuser.store"(%x, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @host(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {fuser.num_inputs = 1 : i64} {
  // CHECK: [[@LINE+1]]:8: error: 'func.call' op calls segment @called_seg0, whose signature fuser-lower-to-cpu rewrites to memrefs; lower the host function to a launch plan first and hand this pass the segment functions only
  %r = func.call @called_seg0(%x, %out) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// BADLIB: error: fuser-lower-to-cpu: unknown vector-library 'svml' (known: libmvec-avx2, libmvec-sse, or empty for none)
// BADLIB: exit status: 1
// BADEXT: error: fuser-lower-to-cpu: unknown float-extremum 'keys' (known: order-keys, maximumf)
// BADEXT: exit status: 1

// -----

// Reductions of booleans are not lowered (the frontend casts them first).
func.func private @bool_sum_seg0(%x: tensor<?xi1>, %out: tensor<i1>) -> tensor<i1> attributes {fuser.num_inputs = 1 : i64} {
  // CHECK: [[@LINE+1]]:8: error: 'fuser.sum' op reduces i1 values, which fuser-lower-to-cpu does not support; cast to an integer type first
  %s = "fuser.sum"(%x) {dims = array<i64: 0>, keepdim = false} : (tensor<?xi1>) -> tensor<i1>
  %r = "fuser.store"(%s, %out) : (tensor<i1>, tensor<i1>) -> tensor<i1>
  return %r : tensor<i1>
}

// -----

// Running the pass twice changes nothing the second time: a lowered segment
// stores nothing, so it is no longer a segment.
// CHECK-LABEL: func.func @twice_seg0(
// CHECK:         bufferization.materialize_in_destination
func.func @twice_seg0(%arg0: memref<?xf32, strided<[?], offset: ?>>, %arg1: memref<?xf32, strided<[?], offset: ?>>) attributes {fuser.num_inputs = 1 : i64, llvm.emit_c_interface} {
  %0 = bufferization.to_tensor %arg0 restrict : memref<?xf32, strided<[?], offset: ?>> to tensor<?xf32>
  bufferization.materialize_in_destination %0 in restrict writable %arg1 : (tensor<?xf32>, memref<?xf32, strided<[?], offset: ?>>) -> ()
  return
}
// WHOLE: exit status: 1

// -----
// With fuse-shared, a value two ops read (%y, read by mul and by sin) is
// computed once in the body of the one generic that computes the output:
// the broadcast bias and the scalar are read as before. Without it, %y and
// %sq are generics of their own, which linalg-fuse-elementwise-ops cannot
// fuse into both readers.
// SHARED-LABEL: func.func @shared_seg0(
// SHARED-DAG:     %[[TX:.*]] = bufferization.to_tensor %arg0 restrict
// SHARED-DAG:     %[[TB:.*]] = bufferization.to_tensor %arg1 restrict
// SHARED:         %[[OUT:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[TX]], %[[TB]] : {{.*}})
// SHARED-NEXT:    ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// SHARED-NEXT:      %[[Y:.*]] = arith.addf %[[X]], %[[B]] : f32
// SHARED-NEXT:      %[[SQ:.*]] = arith.mulf %[[Y]], %[[Y]] : f32
// SHARED-NEXT:      %[[SIN:.*]] = func.call @sinf(%[[Y]]) : (f32) -> f32
// SHARED-NEXT:      %[[SUM:.*]] = arith.addf %[[SQ]], %[[SIN]] : f32
// SHARED-NEXT:      %[[SCALED:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// SHARED-NEXT:      linalg.yield %[[SCALED]] : f32
// SHARED-NOT:     linalg.generic
// SHARED:         bufferization.materialize_in_destination %[[OUT]]
// CHECK-LABEL: func.func @shared_seg0(
// CHECK-COUNT-5: linalg.generic
func.func private @shared_seg0(%x: tensor<?x4xf32>, %b: tensor<1x4xf32>, %s: f32, %out: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {fuser.num_inputs = 3 : i64} {
  %y = "fuser.add"(%x, %b) : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %sq = "fuser.mul"(%y, %y) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %sin = "fuser.sin"(%y) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %sum = "fuser.add"(%sq, %sin) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %scaled = "fuser.mul"(%sum, %s) : (tensor<?x4xf32>, f32) -> tensor<?x4xf32>
  %stored = "fuser.store"(%scaled, %out) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %stored : tensor<?x4xf32>
}

// -----
// With fuse-shared, a value of a cone of more than SHARE_LIMIT (16) ops that a
// reduction and another op read (%y17, 17 sines, read by the row max and the
// subtraction) is computed once, in a generic of its own, which both read;
// a smaller one would be computed again in each (as %y is above).
// SHARED-LABEL: func.func @kept_seg0(
// SHARED:         %[[Y:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<?x?xf32>)
// SHARED-COUNT-17:  func.call @sinf
// SHARED:         linalg.generic {{.*}}["parallel", "reduction"]} ins(%[[Y]] : tensor<?x?xf32>)
// SHARED-NOT:     func.call @sinf
// SHARED:         linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<?x?xf32>, tensor<?x1xf32>)
// SHARED-NOT:     func.call @sinf
// SHARED:         arith.subf
// SHARED-NOT:     linalg.generic
// SHARED:         bufferization.materialize_in_destination
// CHECK-LABEL: func.func @kept_seg0(
// CHECK-COUNT-34: func.call @sinf
func.func private @kept_seg0(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {fuser.num_inputs = 1 : i64} {
  %y1 = "fuser.sin"(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y2 = "fuser.sin"(%y1) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y3 = "fuser.sin"(%y2) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y4 = "fuser.sin"(%y3) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y5 = "fuser.sin"(%y4) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y6 = "fuser.sin"(%y5) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y7 = "fuser.sin"(%y6) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y8 = "fuser.sin"(%y7) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y9 = "fuser.sin"(%y8) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y10 = "fuser.sin"(%y9) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y11 = "fuser.sin"(%y10) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y12 = "fuser.sin"(%y11) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y13 = "fuser.sin"(%y12) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y14 = "fuser.sin"(%y13) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y15 = "fuser.sin"(%y14) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y16 = "fuser.sin"(%y15) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %y17 = "fuser.sin"(%y16) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %m = "fuser.max"(%y17) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %d = "fuser.sub"(%y17, %m) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  %stored = "fuser.store"(%d, %out) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %stored : tensor<?x?xf32>
}
