// mHC: Manifold-Constrained Hyper-Connections (ARCHITECTURES.md §2.8), n = streams.
//   state   x ∈ ℝ^{n×d}, n copies of h_0
//   coefs   x̂ = N̂(vec x) (one RMS over all nd entries);  z = x̂ φ, φ = [φ^pre | φ^post | φ^res]
//           H^pre = σ(α^pre z^pre + b^pre),  H^post = 2σ(α^post z^post + b^post)
//           H^res = SK(α^res mat(z^res) + b^res): exp, then T times each column
//           and then each row divided by its sum (+1e-6)
//   read    u_k = RMSNorm_{γ_k}(Σ_i H^pre_i x_i)
//   write   x_i <- Σ_j H^res_ij x_j + H^post_i f_k
//   readout h_out = (1/n) Σ_i x_i, or with mhc_head = true DeepSeek's learned
//           head: Σ_i σ(α^head z^head_i + b^head_i) x_i, z^head = x̂ φ^head (the
//           mean's direction at init: φ^head = 0, α^head = 0.01, b^head = 0)
//   init    gap-8: φ = 0, α = 0.01, b^pre = ±8 (+8 on stream k mod n), b^post = 0,
//           b^res = 0 on the diagonal and −8 off it
module attributes {drc.options = {streams = 4, sinkhorn_iterations = 20, mhc_head = false}, drc.option_min = {streams = 1, sinkhorn_iterations = 1}} {
  func.func @embed(%h0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %n = drc.static "streams" : index
    %one = arith.constant 1.0 : f32
    %ones = tensor.splat %one[%n] : tensor<1x?xf32>
    %row = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %x = drc.mix %row by %ones : (tensor<?x1x?xf32>, tensor<1x?xf32>) -> tensor<?x?x?xf32>
    return %x : tensor<?x?x?xf32>
  }

  // Σ_i σ(α (x̂ φ)_i + b_i) x_i: the streams weighted by H^pre.
  func.func @pre_mix(%x: tensor<?x?x?xf32>, %xhat: tensor<?x?xf32>, %phi: tensor<?x?xf32>, %a: tensor<f32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
    %z = drc.linear %xhat, %phi : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %s = drc.scale %z by %a : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %p = drc.shift %s by %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    %h = drc.squash "sigmoid" %p : tensor<?x?xf32>
    %pre = drc.view %h : (tensor<?x?xf32>) -> tensor<?x?x1xf32>
    %m = drc.mix %x by %pre : (tensor<?x?x?xf32>, tensor<?x?x1xf32>) -> tensor<?x1x?xf32>
    %out = drc.view %m : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    return %out : tensor<?x?xf32>
  }

  func.func @read(%x: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32> {drc.transport = "transposed_coef"}, tensor<?x1x?xf32>) {
    %d = drc.static "d" : index
    %n = drc.static "streams" : index
    %k = drc.static "k" : index
    %T = drc.static "sinkhorn_iterations" : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nd = arith.muli %n, %d : index
    %nn = arith.muli %n, %n : index
    %kn = arith.remui %k, %n : index
    %gap_pre = drc.eye [%n] at %kn {on = 8.0, off = -8.0} : tensor<?xf32>
    %gap_res = drc.eye [%n, %n] {on = 0.0, off = -8.0} : tensor<?x?xf32>
    %phi_pre = drc.weight "res.phi_pre" [%n, %nd] init zeros decay : tensor<?x?xf32>
    %phi_post = drc.weight "res.phi_post" [%n, %nd] init zeros decay : tensor<?x?xf32>
    %phi_res = drc.weight "res.phi_res" [%nn, %nd] init zeros decay : tensor<?x?xf32>
    %a_pre = drc.weight "res.alpha_pre" init constant(0.01) : tensor<f32>
    %a_post = drc.weight "res.alpha_post" init constant(0.01) : tensor<f32>
    %a_res = drc.weight "res.alpha_res" init constant(0.01) : tensor<f32>
    %b_pre = drc.weight "res.b_pre" = %gap_pre : tensor<?xf32>
    %b_post = drc.weight "res.b_post" [%n] init zeros : tensor<?xf32>
    %b_res = drc.weight "res.b_res" = %gap_res : tensor<?x?xf32>
    %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>

    %flat = drc.view %x : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    %xhat = drc.rms_norm %flat : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %z_post = drc.linear %xhat, %phi_post : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %z_res = drc.linear %xhat, %phi_res : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %s_post = drc.scale %z_post by %a_post : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %p_post = drc.shift %s_post by %b_post : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    %h_post = drc.squash "sigmoid" %p_post {scale = 2.0} : tensor<?x?xf32>
    %m_res = drc.view %z_res [%n, %n] : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %s_res = drc.scale %m_res by %a_res : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
    %p_res = drc.shift %s_res by %b_res : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %e = drc.squash "exp" %p_res : tensor<?x?x?xf32>
    %h_res = scf.for %it = %c0 to %T step %c1 iter_args(%m = %e) -> tensor<?x?x?xf32> {
      %cols = drc.normalize %m {axis = 1} : tensor<?x?x?xf32>
      %rows = drc.normalize %cols {axis = 2} : tensor<?x?x?xf32>
      scf.yield %rows : tensor<?x?x?xf32>
    }

    %read = func.call @pre_mix(%x, %xhat, %phi_pre, %a_pre, %b_pre) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?xf32>) -> tensor<?x?xf32>
    %u = drc.rms_norm %read gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    %post = drc.view %h_post : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    return %u, %x, %h_res, %post : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x1x?xf32>
  }

  func.func @write(%x: tensor<?x?x?xf32>, %h_res: tensor<?x?x?xf32>, %post: tensor<?x1x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %kept = drc.mix %x by %h_res {transpose_coef} : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    %frow = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %spread = drc.mix %frow by %post : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
    %next = drc.add %kept, %spread : tensor<?x?x?xf32>
    return %next : tensor<?x?x?xf32>
  }

  func.func @readout(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
    %n = drc.static "streams" : index
    %head = drc.static "mhc_head" : i1
    %out = scf.if %head -> tensor<?x?xf32> {
      %d = drc.static "d" : index
      %nd = arith.muli %n, %d : index
      %phi = drc.weight "phi_head" [%n, %nd] init zeros decay : tensor<?x?xf32>
      %a = drc.weight "alpha_head" init constant(0.01) : tensor<f32>
      %b = drc.weight "b_head" [%n] init zeros : tensor<?xf32>
      %flat = drc.view %x : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
      %xhat = drc.rms_norm %flat : (tensor<?x?xf32>) -> tensor<?x?xf32>
      %h = func.call @pre_mix(%x, %xhat, %phi, %a, %b) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?xf32>) -> tensor<?x?xf32>
      scf.yield %h : tensor<?x?xf32>
    } else {
      %ni = arith.index_cast %n : index to i64
      %nf = arith.sitofp %ni : i64 to f32
      %one = arith.constant 1.0 : f32
      %inv = arith.divf %one, %nf : f32
      %mean = tensor.splat %inv[%n] : tensor<?x1xf32>
      %avg = drc.mix %x by %mean : (tensor<?x?x?xf32>, tensor<?x1xf32>) -> tensor<?x1x?xf32>
      %h = drc.view %avg : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
      scf.yield %h : tensor<?x?xf32>
    }
    return %out : tensor<?x?xf32>
  }
}
