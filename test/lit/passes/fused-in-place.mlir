// drc-lower-to-linalg: a fused region's result that adds to one of its
// inputs (a gradient carried from region to region: AttnRes's bank
// gradient, less the row its append takes), or that replaces another
// region's result it read (below), is written over that input. The
// loop's output is the input, each tile reads the input from there, and the
// result is the output's leading rows. An input read after the region too
// keeps its buffer; the result gets a fresh one.
// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @bank_gradient
// CHECK-SAME: (%{{.*}}: tensor<64x4x256xf32>, %[[GRAD:.*]]: tensor<64x4x256xf32>)
// CHECK: %[[LOOP:.*]]:2 = scf.forall (%{{.*}}) in (4) shared_outs(%[[OUT:.*]] = %[[GRAD]], %{{.*}} = %{{.*}})
// CHECK: tensor.extract_slice %[[OUT]][%{{.*}}, 0, 0] [16, 4, 256]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%{{.*}}, 0, 0] [16, 3, 256]
// CHECK: } {drc.kernel_role = "fused"}
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

// A gradient passed from one region to the next (HC's state gradient, from
// one layer's backward region to the one before): the second region reads
// it, then yields a result of its type from an op that no longer reads it
// (not a sum with it as a term), so the result is written over it. A
// result whose last op reads the input, or an input that is no region's
// result (an argument), gets a fresh buffer.
// CHECK-LABEL: func.func @state_gradient(
// CHECK: %[[G:.*]] = scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %{{.*}})
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %[[G]])
// CHECK: %[[MIXED:.*]] = tensor.empty() : tensor<64x4x16xf32>
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %[[MIXED]])
// CHECK: %[[FRESH:.*]] = tensor.empty() : tensor<64x4x16xf32>
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}} = %[[FRESH]])
func.func @state_gradient(%dy: tensor<64x4x16xf32>, %x: tensor<64x4x16xf32>,
                          %c: tensor<4x4xf32>, %dz: tensor<64x4x16xf32>)
    -> (tensor<64x4x16xf32>, tensor<64x4x16xf32>, tensor<64x4x16xf32>) {
  %g = drc.fused(%dy, %x) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x4x16xf32>, tensor<64x4x16xf32>) -> tensor<64x4x16xf32> {
  ^bb0(%a: tensor<16x4x16xf32>, %b: tensor<16x4x16xf32>):
    %s = drc.add %a, %b : tensor<16x4x16xf32>
    drc.yield %s : tensor<16x4x16xf32>
  }
  %h = drc.fused(%g, %c) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x4x16xf32>, tensor<4x4xf32>) -> tensor<64x4x16xf32> {
  ^bb0(%a: tensor<16x4x16xf32>, %cc: tensor<4x4xf32>):
    %twice = drc.add %a, %a : tensor<16x4x16xf32>
    %r = drc.mix %twice by %cc : (tensor<16x4x16xf32>, tensor<4x4xf32>) -> tensor<16x4x16xf32>
    drc.yield %r : tensor<16x4x16xf32>
  }
  %m = drc.fused(%h, %c) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x4x16xf32>, tensor<4x4xf32>) -> tensor<64x4x16xf32> {
  ^bb0(%a: tensor<16x4x16xf32>, %cc: tensor<4x4xf32>):
    %mixed = drc.mix %a by %cc : (tensor<16x4x16xf32>, tensor<4x4xf32>) -> tensor<16x4x16xf32>
    drc.yield %mixed : tensor<16x4x16xf32>
  }
  %f = drc.fused(%dz, %c) {tile = 16 : i64, tokens = 64 : i64}
      : (tensor<64x4x16xf32>, tensor<4x4xf32>) -> tensor<64x4x16xf32> {
  ^bb0(%a: tensor<16x4x16xf32>, %cc: tensor<4x4xf32>):
    %twice = drc.add %a, %a : tensor<16x4x16xf32>
    %r = drc.mix %twice by %cc : (tensor<16x4x16xf32>, tensor<4x4xf32>) -> tensor<16x4x16xf32>
    drc.yield %r : tensor<16x4x16xf32>
  }
  return %m, %f, %x : tensor<64x4x16xf32>, tensor<64x4x16xf32>, tensor<64x4x16xf32>
}
