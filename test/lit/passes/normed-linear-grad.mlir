// drc-lower-to-linalg: the input adjoint of a normed linear (rms_norm_grad
// with `dot`, the rows' sums of dy . x-hat given by drc.row_dot over the
// projection's outputs) reduces only x's squares; the adjoint itself is
// one elementwise kernel over the row.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK-DAG: #[[$ALL:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[$ONE:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$ALL3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ONE3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// CHECK-LABEL: func.func @input_grad
// CHECK: %[[SS:.*]] = linalg.generic {indexing_maps = [#[[$ALL]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<64x256xf32>)
// CHECK-NOT: "reduction"
// CHECK: linalg.generic {indexing_maps = [#[[$ALL]], #[[$ALL]], #[[$ROW]], #[[$ONE]], #[[$ALL]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1, %[[SS]], %arg2 : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64x1xf32>)
// The correction x r (dot / 256), dot already in x-hat's units.
// CHECK: math.rsqrt
// CHECK-NOT: "reduction"
// CHECK: return
func.func @input_grad(%x: tensor<64x256xf32>, %g: tensor<64x256xf32>,
                      %d: tensor<64x1xf32>) -> tensor<64x256xf32> {
  %0 = drc.rms_norm_grad %x grad %g dot %d : (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x1xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @row_dot
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x4x1xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$ALL3]], #[[$ALL3]], #[[$ONE3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<64x4x5xf32>, tensor<64x4x5xf32>) outs(%[[Z]] : tensor<64x4x1xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @row_dot(%a: tensor<64x4x5xf32>, %b: tensor<64x4x5xf32>) -> tensor<64x4x1xf32> {
  %0 = drc.row_dot %a, %b : (tensor<64x4x5xf32>, tensor<64x4x5xf32>) -> tensor<64x4x1xf32>
  return %0 : tensor<64x4x1xf32>
}
