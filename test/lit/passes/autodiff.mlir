// RUN: drc-opt %s --drc-autodiff="weight-decay=0.05 max-grad-norm=2.0" -split-input-file -verify-diagnostics | FileCheck %s

drc.param @w : tensor<4x3xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
drc.param @g : tensor<3xf32> init #drc.init<constant(1.0)>
drc.param @unused : tensor<2xf32> init #drc.init<constant(1.0)>

// The loss function stays for evaluation.
// CHECK-LABEL: func.func @loss
func.func @loss(%x: tensor<5xi32>, %y: tensor<5xi32>) -> tensor<f32> {
  %w = drc.param_ref @w : tensor<4x3xf32>
  %g = drc.param_ref @g : tensor<3xf32>
  %h = drc.embed %w[%x] : (tensor<4x3xf32>, tensor<5xi32>) -> tensor<5x3xf32>
  %n = drc.rms_norm %h gain %g : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  // Two uses of %h: its adjoint is the sum of both paths.
  %s = drc.add %n, %h : tensor<5x3xf32>
  %l = drc.cross_entropy %s, %y : (tensor<5x3xf32>, tensor<5xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<5xi32>, %{{.*}}: tensor<5xi32>, %[[LR:.*]]: tensor<f32>, %[[STEP:.*]]: tensor<f32>) -> (tensor<f32>, tensor<f32>)
// CHECK: %[[LOSS:.*]] = drc.cross_entropy
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DS:.*]] = drc.cross_entropy_grad %{{.*}}, %{{.*}} grad %[[ONE]]
// CHECK: %[[DH1:.*]] = drc.rms_norm_grad %{{.*}} gain %{{.*}} grad %[[DS]]
// CHECK: %[[DG:.*]] = drc.rms_norm_gain_grad %{{.*}} grad %[[DS]]
// CHECK: %[[DH:.*]] = drc.add %[[DS]], %[[DH1]]
// CHECK: %[[DW:.*]] = drc.embed_grad %{{.*}} grad %[[DH]]
// Every parameter gets a gradient; an unused one gets zeros.
// CHECK: drc.grad_store %[[DW]] to @w
// CHECK: drc.grad_store %[[DG]] to @g
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: drc.grad_store %[[ZERO]] to @unused
// CHECK: %[[NORM:.*]] = drc.adamw %[[LR]], %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 2.000000e+00 : f64, weight_decay = 5.000000e-02 : f64}
// CHECK: return %[[LOSS]], %[[NORM]]

// -----

// A normed linear's input adjoint: one rms_norm adjoint of sum_i dy_i W_i,
// with the rows' sums of that times x-hat given as sum_i dy_i . y_i
// (drc.row_dot over each projection's outputs), both summed from the last
// projection to the first.
drc.param @e : tensor<4x8xf32> init #drc.init<constant(0.5)>
drc.param @p : tensor<4x8xf32> init #drc.init<constant(0.1)>
drc.param @q : tensor<4x8xf32> init #drc.init<constant(0.2)>
// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]] = drc.embed
// CHECK: %[[Y:.*]]:2 = drc.normed_linear %[[H]], %[[P:.*]], %[[Q:.*]] :
// CHECK: %[[DS:.*]] = drc.cross_entropy_grad
// CHECK: %[[D1:.*]] = drc.row_dot %[[DS]], %[[Y]]#1 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x1xf32>
// CHECK: %[[G1:.*]] = drc.matmul %[[DS]], %[[Q]] : (tensor<5x4xf32>, tensor<4x8xf32>) -> tensor<5x8xf32>
// CHECK: %[[DQ:.*]] = drc.normed_linear_weight_grad %[[H]] grad %[[DS]]
// CHECK: %[[D0:.*]] = drc.row_dot %[[DS]], %[[Y]]#0
// CHECK: %[[DOT:.*]] = drc.add %[[D1]], %[[D0]] : tensor<5x1xf32>
// CHECK: %[[G0:.*]] = drc.matmul %[[DS]], %[[P]]
// CHECK: %[[G:.*]] = drc.add %[[G1]], %[[G0]] : tensor<5x8xf32>
// CHECK: %[[DP:.*]] = drc.normed_linear_weight_grad %[[H]] grad %[[DS]]
// CHECK: %[[DX:.*]] = drc.rms_norm_grad %[[H]] grad %[[G]] dot %[[DOT]] : (tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x1xf32>) -> tensor<5x8xf32>
// CHECK: drc.embed_grad %{{.*}} grad %[[DX]]
func.func @loss(%x: tensor<5xi32>, %t: tensor<5xi32>) -> tensor<f32> {
  %e = drc.param_ref @e : tensor<4x8xf32>
  %p = drc.param_ref @p : tensor<4x8xf32>
  %q = drc.param_ref @q : tensor<4x8xf32>
  %h = drc.embed %e[%x] : (tensor<4x8xf32>, tensor<5xi32>) -> tensor<5x8xf32>
  %y:2 = drc.normed_linear %h, %p, %q : (tensor<5x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>)
  %s = drc.add %y#0, %y#1 : tensor<5x4xf32>
  %l = drc.cross_entropy %s, %t : (tensor<5x4xf32>, tensor<5xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

drc.param @w : tensor<4x4xf32> init #drc.init<constant(0.0)>
func.func @loss(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<f32> {
  %w = drc.param_ref @w : tensor<4x4xf32>
  // expected-error @+1 {{drc-autodiff: 'drc.silu_mul_grad' has no gradient rule; implement DifferentiableOpInterface for it or keep it off the path from the parameters to the loss}}
  %a, %b = drc.silu_mul_grad %w, %w grad %w : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %l = drc.cross_entropy %a, %y : (tensor<4x4xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{drc-autodiff: no function @loss to differentiate (set the pass option func=)}}
module {
  func.func @other() { return }
}

// -----

// expected-error @+1 {{drc-autodiff: @loss must return scalar float tensors of one type: the loss, then any auxiliary losses, each with its weight in the training objective as {drc.objective_weight = w : f64}; found '(tensor<4xf32>) -> tensor<4xf32>'}}
func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An auxiliary loss without its weight.
// expected-error @+1 {{drc-autodiff: @loss must return scalar float tensors of one type}}
func.func @loss(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}
