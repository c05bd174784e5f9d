// DeepNorm (ARCHITECTURES.md §2.1, arXiv 2203.00555), L counting blocks:
//   read    u_k = h                            (sublayer 0 reads the raw embedding)
//   write   h  <- LN_{γ_k}(c·h + f_k),  c = (2L)^{1/4},  LN without bias
//   init    W_V, W_O, W_1, W_2, W_3 with std 0.02·ρ,  ρ = (8L)^{-1/4}
// LN_γ(x) = RMSNorm_γ(x − mean x): the variance is the centred mean square.

func.func @value_init_scale() -> f64 {
  %L = drc.static "L" : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f64
  %eightL = arith.muli %L, %c8 : index
  %i = arith.index_cast %eightL : index to i64
  %x = arith.sitofp %i : i64 to f64
  %r2 = math.sqrt %x : f64
  %r4 = math.sqrt %r2 : f64
  %rho = arith.divf %one, %r4 : f64
  return %rho : f64
}

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  return %h, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %L = drc.static "L" : index
  %c2 = arith.constant 2 : index
  %twoL = arith.muli %L, %c2 : index
  %i = arith.index_cast %twoL : index to i64
  %x = arith.sitofp %i : i64 to f64
  %r2 = math.sqrt %x : f64
  %c64 = math.sqrt %r2 : f64
  %c32 = arith.truncf %c64 : f64 to f32
  %c = tensor.from_elements %c32 : tensor<f32>
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %ch = drc.scale %h by %c : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %sum = drc.add %ch, %f : tensor<?x?xf32>
  %centred = drc.center %sum : tensor<?x?xf32>
  %next = drc.rms_norm %centred gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
