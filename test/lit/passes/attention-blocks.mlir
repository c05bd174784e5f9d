// RUN: drc-opt %s --drc-lower-to-linalg | FileCheck %s
// RUN: drc-opt %s --drc-lower-to-linalg="head-blocks=false" | FileCheck %s --check-prefix=BATCHED
// RUN: drc-opt %s --drc-lower-to-linalg | drc-opt --drc-cpu-tile="register-rows=8 register-columns=32" | FileCheck %s --check-prefix=TILE

// Causal attention over B = 2 sequences of T = 64 tokens, H = 2 heads of
// dh = 16. On the CPU (head-blocks, the default) it is one parallel loop
// over the B*H = 4 blocks: block g reads q, k, v as [64, 16] slices of the
// [128, 32] operands at (g / H * T, g mod H * dh), in place; only kᵀ is
// copied (one block's, [1, 16, 64]); its [1, 64, 64] scores and
// probabilities live in the iteration; its output and log-sum-exps are
// computed in their rows and columns of the [128, 32] and [128, 2] results
// (the ops' inits are those slices), so bufferization writes them there.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: tensor.expand_shape {{.*}} into tensor<2x64x2x16xf32>
// CHECK: scf.forall (%[[G:.*]]) in (4) shared_outs(%[[OUT:.*]] = %{{.*}}, %[[LSE:.*]] = %{{.*}})
// CHECK-DAG: %[[HEAD:.*]] = arith.remui %[[G]], %c2
// CHECK-DAG: %[[SEQ:.*]] = arith.divui %[[G]], %c2
// CHECK-DAG: %[[ROW:.*]] = arith.muli %[[SEQ]], %c64
// CHECK-DAG: %[[COL:.*]] = arith.muli %[[HEAD]], %c16
// CHECK: tensor.extract_slice %arg0[%[[ROW]], %[[COL]]] [64, 16] [1, 1]
// CHECK: tensor.extract_slice %arg1[%[[ROW]], %[[COL]]] [64, 16] [1, 1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x16x64xf32>)
// CHECK: tensor.extract_slice %arg2[%[[ROW]], %[[COL]]] [64, 16] [1, 1]
// CHECK: linalg.batch_matmul {drc.causal = "output"} {{.*}} -> tensor<1x64x64xf32>
// CHECK: %[[LSESLICE:.*]] = tensor.extract_slice %[[LSE]][%[[ROW]], %[[HEAD]]] [64, 1] [1, 1]
// CHECK: %[[LSEBLOCK:.*]] = tensor.expand_shape %[[LSESLICE]]
// CHECK: linalg.generic {{.*}} outs(%[[LSEBLOCK]] : tensor<1x64xf32>)
// CHECK: %[[PV:.*]] = linalg.batch_matmul {drc.causal = "prefix"} {{.*}} -> tensor<1x64x16xf32>
// CHECK: %[[OUTSLICE:.*]] = tensor.extract_slice %[[OUT]][%[[ROW]], %[[COL]]] [64, 16] [1, 1]
// CHECK: %[[OUTBLOCK:.*]] = tensor.expand_shape %[[OUTSLICE]]
// CHECK: linalg.generic {{.*}} ins(%[[PV]], %{{.*}} : tensor<1x64x16xf32>, tensor<1x64xf32>) outs(%[[OUTBLOCK]] : tensor<1x64x16xf32>)
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[ROW]], %[[COL]]] [64, 16] [1, 1] : tensor<64x16xf32> into tensor<128x32xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[LSE]][%[[ROW]], %[[HEAD]]] [64, 1] [1, 1] : tensor<64xf32> into tensor<128x2xf32>
// CHECK: } {drc.kernel_role = "attention"}

// head-blocks=false (the GPU's): q, k and v copied head-major, [4, 64, 16]
// and kᵀ [4, 16, 64], and products batched over all blocks.
// BATCHED-LABEL: func.func @attention
// BATCHED-NOT: scf.forall
// BATCHED: linalg.batch_matmul {drc.causal = "output"} {{.*}} -> tensor<4x64x64xf32>
// BATCHED: linalg.batch_matmul {drc.causal = "prefix"} {{.*}} -> tensor<4x64x16xf32>

// Inside a block the products keep their causal register-tile bounds: the
// scores' column loop ends at the row tile's diagonal, P V's k loop too.
// The softmax's kernels over the [1, 64, 64] scores (drc.causal = "rows":
// its max, the unnormalised probabilities e^(S - max), one exp per score,
// and their sum) run per 16 rows over the columns up to the tile's last
// row only; the probabilities are written into those columns of the
// tile's rows. The output is (e V) divided by the sums.
// TILE-LABEL: func.func @attention
// TILE: scf.forall
// TILE-NOT: scf.forall
// TILE: arith.minsi
// TILE: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// TILE: vector.contract
// TILE: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x16x?xf32>{{.*}} outs(%{{.*}} : tensor<1x16xf32>)
// TILE: %[[COLUMNS:.*]] = affine.apply #{{.*}}(%{{[a-z0-9_]+}}){{$}}
// TILE: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 16, %[[COLUMNS]]]
// TILE: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x16x?xf32>)
// TILE: math.exp
// TILE: tensor.insert_slice %{{.*}} [1, 16, %[[COLUMNS]]]
// TILE: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x16x?xf32>{{.*}} outs(%{{.*}} : tensor<1x16xf32>)
// TILE-NOT: math.exp
// TILE: arith.minsi
// TILE: vector.contract
// TILE: arith.divf
func.func @attention(%q: tensor<128x32xf32>, %k: tensor<128x32xf32>, %v: tensor<128x32xf32>) -> (tensor<128x32xf32>, tensor<128x2xf32>) {
  %o, %lse = drc.causal_attention %q, %k, %v {n_head = 2 : i64, seq_len = 64 : i64} : (tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>) -> (tensor<128x32xf32>, tensor<128x2xf32>)
  return %o, %lse : tensor<128x32xf32>, tensor<128x2xf32>
}

// The adjoint in the same loop: dq, dk and dv written into their blocks,
// the log-sum-exps read from theirs.
// CHECK-LABEL: func.func @attention_grad
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%[[DQ:.*]] = %{{.*}}, %[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}})
// CHECK: tensor.extract_slice %arg4[%[[ROW:.*]], %[[HEAD:.*]]] [64, 1] [1, 1] : tensor<128x2xf32> to tensor<64xf32>
// CHECK-COUNT-5: linalg.batch_matmul
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DQ]][%[[ROW]], %[[COL:.*]]] [64, 16]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DK]][%[[ROW]], %[[COL]]] [64, 16]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DV]][%[[ROW]], %[[COL]]] [64, 16]
// Its recomputed probabilities and dS per 16 rows, over the columns up to
// each tile's last row.
// TILE-LABEL: func.func @attention_grad
// TILE-COUNT-2: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x16x?xf32>)
// BATCHED-LABEL: func.func @attention_grad
// BATCHED-NOT: scf.forall
// BATCHED-COUNT-5: linalg.batch_matmul {{.*}} -> tensor<4x64x
func.func @attention_grad(%q: tensor<128x32xf32>, %k: tensor<128x32xf32>, %v: tensor<128x32xf32>, %o: tensor<128x32xf32>, %lse: tensor<128x2xf32>, %d: tensor<128x32xf32>) -> (tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>) {
  %dq, %dk, %dv = drc.causal_attention_grad %q, %k, %v, %o, %lse grad %d {n_head = 2 : i64, seq_len = 64 : i64} : (tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x2xf32>, tensor<128x32xf32>) -> (tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>)
  return %dq, %dk, %dv : tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>
}
