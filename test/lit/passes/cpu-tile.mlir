// RUN: drc-opt %s --drc-cpu-tile="register-rows=8 register-columns=32" | FileCheck %s

// A norm gain's gradient: a sum over 2048 tokens into 256 values. It
// becomes 16 partial sums over contiguous 128-token slices, with the token
// axis outside the result's (contiguous inner loop), threaded 2 per
// iteration, then added to the initial value in order.
// CHECK-LABEL: func.func @gain_gradient
// CHECK-SAME: (%[[G:.*]]: tensor<2048x256xf32>, %[[INIT:.*]]: tensor<256xf32>)
// CHECK: %[[PARTS:.*]] = scf.forall (%{{.*}}) = (0) to (16) step (2) shared_outs(%{{.*}}) -> (tensor<16x256xf32>)
// CHECK: tensor.extract_slice %[[G]][%{{.*}}, 0] [256, 256] [1, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[PARTS]] : tensor<16x256xf32>) outs(%[[INIT]] : tensor<256xf32>)
#token_major = affine_map<(d0, d1) -> (d1, d0)>
#result = affine_map<(d0, d1) -> (d0)>
func.func @gain_gradient(%g: tensor<2048x256xf32>, %init: tensor<256xf32>) -> tensor<256xf32> {
  %r = linalg.generic {indexing_maps = [#token_major, #result], iterator_types = ["parallel", "reduction"]}
      ins(%g : tensor<2048x256xf32>) outs(%init : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}

// AttnRes's query gradient sums over tokens and the bank's rows: the token
// axis (the longest) is split into 16 parts as above, the rows stay summed
// within each part.
// CHECK-LABEL: func.func @query_gradient
// CHECK: %[[PARTS:.*]] = scf.forall (%{{.*}}) = (0) to (16) step (2) shared_outs(%{{.*}}) -> (tensor<16x1x256xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel"]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[PARTS]] : tensor<16x1x256xf32>)
#logit = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#query = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
func.func @query_gradient(%g: tensor<2048x15x1xf32>, %bank: tensor<2048x15x256xf32>,
                          %init: tensor<1x256xf32>) -> tensor<1x256xf32> {
  %r = linalg.generic {indexing_maps = [#logit, #row, #query],
                       iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%g, %bank : tensor<2048x15x1xf32>, tensor<2048x15x256xf32>) outs(%init : tensor<1x256xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x256xf32>
  return %r : tensor<1x256xf32>
}

// AdamW updates the flat parameter buffers in place (a kernel on memrefs):
// threaded in chunks like a kernel on tensors.
// CHECK-LABEL: func.func @in_place_update
// CHECK: scf.forall (%{{.*}}) = (0) to (65536) step (8192) {
// CHECK: memref.subview %{{.*}} [8192] [1]
// CHECK: linalg.generic
#flat = affine_map<(d0) -> (d0)>
func.func @in_place_update(%g: memref<65536xf32>, %p: memref<65536xf32>) {
  linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%g : memref<65536xf32>) outs(%p : memref<65536xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.subf %b, %a : f32
    linalg.yield %s : f32
  }
  return
}

// A sum over a short axis stays one kernel, threaded over its rows.
// CHECK-LABEL: func.func @row_sums
// CHECK-NOT: tensor<16x
// CHECK: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @row_sums(%x: tensor<2048x256xf32>, %init: tensor<2048xf32>) -> tensor<2048xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2048x256xf32>) outs(%init : tensor<2048xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<2048xf32>
  return %r : tensor<2048xf32>
}

// mHC's phi gradient: 24 rows, so B is read in place (no [n/32, k, 32]
// panels) and threads split the 1024 columns.
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT: tensor<32x2048x32xf32>
// CHECK: scf.forall (%{{.*}}) = (0) to (1024) step (128)
// CHECK: vector.contract
func.func @few_rows(%a: tensor<24x2048xf32>, %b: tensor<2048x1024xf32>, %c: tensor<24x1024xf32>) -> tensor<24x1024xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<24x2048xf32>, tensor<2048x1024xf32>) outs(%c : tensor<24x1024xf32>) -> tensor<24x1024xf32>
  return %r : tensor<24x1024xf32>
}

// HC's width-coefficient gradient over a 64-token tile: 5 rows, so the
// register tile is 5x32 (ten accumulators), not 1x32 (two, whose FMA chains
// wait on each other's latency).
// CHECK-LABEL: func.func @five_rows
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<5x32xf32>)
// CHECK: vector.contract {{.*}} : vector<5x1xf32>, vector<1x32xf32> into vector<5x32xf32>
func.func @five_rows(%a: tensor<5x64xf32>, %b: tensor<64x256xf32>, %c: tensor<5x256xf32>) -> tensor<5x256xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<5x64xf32>, tensor<64x256xf32>) outs(%c : tensor<5x256xf32>) -> tensor<5x256xf32>
  return %r : tensor<5x256xf32>
}

// A projection over 2048 tokens packs B into 32-column panels and threads
// over row blocks, a loop named a matrix product's (drc-outline-kernels).
// The pack copies B row by row, threads splitting its rows: each thread
// reads its rows of B front to back, all 8 panels' parts of them.
// CHECK-LABEL: func.func @many_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (256) step (32) shared_outs(%{{.*}}) -> (tensor<8x256x32xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x256xf32>) outs(%{{.*}} : tensor<8x32x32xf32>)
// CHECK: scf.forall (%{{.*}}) = (0) to (2048) step (64)
// CHECK: vector.contract
// CHECK: } {drc.kernel_role = "matmul"}
func.func @many_rows(%a: tensor<2048x256xf32>, %b: tensor<256x256xf32>, %c: tensor<2048x256xf32>) -> tensor<2048x256xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<2048x256xf32>, tensor<256x256xf32>) outs(%c : tensor<2048x256xf32>) -> tensor<2048x256xf32>
  return %r : tensor<2048x256xf32>
}

