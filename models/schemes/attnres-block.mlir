// Block AttnRes (ARCHITECTURES.md §2.10): attention over committed block sums.
//   state   committed c_0 = h_0, c_1, ..., c_j and a partial sum p (maybe empty)
//   S       block size in sublayers; option block_size, 0 means ⌈2L/8⌉ = ⌈L/4⌉
//   read    at a boundary (k > 0, k mod S = 0) commit p as c_{j+1} and empty
//           it; then the Full-AttnRes mixer over [c_0; ...; c_j; p], p left
//           out while empty
//   write   p <- p + f_k  (p <- f_k when empty)
//   readout commit p, then the final mixer
//   probes  z_b = m_{2b}, the mix block b's attention reads
module attributes {drc.options = {block_size = 0}} {
  // Whether p is empty at sublayer k: k mod S = 0.
  func.func @fresh() -> i1 {
    %k = drc.static "k" : index
    %L = drc.static "L" : index
    %option = drc.static "block_size" : index
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %auto = arith.cmpi eq, %option, %c0 : index
    %up = arith.addi %L, %c3 : index
    %default = arith.divui %up, %c4 : index
    %s = arith.select %auto, %default, %option : index
    %r = arith.remui %k, %s : index
    %fresh = arith.cmpi eq, %r, %c0 : index
    return %fresh : i1
  }

  func.func @depth_mix(%rows: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
    %d = drc.static "d" : index
    %c1 = arith.constant 1 : index
    %w = drc.weight "res.query" [%c1, %d] init zeros decay : tensor<?x?xf32>
    %kappa = drc.weight "res.norm.gain" [%d] init ones : tensor<?xf32>
    %keys = drc.rms_norm %rows gain %kappa : (tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
    %logits = drc.linear %keys, %w : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x1xf32>
    %a = drc.softmax %logits {axis = 1} : tensor<?x?x1xf32>
    %m = drc.mix %rows by %a : (tensor<?x?x?xf32>, tensor<?x?x1xf32>) -> tensor<?x1x?xf32>
    %flat = drc.view %m : (tensor<?x1x?xf32>) -> tensor<?x?xf32>
    return %flat : tensor<?x?xf32>
  }

  // The state is (committed, p); p holds h_0 as a placeholder until f_0.
  func.func @embed(%h0: tensor<?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x1x?xf32>) {
    %row = drc.view %h0 : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %c = tensor.cast %row : tensor<?x1x?xf32> to tensor<?x?x?xf32>
    return %c, %row : tensor<?x?x?xf32>, tensor<?x1x?xf32>
  }

  // Sublayer k's mix m_k, and the committed sums after k's commit.
  func.func @mix(%c: tensor<?x?x?xf32>, %p: tensor<?x1x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
    %k = drc.static "k" : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %k, %c0 : index
    %fresh = func.call @fresh() : () -> i1
    %committed = scf.if %first -> tensor<?x?x?xf32> {
      scf.yield %c : tensor<?x?x?xf32>
    } else {
      %grown = scf.if %fresh -> tensor<?x?x?xf32> {
        %a = drc.append %c, %p : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
        scf.yield %a : tensor<?x?x?xf32>
      } else {
        scf.yield %c : tensor<?x?x?xf32>
      }
      scf.yield %grown : tensor<?x?x?xf32>
    }
    %rows = scf.if %fresh -> tensor<?x?x?xf32> {
      scf.yield %committed : tensor<?x?x?xf32>
    } else {
      %all = drc.append %committed, %p : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
      scf.yield %all : tensor<?x?x?xf32>
    }
    %m = func.call @depth_mix(%rows) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    return %m, %committed : tensor<?x?xf32>, tensor<?x?x?xf32>
  }

  func.func @read(%c: tensor<?x?x?xf32>, %p: tensor<?x1x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x1x?xf32>) {
    %d = drc.static "d" : index
    %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
    %m, %committed = func.call @mix(%c, %p) : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>)
    %u = drc.rms_norm %m gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
    return %u, %committed, %p : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x1x?xf32>
  }

  // The layer probes' z_b: the mix block b's attention reads.
  func.func @depth_state(%c: tensor<?x?x?xf32>, %p: tensor<?x1x?xf32>) -> tensor<?x?xf32> {
    %m, %committed = func.call @mix(%c, %p) : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>)
    return %m : tensor<?x?xf32>
  }

  func.func @write(%c: tensor<?x?x?xf32>, %p: tensor<?x1x?xf32>, %f: tensor<?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x1x?xf32>) {
    %fresh = func.call @fresh() : () -> i1
    %row = drc.view %f : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
    %next = scf.if %fresh -> tensor<?x1x?xf32> {
      scf.yield %row : tensor<?x1x?xf32>
    } else {
      %sum = drc.add %p, %row : tensor<?x1x?xf32>
      scf.yield %sum : tensor<?x1x?xf32>
    }
    return %c, %next : tensor<?x?x?xf32>, tensor<?x1x?xf32>
  }

  func.func @readout(%c: tensor<?x?x?xf32>, %p: tensor<?x1x?xf32>) -> tensor<?x?xf32> {
    %all = drc.append %c, %p : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
    %m = func.call @depth_mix(%all) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
    return %m : tensor<?x?xf32>
  }
}
