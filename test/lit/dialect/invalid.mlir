// RUN: drc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{trunc_normal needs a positive std and clip, got (-2.000000e-02, 6.000000e-02)}}
drc.param @w : tensor<4x4xf32> init #drc.init<trunc_normal(-0.02, 0.06)>

// -----

// expected-error @+1 {{unknown initialiser 'uniform'; expected trunc_normal(std, clip), constant(value), zeros, ones, matrix or values(dense<...>)}}
drc.param @w : tensor<4x4xf32> init #drc.init<uniform(0.1)>

// -----

// expected-error @+1 {{parameter @w: `matrix` is resolved by instantiation; a declared parameter needs trunc_normal(std, clip)}}
drc.param @w : tensor<4x4xf32> init #drc.init<matrix>

// -----

// expected-error @+1 {{parameter @w of type 'tensor<2x2xf32>' has initial values of type 'tensor<4xf32>'}}
drc.param @w : tensor<2x2xf32> init #drc.init<values(dense<[1.0, 0.0, 0.0, 1.0]> : tensor<4xf32>)>

// -----

// expected-error @+1 {{parameter @w needs a static, non-empty shape, found 'tensor<?x4xf32>'}}
drc.param @w : tensor<?x4xf32> init #drc.init<constant(1.0)>

// -----

func.func @f() {
  // expected-error @+1 {{refers to @missing, which is not a drc.param of this module}}
  %0 = drc.param_ref @missing : tensor<4xf32>
  return
}

// -----