// A SwiGLU up projection, 688 = 21 x 32 + 16 columns: the first 672 run in
// 8 x 32 register tiles from 32-column panels, the last 16 in 8 x 16 ones,
// each part starting its tiles from zeros and writing its columns of one
// result.
// CHECK-LABEL: func.func @remainder_columns
// CHECK: %[[WHOLE:.*]] = tensor.empty() : tensor<2048x688xf32>
// CHECK: tensor<21x256x32xf32>
// CHECK: scf.forall (%{{.*}}) = (0) to (2048) step (64)
// CHECK: vector.contract {{.*}} vector<8x32xf32>
// CHECK: } {drc.kernel_role = "matmul"}
// CHECK: %[[LEFT:.*]] = tensor.insert_slice %{{.*}} into %[[WHOLE]][0, 0] [2048, 672] [1, 1]
// CHECK: tensor<1x256x16xf32>
// CHECK: scf.forall (%{{.*}}) = (0) to (2048) step (64)
// CHECK: vector.contract {{.*}} vector<8x16xf32>
// CHECK: } {drc.kernel_role = "matmul"}
// CHECK: tensor.insert_slice %{{.*}} into %[[LEFT]][0, 672] [2048, 16] [1, 1]
func.func @remainder_columns(%x: tensor<2048x256xf32>, %w: tensor<256x688xf32>) -> tensor<2048x688xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x688xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x688xf32>) -> tensor<2048x688xf32>
  %r = linalg.matmul ins(%x, %w : tensor<2048x256xf32>, tensor<256x688xf32>)
      outs(%c : tensor<2048x688xf32>) -> tensor<2048x688xf32>
  return %r : tensor<2048x688xf32>
}

// B read [n, k] (a transposed weight) is split by its rows; a result that
// adds to an initial value adds to each part's columns of it. Each panel of
// B read [n, k] is its [32, k] slab transposed, in 16 x 16 squares
// (shuffles in registers), a thread's loop over the panels.
// CHECK-LABEL: func.func @remainder_rows_of_transposed_b
// CHECK-SAME: (%[[X:.*]]: tensor<2048x256xf32>, %[[W:.*]]: tensor<688x256xf32>, %[[C:.*]]: tensor<2048x688xf32>)
// CHECK: %[[LEFTW:.*]] = tensor.extract_slice %[[W]][0, 0] [672, 256] [1, 1]
// CHECK: tensor.extract_slice %[[C]][0, 0] [2048, 672] [1, 1]
// CHECK: tensor.expand_shape %[[LEFTW]] {{\[\[}}0, 1], [2]] output_shape [21, 32, 256]
// CHECK: scf.forall (%{{.*}}) in (21) shared_outs(%{{.*}}) -> (tensor<21x256x32xf32>)
// CHECK: vector.shuffle
// CHECK: %[[LEFT:.*]] = tensor.insert_slice %{{.*}} into %[[C]][0, 0] [2048, 672] [1, 1]
// CHECK: tensor.extract_slice %[[W]][672, 0] [16, 256] [1, 1]
// CHECK: tensor.extract_slice %[[C]][0, 672] [2048, 16] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[LEFT]][0, 672] [2048, 16] [1, 1]
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
func.func @remainder_rows_of_transposed_b(%x: tensor<2048x256xf32>, %w: tensor<688x256xf32>, %c: tensor<2048x688xf32>) -> tensor<2048x688xf32> {
  %r = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<2048x256xf32>, tensor<688x256xf32>)
      outs(%c : tensor<2048x688xf32>) -> tensor<2048x688xf32>
  return %r : tensor<2048x688xf32>
}

// A 56 x 56 weight's gradient over 2048 tokens (the mini sweep's d_model
// 56): 56 = 32 + 16 + 8 columns, each part in register tiles as wide as
// itself (not all 56 in 8 x 8 tiles); with 56 rows B is read in place, and
// as each part is one tile wide, threads split its rows.
// CHECK-LABEL: func.func @weight_gradient_56
// CHECK-SAME: (%[[X:.*]]: tensor<2048x56xf32>, %[[DY:.*]]: tensor<2048x56xf32>)
// CHECK: %[[WHOLE:.*]] = tensor.empty() : tensor<56x56xf32>
// CHECK: tensor.extract_slice %[[DY]][0, 0] [2048, 32] [1, 1]
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (8)
// CHECK: vector.contract {{.*}} into vector<8x32xf32>
// CHECK: %[[LEFT:.*]] = tensor.insert_slice %{{.*}} into %[[WHOLE]][0, 0] [56, 32] [1, 1]
// CHECK: tensor.extract_slice %[[DY]][0, 32] [2048, 16] [1, 1]
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (8)
// CHECK: vector.contract {{.*}} into vector<8x16xf32>
// CHECK: %[[MIDDLE:.*]] = tensor.insert_slice %{{.*}} into %[[LEFT]][0, 32] [56, 16] [1, 1]
// CHECK: tensor.extract_slice %[[DY]][0, 48] [2048, 8] [1, 1]
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (8)
// CHECK: vector.contract {{.*}} into vector<8x8xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[MIDDLE]][0, 48] [56, 8] [1, 1]
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
func.func @weight_gradient_56(%x: tensor<2048x56xf32>, %dy: tensor<2048x56xf32>) -> tensor<56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<56x56xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<56x56xf32>) -> tensor<56x56xf32>
  %r = linalg.matmul indexing_maps = [#km, #kn, #mn] ins(%x, %dy : tensor<2048x56xf32>, tensor<2048x56xf32>)
      outs(%c : tensor<56x56xf32>) -> tensor<56x56xf32>
  return %r : tensor<56x56xf32>
}

