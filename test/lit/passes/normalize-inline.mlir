// drc-lower-to-linalg: along a short axis (at most 8, Sinkhorn's 4 x 4),
// normalize and its adjoint are one elementwise kernel reading the axis's
// elements through constant-index maps, summed in the reduction's order;
// a long axis keeps the fill, the reduction and the quotient.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK: affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK: affine_map<(d0, d1, d2) -> (d0, 3, d2)>

// CHECK-LABEL: func.func @columns
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[X:[^,]+]], %[[X]], %[[X]], %[[X]], %[[X]] :
// CHECK-COUNT-4: arith.addf
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @columns(%x: tensor<16x4x4xf32>) -> tensor<16x4x4xf32> {
  %y = drc.normalize %x {axis = 1} : tensor<16x4x4xf32>
  return %y : tensor<16x4x4xf32>
}

// The adjoint reads x and dy along the axis: (dy - sum(dy x) / S) / S.
// CHECK-LABEL: func.func @columns_grad
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X:[^,]+]], %[[X]], %[[X]], %[[X]], %[[DY:[^,]+]], %[[DY]], %[[DY]], %[[DY]], %[[DY]] :
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @columns_grad(%x: tensor<16x4x4xf32>, %dy: tensor<16x4x4xf32>) -> tensor<16x4x4xf32> {
  %dx = drc.normalize_grad %x grad %dy {axis = 1 : i64, eps = 1.0e-06 : f64} : (tensor<16x4x4xf32>, tensor<16x4x4xf32>) -> tensor<16x4x4xf32>
  return %dx : tensor<16x4x4xf32>
}

// CHECK-LABEL: func.func @long_axis
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
func.func @long_axis(%x: tensor<16x32x4xf32>) -> tensor<16x32x4xf32> {
  %y = drc.normalize %x {axis = 1} : tensor<16x32x4xf32>
  return %y : tensor<16x32x4xf32>
}
