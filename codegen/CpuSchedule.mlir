// The CPU schedule of drc's generated kernels, applied on tensors before
// bufferization (codegen/CpuSchedule.cpp embeds this file).
//
// Matmuls (generics tagged drc.kernel = "matmul", C[m,n] += A B with B
// read along n): split m across threads (scf.forall), block for the caches,
// then an 8x32 register tile vectorised for AVX-512 with the C tile hoisted
// out of the k loop.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%module: !transform.any_op {transform.readonly}) {
    %matmuls = transform.structured.match ops{["linalg.generic"]}
        attributes {drc.kernel = "matmul"} in %module
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %matmuls : !transform.any_op {
    ^bb0(%mm: !transform.any_op):
      %threads, %forall = transform.structured.tile_using_forall %mm tile_sizes [64, 0, 0]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      %blocked, %bl:2 = transform.structured.tile_using_for %threads tile_sizes [0, 128, 128]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
      %tile, %tl:3 = transform.structured.tile_using_for %blocked tile_sizes [8, 32, 1]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
      transform.structured.vectorize %tile vector_sizes [8, 32, 1] : !transform.any_op
    }
    %funcs = transform.structured.match ops{["func.func"]} in %module
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %module
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %loops : !transform.any_op {
    ^bb0(%loop: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
    }
    transform.yield
  }
}