// Zeroing attention scores (2M elements) is threaded; a small fill is not.
// CHECK-LABEL: func.func @fills
// CHECK: scf.forall (%{{.*}}) = (0) to (32) step (4) shared_outs(%{{.*}}) -> (tensor<32x256x256xf32>)
// CHECK: linalg.fill {{.*}} -> tensor<256xf32>
func.func @fills() -> (tensor<32x256x256xf32>, tensor<256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x256x256xf32>
  %big = linalg.fill ins(%zero : f32) outs(%e : tensor<32x256x256xf32>) -> tensor<32x256x256xf32>
  %s = tensor.empty() : tensor<256xf32>
  %small = linalg.fill ins(%zero : f32) outs(%s : tensor<256xf32>) -> tensor<256xf32>
  return %big, %small : tensor<32x256x256xf32>, tensor<256xf32>
}

// A Sinkhorn row step of a fused region's 16-token tile (mHC, n = 4): each
// element divided by its row's sum, read at constant indices. It becomes
// vector arithmetic on one token's matrix at a time instead of a scalar
// divide per element: the matrix read once, flat (as vector<1x4x4xf32>,
// LLVM would split it into four 4-lane rows), and each constant-index read,
// a column broadcast along its row, a shuffle of it (read as a broadcast
// of a one-column slice, it was four scalar loads and inserts).
// CHECK-LABEL: func.func @sinkhorn_rows
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}}
// CHECK: %[[X:.*]] = vector.transfer_read %{{.*}} : tensor<1x4x4xf32>, vector<1x4x4xf32>
// CHECK-NEXT: %[[XF:.*]] = vector.shape_cast %[[X]] : vector<1x4x4xf32> to vector<16xf32>
// CHECK: %[[M:.*]] = vector.transfer_read %{{.*}} : tensor<1x4x4xf32>, vector<1x4x4xf32>
// CHECK-NEXT: %[[F:.*]] = vector.shape_cast %[[M]] : vector<1x4x4xf32> to vector<16xf32>
// CHECK-NEXT: %[[C0:.*]] = vector.shuffle %[[F]], %[[F]] [0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12]
// CHECK-NEXT: %[[C1:.*]] = vector.shuffle %[[F]], %[[F]] [1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9, 9, 13, 13, 13, 13]
// CHECK-NEXT: %[[C2:.*]] = vector.shuffle %[[F]], %[[F]] [2, 2, 2, 2, 6, 6, 6, 6, 10, 10, 10, 10, 14, 14, 14, 14]
// CHECK-NEXT: %[[C3:.*]] = vector.shuffle %[[F]], %[[F]] [3, 3, 3, 3, 7, 7, 7, 7, 11, 11, 11, 11, 15, 15, 15, 15]
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[C0]], %[[C1]] : vector<16xf32>
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[S0]], %[[C2]] : vector<16xf32>
// CHECK-NEXT: %[[S2:.*]] = arith.addf %[[S1]], %[[C3]] : vector<16xf32>
// CHECK-NEXT: arith.divf %[[XF]], %[[S2]] : vector<16xf32>
// CHECK-NEXT: vector.shape_cast %{{.*}} : vector<16xf32> to vector<1x4x4xf32>
// CHECK-NEXT: vector.transfer_write
// CHECK-NOT: permutation_map
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k0 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#k1 = affine_map<(d0, d1, d2) -> (d0, d1, 1)>
#k2 = affine_map<(d0, d1, d2) -> (d0, d1, 2)>
#k3 = affine_map<(d0, d1, d2) -> (d0, d1, 3)>
func.func @sinkhorn_rows(%a: tensor<256x4x4xf32>) -> tensor<256x4x4xf32> {
  %e = tensor.empty() : tensor<256x4x4xf32>
  %r = scf.forall (%t) = (0) to (256) step (16) shared_outs(%o = %e) -> (tensor<256x4x4xf32>) {
    %x = tensor.extract_slice %a[%t, 0, 0] [16, 4, 4] [1, 1, 1] : tensor<256x4x4xf32> to tensor<16x4x4xf32>
    %init = tensor.extract_slice %o[%t, 0, 0] [16, 4, 4] [1, 1, 1] : tensor<256x4x4xf32> to tensor<16x4x4xf32>
    %y = linalg.generic {indexing_maps = [#id, #k0, #k1, #k2, #k3, #id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%x, %x, %x, %x, %x : tensor<16x4x4xf32>, tensor<16x4x4xf32>, tensor<16x4x4xf32>, tensor<16x4x4xf32>, tensor<16x4x4xf32>) outs(%init : tensor<16x4x4xf32>) {
    ^bb0(%v: f32, %v0: f32, %v1: f32, %v2: f32, %v3: f32, %out: f32):
      %s0 = arith.addf %v0, %v1 : f32
      %s1 = arith.addf %s0, %v2 : f32
      %s2 = arith.addf %s1, %v3 : f32
      %q = arith.divf %v, %s2 : f32
      linalg.yield %q : f32
    } -> tensor<16x4x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %y into %o[%t, 0, 0] [16, 4, 4] [1, 1, 1] : tensor<16x4x4xf32> into tensor<256x4x4xf32>
    }
  }
  return %r : tensor<256x4x4xf32>
}

