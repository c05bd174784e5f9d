// drc-fuse-tile-elementwise: a fused region's tile of HC's width connection
// (streams + h ⊗ β) becomes one elementwise op; kernels outside a tile are
// simplified but not merged; a short matmul in a tile (an outer product) is
// computed inline by its readers; a tile result split between outputs is
// computed part by part; a tile's result that adds to the output it reads
// updates it in place.
// RUN: drc-opt %s --drc-fuse-tile-elementwise | FileCheck %s
// RUN: drc-opt %s --drc-fuse-tile-elementwise --eliminate-empty-tensors \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --cse --canonicalize | FileCheck %s --check-prefix=BUF

#h = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#beta = affine_map<(d0, d1, d2, d3) -> (d3, d1)>
#tile = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The mix by β [1, 4] sums over one element: no fill, no reduction, and the
// add of the streams is in the same loop nest.
// CHECK-LABEL: func.func @width_connection
// CHECK: scf.forall
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<16x4x256xf32>, tensor<16x1x256xf32>, tensor<1x4xf32>)
// CHECK: %[[M:.*]] = arith.mulf
// CHECK-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[M]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
func.func @width_connection(%streams: tensor<64x4x256xf32>, %h: tensor<64x256xf32>,
                            %beta: tensor<1x4xf32>) -> tensor<64x4x256xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x4x256xf32>
  %r = scf.forall (%t) in (4) shared_outs(%o = %init) -> tensor<64x4x256xf32> {
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %s = tensor.extract_slice %streams[%row, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %hs = tensor.extract_slice %h[%row, 0] [16, 256] [1, 1]
        : tensor<64x256xf32> to tensor<16x256xf32>
    %h3 = tensor.expand_shape %hs [[0], [1, 2]] output_shape [16, 1, 256]
        : tensor<16x256xf32> into tensor<16x1x256xf32>
    %e = tensor.empty() : tensor<16x4x256xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4x256xf32>) -> tensor<16x4x256xf32>
    %mix = linalg.generic {indexing_maps = [#h, #beta, #tile],
                           iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%h3, %beta : tensor<16x1x256xf32>, tensor<1x4xf32>) outs(%z : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %q = arith.addf %acc, %p : f32
      linalg.yield %q : f32
    } -> tensor<16x4x256xf32>
    %e2 = tensor.empty() : tensor<16x4x256xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%s, %mix : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%e2 : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %b: f32, %unused: f32):
      %q = arith.addf %a, %b : f32
      linalg.yield %q : f32
    } -> tensor<16x4x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sum into %o[%row, 0, 0] [16, 4, 256] [1, 1, 1]
          : tensor<16x4x256xf32> into tensor<64x4x256xf32>
    }
  }
  return %r : tensor<64x4x256xf32>
}

// Outside a tile the two kernels stay two (the unfused reference), though
// the mix no longer writes zeros first. A producer read twice is not merged.
// CHECK-LABEL: func.func @outside_a_tile
// CHECK-NOT: linalg.fill
// CHECK: %[[MIX:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[MIX]] :
// CHECK: return
func.func @outside_a_tile(%s: tensor<16x4x256xf32>, %h3: tensor<16x1x256xf32>,
                          %beta: tensor<1x4xf32>) -> tensor<16x4x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4x256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4x256xf32>) -> tensor<16x4x256xf32>
  %mix = linalg.generic {indexing_maps = [#h, #beta, #tile],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%h3, %beta : tensor<16x1x256xf32>, tensor<1x4xf32>) outs(%z : tensor<16x4x256xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<16x4x256xf32>
  %e2 = tensor.empty() : tensor<16x4x256xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %mix : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%e2 : tensor<16x4x256xf32>) {
  ^bb0(%a: f32, %b: f32, %unused: f32):
    %q = arith.addf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<16x4x256xf32>
  return %sum : tensor<16x4x256xf32>
}

// A real reduction (four streams summed) keeps its zero fill.
// CHECK-LABEL: func.func @stream_sum
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: "reduction"
#streams = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @stream_sum(%s: tensor<16x4x256xf32>) -> tensor<16x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %r = linalg.generic {indexing_maps = [#streams, #row],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<16x4x256xf32>) outs(%z : tensor<16x256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.addf %acc, %a : f32
    linalg.yield %q : f32
  } -> tensor<16x256xf32>
  return %r : tensor<16x256xf32>
}

