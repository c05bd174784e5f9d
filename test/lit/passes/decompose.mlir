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

// A norm read only by narrow projections (HC's coefficients): one
// normed_linear of the norm's input, the gain folded into each weight.
// CHECK-LABEL: func.func @narrow_projections
func.func @narrow_projections(%h: tensor<6x4x64xf32>, %g: tensor<64xf32>, %wm: tensor<1x64xf32>, %wr: tensor<4x64xf32>) -> (tensor<6x4x1xf32>, tensor<6x4x4xf32>) {
  // CHECK-DAG: %[[WM:.*]] = drc.scale %arg2 by %arg1 : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  // CHECK-DAG: %[[WR:.*]] = drc.scale %arg3 by %arg1 : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  // CHECK: %[[Z:.*]]:2 = drc.normed_linear %arg0, %[[WM]], %[[WR]] {eps = 1.000000e-05 : f64} : (tensor<6x4x64xf32>, tensor<1x64xf32>, tensor<4x64xf32>) -> (tensor<6x4x1xf32>, tensor<6x4x4xf32>)
  // CHECK-NOT: drc.rms_norm
  // CHECK: return %[[Z]]#0, %[[Z]]#1
  %n = drc.rms_norm %h gain %g {eps = 1.0e-5 : f64} : (tensor<6x4x64xf32>, tensor<64xf32>) -> tensor<6x4x64xf32>
  %zm = drc.linear %n, %wm : (tensor<6x4x64xf32>, tensor<1x64xf32>) -> tensor<6x4x1xf32>
  %zr = drc.linear %n, %wr : (tensor<6x4x64xf32>, tensor<4x64xf32>) -> tensor<6x4x4xf32>
  return %zm, %zr : tensor<6x4x1xf32>, tensor<6x4x4xf32>
}

// A norm that also feeds anything else (here a wide projection, the
// sublayer's) stays: its rows are formed anyway.
// CHECK-LABEL: func.func @norm_also_read_whole
func.func @norm_also_read_whole(%h: tensor<6x64xf32>, %w: tensor<1x64xf32>, %wide: tensor<64x64xf32>) -> (tensor<6x1xf32>, tensor<6x64xf32>) {
  // CHECK: %[[N:.*]] = drc.rms_norm %arg0
  // CHECK: drc.matmul %[[N]], %arg1 {transpose_rhs}
  // CHECK: drc.matmul %[[N]], %arg2 {transpose_rhs}
  // CHECK-NOT: drc.normed_linear
  %n = drc.rms_norm %h : (tensor<6x64xf32>) -> tensor<6x64xf32>
  %z = drc.linear %n, %w : (tensor<6x64xf32>, tensor<1x64xf32>) -> tensor<6x1xf32>
  %y = drc.linear %n, %wide : (tensor<6x64xf32>, tensor<64x64xf32>) -> tensor<6x64xf32>
  return %z, %y : tensor<6x1xf32>, tensor<6x64xf32>
}