// HC's stream mix in a fused region's tile, Σ_i H_i A_ij + f β_j, stays a
// loop for LLVM to vectorise; its products and sums may contract into FMAs,
// their order unchanged: no reassoc.
// CHECK-LABEL: func.func @stream_mix
// CHECK: linalg.generic
// CHECK-COUNT-2: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
#mix_h0 = affine_map<(t, j, c) -> (t, 0, c)>
#mix_h1 = affine_map<(t, j, c) -> (t, 1, c)>
#mix_a0 = affine_map<(t, j, c) -> (t, 0, j)>
#mix_a1 = affine_map<(t, j, c) -> (t, 1, j)>
#mix_f = affine_map<(t, j, c) -> (t, 0, c)>
#mix_b = affine_map<(t, j, c) -> (t, j, 0)>
#mix_id = affine_map<(t, j, c) -> (t, j, c)>
func.func @stream_mix(%h: tensor<256x2x256xf32>, %a: tensor<256x2x2xf32>, %f: tensor<256x1x256xf32>, %beta: tensor<256x2x1xf32>) -> tensor<256x2x256xf32> {
  %e = tensor.empty() : tensor<256x2x256xf32>
  %r = scf.forall (%t) = (0) to (256) step (16) shared_outs(%o = %e) -> (tensor<256x2x256xf32>) {
    %hs = tensor.extract_slice %h[%t, 0, 0] [16, 2, 256] [1, 1, 1] : tensor<256x2x256xf32> to tensor<16x2x256xf32>
    %as = tensor.extract_slice %a[%t, 0, 0] [16, 2, 2] [1, 1, 1] : tensor<256x2x2xf32> to tensor<16x2x2xf32>
    %fs = tensor.extract_slice %f[%t, 0, 0] [16, 1, 256] [1, 1, 1] : tensor<256x1x256xf32> to tensor<16x1x256xf32>
    %bs = tensor.extract_slice %beta[%t, 0, 0] [16, 2, 1] [1, 1, 1] : tensor<256x2x1xf32> to tensor<16x2x1xf32>
    %init = tensor.extract_slice %o[%t, 0, 0] [16, 2, 256] [1, 1, 1] : tensor<256x2x256xf32> to tensor<16x2x256xf32>
    %y = linalg.generic {indexing_maps = [#mix_h0, #mix_h1, #mix_a0, #mix_a1, #mix_f, #mix_b, #mix_id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%hs, %hs, %as, %as, %fs, %bs : tensor<16x2x256xf32>, tensor<16x2x256xf32>, tensor<16x2x2xf32>, tensor<16x2x2xf32>, tensor<16x1x256xf32>, tensor<16x2x1xf32>) outs(%init : tensor<16x2x256xf32>) {
    ^bb0(%x0: f32, %x1: f32, %c0: f32, %c1: f32, %fv: f32, %bv: f32, %out: f32):
      %p0 = arith.mulf %x0, %c0 : f32
      %p1 = arith.mulf %x1, %c1 : f32
      %s0 = arith.addf %p0, %p1 : f32
      %p2 = arith.mulf %fv, %bv : f32
      %s1 = arith.addf %s0, %p2 : f32
      linalg.yield %s1 : f32
    } -> tensor<16x2x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %y into %o[%t, 0, 0] [16, 2, 256] [1, 1, 1] : tensor<16x2x256xf32> into tensor<256x2x256xf32>
    }
  }
  return %r : tensor<256x2x256xf32>
}

// mHC's H^res projection in a fused region's 16-token tile: x̂ [16, 1024]
// times φᵀ, φ read [16, 1024]. Vectorised along n it would gather a column
// of φ per k; it runs as dot products instead, both operands read 16
// contiguous lanes per step, 4 x 4 dot products kept in registers across
// the 64 steps (starting from zero, no transfer of the accumulator inside
// the loop), then each one's 16 lanes summed onto its C element: no buffer
// of partial sums, no fill of one, no reduction kernel over one.
// CHECK-LABEL: func.func @tile_projection
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4x4x16xf32>
// CHECK: scf.forall
// CHECK: %[[X:.*]] = tensor.extract_slice
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c16 step %c4 iter_args
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c16 step %c4 iter_args
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c1024 step %c16 iter_args(%[[A:.*]] = %[[ZERO]]) -> (vector<4x4x16xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK: %[[XV:.*]] = vector.transfer_read %[[X]][%[[I]], %[[K]]]{{.*}} : tensor<16x1024xf32>, vector<4x4x16xf32>
// CHECK: %[[PV:.*]] = vector.transfer_read %{{.*}}[%[[J]], %[[K]]]{{.*}} : tensor<16x1024xf32>, vector<4x4x16xf32>
// CHECK: %[[F:.*]] = vector.fma %[[XV]], %[[PV]], %[[A]] : vector<4x4x16xf32>
// CHECK: scf.yield %[[F]]
// CHECK-COUNT-16: vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK: vector.transfer_write {{.*}} : vector<4x4xf32>, tensor<16x16xf32>
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @tile_projection(%x: tensor<256x1024xf32>, %phi: tensor<16x1024xf32>, %z: tensor<256x16xf32>) -> tensor<256x16xf32> {
  %r = scf.forall (%t) = (0) to (256) step (16) shared_outs(%o = %z) -> (tensor<256x16xf32>) {
    %xs = tensor.extract_slice %x[%t, 0] [16, 1024] [1, 1] : tensor<256x1024xf32> to tensor<16x1024xf32>
    %zs = tensor.extract_slice %o[%t, 0] [16, 16] [1, 1] : tensor<256x16xf32> to tensor<16x16xf32>
    %p = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%xs, %phi : tensor<16x1024xf32>, tensor<16x1024xf32>) outs(%zs : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[%t, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<256x16xf32>
    }
  }
  return %r : tensor<256x16xf32>
}

// At d_model 56 (a DepthBench width, not a multiple of 16) a projection's
// dot products run on 8 lanes, 7 steps of them.
// CHECK-LABEL: func.func @narrow_tile_projection
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4x4x8xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c56 step %c8 iter_args(%{{.*}} = %[[ZERO]]) -> (vector<4x4x8xf32>)
// CHECK: vector.fma {{.*}} : vector<4x4x8xf32>
// CHECK-COUNT-16: vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<8xf32> into f32
// CHECK-NOT: linalg.
// CHECK: return
#a56 = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt56 = affine_map<(d0, d1, d2) -> (d1, d2)>
#c56 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @narrow_tile_projection(%x: tensor<2048x56xf32>, %phi: tensor<4x56xf32>, %z: tensor<2048x4xf32>) -> tensor<2048x4xf32> {
  %r = scf.forall (%t) = (0) to (2048) step (256) shared_outs(%o = %z) -> (tensor<2048x4xf32>) {
    %xs = tensor.extract_slice %x[%t, 0] [256, 56] [1, 1] : tensor<2048x56xf32> to tensor<256x56xf32>
    %zs = tensor.extract_slice %o[%t, 0] [256, 4] [1, 1] : tensor<2048x4xf32> to tensor<256x4xf32>
    %p = linalg.matmul indexing_maps = [#a56, #bt56, #c56] ins(%xs, %phi : tensor<256x56xf32>, tensor<4x56xf32>) outs(%zs : tensor<256x4xf32>) -> tensor<256x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[%t, 0] [256, 4] [1, 1] : tensor<256x4xf32> into tensor<2048x4xf32>
    }
  }
  return %r : tensor<2048x4xf32>
}

