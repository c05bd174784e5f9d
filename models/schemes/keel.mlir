// KEEL (ARCHITECTURES.md §2.1, arXiv 2601.19895), c = 2L counting sublayers:
//   read    u_k = RMSNorm_{γ_k}(h)
//   write   k = 0:  h <- h + f_0                      (a plain Pre-LN step)
//           k = 1:  h <- RMSNorm_{γ'_1}(h + f_1)      (c = 1)
//           k ≥ 2:  h <- RMSNorm_{γ'_k}(c·h + f_k)

func.func @read(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %d = drc.static "d" : index
  %k = drc.static "k" : index
  %L = drc.static "L" : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %first = arith.cmpi eq, %k, %c0 : index
  %next = scf.if %first -> tensor<?x?xf32> {
    %sum = drc.add %h, %f : tensor<?x?xf32>
    scf.yield %sum : tensor<?x?xf32>
  } else {
    %second = arith.cmpi eq, %k, %c1 : index
    %twoL = arith.muli %L, %c2 : index
    %cs = arith.select %second, %c1, %twoL : index
    %ci = arith.index_cast %cs : index to i64
    %cf = arith.sitofp %ci : i64 to f32
    %c = tensor.from_elements %cf : tensor<f32>
    %gain = drc.weight "norm_out.gain" [%d] init ones : tensor<?xf32>
    %ch = drc.scale %h by %c : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %sum = drc.add %ch, %f : tensor<?x?xf32>
    %normed = drc.rms_norm %sum gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    scf.yield %normed : tensor<?x?xf32>
  }
  return %next : tensor<?x?xf32>
}
