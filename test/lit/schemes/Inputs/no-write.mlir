// A scheme without @write.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  return %h, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