// A fused tile's sums of squares along rows of 56 (a norm of each of 4
// streams at d_model 56): one row at a time, read as one vector, squared,
// and its lanes summed onto the result by one reassociating reduction. Left
// to LLVM, the 56-step row loop was unrolled and vectorised across rows
// with gathers.
// CHECK-LABEL: func.func @narrow_row_sums
// CHECK: scf.forall
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %c64 step %c1
// CHECK: scf.for %[[S:.*]] = %{{.*}} to %c4 step %c1
// CHECK: %[[ROW:.*]] = vector.transfer_read {{.*}} : tensor<1x1x56xf32>, vector<1x1x56xf32>
// CHECK: %[[SQ:.*]] = arith.mulf %[[ROW]], %[[ROW]] fastmath<reassoc,contract> : vector<1x1x56xf32>
// CHECK: %[[FLAT:.*]] = vector.extract %[[SQ]][0, 0] : vector<56xf32> from vector<1x1x56xf32>
// CHECK: vector.reduction <add>, %[[FLAT]], %{{.*}} fastmath<reassoc> : vector<56xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: return
#rows56 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#sums56 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @narrow_row_sums(%h: tensor<2048x4x56xf32>, %z: tensor<2048x4xf32>) -> tensor<2048x4xf32> {
  %r = scf.forall (%t) = (0) to (2048) step (64) shared_outs(%o = %z) -> (tensor<2048x4xf32>) {
    %hs = tensor.extract_slice %h[%t, 0, 0] [64, 4, 56] [1, 1, 1] : tensor<2048x4x56xf32> to tensor<64x4x56xf32>
    %zs = tensor.extract_slice %o[%t, 0] [64, 4] [1, 1] : tensor<2048x4xf32> to tensor<64x4xf32>
    %s = linalg.generic {indexing_maps = [#rows56, #sums56], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hs : tensor<64x4x56xf32>) outs(%zs : tensor<64x4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %sq = arith.mulf %v, %v : f32
      %sum = arith.addf %acc, %sq : f32
      linalg.yield %sum : f32
    } -> tensor<64x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%t, 0] [64, 4] [1, 1] : tensor<64x4xf32> into tensor<2048x4xf32>
    }
  }
  return %r : tensor<2048x4xf32>
}

