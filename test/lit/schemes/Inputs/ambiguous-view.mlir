// Splitting a row into two unknown sizes: instantiation cannot tell which.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %split = drc.view %h : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
  %back = drc.view %split : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  return %back, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
