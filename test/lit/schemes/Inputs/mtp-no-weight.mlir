// An MTP head without @mtp_weight.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  return %h, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
func.func @mtp(%h: tensor<?x?xf32>, %e: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %g = drc.add %h, %e : tensor<?x?xf32>
  return %g : tensor<?x?xf32>
}
