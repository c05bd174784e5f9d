// drc-lower-to-linalg: a fused region's result that adds to one of its
// inputs (a gradient carried from region to region: AttnRes's bank
// gradient, less the row its append takes) is written over that input. The
// loop's output is the input, each tile reads the input from there, and the
// result is the output's leading rows. An input read after the region too
// keeps its buffer; the result gets a fresh one.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @bank_gradient
// CHECK-SAME: (%{{.*}}: tensor<64x4x256xf32>, %[[GRAD:.*]]: tensor<64x4x256xf32>)
// CHECK: %[[LOOP:.*]]:2 = scf.forall (%{{.*}}) in (4) shared_outs(%[[OUT:.*]] = %[[GRAD]], %{{.*}} = %{{.*}})
// CHECK: tensor.extract_slice %[[OUT]][%{{.*}}, 0, 0] [16, 4, 256]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%{{.*}}, 0, 0] [16, 3, 256]
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[LOOP]]#0[0, 0, 0] [64, 3, 256]
// CHECK: return %[[FIRST]], %[[LOOP]]#1
func.func @bank_gradient(%bank: tensor<64x4x256xf32>, %grad: tensor<64x4x256xf32>)
    -> (tensor<64x3x256xf32>, tensor<64x1x256xf32>) {
  %r:2 = drc.fused(%bank, %grad) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x4x256xf32>, tensor<64x4x256xf32>) -> (tensor<64x3x256xf32>, tensor<64x1x256xf32>) {
  ^bb0(%b: tensor<16x4x256xf32>, %g: tensor<16x4x256xf32>):
    %s = drc.add %g, %b : tensor<16x4x256xf32>
    %first = drc.rows %s at 0 : (tensor<16x4x256xf32>) -> tensor<16x3x256xf32>
    %last = drc.rows %s at 3 : (tensor<16x4x256xf32>) -> tensor<16x1x256xf32>
    drc.yield %first, %last : tensor<16x3x256xf32>, tensor<16x1x256xf32>
  }
  return %r#0, %r#1 : tensor<64x3x256xf32>, tensor<64x1x256xf32>
}

// CHECK-LABEL: func.func @read_after
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<64x256xf32>
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %[[EMPTY]])
func.func @read_after(%x: tensor<64x256xf32>, %dy: tensor<64x256xf32>)
    -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %r = drc.fused(%dy, %x) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32> {
  ^bb0(%g: tensor<16x256xf32>, %t: tensor<16x256xf32>):
    %s = drc.add %g, %t : tensor<16x256xf32>
    drc.yield %s : tensor<16x256xf32>
  }
  %again = drc.add %dy, %x : tensor<64x256xf32>
  return %r, %again : tensor<64x256xf32>, tensor<64x256xf32>
}
