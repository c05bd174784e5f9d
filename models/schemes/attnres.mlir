// Full AttnRes (ARCHITECTURES.md §2.9, arXiv 2603.15031): attention over depth.
//   state   a bank of k+1 rows at sublayer k: c_0 = h_0, c_{i+1} = f_i
//   read    a = softmax_i(w_kᵀ RMSNorm_{κ_k}(c_i)),  m_k = Σ_i a_i c_i,
//           u_k = RMSNorm_{γ_k}(m_k)
//   write   append f_k
//   readout the same mixer with its own (w_f, κ_f) over all 2L+1 rows
//   probes  z_b = m_{2b}, the mix block b's attention reads
// w starts at exactly 0 (uniform weights): ≡ Pre-LN at init.

func.func @embed(%h0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %bank = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %b = tensor.cast %bank : tensor<?x1x?xf32> to tensor<?x?x?xf32>
  return %b : tensor<?x?x?xf32>
}

// m = Σ_i softmax_i(wᵀ RMSNorm_κ(c_i)) c_i over the rows of the bank.
func.func @depth_mix(%bank: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %c1 = arith.constant 1 : index
  %w = drc.weight "res.query" [%c1, %d] init zeros decay : tensor<?x?xf32>
  %kappa = drc.weight "res.norm.gain" [%d] init ones : tensor<?xf32>
  %keys = drc.rms_norm %bank gain %kappa : (tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
  %logits = drc.linear %keys, %w : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x1xf32>
  %a = drc.softmax %logits {axis = 1} : tensor<?x?x1xf32>
  %m = drc.mix %bank by %a : (tensor<?x?x?xf32>, tensor<?x?x1xf32>) -> tensor<?x1x?xf32>
  %flat = drc.view %m : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
  return %flat : tensor<?x?xf32>
}

func.func @read(%bank: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %m = func.call @depth_mix(%bank) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  %u = drc.rms_norm %m gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %bank : tensor<?x?xf32>, tensor<?x?x?xf32>
}

// The layer probes' z_b.
func.func @depth_state(%bank: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %m = func.call @depth_mix(%bank) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  return %m : tensor<?x?xf32>
}

func.func @write(%bank: tensor<?x?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %row = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %next = drc.append %bank, %row : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  return %next : tensor<?x?x?xf32>
}

func.func @readout(%bank: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %m = func.call @depth_mix(%bank) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  return %m : tensor<?x?xf32>
}
