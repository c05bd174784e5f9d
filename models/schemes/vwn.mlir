// VWN: Virtual Width Networks / Generalized Hyper-Connections (ARCHITECTURES.md §2.12).
//   shapes  m backbone fractions, n ≥ m segments of width d_b = d/m, r = n/m, D' = n·d_b
//   embed   e = W_exp E[x] ∈ ℝ^{D'} (factorised), or E'[x] with E' ∈ ℝ^{V×D'}
//           (factorised = false);  H = reshape(e) ∈ ℝ^{n×d_b}
//   coefs   H̄ = RMSNorm_g(H) row-wise, τ = √d_b
//           A = S_A ∘ tanh(H̄ W_A/τ) + A⁰ = [Å | Â],  B = S_B ∘ tanh(H̄ W_B/τ)ᵀ + B⁰
//           (W_A's columns are the weights res.w_read (Å) and res.w_mix (Â);
//           B's terms are stored transposed, n×m: res.s_write, res.b0_write)
//   read    u_k = RMSNorm_{γ_k}(concat(ÅᵀH))
//   write   H <- ÂᵀH + Bᵀ reshape(f_k)
//   readout h_out = W_red GN(vec H): GroupNorm over r groups of d channels,
//           affine (1, 0); omitted when r ∉ ℤ or groupnorm = false
//   init    Å⁰ = [I_m; 0], Â⁰ = I_n, B⁰_ij = 1 iff j mod m = i; S = 1; W = 0
//   static  with dynamic = false, A = A⁰ and B = B⁰ (shared by all tokens)
//   MTP     with mtp = true, a next-2-token head: per segment j,
//           G_j = W_M [a_j ; c_j], a = RMSNorm_{γ_H}(vec H), c = RMSNorm_{γ_E}(e(x_{t+1})),
//           W_M = [w_m_h | w_m_e] ∈ ℝ^{d_b×2d_b}; then one VWN layer, GN, W_red and
//           final norm of its own and the shared W_U; loss L + mtp_weight·L_MTP
module attributes {drc.options = {m = 2, n = 3, groupnorm = true, dynamic = true, factorised = true, mtp = false, mtp_weight = 0.3}, drc.option_min = {m = 1, n = 1}} {
  func.func @embed(%ids: tensor<?xi32>) -> tensor<?x?x?xf32> {
    %vocab = drc.static "vocab" : index
    %d = drc.static "d" : index
    %m = drc.static "m" : index
    %n = drc.static "n" : index
    %factorised = drc.static "factorised" : i1
    %c0 = arith.constant 0 : index
    %remainder = arith.remui %d, %m : index
    %divides = arith.cmpi eq, %remainder, %c0 : index
    drc.require %divides, "VWN's m = {m} must divide d_model = {d}"
    %enough = arith.cmpi uge, %n, %m : index
    drc.require %enough, "VWN's n = {n} must be at least m = {m}"
    %db = arith.divui %d, %m : index
    %wide = arith.muli %n, %db : index
    %e = scf.if %factorised -> tensor<?x?xf32> {
      %table = drc.weight "weight" [%vocab, %d] init matrix decay : tensor<?x?xf32>
      %x = drc.embed %table[%ids] : (tensor<?x?xf32>, tensor<?xi32>) -> tensor<?x?xf32>
      %wexp = drc.weight "w_exp" [%wide, %d] init matrix decay : tensor<?x?xf32>
      %ex = drc.linear %x, %wexp : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      scf.yield %ex : tensor<?x?xf32>
    } else {
      %table = drc.weight "wide" [%vocab, %wide] init matrix decay : tensor<?x?xf32>
      %ex = drc.embed %table[%ids] : (tensor<?x?xf32>, tensor<?xi32>) -> tensor<?x?xf32>
      scf.yield %ex : tensor<?x?xf32>
    }
    %h = drc.view %e [%n, %db] : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
    return %h : tensor<?x?x?xf32>
  }

  // S ∘ tanh(H̄ w / τ) + c0, one row per segment.
  func.func @coef(%hbar: tensor<?x?x?xf32>, %w: tensor<?x?xf32>, %s: tensor<?x?xf32>, %c0: tensor<?x?xf32>, %tau: f32) -> tensor<?x?x?xf32> {
    %one = arith.constant 1.0 : f32
    %inv = arith.divf %one, %tau : f32
    %factor = tensor.from_elements %inv : tensor<f32>
    %z = drc.linear %hbar, %w : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %zt = drc.scale %z by %factor : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
    %t = drc.squash "tanh" %zt : tensor<?x?x?xf32>
    %st = drc.scale %t by %s : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %c = drc.shift %st by %c0 : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    return %c : tensor<?x?x?xf32>
  }

