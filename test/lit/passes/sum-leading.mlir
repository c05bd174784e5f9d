// drc-lower-to-linalg: a step's sum of per-tile partials runs the summed
// loop outermost (each step adds a contiguous row onto the result); inside a
// fused region's tile the summed loop stays innermost, vectorised with the
// tile by drc-cpu-tile.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK-DAG: #[[$ALL:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$KEPT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$TOKENS:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[$ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @partials
// CHECK: linalg.generic {indexing_maps = [#[[$ALL]], #[[$KEPT]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%arg0 : tensor<128x4x256xf32>) outs(%{{.*}} : tensor<4x256xf32>)
func.func @partials(%p: tensor<128x4x256xf32>) -> tensor<4x256xf32> {
  %s = drc.sum_leading %p : (tensor<128x4x256xf32>) -> tensor<4x256xf32>
  return %s : tensor<4x256xf32>
}

// CHECK-LABEL: func.func @in_tile
// CHECK: scf.forall
// CHECK: linalg.generic {indexing_maps = [#[[$TOKENS]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<16x4xf32>) outs(%{{.*}} : tensor<4xf32>)
func.func @in_tile(%x: tensor<64x4xf32>) -> tensor<4x4xf32> {
  %r = drc.fused(%x) {partials = array<i64: 0>, tile = 16 : i64, tokens = 64 : i64} : (tensor<64x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%t: tensor<16x4xf32>):
    %s = drc.sum_leading %t : (tensor<16x4xf32>) -> tensor<4xf32>
    drc.yield %s : tensor<4xf32>
  }
  return %r : tensor<4x4xf32>
}
