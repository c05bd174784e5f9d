// RUN: drc-opt %s --drc-decompose | FileCheck %s

// CHECK-LABEL: func.func @sublayers
func.func @sublayers(%u: tensor<6x8xf32>, %w: tensor<8x8xf32>, %w1: tensor<24x8xf32>, %w2: tensor<8x24xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x24xf32>) {
  // Attention: three projections, RoPE on q and k only, the core, the output projection.
  // CHECK: %[[Q:.*]] = drc.matmul %arg0, %arg1 {transpose_rhs}
  // CHECK-NEXT: %[[QR:.*]] = drc.rope %[[Q]] {n_head = 2 : i64, seq_len = 3 : i64, theta = 5.000000e+02 : f64}
  // CHECK-NEXT: %[[K:.*]] = drc.matmul %arg0, %arg1 {transpose_rhs}
  // CHECK-NEXT: %[[KR:.*]] = drc.rope %[[K]]
  // CHECK-NEXT: %[[V:.*]] = drc.matmul %arg0, %arg1 {transpose_rhs}
  // CHECK-NEXT: %[[O:.*]], %{{.*}} = drc.causal_attention %[[QR]], %[[KR]], %[[V]] {n_head = 2 : i64, seq_len = 3 : i64}
  // CHECK-NEXT: drc.matmul %[[O]], %arg1 {transpose_rhs}
  %a = drc.attention %u, %w, %w, %w, %w {n_head = 2 : i64, seq_len = 3 : i64, rope_theta = 500.0 : f64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  // SwiGLU: gate and up projections, the gate, the down projection.
  // CHECK: %[[G:.*]] = drc.matmul %arg0, %arg2 {transpose_rhs}
  // CHECK-NEXT: %[[UP:.*]] = drc.matmul %arg0, %arg2 {transpose_rhs}
  // CHECK-NEXT: %[[H:.*]] = drc.silu_mul %[[G]], %[[UP]] : tensor<6x24xf32>
  // CHECK-NEXT: drc.matmul %[[H]], %arg3 {transpose_rhs}
  %f = drc.swiglu %u, %w1, %w1, %w2 : (tensor<6x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>, tensor<8x24xf32>) -> tensor<6x8xf32>
  // CHECK: drc.matmul %arg0, %arg2 {transpose_rhs} : (tensor<6x8xf32>, tensor<24x8xf32>) -> tensor<6x24xf32>
  %l = drc.linear %u, %w1 : (tensor<6x8xf32>, tensor<24x8xf32>) -> tensor<6x24xf32>
  // CHECK-NOT: drc.attention
  // CHECK-NOT: drc.swiglu
  // CHECK-NOT: drc.linear
  return %a, %f, %l : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x24xf32>
}
