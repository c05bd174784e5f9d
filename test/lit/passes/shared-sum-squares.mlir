// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// The weight gradients of two normed linears of one state (HC's coefficient
// projections) share one row sum of squares of it: the state is read once
// for the norm statistics, not once per weight.

// CHECK-LABEL: func.func @two_weight_grads
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%arg0 : tensor<8x4x16xf32>)
// CHECK: arith.mulf
// CHECK-NOT: ins(%arg0 : tensor<8x4x16xf32>)
// CHECK: return
func.func @two_weight_grads(%h: tensor<8x4x16xf32>, %da: tensor<8x4x1xf32>,
                            %db: tensor<8x4x4xf32>)
    -> (tensor<1x16xf32>, tensor<4x16xf32>) {
  %a = drc.normed_linear_weight_grad %h grad %da
      : (tensor<8x4x16xf32>, tensor<8x4x1xf32>) -> tensor<1x16xf32>
  %b = drc.normed_linear_weight_grad %h grad %db
      : (tensor<8x4x16xf32>, tensor<8x4x4xf32>) -> tensor<4x16xf32>
  return %a, %b : tensor<1x16xf32>, tensor<4x16xf32>
}