// HC's three coefficient projections of one 16-token tile (64 stream rows)
// share the tile: merged, the rows are read once. The weights are stacked
// [6, 256] before the loop; each result is a column slice.
// CHECK-LABEL: func.func @shared_projections
// CHECK-SAME: (%{{.*}}: tensor<2048x256xf32>, %[[WB:.*]]: tensor<1x256xf32>, %[[WA:.*]]: tensor<4x256xf32>, %[[WC:.*]]: tensor<1x256xf32>
// CHECK: %[[S0:.*]] = tensor.insert_slice %[[WB]] into %{{.*}}[0, 0] [1, 256] [1, 1] : tensor<1x256xf32> into tensor<6x256xf32>
// CHECK: %[[S1:.*]] = tensor.insert_slice %[[WA]] into %[[S0]][1, 0] [4, 256] [1, 1] : tensor<4x256xf32> into tensor<6x256xf32>
// CHECK: %[[S2:.*]] = tensor.insert_slice %[[WC]] into %[[S1]][5, 0] [1, 256] [1, 1] : tensor<1x256xf32> into tensor<6x256xf32>
// CHECK: scf.forall
// CHECK-COUNT-1: scf.for %{{.*}} = %{{.*}} to %c256 step %c16 iter_args
// CHECK: vector.transfer_read %[[S2]]{{.*}} : tensor<6x256xf32>, vector<8x2x16xf32>
// CHECK-NOT: scf.for %{{.*}} = %{{.*}} to %c256 step %c16 iter_args
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [64, 1] [1, 1] : tensor<64x6xf32> to tensor<64x1xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [64, 4] [1, 1] : tensor<64x6xf32> to tensor<64x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 5] [64, 1] [1, 1] : tensor<64x6xf32> to tensor<64x1xf32>
func.func @shared_projections(%x: tensor<2048x256xf32>, %wb: tensor<1x256xf32>, %wa: tensor<4x256xf32>, %wc: tensor<1x256xf32>,
                              %ob: tensor<2048x1xf32>, %oa: tensor<2048x4xf32>, %oc: tensor<2048x1xf32>)
    -> (tensor<2048x1xf32>, tensor<2048x4xf32>, tensor<2048x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %r:3 = scf.forall (%t) = (0) to (2048) step (64) shared_outs(%b = %ob, %a = %oa, %c = %oc)
      -> (tensor<2048x1xf32>, tensor<2048x4xf32>, tensor<2048x1xf32>) {
    %xs = tensor.extract_slice %x[%t, 0] [64, 256] [1, 1] : tensor<2048x256xf32> to tensor<64x256xf32>
    %e1 = tensor.empty() : tensor<64x1xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
    %pb = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%xs, %wb : tensor<64x256xf32>, tensor<1x256xf32>) outs(%z1 : tensor<64x1xf32>) -> tensor<64x1xf32>
    %e4 = tensor.empty() : tensor<64x4xf32>
    %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x4xf32>) -> tensor<64x4xf32>
    %pa = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%xs, %wa : tensor<64x256xf32>, tensor<4x256xf32>) outs(%z4 : tensor<64x4xf32>) -> tensor<64x4xf32>
    %e5 = tensor.empty() : tensor<64x1xf32>
    %z5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<64x1xf32>) -> tensor<64x1xf32>
    %pc = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%xs, %wc : tensor<64x256xf32>, tensor<1x256xf32>) outs(%z5 : tensor<64x1xf32>) -> tensor<64x1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %pb into %b[%t, 0] [64, 1] [1, 1] : tensor<64x1xf32> into tensor<2048x1xf32>
      tensor.parallel_insert_slice %pa into %a[%t, 0] [64, 4] [1, 1] : tensor<64x4xf32> into tensor<2048x4xf32>
      tensor.parallel_insert_slice %pc into %c[%t, 0] [64, 1] [1, 1] : tensor<64x1xf32> into tensor<2048x1xf32>
    }
  }
  return %r#0, %r#1, %r#2 : tensor<2048x1xf32>, tensor<2048x4xf32>, tensor<2048x1xf32>
}

// A sublayer's output [N, w] appended to an AttnRes bank as [N, 1, w]: the
// insert of its expand_shape becomes a rank-reducing insert of the value
// itself, so empty-tensor elimination (equal types only) can let its
// producer write the bank's row.
// CHECK-LABEL: func.func @bank_append
// CHECK-NOT: tensor.expand_shape
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 2, 0] [2048, 1, 256] [1, 1, 1] : tensor<2048x256xf32> into tensor<2048x17x256xf32>
func.func @bank_append(%f: tensor<2048x256xf32>, %store: tensor<2048x17x256xf32>)
    -> tensor<2048x17x256xf32> {
  %e = tensor.expand_shape %f [[0], [1, 2]] output_shape [2048, 1, 256]
      : tensor<2048x256xf32> into tensor<2048x1x256xf32>
  %r = tensor.insert_slice %e into %store[0, 2, 0] [2048, 1, 256] [1, 1, 1]
      : tensor<2048x1x256xf32> into tensor<2048x17x256xf32>
  return %r : tensor<2048x17x256xf32>
}

