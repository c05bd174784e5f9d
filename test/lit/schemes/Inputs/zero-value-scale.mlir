// A DeepNorm-style value scale of zero.
func.func @value_init_scale() -> f64 {
  %zero = arith.constant 0.0 : f64
  return %zero : f64
}
func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  return %h, %h : tensor<?x?xf32>, tensor<?x?xf32>
}
func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