drc.param @g : tensor<8xf32> init #drc.init<constant(1.0)>
func.func @f() {
  // expected-error @+1 {{uses @g as 'tensor<4xf32>' but it is declared 'tensor<8xf32>'}}
  %0 = drc.param_ref @g : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{gain has shape [4] but normalising rows of width 8 requires [8]}}
  %0 = drc.rms_norm %x gain %g : (tensor<6x8xf32>, tensor<4xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{weight is [out, in] = [4, 6] but the input rows have width 8}}
  %0 = drc.linear %x, %w : (tensor<6x8xf32>, tensor<4x6xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<1x8xf32>, %v: tensor<2x6xf32>) {
  // expected-error @+1 {{weight is [out, in] = [2, 6] but the input rows have width 8}}
  %0:2 = drc.normed_linear %x, %w, %v : (tensor<6x8xf32>, tensor<1x8xf32>, tensor<2x6xf32>) -> (tensor<6x1xf32>, tensor<6x2xf32>)
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<1x8xf32>) {
  // expected-error @+1 {{needs one result per weight, and at least one weight; found 1 weights and 2 results}}
  %0:2 = drc.normed_linear %x, %w : (tensor<6x8xf32>, tensor<1x8xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>)
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<8x8xf32>) {
  // expected-error @+1 {{n_head = 3 must be positive and divide the width 8}}
  %0 = drc.attention %x, %w, %w, %w, %w {n_head = 3 : i64, seq_len = 3 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<8x8xf32>) {
  // expected-error @+1 {{head dimension 1 (width 8 / n_head 8) must be even for RoPE}}
  %0 = drc.attention %x, %w, %w, %w, %w {n_head = 8 : i64, seq_len = 3 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<8x8xf32>) {
  // expected-error @+1 {{seq_len = 4 must be positive and divide the 6 tokens (tokens = batch x seq_len)}}
  %0 = drc.attention %x, %w, %w, %w, %w {n_head = 2 : i64, seq_len = 4 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w: tensor<8x8xf32>, %k: tensor<8x4xf32>) {
  // expected-error @+1 {{wk has shape [8, 4] but an input of width 8 requires [8, 8]}}
  %0 = drc.attention %x, %w, %k, %w, %w {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %w1: tensor<24x8xf32>, %w2: tensor<8x16xf32>) {
  // expected-error @+1 {{w2 has shape [8, 16] but an FFN of width 8 and hidden width 24 requires [8, 24]}}
  %0 = drc.swiglu %x, %w1, %w1, %w2 : (tensor<6x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>, tensor<8x16xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x8xf32>, %t: tensor<5xi32>) {
  // expected-error @+1 {{has 5 targets for 6 rows of logits}}
  %0 = drc.cross_entropy %x, %t : (tensor<6x8xf32>, tensor<5xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%a: tensor<6x8xf32>, %b: tensor<6x8xf32>) {
  // expected-error @+1 {{contracts a dimension of 8 (lhs) with one of 6 (rhs)}}
  %0 = drc.matmul %a, %b : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%a: tensor<6x8xf32>, %b: tensor<8x8xf64>) {
  // expected-error @+1 {{rhs has element type 'f64' but the op works in 'f32'}}
  %0 = drc.matmul %a, %b : (tensor<6x8xf32>, tensor<8x8xf64>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%e: tensor<16x8xf32>, %t: tensor<6xi32>) {
  // expected-error @+1 {{result has shape [6, 4] but one row of the table per token requires [6, 8]}}
  %0 = drc.embed %e[%t] : (tensor<16x8xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %c: tensor<4x2xf32>) {
  // expected-error @+1 {{coefficients 'tensor<4x2xf32>' mix 4 rows but the input set has 3}}
  %0 = drc.mix %x by %c : (tensor<8x3x16xf32>, tensor<4x2xf32>) -> tensor<8x2x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %c: tensor<3x2xf32>) {
  // expected-error @+1 {{coefficients 'tensor<3x2xf32>' mix 2 rows but the input set has 3 (transpose_coef reads them as [k_out, k_in])}}
  %0 = drc.mix %x by %c {transpose_coef} : (tensor<8x3x16xf32>, tensor<3x2xf32>) -> tensor<8x3x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %c: tensor<4x3x2xf32>) {
  // expected-error @+1 {{per-token coefficients 'tensor<4x3x2xf32>' are for 4 tokens but the set has 8}}
  %0 = drc.mix %x by %c : (tensor<8x3x16xf32>, tensor<4x3x2xf32>) -> tensor<8x2x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %c: tensor<3x2xf32>) {
  // expected-error @+1 {{result has shape [8, 3, 16] but mixing to 2 rows requires [8, 2, 16]}}
  %0 = drc.mix %x by %c : (tensor<8x3x16xf32>, tensor<3x2xf32>) -> tensor<8x3x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x2x16xf32>) {
  // expected-error @+1 {{each token has 32 values in [8, 2, 16] but 30 in [8, 30]}}
  %0 = drc.view %x : (tensor<8x2x16xf32>) -> tensor<8x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x2x16xf32>) {
  // expected-error @+1 {{keeps the token dimension: input has 8 tokens, result 16}}
  %0 = drc.view %x : (tensor<8x2x16xf32>) -> tensor<16x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %y: tensor<8x1x8xf32>) {
  // expected-error @+1 {{set 1 is 'tensor<8x1x8xf32>' but set 0 has 8 tokens of width 16; joined sets must agree on both}}
  %0 = drc.append %x, %y : (tensor<8x3x16xf32>, tensor<8x1x8xf32>) -> tensor<8x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>) {
  // expected-error @+1 {{rows [2, 4) are not within the input's 3 rows}}
  %0 = drc.rows %x at 2 : (tensor<8x3x16xf32>) -> tensor<8x2x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{unknown squash 'relu'; expected "tanh", "sigmoid" or "exp"}}
  %0 = drc.squash "relu" %x : tensor<8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>, %s: tensor<3x8xf32>) {
  // expected-error @+1 {{scale 'tensor<3x8xf32>' must have the shape of a suffix of the input's [8, 3, 16] (it is broadcast over the leading dimensions)}}
  %0 = drc.scale %x by %s : (tensor<8x3x16xf32>, tensor<3x8xf32>) -> tensor<8x3x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x16xf32>) {
  // expected-error @+1 {{axis 3 is not a dimension of 'tensor<8x3x16xf32>'}}
  %0 = drc.softmax %x {axis = 3 : i64} : tensor<8x3x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4x4xf32>) {
  // expected-error @+1 {{axis -1 is not a dimension of 'tensor<8x4x4xf32>'}}
  %0 = drc.normalize %x {axis = -1 : i64} : tensor<8x4x4xf32>
  return
}

// -----

func.func @f(%u: tensor<6x8xf32>, %w: tensor<8x8xf32>, %c: tensor<6x2x4xf32>) {
  // expected-error @+1 {{depth keys has shape [6, 2, 4] but a depth cache of 2 rows for an input [6, 8] requires [6, 2, 8]}}
  %0 = drc.attention %u, %w, %w, %w, %w depth %c, %c {n_head = 2 : i64, seq_len = 3 : i64} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<6x2x4xf32>, tensor<6x2x4xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%q: tensor<6x8xf32>, %k: tensor<6x2x8xf32>, %v: tensor<6x3x8xf32>, %lse: tensor<6x2xf32>) {
  // expected-error @+1 {{values has shape [6, 3, 8] but keys of shape [6, 2, 8] requires [6, 2, 8]}}
  %0 = drc.depth_attention %q, %k, %v merge %q, %lse {n_head = 2 : i64} : (tensor<6x8xf32>, tensor<6x2x8xf32>, tensor<6x3x8xf32>, tensor<6x8xf32>, tensor<6x2xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%q: tensor<6x8xf32>, %k: tensor<6x2x8xf32>, %lse: tensor<6x4xf32>) {
  // expected-error @+1 {{lse has shape [6, 4] but one log-sum-exp per token and head requires [6, 2]}}
  %0 = drc.depth_attention %q, %k, %k merge %q, %lse {n_head = 2 : i64} : (tensor<6x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @f(%t: tensor<10xi32>) {
  // expected-error @+1 {{10 targets do not split into sequences of 4}}
  %0 = drc.lookahead %t {seq_len = 4 : i64} : tensor<10xi32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{tile 3 must divide the 8 tokens}}
  %0 = drc.fused(%x) {tile = 3 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%t: tensor<3x4xf32>):
    drc.yield %t : tensor<3x4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{body argument 0 has type 'tensor<2x4xf32>'; input 0 of type 'tensor<8x4xf32>' is read whole (the same type) or one tile of 4 tokens at a time}}
  %0 = drc.fused(%x) {tile = 4 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%t: tensor<2x4xf32>):
    drc.yield %t : tensor<2x4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{yields 2 values for 1 results}}
  %0 = drc.fused(%x) {tile = 4 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%t: tensor<4x4xf32>):
    drc.yield %t, %t : tensor<4x4xf32>, tensor<4x4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result 0 of type 'tensor<8x2xf32>' is not the 8-token whole of its yielded tile of type 'tensor<4x4xf32>'}}
  %0 = drc.fused(%x) {tile = 4 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x2xf32> {
  ^bb0(%t: tensor<4x4xf32>):
    drc.yield %t : tensor<4x4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{partial-sum result 0 of type 'tensor<8x4xf32>' does not stack one yielded 'tensor<4xf32>' per tile of 4 out of 8 tokens}}
  %0 = drc.fused(%x) {partials = array<i64: 0>, tile = 4 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%t: tensor<4x4xf32>):
    %s = drc.sum_leading %t : (tensor<4x4xf32>) -> tensor<4xf32>
    drc.yield %s : tensor<4xf32>
  }
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{partials names result 1 of 1}}
  %0 = drc.fused(%x) {partials = array<i64: 1>, tile = 4 : i64, tokens = 8 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%t: tensor<4x4xf32>):
    drc.yield %t : tensor<4x4xf32>
  }
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<6x64xf32>) {
  // expected-error @+1 {{scales the rows of 'tensor<8x4xf32>' by those of 'tensor<6x64xf32>': their leading shapes must agree}}
  %0 = drc.scale_by_inv_rms %dy by %x : (tensor<8x4xf32>, tensor<6x64xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{dot 'tensor<8xf32>' must hold one sum per row of 'tensor<8x4xf32>' (its shape with the last axis 1)}}
  %0 = drc.rms_norm_grad %x grad %x dot %d : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>, %y: tensor<8x2xf32>) {
  // expected-error @+1 {{multiplies 'tensor<8x4xf32>' by 'tensor<8x2xf32>': the operands must have one shape}}
  %0 = drc.row_dot %x, %y : (tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<8x1xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result 'tensor<8x4xf32>' must hold one sum per row of 'tensor<8x4xf32>' (its shape with the last axis 1)}}
  %0 = drc.row_dot %x, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @softmax_grad_dot(%y: tensor<6x5x1xf32>, %dy: tensor<6x5x1xf32>, %dot: tensor<6x5x1xf32>) {
  // expected-error @+1 {{dot 'tensor<6x5x1xf32>' must hold one sum per softmax of 'tensor<6x5x1xf32>' (its shape with axis 1 1)}}
  %g = drc.softmax_grad %y grad %dy dot %dot {axis = 1 : i64} : (tensor<6x5x1xf32>, tensor<6x5x1xf32>, tensor<6x5x1xf32>) -> tensor<6x5x1xf32>
  return
}
