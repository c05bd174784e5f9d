// drc-gpu-merge-modules (docs/cuda.md).
// RUN: drc-opt %s --pass-pipeline="builtin.module(drc-gpu-merge-modules)" | FileCheck %s --check-prefix=MERGE

// One gpu.module for every kernel; launches point into it. Identical
// kernels (@a::@k, @b::@k) are kept once; a different kernel whose name is
// taken (@c::@k) is renamed.
// MERGE: gpu.module @kernels {
// MERGE-DAG: gpu.func @k(%{{.*}}: memref<4xf32>)
// MERGE-DAG: gpu.func @k_0(%{{.*}}: memref<8xf32>)
// MERGE-NOT: gpu.func
// MERGE-NOT: gpu.module
// MERGE: gpu.launch_func  @kernels::@k blocks
// MERGE-NEXT: gpu.launch_func  @kernels::@k blocks
// MERGE-NEXT: gpu.launch_func  @kernels::@k_0 blocks
module attributes {gpu.container_module} {
  gpu.module @a {
    gpu.func @k(%p: memref<4xf32>) kernel { gpu.return }
  }
  gpu.module @b {
    gpu.func @k(%p: memref<4xf32>) kernel { gpu.return }
  }
  gpu.module @c {
    gpu.func @k(%p: memref<8xf32>) kernel { gpu.return }
  }
  func.func @f(%p: memref<4xf32>, %q: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<4xf32>)
    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : memref<4xf32>)
    gpu.launch_func @c::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%q : memref<8xf32>)
    return
  }
}