// Causal attention's products (drc.causal, from drc-lower-to-linalg): the
// register-tile loops of one [64, 64] block stop at the diagonal. Scores
// ("output"): row tile m0 visits the 32-column panels up to its last row,
// min(64, ceil((m0 + 8) / 32) * 32). P V ("prefix"): row tile m0 sums keys
// up to m0 + 8. Pᵀ dO ("suffix"): row tile m0 (a key) sums the queries
// from m0 on.
// CHECK-LABEL: func.func @causal_products
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}}
// CHECK: %[[PANELS:.*]] = affine.apply #{{.*}}(%[[M]])
// CHECK: %[[LOW:.*]] = arith.maxsi %[[PANELS]], %{{.*}}
// CHECK: %[[END:.*]] = arith.minsi %[[LOW]], %{{.*}}
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}}
// CHECK: vector.contract
// CHECK: scf.for %[[M2:.*]] = %{{.*}} to %{{.*}} step %{{.*}}
// CHECK: %[[ROWS:.*]] = affine.apply #{{.*}}(%[[M2]])
// CHECK: %[[LOW2:.*]] = arith.maxsi %[[ROWS]], %{{.*}}
// CHECK: %[[KEND:.*]] = arith.minsi %[[LOW2]], %{{.*}}
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[KEND]] step %{{.*}}
// CHECK: vector.contract
// CHECK: scf.for %[[M3:.*]] = %{{.*}} to %{{.*}} step %{{.*}}
// CHECK: %[[LOW3:.*]] = arith.maxsi %[[M3]], %{{.*}}
// CHECK: %[[KSTART:.*]] = arith.minsi %[[LOW3]], %{{.*}}
// CHECK: scf.for %{{.*}} = %[[KSTART]] to %{{.*}} step %{{.*}}
// CHECK: vector.contract
func.func @causal_products(%q: tensor<2x64x16xf32>, %kt: tensor<2x16x64xf32>,
                           %v: tensor<2x64x16xf32>)
    -> (tensor<2x64x64xf32>, tensor<2x64x16xf32>, tensor<2x64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x64x64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %s = linalg.batch_matmul {drc.causal = "output"}
      ins(%q, %kt : tensor<2x64x16xf32>, tensor<2x16x64xf32>)
      outs(%s0 : tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %e2 = tensor.empty() : tensor<2x64x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %o = linalg.batch_matmul {drc.causal = "prefix"}
      ins(%s, %v : tensor<2x64x64xf32>, tensor<2x64x16xf32>)
      outs(%o0 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %d = linalg.batch_matmul {drc.causal = "suffix"}
      ins(%s, %v : tensor<2x64x64xf32>, tensor<2x64x16xf32>)
      outs(%o0 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  return %s, %o, %d : tensor<2x64x64xf32>, tensor<2x64x16xf32>, tensor<2x64x16xf32>
}

// A head of 14 (d_model 56 with 4 heads, not a multiple of 8): one register
// tile spans the head, 8 rows of 14 lanes, instead of tiles two columns
// wide (the largest power of two dividing 14).
// CHECK-LABEL: func.func @narrow_head
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c8
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<1x8x14xf32>)
// CHECK: vector.contract {{.*}} : vector<1x8x1xf32>, vector<1x1x14xf32> into vector<1x8x14xf32>
func.func @narrow_head(%p: tensor<2x64x64xf32>, %v: tensor<2x64x14xf32>) -> tensor<2x64x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x14xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64x14xf32>) -> tensor<2x64x14xf32>
  %o = linalg.batch_matmul {drc.causal = "prefix"}
      ins(%p, %v : tensor<2x64x64xf32>, tensor<2x64x14xf32>)
      outs(%o0 : tensor<2x64x14xf32>) -> tensor<2x64x14xf32>
  return %o : tensor<2x64x14xf32>
}

// A head of 20: its first 16 columns in 8 x 16 tiles, the last 4 in one
// 8 x 4 tile, each part writing its columns of the result.
// CHECK-LABEL: func.func @head_remainder
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [2, 64, 16] [1, 1, 1] : tensor<2x64x20xf32> to tensor<2x64x16xf32>
// CHECK: vector.contract {{.*}} into vector<1x8x16xf32>
// CHECK: %[[WIDE:.*]] = tensor.insert_slice %{{.*}}[0, 0, 0] [2, 64, 16] [1, 1, 1] : tensor<2x64x16xf32> into tensor<2x64x20xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 16] [2, 64, 4] [1, 1, 1] : tensor<2x64x20xf32> to tensor<2x64x4xf32>
// CHECK: vector.contract {{.*}} into vector<1x8x4xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[WIDE]][0, 0, 16] [2, 64, 4] [1, 1, 1] : tensor<2x64x4xf32> into tensor<2x64x20xf32>
func.func @head_remainder(%p: tensor<2x64x64xf32>, %v: tensor<2x64x20xf32>) -> tensor<2x64x20xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x20xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64x20xf32>) -> tensor<2x64x20xf32>
  %o = linalg.batch_matmul {drc.causal = "prefix"}
      ins(%p, %v : tensor<2x64x64xf32>, tensor<2x64x20xf32>)
      outs(%o0 : tensor<2x64x20xf32>) -> tensor<2x64x20xf32>
  return %o : tensor<2x64x20xf32>
}

