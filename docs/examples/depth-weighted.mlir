// Depth-weighted averaging (in the spirit of DenseFormer, arXiv 2402.02622),
// the worked example of docs/schemes.md. Not in the library.
//   state   a bank of k+1 rows at sublayer k: c_0 = h_0, c_{i+1} = f_i
//   read    u_k = RMSNorm_{γ_k}(Σ_i α_{k,i} c_i),  α_k ∈ ℝ^{k+1} learned
//   write   append f_k
//   readout h_out = Σ_i α_{f,i} c_i over all 2L+1 rows
// α starts at all ones, so Σ_i α_{k,i} c_i = h_0 + Σ_{i<k} f_i is Pre-LN's
// state: the scheme equals Pre-LN at init and learns how to weigh depth.

func.func @embed(%h0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %row = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %bank = tensor.cast %row : tensor<?x1x?xf32> to tensor<?x?x?xf32>
  return %bank : tensor<?x?x?xf32>
}

// Σ_i α_i c_i with one learned weight per row of the bank.
func.func @average(%bank: tensor<?x?x?xf32>, %rows: index) -> tensor<?x?xf32> {
  %c1 = arith.constant 1 : index
  %alpha = drc.weight "res.alpha" [%rows, %c1] init ones : tensor<?x?xf32>
  %sum = drc.mix %bank by %alpha : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %h = drc.view %sum : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}

func.func @read(%bank: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %d = drc.static "d" : index
  %k = drc.static "k" : index
  %c1 = arith.constant 1 : index
  %rows = arith.addi %k, %c1 : index
  %h = func.call @average(%bank, %rows) : (tensor<?x?x?xf32>, index) -> tensor<?x?xf32>
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %bank : tensor<?x?xf32>, tensor<?x?x?xf32>
}

func.func @write(%bank: tensor<?x?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %row = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %next = drc.append %bank, %row : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  return %next : tensor<?x?x?xf32>
}

func.func @readout(%bank: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %L = drc.static "L" : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %twoL = arith.muli %L, %c2 : index
  %rows = arith.addi %twoL, %c1 : index
  %h = func.call @average(%bank, %rows) : (tensor<?x?x?xf32>, index) -> tensor<?x?xf32>
  return %h : tensor<?x?xf32>
}