// A tile that sums the same squares twice (a backward region's recomputed
// norm next to the norm's gradient) sums them once.
// CHECK-LABEL: func.func @repeated_reduction
// CHECK: scf.forall
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK-SAME: "reduction"
// CHECK-NOT: "reduction"
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<16x4xf32>)
// CHECK: arith.mulf %[[IN:.*]], %[[IN]]
func.func @repeated_reduction(%s: tensor<64x4x256xf32>) -> tensor<64x4xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x4xf32>
  %r = scf.forall (%t) in (4) shared_outs(%o = %init) -> tensor<64x4xf32> {
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %x = tensor.extract_slice %s[%row, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %e1 = tensor.empty() : tensor<16x4xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x4xf32>) -> tensor<16x4xf32>
    %a = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : tensor<16x4x256xf32>) outs(%z1 : tensor<16x4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %sq = arith.mulf %v, %v : f32
      %q = arith.addf %acc, %sq : f32
      linalg.yield %q : f32
    } -> tensor<16x4xf32>
    %e2 = tensor.empty() : tensor<16x4xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x4xf32>) -> tensor<16x4xf32>
    %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : tensor<16x4x256xf32>) outs(%z2 : tensor<16x4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %sq = arith.mulf %v, %v : f32
      %q = arith.addf %acc, %sq : f32
      linalg.yield %q : f32
    } -> tensor<16x4xf32>
    %e3 = tensor.empty() : tensor<16x4xf32>
    %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : tensor<16x4xf32>, tensor<16x4xf32>) outs(%e3 : tensor<16x4xf32>) {
    ^bb0(%p: f32, %q: f32, %unused: f32):
      %m = arith.mulf %p, %q : f32
      linalg.yield %m : f32
    } -> tensor<16x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %c into %o[%row, 0] [16, 4] [1, 1]
          : tensor<16x4xf32> into tensor<64x4xf32>
    }
  }
  return %r : tensor<64x4xf32>
}

// A mix of the 4 streams by a per-token 4 x 4 matrix (mHC's H^res, HC's
// A_r): the reduction over streams is unrolled in order, so the tile's
// result is written once, without a zero fill, reading each stream at a
// constant index.
// CHECK-LABEL: func.func @stream_mix
// CHECK: scf.forall
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[S:[^,]*]], %[[S]], %[[S]], %[[S]], %[[M:[^,]*]], %[[M]], %[[M]], %[[M]] :
// CHECK: ^bb0(%[[S0:.*]]: f32, %[[S1:.*]]: f32, %[[S2:.*]]: f32, %[[S3:.*]]: f32, %[[M0:.*]]: f32, %[[M1:.*]]: f32, %[[M2:.*]]: f32, %[[M3:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[P0:.*]] = arith.mulf %[[S0]], %[[M0]]
// CHECK-NEXT: %[[P1:.*]] = arith.mulf %[[S1]], %[[M1]]
// CHECK-NEXT: %[[A1:.*]] = arith.addf %[[P0]], %[[P1]]
// CHECK-NEXT: %[[P2:.*]] = arith.mulf %[[S2]], %[[M2]]
// CHECK-NEXT: %[[A2:.*]] = arith.addf %[[A1]], %[[P2]]
// CHECK-NEXT: %[[P3:.*]] = arith.mulf %[[S3]], %[[M3]]
// CHECK-NEXT: %[[A3:.*]] = arith.addf %[[A2]], %[[P3]]
// CHECK-NEXT: linalg.yield %[[A3]]
// CHECK: scf.forall.in_parallel
#mixed = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#matrix = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
func.func @stream_mix(%streams: tensor<64x4x256xf32>, %m: tensor<64x4x4xf32>) -> tensor<64x4x256xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x4x256xf32>
  %r = scf.forall (%t) in (4) shared_outs(%o = %init) -> tensor<64x4x256xf32> {
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %s = tensor.extract_slice %streams[%row, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %ms = tensor.extract_slice %m[%row, 0, 0] [16, 4, 4] [1, 1, 1]
        : tensor<64x4x4xf32> to tensor<16x4x4xf32>
    %e = tensor.empty() : tensor<16x4x256xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4x256xf32>) -> tensor<16x4x256xf32>
    %mix = linalg.generic {indexing_maps = [#mixed, #matrix, #tile],
                           iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%s, %ms : tensor<16x4x256xf32>, tensor<16x4x4xf32>) outs(%z : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %q = arith.addf %acc, %p : f32
      linalg.yield %q : f32
    } -> tensor<16x4x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %mix into %o[%row, 0, 0] [16, 4, 256] [1, 1, 1]
          : tensor<16x4x256xf32> into tensor<64x4x256xf32>
    }
  }
  return %r : tensor<64x4x256xf32>
}

