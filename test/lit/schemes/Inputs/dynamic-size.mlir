// A weight whose size is read from a tensor's values at run time, not a
// compile-time value.
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %x = tensor.extract %h[%c0, %c0] : tensor<?x?xf32>
  %i = arith.fptoui %x : f32 to i64
  %d = arith.index_cast %i : i64 to index
  %g = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %g : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
