// LayerNorm Scaling (ARCHITECTURES.md §2.1, arXiv 2502.05795):
//   read    u_k = RMSNorm_{γ_k}(h) / √ℓ,  ℓ = b + 1 for both sublayers of block b
//   write   h  <- h + f_k
// 1/√ℓ is a constant (a buffer), neither a learned gain nor a γ init.

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %b = drc.static "b" : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %l = arith.addi %b, %c1 : index
  %li = arith.index_cast %l : index to i64
  %lf = arith.sitofp %li : i64 to f64
  %root = math.sqrt %lf : f64
  %inv = arith.divf %one, %root : f64
  %inv32 = arith.truncf %inv : f64 to f32
  %factor = tensor.from_elements %inv32 : tensor<f32>
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %n = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %u = drc.scale %n by %factor : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %next = drc.add %h, %f : tensor<?x?xf32>
  return %next : tensor<?x?xf32>
}
