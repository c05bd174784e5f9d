// RUN: drc-opt %s --drc-outline-kernels | FileCheck %s

// Two layers' kernels that differ only in where their parameter lies in the
// parameter buffer (offsets 0 and 256) are one function: the parameter's
// view is an argument with a dynamic offset, cast at each call, and so are
// the views the kernel makes of it (here an expand_shape). A kernel that
// makes a memref of the view another way (a reinterpret_cast) keeps its
// static type.
// CHECK-LABEL: func.func private @train_step_kernel0(
// CHECK-SAME: memref<256xf32, strided<[1], offset: ?>>
// CHECK: memref.expand_shape {{.*}} into memref<1x256xf32, strided<[256, 1], offset: ?>>
// CHECK-NOT: func.func private @train_step_kernel1(
// CHECK-LABEL: func.func private @train_step_kernel2(
// CHECK-SAME: memref<256xf32, strided<[1], offset: 512>>
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[G0:.*]] = memref.subview %{{.*}}[0] [256] [1]
// CHECK: %[[G1:.*]] = memref.subview %{{.*}}[256] [256] [1]
// CHECK: %[[C0:.*]] = memref.cast %[[G0]] : memref<256xf32, strided<[1]>> to memref<256xf32, strided<[1], offset: ?>>
// CHECK-NEXT: call @train_step_kernel0({{.*}}%[[C0]]
// CHECK: %[[C1:.*]] = memref.cast %[[G1]] : memref<256xf32, strided<[1], offset: 256>> to memref<256xf32, strided<[1], offset: ?>>
// CHECK-NEXT: call @train_step_kernel0({{.*}}%[[C1]]
// CHECK: call @train_step_kernel2(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @train_step(%params: memref<1024xf32>, %x: memref<4x256xf32>, %y: memref<4x256xf32>, %z: memref<4x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g0 = memref.subview %params[0] [256] [1] : memref<1024xf32> to memref<256xf32, strided<[1]>>
  %g1 = memref.subview %params[256] [256] [1] : memref<1024xf32> to memref<256xf32, strided<[1], offset: 256>>
  %g2 = memref.subview %params[512] [256] [1] : memref<1024xf32> to memref<256xf32, strided<[1], offset: 512>>
  scf.for %i = %c0 to %c4 step %c1 {
    %g = memref.expand_shape %g0 [[0, 1]] output_shape [1, 256] : memref<256xf32, strided<[1]>> into memref<1x256xf32>
    %in = memref.subview %x[%i, 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    linalg.mul ins(%in, %g : memref<1x256xf32, strided<[256, 1], offset: ?>>, memref<1x256xf32>) outs(%out : memref<1x256xf32, strided<[256, 1], offset: ?>>)
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %g = memref.expand_shape %g1 [[0, 1]] output_shape [1, 256] : memref<256xf32, strided<[1], offset: 256>> into memref<1x256xf32, strided<[256, 1], offset: 256>>
    %in = memref.subview %y[%i, 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    %out = memref.subview %z[%i, 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    linalg.mul ins(%in, %g : memref<1x256xf32, strided<[256, 1], offset: ?>>, memref<1x256xf32, strided<[256, 1], offset: 256>>) outs(%out : memref<1x256xf32, strided<[256, 1], offset: ?>>)
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %g = memref.reinterpret_cast %g2 to offset: [512], sizes: [1, 256], strides: [256, 1] : memref<256xf32, strided<[1], offset: 512>> to memref<1x256xf32, strided<[256, 1], offset: 512>>
    %out = memref.subview %z[%i, 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    linalg.copy ins(%g : memref<1x256xf32, strided<[256, 1], offset: 512>>) outs(%out : memref<1x256xf32, strided<[256, 1], offset: ?>>)
  }
  return
}
