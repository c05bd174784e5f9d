// drc-lower-to-linalg: the weight gradients of the normed linears of one
// input (HC's coefficient projections of a state) are one product: their
// result gradients stacked, scaled by 1/rms(x) once, and one matmul that
// reads x once. A gradient with another eps keeps its own product.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @weight_grads
// CHECK: %[[S0:.*]] = tensor.insert_slice %arg1 into %{{.*}}[0, 0, 0] [64, 4, 1] [1, 1, 1] : tensor<64x4x1xf32> into tensor<64x4x5xf32>
// CHECK: %[[S1:.*]] = tensor.insert_slice %arg2 into %[[S0]][0, 0, 1] [64, 4, 4] [1, 1, 1] : tensor<64x4x4xf32> into tensor<64x4x5xf32>
// CHECK: %[[SCALED:.*]] = linalg.generic {{.*}} ins(%[[S1]], %{{.*}} : tensor<64x4x5xf32>, tensor<64x4xf32>)
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[SCALED]]
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0
// CHECK: %[[ALL:.*]] = linalg.matmul {{.*}} ins(%[[A]], %[[X]] : tensor<256x5xf32>, tensor<256x256xf32>) outs(%{{.*}} : tensor<5x256xf32>)
// CHECK: %[[GA:.*]] = tensor.extract_slice %[[ALL]][0, 0] [1, 256] [1, 1]
// CHECK: %[[GB:.*]] = tensor.extract_slice %[[ALL]][1, 0] [4, 256] [1, 1]
// CHECK: %[[GC:.*]] = linalg.matmul {{.*}} outs(%{{.*}} : tensor<1x256xf32>)
// CHECK: return %[[GA]], %[[GB]], %[[GC]]
func.func @weight_grads(%x: tensor<64x4x256xf32>, %a: tensor<64x4x1xf32>,
                        %b: tensor<64x4x4xf32>)
    -> (tensor<1x256xf32>, tensor<4x256xf32>, tensor<1x256xf32>) {
  %ga = drc.normed_linear_weight_grad %x grad %a : (tensor<64x4x256xf32>, tensor<64x4x1xf32>) -> tensor<1x256xf32>
  %gb = drc.normed_linear_weight_grad %x grad %b : (tensor<64x4x256xf32>, tensor<64x4x4xf32>) -> tensor<4x256xf32>
  %gc = drc.normed_linear_weight_grad %x grad %a {eps = 1.0e-5 : f64} : (tensor<64x4x256xf32>, tensor<64x4x1xf32>) -> tensor<1x256xf32>
  return %ga, %gb, %gc : tensor<1x256xf32>, tensor<4x256xf32>, tensor<1x256xf32>
}

// A gradient read before the last of its group is computed where it was.
// CHECK-LABEL: func.func @read_early
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : tensor<1x256xf32>)
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : tensor<4x256xf32>)
func.func @read_early(%x: tensor<64x4x256xf32>, %a: tensor<64x4x1xf32>,
                      %b: tensor<64x4x4xf32>) -> (tensor<1x256xf32>, tensor<4x256xf32>) {
  %ga = drc.normed_linear_weight_grad %x grad %a : (tensor<64x4x256xf32>, tensor<64x4x1xf32>) -> tensor<1x256xf32>
  %twice = drc.add %ga, %ga : tensor<1x256xf32>
  %gb = drc.normed_linear_weight_grad %x grad %b : (tensor<64x4x256xf32>, tensor<64x4x4xf32>) -> tensor<4x256xf32>
  return %twice, %gb : tensor<1x256xf32>, tensor<4x256xf32>
}

// Prescaled gradients (dy / rms(x) already, drc.scale_by_inv_rms in the
// region that made them) are stacked into one matmul too, without x's row
// norms; drc.scale_by_inv_rms divides each row by rms of x's row.
// CHECK-LABEL: func.func @prescaled
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg2 : tensor<64x1024xf32>)
// CHECK: %[[DY:.*]] = linalg.generic {{.*}} ins(%arg3, %[[S]] : tensor<64x4xf32>, tensor<64xf32>)
// CHECK: math.rsqrt
// CHECK-NOT: ins(%arg0 : tensor<64x1024xf32>)
// CHECK: tensor.insert_slice %arg1 into %{{.*}}[0, 0] [64, 16] [1, 1] : tensor<64x16xf32> into tensor<64x20xf32>
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %arg0 : tensor<64x20xf32>, tensor<64x1024xf32>) outs(%{{.*}} : tensor<20x1024xf32>)
func.func @prescaled(%x: tensor<64x1024xf32>, %a: tensor<64x16xf32>,
                     %x2: tensor<64x1024xf32>, %dy: tensor<64x4xf32>)
    -> (tensor<16x1024xf32>, tensor<4x1024xf32>) {
  %b = drc.scale_by_inv_rms %dy by %x2 : (tensor<64x4xf32>, tensor<64x1024xf32>) -> tensor<64x4xf32>
  %ga = drc.normed_linear_weight_grad %x grad %a {prescaled} : (tensor<64x1024xf32>, tensor<64x16xf32>) -> tensor<16x1024xf32>
  %gb = drc.normed_linear_weight_grad %x grad %b {prescaled} : (tensor<64x1024xf32>, tensor<64x4xf32>) -> tensor<4x1024xf32>
  return %ga, %gb : tensor<16x1024xf32>, tensor<4x1024xf32>
}
