// Two streams mixed by a coefficient matrix with three rows: the mix
// verifier rejects it in sublayer 0.
module attributes {drc.options = {streams = 2}} {
  func.func @embed(%h0: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    %row = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %both = drc.append %row, %row : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
    return %both : tensor<?x?x?xf32>
  }
  func.func @read(%h: tensor<?x?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c = drc.weight "res.read" [%c3, %c1] init ones : tensor<?x?xf32>
    %m = drc.mix %h by %c : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %u = drc.view %m : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    return %u, %h : tensor<?x?xf32>, tensor<?x?x?xf32>
  }
  func.func @write(%h: tensor<?x?x?xf32>, %f: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
    return %h : tensor<?x?x?xf32>
  }
  func.func @readout(%h: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
    %r = drc.rows %h at 0 : (tensor<?x?x?xf32>) -> tensor<?x1x?xf32>
    %v = drc.view %r : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    return %v : tensor<?x?xf32>
  }
}