// mHC's state tile [16, 4, 256], saved as the [16, 1024] rows its backward
// reads: the loop's output is reshaped outside the loop instead, so the tile
// inserts the value as computed (bufferization then writes it in place, not
// into a temporary copied out through the reshape).
// CHECK-LABEL: func.func @flat_output
// CHECK: %[[INIT:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [64, 4, 256] : tensor<64x1024xf32> into tensor<64x4x256xf32>
// CHECK: %[[LOOP:.*]] = scf.forall (%{{.*}}) in (4) shared_outs(%[[OUT:.*]] = %[[INIT]]) -> (tensor<64x4x256xf32>)
// CHECK: %[[X:.*]] = linalg.generic
// CHECK-NOT: tensor.collapse_shape
// CHECK: tensor.parallel_insert_slice %[[X]] into %[[OUT]][%{{.*}}, 0, 0] [16, 4, 256] [1, 1, 1] : tensor<16x4x256xf32> into tensor<64x4x256xf32>
// CHECK: tensor.collapse_shape %[[LOOP]] {{\[\[}}0], [1, 2]] : tensor<64x4x256xf32> into tensor<64x1024xf32>
func.func @flat_output(%streams: tensor<64x4x256xf32>) -> tensor<64x1024xf32> {
  %init = tensor.empty() : tensor<64x1024xf32>
  %r = scf.forall (%t) in (4) shared_outs(%o = %init) -> tensor<64x1024xf32> {
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %s = tensor.extract_slice %streams[%row, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %e = tensor.empty() : tensor<16x4x256xf32>
    %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%s : tensor<16x4x256xf32>) outs(%e : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %unused: f32):
      %q = arith.mulf %a, %a : f32
      linalg.yield %q : f32
    } -> tensor<16x4x256xf32>
    %flat = tensor.collapse_shape %x [[0], [1, 2]] : tensor<16x4x256xf32> into tensor<16x1024xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %flat into %o[%row, 0] [16, 1024] [1, 1]
          : tensor<16x1024xf32> into tensor<64x1024xf32>
    }
  }
  return %r : tensor<64x1024xf32>
}

