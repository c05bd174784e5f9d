// A design that exists only in this test: Pre-LN whose branch passes a
// learned per-token gate, h <- h + sigmoid(w . RMSNorm(h)) f.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %one = arith.constant 1 : index
  %w = drc.weight "res.w" [%one, %d] init zeros : tensor<?x?xf32>
  %hbar = drc.rms_norm %h : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %logit = drc.linear %hbar, %w : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %gate = drc.squash "sigmoid" %logit : tensor<?x?xf32>
  %g = drc.view %gate : (tensor<?x?xf32>) -> tensor<?x1x1xf32>
  %frow = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %gated = drc.mix %frow by %g : (tensor<?x1x?xf32>, tensor<?x1x1xf32>) -> tensor<?x1x?xf32>
  %branch = drc.view %gated : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
  %next = drc.add %h, %branch : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
