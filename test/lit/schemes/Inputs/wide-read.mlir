// @read hands the sublayer a set, not a tokens x d_model hidden state.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x1x?xf32>, tensor<?x?xf32>) {
  %row = drc.view %h : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  return %row, %h : tensor<?x1x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %h : tensor<?x?xf32>
}
