// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// RoPE on [N, D] = [6, 16] (2 heads of 8, pairs (i, i + 4)) works on the
// view [N, H, 2, half] = [6, 2, 2, 4]: the innermost loop walks one half
// of a head, and the partner element is the other half's, at (n, h, 1 - j,
// i), so every load of the loop is contiguous (by column, the partner's
// index col ± half made each a gather). The angle tables are [seq_len,
// half], read at (n mod seq_len, i).
// CHECK-LABEL: func.func @rope
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2, 3]] output_shape [6, 2, 2, 4] : tensor<6x16xf32> into tensor<6x2x2x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]{{.*}} ins(%[[X]] : tensor<6x2x2x4xf32>)
// CHECK: %[[J:.*]] = linalg.index 2 : index
// CHECK: %[[I:.*]] = linalg.index 3 : index
// CHECK: %[[T:.*]] = arith.remui %{{.*}}, %c3 : index
// CHECK: %[[OTHER:.*]] = arith.subi %c1, %[[J]] : index
// CHECK: tensor.extract %[[X]][%{{.*}}, %{{.*}}, %[[OTHER]], %[[I]]] : tensor<6x2x2x4xf32>
// CHECK: tensor.extract %{{.*}}[%[[T]], %[[I]]] : tensor<3x4xf32>
// CHECK: tensor.collapse_shape %[[R]] {{\[}}[0], [1, 2, 3]] : tensor<6x2x2x4xf32> into tensor<6x16xf32>
func.func @rope(%x: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %r = drc.rope %x {n_head = 2 : i64, seq_len = 3 : i64, theta = 500.0 : f64} : (tensor<6x16xf32>) -> tensor<6x16xf32>
  return %r : tensor<6x16xf32>
}