// A matmul that starts from zeros starts each register tile from zeros:
// its 8 x 32 accumulator starts as a zero vector in registers, and C is
// never filled (no pass over memory before the product writes it, and no
// tile filled and read back before each k loop). A causal "output" product
// keeps its whole zero fill (its skipped tiles are read as zeros later),
// and so does a product with k blocks (each block adds to the sums of the
// one before).
// CHECK-LABEL: func.func @zero_start
// CHECK-DAG: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-DAG: %[[C:.*]] = tensor.empty() : tensor<64x128xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[C]])
// CHECK: scf.for
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[ZEROS]]) -> (vector<8x32xf32>)
// CHECK: vector.contract
// CHECK: linalg.fill ins(%{{.*}}) outs(%{{.*}} : tensor<2x64x64xf32>)
// CHECK: vector.contract
// CHECK: %[[BLOCKED:.*]] = linalg.fill ins(%{{.*}}) outs(%{{.*}} : tensor<64x128xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1024 step %c256 iter_args(%{{.*}} = %[[BLOCKED]])
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @zero_start(%a: tensor<64x64xf32>, %b: tensor<64x128xf32>,
                      %q: tensor<2x64x16xf32>, %kt: tensor<2x16x64xf32>,
                      %x: tensor<64x1024xf32>, %w: tensor<1024x128xf32>)
    -> (tensor<64x128xf32>, tensor<2x64x64xf32>, tensor<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x128xf32>)
      outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  %e2 = tensor.empty() : tensor<2x64x64xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %s = linalg.batch_matmul {drc.causal = "output"}
      ins(%q, %kt : tensor<2x64x16xf32>, tensor<2x16x64xf32>)
      outs(%s0 : tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %e3 = tensor.empty() : tensor<64x128xf32>
  %c3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %long = linalg.matmul ins(%x, %w : tensor<64x1024xf32>, tensor<1024x128xf32>)
      outs(%c3 : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %r, %s, %long : tensor<64x128xf32>, tensor<2x64x64xf32>, tensor<64x128xf32>
}

// A copy that swaps the last two axes inside a thread's loop (attention's
// kᵀ of one block, [1, 64, 32] -> [1, 32, 64]) moves in 16 x 16 squares:
// each read as 16 contiguous rows, transposed by shuffles in registers,
// written as 16 contiguous rows (vectorised like a copy, each vector would
// gather 16 elements a source row apart). One whose swapped extents 16
// does not divide stays a generic.
// CHECK-LABEL: func.func @transpose_squares
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: vector.transfer_read %{{.*}} : tensor<1x16x16xf32>, vector<16x16xf32>
// CHECK-COUNT-64: vector.shuffle
// CHECK-NOT: vector.shuffle
// CHECK: vector.transfer_write %{{.*}} : vector<16x16xf32>, tensor<1x16x16xf32>
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<1x8x64xf32>)
func.func @transpose_squares(%k: tensor<2x64x32xf32>, %small: tensor<2x64x8xf32>)
    -> (tensor<2x32x64xf32>, tensor<2x8x64xf32>) {
  %e = tensor.empty() : tensor<2x32x64xf32>
  %e8 = tensor.empty() : tensor<2x8x64xf32>
  %r:2 = scf.forall (%g) in (2) shared_outs(%o = %e, %o8 = %e8)
      -> (tensor<2x32x64xf32>, tensor<2x8x64xf32>) {
    %kg = tensor.extract_slice %k[%g, 0, 0] [1, 64, 32] [1, 1, 1]
        : tensor<2x64x32xf32> to tensor<1x64x32xf32>
    %t0 = tensor.empty() : tensor<1x32x64xf32>
    %t = linalg.generic {
        indexing_maps = [affine_map<(b, i, s) -> (b, s, i)>,
                         affine_map<(b, i, s) -> (b, i, s)>],
        iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%kg : tensor<1x64x32xf32>) outs(%t0 : tensor<1x32x64xf32>) {
    ^bb0(%x: f32, %y: f32):
      linalg.yield %x : f32
    } -> tensor<1x32x64xf32>
    %sg = tensor.extract_slice %small[%g, 0, 0] [1, 64, 8] [1, 1, 1]
        : tensor<2x64x8xf32> to tensor<1x64x8xf32>
    %u0 = tensor.empty() : tensor<1x8x64xf32>
    %u = linalg.generic {
        indexing_maps = [affine_map<(b, i, s) -> (b, s, i)>,
                         affine_map<(b, i, s) -> (b, i, s)>],
        iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%sg : tensor<1x64x8xf32>) outs(%u0 : tensor<1x8x64xf32>) {
    ^bb0(%x: f32, %y: f32):
      linalg.yield %x : f32
    } -> tensor<1x8x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%g, 0, 0] [1, 32, 64] [1, 1, 1]
          : tensor<1x32x64xf32> into tensor<2x32x64xf32>
      tensor.parallel_insert_slice %u into %o8[%g, 0, 0] [1, 8, 64] [1, 1, 1]
          : tensor<1x8x64xf32> into tensor<2x8x64xf32>
    }
  }
  return %r#0, %r#1 : tensor<2x32x64xf32>, tensor<2x8x64xf32>
}

// RoPE over half-heads of 7 (d_model 56 with 4 heads): each element reads
// its partner half and its position's cos and sin through tensor.extract.
// Each row of 7 becomes one vector, and those reads contiguous vector reads
// (LLVM had unrolled the 7 and gathered across heads).
// CHECK-LABEL: func.func @short_rope_rows
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: %[[X:.*]] = vector.transfer_read {{.*}} : tensor<1x1x1x7xf32>, vector<1x1x1x7xf32>
// CHECK: %[[PARTNER:.*]] = vector.transfer_read %{{.*}} : tensor<2048x4x2x7xf32>, vector<1x1x1x7xf32>
// CHECK: %[[COS:.*]] = vector.transfer_read %{{.*}} : tensor<128x7xf32>, vector<1x1x1x7xf32>
// CHECK: arith.mulf %[[X]], %[[COS]] {{.*}}: vector<1x1x1x7xf32>
// CHECK-NOT: vector.gather
// CHECK-NOT: linalg.generic
// CHECK: return
#rope = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @short_rope_rows(%x: tensor<2048x4x2x7xf32>, %cos: tensor<128x7xf32>, %sin: tensor<128x7xf32>) -> tensor<2048x4x2x7xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %e = tensor.empty() : tensor<2048x4x2x7xf32>
  %r = linalg.generic {indexing_maps = [#rope, #rope], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2048x4x2x7xf32>) outs(%e : tensor<2048x4x2x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = linalg.index 0 : index
    %h = linalg.index 1 : index
    %half = linalg.index 2 : index
    %i = linalg.index 3 : index
    %pos = arith.remui %t, %c128 : index
    %first = arith.cmpi eq, %half, %c0 : index
    %other = arith.subi %c1, %half : index
    %partner = tensor.extract %x[%t, %h, %other, %i] : tensor<2048x4x2x7xf32>
    %c = tensor.extract %cos[%pos, %i] : tensor<128x7xf32>
    %s = tensor.extract %sin[%pos, %i] : tensor<128x7xf32>
    %a = arith.mulf %in, %c : f32
    %b = arith.mulf %partner, %s : f32
    %minus = arith.subf %a, %b : f32
    %plus = arith.addf %a, %b : f32
    %y = arith.select %first, %minus, %plus : f32
    linalg.yield %y : f32
  } -> tensor<2048x4x2x7xf32>
  return %r : tensor<2048x4x2x7xf32>
}
