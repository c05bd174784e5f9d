// tensor.dim of a dimension the value does not have.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %h, %c2 : tensor<?x?xf32>
  %g = drc.weight "norm.gain" [%n] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %g : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
