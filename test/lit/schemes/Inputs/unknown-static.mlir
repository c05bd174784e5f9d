// A scheme that reads a compile-time value nobody defines.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %w = drc.static "width" : index
  %g = drc.weight "norm.gain" [%w] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %g : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
