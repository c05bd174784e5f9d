// drc-gpu-merge-modules (docs/cuda.md).
// RUN: drc-opt %s --split-input-file --pass-pipeline="builtin.module(drc-gpu-merge-modules)" | FileCheck %s --check-prefix=MERGE

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

// -----

// RUN: drc-opt %s --split-input-file --pass-pipeline="builtin.module(drc-gpu-merge-modules)" 2>&1 | FileCheck %s --check-prefix=OFFSETS
// Two layers' kernels reading their parameters at offsets 0 and 256 of the
// parameter buffer are one kernel whose view has a dynamic offset (read from
// the memref descriptor the runtime passes), as is the view it makes of it;
// each launch casts its own view.
// OFFSETS-LABEL: gpu.module @kernels {
// OFFSETS: gpu.func @k(%{{.*}}: memref<256xf32, strided<[1], offset: ?>>)
// OFFSETS: memref.expand_shape {{.*}} into memref<1x256xf32, strided<[256, 1], offset: ?>>
// OFFSETS-NOT: gpu.func
// OFFSETS: %[[V0:.*]] = memref.subview %{{.*}}[0] [256] [1]
// OFFSETS: %[[V1:.*]] = memref.subview %{{.*}}[256] [256] [1]
// OFFSETS: %[[C0:.*]] = memref.cast %[[V0]] : memref<256xf32, strided<[1]>> to memref<256xf32, strided<[1], offset: ?>>
// OFFSETS-NEXT: gpu.launch_func  @kernels::@k {{.*}} args(%[[C0]] :
// OFFSETS: %[[C1:.*]] = memref.cast %[[V1]] : memref<256xf32, strided<[1], offset: 256>> to memref<256xf32, strided<[1], offset: ?>>
// OFFSETS-NEXT: gpu.launch_func  @kernels::@k {{.*}} args(%[[C1]] :
module attributes {gpu.container_module} {
  gpu.module @a {
    gpu.func @k(%p: memref<256xf32, strided<[1]>>) kernel {
      %e = memref.expand_shape %p [[0, 1]] output_shape [1, 256] : memref<256xf32, strided<[1]>> into memref<1x256xf32>
      %c0 = arith.constant 0 : index
      %v = memref.load %e[%c0, %c0] : memref<1x256xf32>
      memref.store %v, %e[%c0, %c0] : memref<1x256xf32>
      gpu.return
    }
  }
  gpu.module @b {
    gpu.func @k(%p: memref<256xf32, strided<[1], offset: 256>>) kernel {
      %e = memref.expand_shape %p [[0, 1]] output_shape [1, 256] : memref<256xf32, strided<[1], offset: 256>> into memref<1x256xf32, strided<[256, 1], offset: 256>>
      %c0 = arith.constant 0 : index
      %v = memref.load %e[%c0, %c0] : memref<1x256xf32, strided<[256, 1], offset: 256>>
      memref.store %v, %e[%c0, %c0] : memref<1x256xf32, strided<[256, 1], offset: 256>>
      gpu.return
    }
  }
  func.func @f(%params: memref<512xf32>) {
    %c1 = arith.constant 1 : index
    %v0 = memref.subview %params[0] [256] [1] : memref<512xf32> to memref<256xf32, strided<[1]>>
    %v1 = memref.subview %params[256] [256] [1] : memref<512xf32> to memref<256xf32, strided<[1], offset: 256>>
    gpu.launch_func @a::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%v0 : memref<256xf32, strided<[1]>>)
    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%v1 : memref<256xf32, strided<[1], offset: 256>>)
    return
  }
}