// HC's backward spreads a coefficient gradient over the channels through its
// weight: a matmul [64, 1] x [1, 256] in the tile, read by a reduction and by
// an elementwise kernel. The outer product becomes elementwise in the tile's
// [16, 4, 256] shape and each reader computes it inline: no matmul, no
// [16, 4, 256] temporary.
// CHECK-LABEL: func.func @outer_product
// CHECK: scf.forall
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X:[^,]*]], %[[D:[^,]*]], %[[W:[^ ]*]] : tensor<16x4x256xf32>, tensor<16x4x1xf32>, tensor<1x256xf32>)
// CHECK: arith.mulf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[D]], %[[W]] : tensor<16x4x256xf32>, tensor<16x4x1xf32>, tensor<1x256xf32>)
// CHECK: %[[P:.*]] = arith.mulf
// CHECK-NEXT: arith.addf %{{.*}}, %[[P]]
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
#channels = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @outer_product(%x: tensor<64x4x256xf32>, %d: tensor<64x4x1xf32>,
                         %w: tensor<1x256xf32>) -> (tensor<64x4xf32>, tensor<64x4x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<64x4xf32>
  %init2 = tensor.empty() : tensor<64x4x256xf32>
  %r:2 = scf.forall (%t) in (4) shared_outs(%o = %init, %o2 = %init2) -> (tensor<64x4xf32>, tensor<64x4x256xf32>) {
    %at = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %xs = tensor.extract_slice %x[%at, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %ds = tensor.extract_slice %d[%at, 0, 0] [16, 4, 1] [1, 1, 1]
        : tensor<64x4x1xf32> to tensor<16x4x1xf32>
    %dm = tensor.collapse_shape %ds [[0, 1], [2]] : tensor<16x4x1xf32> into tensor<64x1xf32>
    %e = tensor.empty() : tensor<64x256xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
    %pm = linalg.matmul ins(%dm, %w : tensor<64x1xf32>, tensor<1x256xf32>)
        outs(%z : tensor<64x256xf32>) -> tensor<64x256xf32>
    %p = tensor.expand_shape %pm [[0, 1], [2]] output_shape [16, 4, 256]
        : tensor<64x256xf32> into tensor<16x4x256xf32>
    %re = tensor.empty() : tensor<16x4xf32>
    %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<16x4xf32>) -> tensor<16x4xf32>
    %dot = linalg.generic {indexing_maps = [#id, #id, #channels],
                           iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%xs, %p : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%rz : tensor<16x4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<16x4xf32>
    %se = tensor.empty() : tensor<16x4x256xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%xs, %p : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%se : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %b: f32, %unused: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<16x4x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %dot into %o[%at, 0] [16, 4] [1, 1]
          : tensor<16x4xf32> into tensor<64x4xf32>
      tensor.parallel_insert_slice %sum into %o2[%at, 0, 0] [16, 4, 256] [1, 1, 1]
          : tensor<16x4x256xf32> into tensor<64x4x256xf32>
    }
  }
  return %r#0, %r#1 : tensor<64x4xf32>, tensor<64x4x256xf32>
}

// AttnRes's backward: the bank gradient's tile [16, 4, 256] leaves as its
// first three rows (the next region's bank gradient) and its last row (the
// sublayer's output gradient). Each part is computed by its own kernel
// from an empty tensor of its shape, so bufferization writes it into its
// output instead of computing the whole tile into a temporary and copying
// both parts out.
// CHECK-LABEL: func.func @split_output
// CHECK: scf.forall
// CHECK-NOT: tensor.empty() : tensor<16x4x256xf32>
// CHECK: %[[FIRST:.*]] = tensor.empty() : tensor<16x3x256xf32>
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x3x256xf32>, tensor<16x3x256xf32>) outs(%[[FIRST]] : tensor<16x3x256xf32>)
// CHECK: %[[LAST:.*]] = tensor.empty() : tensor<16x1x256xf32>
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x1x256xf32>, tensor<16x1x256xf32>) outs(%[[LAST]] : tensor<16x1x256xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[ROWS]] into %{{.*}}[%{{.*}}, 0, 0] [16, 3, 256]
// CHECK-NEXT: tensor.parallel_insert_slice %[[ROW]] into %{{.*}}[%{{.*}}, 0, 0] [16, 1, 256]
func.func @split_output(%bank: tensor<64x4x256xf32>, %grad: tensor<64x4x256xf32>)
    -> (tensor<64x3x256xf32>, tensor<64x1x256xf32>) {
  %i1 = tensor.empty() : tensor<64x3x256xf32>
  %i2 = tensor.empty() : tensor<64x1x256xf32>
  %r:2 = scf.forall (%t) in (4) shared_outs(%o = %i1, %o2 = %i2)
      -> (tensor<64x3x256xf32>, tensor<64x1x256xf32>) {
    %at = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %b = tensor.extract_slice %bank[%at, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %g = tensor.extract_slice %grad[%at, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %e = tensor.empty() : tensor<16x4x256xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%b, %g : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%e : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %c: f32, %unused: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<16x4x256xf32>
    %rows = tensor.extract_slice %sum[0, 0, 0] [16, 3, 256] [1, 1, 1]
        : tensor<16x4x256xf32> to tensor<16x3x256xf32>
    %row = tensor.extract_slice %sum[0, 3, 0] [16, 1, 256] [1, 1, 1]
        : tensor<16x4x256xf32> to tensor<16x1x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rows into %o[%at, 0, 0] [16, 3, 256] [1, 1, 1]
          : tensor<16x3x256xf32> into tensor<64x3x256xf32>
      tensor.parallel_insert_slice %row into %o2[%at, 0, 0] [16, 1, 256] [1, 1, 1]
          : tensor<16x1x256xf32> into tensor<64x1x256xf32>
    }
  }
  return %r#0, %r#1 : tensor<64x3x256xf32>, tensor<64x1x256xf32>
}

// The same split when the region's first rows accumulate onto the bank
// gradient it reads (drc-lower-to-linalg made that input the loop's output):
// the kernel of the first rows reads and writes the insert's own slice of
// the output (one value, an elementwise update bufferization does in place)
// and runs last, after the last row's kernel has read the output's tile.
// CHECK-LABEL: func.func @accumulate_in_place
// CHECK: scf.forall {{.*}} shared_outs(%[[OUT:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16x1x256xf32>)
// CHECK: %[[OWN:.*]] = tensor.extract_slice %[[OUT]][%{{.*}}, 0, 0] [16, 3, 256] [1, 1, 1]
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[OWN]] : tensor<16x3x256xf32>, tensor<16x3x256xf32>) outs(%[[OWN]] : tensor<16x3x256xf32>)
// CHECK-NEXT: ^bb0
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[ROWS]] into %[[OUT]][%{{.*}}, 0, 0] [16, 3, 256]
// CHECK-NEXT: tensor.parallel_insert_slice %[[ROW]] into %{{.*}}[%{{.*}}, 0, 0] [16, 1, 256]
// Bufferized, the tile allocates and copies nothing: the first rows are
// added to the bank gradient where it lies.
// BUF-LABEL: func.func @accumulate_in_place
// BUF-SAME: (%{{.*}}: memref<64x4x256xf32>, %[[GRAD:.*]]: memref<64x4x256xf32>)
// BUF: scf.forall
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: %[[OWN:.*]] = memref.subview %[[GRAD]][%{{.*}}, 0, 0] [16, 3, 256]
// BUF-NEXT: linalg.generic {{.*}} ins(%{{.*}}, %[[OWN]] : {{.*}}) outs(%[[OWN]] : {{.*}})
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: }
// BUF-NEXT: }
// BUF-NEXT: memref.subview %[[GRAD]][0, 0, 0] [64, 3, 256]
func.func @accumulate_in_place(%bank: tensor<64x4x256xf32>, %grad: tensor<64x4x256xf32>)
    -> (tensor<64x3x256xf32>, tensor<64x1x256xf32>) {
  %i2 = tensor.empty() : tensor<64x1x256xf32>
  %r:2 = scf.forall (%t) in (4) shared_outs(%o = %grad, %o2 = %i2)
      -> (tensor<64x4x256xf32>, tensor<64x1x256xf32>) {
    %at = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %b = tensor.extract_slice %bank[%at, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %g = tensor.extract_slice %o[%at, 0, 0] [16, 4, 256] [1, 1, 1]
        : tensor<64x4x256xf32> to tensor<16x4x256xf32>
    %e = tensor.empty() : tensor<16x4x256xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%b, %g : tensor<16x4x256xf32>, tensor<16x4x256xf32>) outs(%e : tensor<16x4x256xf32>) {
    ^bb0(%a: f32, %c: f32, %unused: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<16x4x256xf32>
    %rows = tensor.extract_slice %sum[0, 0, 0] [16, 3, 256] [1, 1, 1]
        : tensor<16x4x256xf32> to tensor<16x3x256xf32>
    %row = tensor.extract_slice %sum[0, 3, 0] [16, 1, 256] [1, 1, 1]
        : tensor<16x4x256xf32> to tensor<16x1x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rows into %o[%at, 0, 0] [16, 3, 256] [1, 1, 1]
          : tensor<16x3x256xf32> into tensor<64x4x256xf32>
      tensor.parallel_insert_slice %row into %o2[%at, 0, 0] [16, 1, 256] [1, 1, 1]
          : tensor<16x1x256xf32> into tensor<64x1x256xf32>
    }
  }
  %first = tensor.extract_slice %r#0[0, 0, 0] [64, 3, 256] [1, 1, 1]
      : tensor<64x4x256xf32> to tensor<64x3x256xf32>
  return %first, %r#1 : tensor<64x3x256xf32>, tensor<64x1x256xf32>
}
