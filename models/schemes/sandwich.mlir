// Sandwich-LN = Peri-LN (ARCHITECTURES.md §2.1, arXiv 2502.02732):
//   read    u_k = RMSNorm_{γ_k}(h)
//   write   h  <- h + RMSNorm_{γ'_k}(f_k)    (each increment at RMS ≈ 1)
// No embedding norm.

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %gain = drc.weight "norm_out.gain" [%d] init ones : tensor<?xf32>
  %g = drc.rms_norm %f gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %next = drc.add %h, %g : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
