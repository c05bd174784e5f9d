// Post-LN (ARCHITECTURES.md §2.1; not one of DepthBench's ten):
//   read    u_k = h                       (sublayer 0 reads the raw embedding)
//   write   h  <- RMSNorm_{γ_k}(h + f_k)
//   readout h_out = h                     (the final norm is kept as well)

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  return %h, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %sum = drc.add %h, %f : tensor<?x?xf32>
  %next = drc.rms_norm %sum gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
