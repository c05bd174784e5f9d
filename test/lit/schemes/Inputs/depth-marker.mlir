// Depth keys for the attention without their values.
// (MoDA's @read marks both; see models/schemes/moda.mlir.)
func.func @read(%h: tensor<?x?xf32>, %keys: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32> {drc.depth_keys}) {
  return %h, %h, %keys : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %keys: tensor<?x?x?xf32>, %f: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next, %keys : tensor<?x?xf32>, tensor<?x?x?xf32>
}