  func.func @read(%h: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<*xf32> {drc.transport = "coef"}, tensor<*xf32>) {
    %dynamic = drc.static "dynamic" : i1
    %d = drc.static "d" : index
    %m = drc.static "m" : index
    %n = drc.static "n" : index
    %db = arith.divui %d, %m : index
    %dbi = arith.index_cast %db : index to i64
    %dbf = arith.sitofp %dbi : i64 to f32
    %tau = math.sqrt %dbf : f32
    %eye_read = drc.eye [%n, %m] : tensor<?x?xf32>
    %eye_mix = drc.eye [%n, %n] : tensor<?x?xf32>
    %cyclic = drc.eye [%n, %m] {cyclic} : tensor<?x?xf32>
    %a0_read = drc.weight "res.a0_read" = %eye_read : tensor<?x?xf32>
    %a0_mix = drc.weight "res.a0_mix" = %eye_mix : tensor<?x?xf32>
    %b0_write = drc.weight "res.b0_write" = %cyclic : tensor<?x?xf32>
    %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>

    // Per-token coefficients [N, n, .] when dynamic, else A⁰ and B⁰ themselves.
    %a_read, %a_mix, %b_t = scf.if %dynamic -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
      %g = drc.weight "res.norm.gain" [%db] init ones : tensor<?xf32>
      %w_read = drc.weight "res.w_read" [%m, %db] init zeros decay : tensor<?x?xf32>
      %w_mix = drc.weight "res.w_mix" [%n, %db] init zeros decay : tensor<?x?xf32>
      %w_write = drc.weight "res.w_write" [%m, %db] init zeros decay : tensor<?x?xf32>
      %s_read = drc.weight "res.s_read" [%n, %m] init ones decay : tensor<?x?xf32>
      %s_mix = drc.weight "res.s_mix" [%n, %n] init ones decay : tensor<?x?xf32>
      %s_write = drc.weight "res.s_write" [%n, %m] init ones decay : tensor<?x?xf32>
      %hbar = drc.rms_norm %h gain %g : (tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
      %dr = func.call @coef(%hbar, %w_read, %s_read, %a0_read, %tau) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, f32) -> tensor<?x?x?xf32>
      %dm = func.call @coef(%hbar, %w_mix, %s_mix, %a0_mix, %tau) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, f32) -> tensor<?x?x?xf32>
      %dw = func.call @coef(%hbar, %w_write, %s_write, %b0_write, %tau) : (tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, f32) -> tensor<?x?x?xf32>
      scf.yield %dr, %dm, %dw : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>
    } else {
      scf.yield %a0_read, %a0_mix, %b0_write : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
    }
    %rows = drc.mix %h by %a_read : (tensor<?x?x?xf32>, tensor<*xf32>) -> tensor<?x?x?xf32>
    %x = drc.view %rows : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    %u = drc.rms_norm %x gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    return %u, %h, %a_mix, %b_t : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<*xf32>, tensor<*xf32>
  }

  func.func @write(%h: tensor<?x?x?xf32>, %a_mix: tensor<*xf32>, %b_t: tensor<*xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %m = drc.static "m" : index
    %kept = drc.mix %h by %a_mix : (tensor<?x?x?xf32>, tensor<*xf32>) -> tensor<?x?x?xf32>
    %z = drc.view %f [%m] : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %spread = drc.mix %z by %b_t {transpose_coef} : (tensor<?x?x?xf32>, tensor<*xf32>) -> tensor<?x?x?xf32>
    %next = drc.add %kept, %spread : tensor<?x?x?xf32>
    return %next : tensor<?x?x?xf32>
  }

  func.func @readout(%h: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
    %d = drc.static "d" : index
    %m = drc.static "m" : index
    %n = drc.static "n" : index
    %option = drc.static "groupnorm" : i1
    %c0 = arith.constant 0 : index
    %r = arith.divui %n, %m : index
    %rem = arith.remui %n, %m : index
    %whole = arith.cmpi eq, %rem, %c0 : index
    %gn = arith.andi %whole, %option : i1
    %wide = drc.view %h : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    %normed = scf.if %gn -> tensor<?x?xf32> {
      %dwide = arith.muli %r, %d : index
      %groups = drc.view %wide [%r, %d] : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
      %centred = drc.center %groups : tensor<?x?x?xf32>
      %unit = drc.rms_norm %centred : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
      %flat = drc.view %unit : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
      %weight = drc.weight "gn.weight" [%dwide] init ones : tensor<?xf32>
      %bias = drc.weight "gn.bias" [%dwide] init zeros : tensor<?xf32>
      %scaled = drc.scale %flat by %weight : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
      %shifted = drc.shift %scaled by %bias : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
      scf.yield %shifted : tensor<?x?xf32>
    } else {
      scf.yield %wide : tensor<?x?xf32>
    }
    %db = arith.divui %d, %m : index
    %dprime = arith.muli %n, %db : index
    %wred = drc.weight "w_red" [%d, %dprime] init matrix decay : tensor<?x?xf32>
    %out = drc.linear %normed, %wred : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    return %out : tensor<?x?xf32>
  }

  // RMSNorm_g over all D' values of each token's state.
  func.func @flat_norm(%h: tensor<?x?x?xf32>, %g: tensor<?xf32>) -> tensor<?x?x?xf32> {
    %n = drc.static "n" : index
    %flat = drc.view %h : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    %normed = drc.rms_norm %flat gain %g : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    %rows = drc.view %normed [%n] : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
    return %rows : tensor<?x?x?xf32>
  }

  func.func @mtp(%h: tensor<?x?x?xf32>, %e: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
    %d = drc.static "d" : index
    %m = drc.static "m" : index
    %n = drc.static "n" : index
    %db = arith.divui %d, %m : index
    %dprime = arith.muli %n, %db : index
    %gh = drc.weight "h_norm.gain" [%dprime] init ones : tensor<?xf32>
    %ge = drc.weight "e_norm.gain" [%dprime] init ones : tensor<?xf32>
    %wh = drc.weight "w_m_h" [%db, %db] init matrix decay : tensor<?x?xf32>
    %we = drc.weight "w_m_e" [%db, %db] init matrix decay : tensor<?x?xf32>
    %a = func.call @flat_norm(%h, %gh) : (tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
    %c = func.call @flat_norm(%e, %ge) : (tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
    %ga = drc.linear %a, %wh : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %gc = drc.linear %c, %we : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
    %g = drc.add %ga, %gc : tensor<?x?x?xf32>
    return %g : tensor<?x?x?xf32>
  }

  func.func @mtp_weight() -> f64 {
    %on = drc.static "mtp" : i1
    %w = drc.static "mtp_weight" : f64
    %zero = arith.constant 0.0 : f64
    %lambda = arith.select %on, %w, %zero : f64
    return %lambda : f64
  }
}
