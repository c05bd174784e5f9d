// HC: dynamic Hyper-Connections (ARCHITECTURES.md §2.7), n = streams.
//   state   H ∈ ℝ^{n×d}, n copies of h_0
//   coefs   H̄ = N̂(H) row-wise;  A = s_A tanh(H̄ W_A) + A⁰_k,  β = s_B tanh(H̄ w_B) + 1
//           A = [A_m | A_r], A⁰_k = [e_{k mod n} | I_n]; W_A's columns are
//           the weights res.w_read (A_m) and res.w_mix (A_r)
//   read    u_k = RMSNorm_{γ_k}(A_mᵀ H)
//   write   H <- A_rᵀ H + β f_kᵀ
//   readout h_out = Σ_i H_i
//   static  with dynamic = false, A = A⁰ and β = 1 (shared by all tokens)
module attributes {drc.options = {streams = 4, dynamic = true}, drc.option_min = {streams = 1}} {
  func.func @embed(%h0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %n = drc.static "streams" : index
    %one = arith.constant 1.0 : f32
    %ones = tensor.splat %one[%n] : tensor<1x?xf32>
    %row = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %h = drc.mix %row by %ones : (tensor<?x1x?xf32>, tensor<1x?xf32>) -> tensor<?x?x?xf32>
    return %h : tensor<?x?x?xf32>
  }

  // s tanh(H̄ w) + c0: row i of the coefficients is predicted from stream i.
  func.func @coef(%hbar: tensor<?x?x?xf32>, %w: tensor<?x?xf32>, %s: tensor<f32>, %c0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %z = drc.linear %hbar, %w : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %t = drc.squash "tanh" %z : tensor<?x?x?xf32>
    %st = drc.scale %t by %s : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
    %c = drc.shift %st by %c0 : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    return %c : tensor<?x?x?xf32>
  }

  func.func @read(%h: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<*xf32> {drc.transport = "coef"}, tensor<*xf32>) {
    %d = drc.static "d" : index
    %n = drc.static "streams" : index
    %k = drc.static "k" : index
    %dynamic = drc.static "dynamic" : i1
    %c1 = arith.constant 1 : index
    %kn = arith.remui %k, %n : index
    %e = drc.eye [%n, %c1] at %kn : tensor<?x1xf32>
    %eye = drc.eye [%n, %n] : tensor<?x?xf32>
    %a0m = drc.weight "res.a0_read" = %e : tensor<?x1xf32>
    %a0r = drc.weight "res.a0_mix" = %eye : tensor<?x?xf32>
    %b0 = drc.weight "res.beta0" [%n, %c1] init ones : tensor<?x?xf32>
    %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>

    // Per-token coefficients [N, n, .] when dynamic, else A⁰ and β⁰ themselves.
    %am, %ar, %beta = scf.if %dynamic -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
      %wm = drc.weight "res.w_read" [%c1, %d] init zeros decay : tensor<?x?xf32>
      %wr = drc.weight "res.w_mix" [%n, %d] init zeros decay : tensor<?x?xf32>
      %wb = drc.weight "res.w_beta" [%c1, %d] init zeros decay : tensor<?x?xf32>
      %sa = drc.weight "res.s_a" init constant(0.01) decay : tensor<f32>
      %sb = drc.weight "res.s_b" init constant(0.01) decay : tensor<f32>
      %hbar = drc.rms_norm %h : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
      %dm = func.call @coef(%hbar, %wm, %sa, %a0m) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?x1xf32>) -> tensor<?x?x?xf32>
      %dr = func.call @coef(%hbar, %wr, %sa, %a0r) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
      %db = func.call @coef(%hbar, %wb, %sb, %b0) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
      scf.yield %dm, %dr, %db : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>
    } else {
      scf.yield %a0m, %a0r, %b0 : tensor<?x1xf32>, tensor<?x?xf32>, tensor<?x?xf32>
    }
    %m0 = drc.mix %h by %am : (tensor<?x?x?xf32>, tensor<*xf32>) -> tensor<?x1x?xf32>
    %x = drc.view %m0 : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    %u = drc.rms_norm %x gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    return %u, %h, %ar, %beta : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<*xf32>, tensor<*xf32>
  }

  // β is [N, n, 1] or [n, 1]: read transposed it spreads f's one row over n.
  func.func @write(%h: tensor<?x?x?xf32>, %ar: tensor<*xf32>, %beta: tensor<*xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %kept = drc.mix %h by %ar : (tensor<?x?x?xf32>, tensor<*xf32>) -> tensor<?x?x?xf32>
    %frow = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %spread = drc.mix %frow by %beta {transpose_coef} : (tensor<?x1x?xf32>, tensor<*xf32>) -> tensor<?x?x?xf32>
    %next = drc.add %kept, %spread : tensor<?x?x?xf32>
    return %next : tensor<?x?x?xf32>
  }

  func.func @readout(%h: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
    %n = drc.static "streams" : index
    %one = arith.constant 1.0 : f32
    %ones = tensor.splat %one[%n] : tensor<?x1xf32>
    %sum = drc.mix %h by %ones : (tensor<?x?x?xf32>, tensor<?x1xf32>) -> tensor<?x1x?xf32>
    %out = drc.view %sum : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    return %out : tensor<?x?xf32>
  }
}
