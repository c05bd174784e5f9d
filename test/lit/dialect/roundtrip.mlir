// RUN: drc-opt %s | drc-opt | FileCheck %s
// RUN: drc-opt %s --mlir-print-op-generic | drc-opt | FileCheck %s

// CHECK: drc.param @embed.weight : tensor<16x8xf32> init #drc.init<trunc_normal(2.000000e-02, 6.000000e-02)> decay
drc.param @embed.weight : tensor<16x8xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
// CHECK: drc.param @norm.gain : tensor<8xf32> init #drc.init<constant(1.000000e+00)>{{$}}
drc.param @norm.gain : tensor<8xf32> init #drc.init<constant(1.0)>
drc.param @wq : tensor<8x8xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
drc.param @w1 : tensor<24x8xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
drc.param @w2 : tensor<8x24xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay

// CHECK-LABEL: func.func @model
func.func @model(%tokens: tensor<6xi32>, %targets: tensor<6xi32>) -> tensor<f32> {
  // CHECK: %[[E:.*]] = drc.param_ref @embed.weight : tensor<16x8xf32>
  %e = drc.param_ref @embed.weight : tensor<16x8xf32>
  %g = drc.param_ref @norm.gain : tensor<8xf32>
  %wq = drc.param_ref @wq : tensor<8x8xf32>
  %w1 = drc.param_ref @w1 : tensor<24x8xf32>
  %w2 = drc.param_ref @w2 : tensor<8x24xf32>
  // CHECK: drc.embed %[[E]][%{{.*}}] : (tensor<16x8xf32>, tensor<6xi32>) -> tensor<6x8xf32>
  %h = drc.embed %e[%tokens] : (tensor<16x8xf32>, tensor<6xi32>) -> tensor<6x8xf32>
  // CHECK: drc.rms_norm %{{.*}} gain %{{.*}} {eps = 1.000000e-05 : f64}
  %u = drc.rms_norm %h gain %g {eps = 1.0e-5 : f64} : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  // CHECK: drc.rms_norm %{{.*}} : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %n = drc.rms_norm %h : (tensor<6x8xf32>) -> tensor<6x8xf32>
  // CHECK: drc.attention {{.*}} {n_head = 2 : i64, seq_len = 3 : i64}
  %a = drc.attention %u, %wq, %wq, %wq, %wq {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %h1 = drc.add %h, %a : tensor<6x8xf32>
  // CHECK: drc.swiglu
  %f = drc.swiglu %n, %w1, %w1, %w2 : (tensor<6x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>, tensor<8x24xf32>) -> tensor<6x8xf32>
  %h2 = drc.add %h1, %f : tensor<6x8xf32>
  // CHECK: drc.linear
  %logits = drc.linear %h2, %e : (tensor<6x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  // CHECK: drc.cross_entropy
  %loss = drc.cross_entropy %logits, %targets : (tensor<6x16xf32>, tensor<6xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @kernels
func.func @kernels(%x: tensor<6x8xf64>, %w: tensor<8x8xf64>, %t: tensor<6xi32>, %s: tensor<f64>) {
  // CHECK: drc.matmul {{.*}} {transpose_rhs}
  %0 = drc.matmul %x, %w {transpose_rhs} : (tensor<6x8xf64>, tensor<8x8xf64>) -> tensor<6x8xf64>
  // CHECK: drc.rope {{.*}}inverse
  %1 = drc.rope %0 {n_head = 2 : i64, seq_len = 3 : i64, inverse} : (tensor<6x8xf64>) -> tensor<6x8xf64>
  // CHECK: drc.causal_attention
  %2:2 = drc.causal_attention %1, %1, %1 {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x8xf64>) -> (tensor<6x8xf64>, tensor<6x2xf64>)
  // CHECK: drc.causal_attention_grad
  %3:3 = drc.causal_attention_grad %1, %1, %1, %2#0, %2#1 grad %0 {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x2xf64>, tensor<6x8xf64>) -> (tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x8xf64>)
  // CHECK: drc.silu_mul
  %4 = drc.silu_mul %0, %1 : tensor<6x8xf64>
  // CHECK: drc.silu_mul_grad
  %5:2 = drc.silu_mul_grad %0, %1 grad %4 : (tensor<6x8xf64>, tensor<6x8xf64>, tensor<6x8xf64>) -> (tensor<6x8xf64>, tensor<6x8xf64>)
  // CHECK: drc.embed_grad
  %6 = drc.embed_grad %t grad %0 : (tensor<6xi32>, tensor<6x8xf64>) -> tensor<16x8xf64>
  // CHECK: drc.cross_entropy_grad
  %7 = drc.cross_entropy_grad %0, %t grad %s : (tensor<6x8xf64>, tensor<6xi32>, tensor<f64>) -> tensor<6x8xf64>
  return
}

// CHECK-LABEL: func.func @sets
func.func @sets(%h: tensor<6x8xf32>, %c: tensor<6x2x3xf32>, %s: tensor<2x3xf32>) {
  // CHECK: drc.view %{{.*}} : (tensor<6x8xf32>) -> tensor<6x2x4xf32>
  %x = drc.view %h : (tensor<6x8xf32>) -> tensor<6x2x4xf32>
  // CHECK: drc.mix %{{.*}} by %{{.*}} : (tensor<6x2x4xf32>, tensor<6x2x3xf32>) -> tensor<6x3x4xf32>
  %y = drc.mix %x by %c : (tensor<6x2x4xf32>, tensor<6x2x3xf32>) -> tensor<6x3x4xf32>
  // CHECK: drc.mix %{{.*}} by %{{.*}} {transpose_coef} : (tensor<6x3x4xf32>, tensor<2x3xf32>) -> tensor<6x2x4xf32>
  %z = drc.mix %y by %s {transpose_coef} : (tensor<6x3x4xf32>, tensor<2x3xf32>) -> tensor<6x2x4xf32>
  // CHECK: drc.mix_coef_grad %{{.*}}, %{{.*}} {transpose_coef} : (tensor<6x3x4xf32>, tensor<6x2x4xf32>) -> tensor<2x3xf32>
  %g = drc.mix_coef_grad %y, %z {transpose_coef} : (tensor<6x3x4xf32>, tensor<6x2x4xf32>) -> tensor<2x3xf32>
  // CHECK: %[[D:.*]] = drc.row_dot %{{.*}}, %{{.*}} : (tensor<6x3x4xf32>, tensor<6x3x4xf32>) -> tensor<6x3x1xf32>
  %rd = drc.row_dot %y, %y : (tensor<6x3x4xf32>, tensor<6x3x4xf32>) -> tensor<6x3x1xf32>
  // CHECK: drc.rms_norm_grad %{{.*}} grad %{{.*}} dot %[[D]] : (tensor<6x3x4xf32>, tensor<6x3x4xf32>, tensor<6x3x1xf32>) -> tensor<6x3x4xf32>
  %rn = drc.rms_norm_grad %y grad %y dot %rd : (tensor<6x3x4xf32>, tensor<6x3x4xf32>, tensor<6x3x1xf32>) -> tensor<6x3x4xf32>
  // CHECK: drc.append %{{.*}}, %{{.*}} : (tensor<6x3x4xf32>, tensor<6x2x4xf32>) -> tensor<6x5x4xf32>
  %a = drc.append %y, %z : (tensor<6x3x4xf32>, tensor<6x2x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.rows %{{.*}} at 1 : (tensor<6x5x4xf32>) -> tensor<6x3x4xf32>
  %r = drc.rows %a at 1 : (tensor<6x5x4xf32>) -> tensor<6x3x4xf32>
  // CHECK: drc.rows_grad %{{.*}} at 1 : (tensor<6x3x4xf32>) -> tensor<6x5x4xf32>
  %d = drc.rows_grad %r at 1 : (tensor<6x3x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.squash "tanh" %{{.*}} {temperature = 4.000000e+00 : f64} : tensor<6x5x4xf32>
  %q = drc.squash "tanh" %d {temperature = 4.0 : f64} : tensor<6x5x4xf32>
  // CHECK: drc.squash_grad "sigmoid" %{{.*}} grad %{{.*}}
  %e = drc.squash_grad "sigmoid" %q grad %d {scale = 2.0 : f64, temperature = 1.0 : f64} : (tensor<6x5x4xf32>, tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.scale %{{.*}} {factor = 5.000000e-01 : f64} : (tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  %f = drc.scale %e {factor = 0.5 : f64} : (tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.sum_leading %{{.*}} : (tensor<6x5x4xf32>) -> tensor<5x4xf32>
  %l = drc.sum_leading %f : (tensor<6x5x4xf32>) -> tensor<5x4xf32>
  // CHECK: drc.scale %{{.*}} by %{{.*}} : (tensor<6x5x4xf32>, tensor<5x4xf32>) -> tensor<6x5x4xf32>
  %g2 = drc.scale %f by %l : (tensor<6x5x4xf32>, tensor<5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.shift %{{.*}} by %{{.*}} : (tensor<6x5x4xf32>, tensor<5x4xf32>) -> tensor<6x5x4xf32>
  %h2 = drc.shift %g2 by %l : (tensor<6x5x4xf32>, tensor<5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.softmax %{{.*}} {axis = 1 : i64} : tensor<6x5x4xf32>
  %sm = drc.softmax %h2 {axis = 1 : i64} : tensor<6x5x4xf32>
  // CHECK: drc.normalize %{{.*}} {axis = 2 : i64{{.*}}} : tensor<6x5x4xf32>
  %nz = drc.normalize %h2 {axis = 2 : i64} : tensor<6x5x4xf32>
  // CHECK: drc.normalize_grad %{{.*}} grad %{{.*}} {axis = 2 : i64, eps = 2.500000e-01 : f64}
  %ng = drc.normalize_grad %h2 grad %nz {axis = 2 : i64, eps = 0.25 : f64} : (tensor<6x5x4xf32>, tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.center %{{.*}} : tensor<6x5x4xf32>
  %ct = drc.center %h2 : tensor<6x5x4xf32>
  // CHECK: drc.softmax_grad %{{.*}} grad %{{.*}} {axis = 1 : i64}
  %sg = drc.softmax_grad %sm grad %h2 {axis = 1 : i64} : (tensor<6x5x4xf32>, tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  // CHECK: drc.softmax_grad %{{.*}} grad %{{.*}} dot %{{.*}} {axis = 1 : i64}
  %sdot = drc.rows %sm at 0 : (tensor<6x5x4xf32>) -> tensor<6x1x4xf32>
  %sd = drc.softmax_grad %sm grad %h2 dot %sdot {axis = 1 : i64} : (tensor<6x5x4xf32>, tensor<6x5x4xf32>, tensor<6x1x4xf32>) -> tensor<6x5x4xf32>
  return
}

// Scheme templates: compile-time values, weights and constant patterns.
// CHECK-LABEL: func.func @template
func.func @template(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>, tensor<?x1xf32>) {
  // CHECK: %[[N:.*]] = drc.static "streams" : index
  %n = drc.static "streams" : index
  // CHECK: drc.static "dynamic" : i1
  %dyn = drc.static "dynamic" : i1
  %d = drc.static "d" : index
  // CHECK: drc.weight "res.w" [%[[N]], %{{.*}}] init constant(0.000000e+00) decay : tensor<?x?xf32>
  %w = drc.weight "res.w" [%n, %d] init zeros decay : tensor<?x?xf32>
  // CHECK: drc.weight "res.s" init constant(1.000000e-02) : tensor<f32>
  %s = drc.weight "res.s" init constant(0.01) : tensor<f32>
  // CHECK: drc.weight "embed.w_exp" [%{{.*}}, %{{.*}}] init matrix decay : tensor<?x?xf32>
  %m = drc.weight "embed.w_exp" [%d, %d] init matrix decay : tensor<?x?xf32>
  // CHECK: %[[E:.*]] = drc.eye [%[[N]], %{{.*}}] at %{{.*}} {off = -8.000000e+00 : f64} : tensor<?x1xf32>
  %c1 = arith.constant 1 : index
  %e = drc.eye [%n, %c1] at %c1 {off = -8.0} : tensor<?x1xf32>
  // CHECK: drc.weight "res.a0" = %[[E]] : tensor<?x1xf32>
  %a0 = drc.weight "res.a0" = %e : tensor<?x1xf32>
  return %w, %s, %m, %a0 : tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>, tensor<?x1xf32>
}

// CHECK-LABEL: func.func @depth
func.func @depth(%u: tensor<6x8xf64>, %w: tensor<8x8xf64>, %c: tensor<6x2x8xf64>, %lse: tensor<6x2xf64>) {
  // CHECK: drc.attention {{.*}} depth %{{.*}}, %{{.*}} {n_head = 2 : i64, seq_len = 3 : i64}
  %a = drc.attention %u, %w, %w, %w, %w depth %c, %c {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>, tensor<6x2x8xf64>, tensor<6x2x8xf64>) -> tensor<6x8xf64>
  // CHECK: drc.depth_attention {{.*}} merge
  %d = drc.depth_attention %u, %c, %c merge %a, %lse {n_head = 2 : i64} : (tensor<6x8xf64>, tensor<6x2x8xf64>, tensor<6x2x8xf64>, tensor<6x8xf64>, tensor<6x2xf64>) -> tensor<6x8xf64>
  // CHECK: drc.depth_attention_grad {{.*}} merge {{.*}} grad
  %g:5 = drc.depth_attention_grad %u, %c, %c merge %a, %lse, %d grad %d {n_head = 2 : i64} : (tensor<6x8xf64>, tensor<6x2x8xf64>, tensor<6x2x8xf64>, tensor<6x8xf64>, tensor<6x2xf64>, tensor<6x8xf64>, tensor<6x8xf64>) -> (tensor<6x8xf64>, tensor<6x2x8xf64>, tensor<6x2x8xf64>, tensor<6x8xf64>, tensor<6x2xf64>)
  return
}

// CHECK-LABEL: func.func @fused
// CHECK:       drc.fused(%{{.*}}, %{{.*}}) {tile = 4 : i64, tokens = 8 : i64} : (tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
// CHECK-NEXT:  ^bb0(%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<16xf32>):
// CHECK:         drc.yield
func.func @fused(%x: tensor<8x16xf32>, %g: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %h, %u = drc.fused(%x, %g) {tile = 4 : i64, tokens = 8 : i64} : (tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  ^bb0(%xt: tensor<4x16xf32>, %gt: tensor<16xf32>):
    %ht = drc.add %xt, %xt : tensor<4x16xf32>
    %ut = drc.rms_norm %ht gain %gt : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    drc.yield %ht, %ut : tensor<4x16xf32>, tensor<4x16xf32>
  }
  return %h, %u : tensor<8x16xf32>, tensor<8x16xf32>
}

// A sum over the tokens computed per tile: one partial sum per tile.
// CHECK-LABEL: func.func @fused_partials
// CHECK:       drc.fused(%{{.*}}) {partials = array<i64: 1>, tile = 4 : i64, tokens = 8 : i64} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<2x16xf32>)
// CHECK:         drc.sum_leading %{{.*}} : (tensor<4x16xf32>) -> tensor<16xf32>
func.func @fused_partials(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %h, %p = drc.fused(%x) {partials = array<i64: 1>, tile = 4 : i64, tokens = 8 : i64} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<2x16xf32>) {
  ^bb0(%xt: tensor<4x16xf32>):
    %ht = drc.add %xt, %xt : tensor<4x16xf32>
    %st = drc.sum_leading %ht : (tensor<4x16xf32>) -> tensor<16xf32>
    drc.yield %ht, %st : tensor<4x16xf32>, tensor<16xf32>
  }
  %s = drc.sum_leading %p : (tensor<2x16xf32>) -> tensor<16xf32>
  return %h, %s : tensor<8x16xf32>, tensor<16xf32>
}
