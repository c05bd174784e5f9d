// Pre-LN (ARCHITECTURES.md §2.1): the state is the hidden h (h_0 = E[x]),
//   read   u_k = RMSNorm_{γ_k}(h)
//   write  h  <- h + f_k
//   readout h_out = h.
// @embed and @readout are the identity and may be left out.

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
