// MoDA, pre-norm (ARCHITECTURES.md §2.11, arXiv 2603.15619): attention over
// depth as well as over the sequence.
//   state   h, and per token a depth cache of keys K and values V, 2b rows
//           each when block b starts
//   read    u = RMSNorm_γ(h); block b's attention runs one softmax per head
//           over the sequence keys RoPE(k_s), s ≤ t, and the token's 2b depth
//           keys, scored with the un-rotated q (q·K/√d_h); block 0 is plain
//   write   h <- h + f; the attention caches its pre-RoPE (W_k u, W_v u), the
//           FFN caches W_kv u with W_kv = [res.w_k ; res.w_v] ∈ ℝ^{2d×d}
//           (none in the last block, whose cache nothing reads)
// Not ≡ Pre-LN at init: the depth keys take softmax mass from step 0.

func.func @embed(%h0: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %d = drc.static "d" : index
  %n = tensor.dim %h0, %c0 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.splat %zero[%n, %c0, %d] : tensor<?x?x?xf32>
  return %h0, %empty, %empty : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

func.func @read(%h: tensor<?x?xf32>, %keys: tensor<?x?x?xf32>, %values: tensor<?x?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32> {drc.depth_keys},
        tensor<?x?x?xf32> {drc.depth_values}, tensor<?x?xf32>) {
  %d = drc.static "d" : index
  %gain = drc.weight "norm.gain" [%d] init ones : tensor<?xf32>
  %u = drc.rms_norm %h gain %gain : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %u, %h, %keys, %values, %u : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>
}

// Appends (W_k u, W_v u) to the cache.
func.func @cache(%keys: tensor<?x?x?xf32>, %values: tensor<?x?x?xf32>, %u: tensor<?x?xf32>, %wk: tensor<?x?xf32>, %wv: tensor<?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %k = drc.linear %u, %wk : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %v = drc.linear %u, %wv : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %k1 = drc.view %k : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %v1 = drc.view %v : (tensor<?x?xf32>) -> tensor<?x1x?xf32>
  %nk = drc.append %keys, %k1 : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  %nv = drc.append %values, %v1 : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  return %nk, %nv : tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

func.func @write(%h: tensor<?x?xf32>, %keys: tensor<?x?x?xf32>, %values: tensor<?x?x?xf32>, %u: tensor<?x?xf32>, %f: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %next = drc.add %h, %f : tensor<?x?xf32>
  %d = drc.static "d" : index
  %j = drc.static "j" : index
  %b = drc.static "b" : index
  %L = drc.static "L" : index
  %c1 = arith.constant 1 : index
  %last = arith.subi %L, %c1 : index
  %ffn = arith.cmpi eq, %j, %c1 : index
  %final = arith.cmpi eq, %b, %last : index
  %cache:2 = scf.if %ffn -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
    %c:2 = scf.if %final -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
      scf.yield %keys, %values : tensor<?x?x?xf32>, tensor<?x?x?xf32>
    } else {
      %wk = drc.weight "res.w_k" [%d, %d] init matrix decay : tensor<?x?xf32>
      %wv = drc.weight "res.w_v" [%d, %d] init matrix decay : tensor<?x?xf32>
      %r:2 = func.call @cache(%keys, %values, %u, %wk, %wv) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>)
      scf.yield %r#0, %r#1 : tensor<?x?x?xf32>, tensor<?x?x?xf32>
    }
    scf.yield %c#0, %c#1 : tensor<?x?x?xf32>, tensor<?x?x?xf32>
  } else { // the attention's own projections, computed once after CSE
    %wk = drc.weight "wk" [%d, %d] init matrix decay : tensor<?x?xf32>
    %wv = drc.weight "wv" [%d, %d] init matrix decay : tensor<?x?xf32>
    %r:2 = func.call @cache(%keys, %values, %u, %wk, %wv) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>)
    scf.yield %r#0, %r#1 : tensor<?x?x?xf32>, tensor<?x?x?xf32>
  }
  return %next, %cache#0, %cache#1 : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

func.func @readout(%h: tensor<?x?xf32>, %keys: tensor<?x?x?xf32>, %values: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  return %h : tensor<?x?xf32>
}
