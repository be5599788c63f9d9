// RUN: %fuser-opt %s -p 'fuser-lower-to-cpu{fuse-shared=true}' | FileCheck %s
// RUN: %fuser-opt %s -p fuser-lower-to-cpu | FileCheck %s --check-prefix=APART

// With fuse-shared, a value two ops read (%y, read by mul and by sin) is
// computed once in the body of the one generic that computes the output:
// the broadcast bias and the scalar are read as before. Without it, %y and
// %sq are generics of their own, which linalg-fuse-elementwise-ops cannot
// fuse into both readers.
// CHECK-LABEL: func.func @shared_seg0(
// CHECK-DAG:     %[[TX:.*]] = bufferization.to_tensor %arg0 restrict
// CHECK-DAG:     %[[TB:.*]] = bufferization.to_tensor %arg1 restrict
// CHECK:         %[[OUT:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[TX]], %[[TB]] : {{.*}})
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[Y:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK-NEXT:      %[[SQ:.*]] = arith.mulf %[[Y]], %[[Y]] : f32
// CHECK-NEXT:      %[[SIN:.*]] = func.call @sinf(%[[Y]]) : (f32) -> f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[SQ]], %[[SIN]] : f32
// CHECK-NEXT:      %[[SCALED:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK-NEXT:      linalg.yield %[[SCALED]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         bufferization.materialize_in_destination %[[OUT]]
// APART-LABEL: func.func @shared_seg0(
// APART-COUNT-5: linalg.generic
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
