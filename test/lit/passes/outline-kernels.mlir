// RUN: drc-opt %s --drc-outline-kernels | FileCheck %s

// Each top-level nest becomes a kernel, named after the part of the model
// its loop says it computes (drc.kernel_role); a parallel loop that runs
// several nests per iteration (a fused region's tile) calls each as a step,
// and identical steps (here the two scalings) are one function.
// CHECK: func.func private @train_step_kernel0_fused_step0({{.*}}) attributes {no_inline}
// CHECK-NEXT: linalg.generic
// CHECK-NOT: func.func private @train_step_kernel0_fused_step1
// CHECK: func.func private @train_step_kernel0_fused_step2({{.*}}) attributes {no_inline}
// CHECK-NEXT: linalg.fill
// CHECK: func.func private @train_step_kernel0_fused({{.*}}) attributes {no_inline}
// CHECK: scf.forall
// CHECK: call @train_step_kernel0_fused_step0(
// CHECK-NEXT: call @train_step_kernel0_fused_step0(
// CHECK-NEXT: call @train_step_kernel0_fused_step2(
// CHECK-LABEL: func.func @train_step(
// CHECK-NEXT: arith.constant
// CHECK-NEXT: call @train_step_kernel0_fused(
// CHECK-NEXT: return
#id = affine_map<(d0) -> (d0)>
func.func @train_step(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>) {
  %c2 = arith.constant 2.0 : f32
  scf.forall (%t) in (4) {
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    %ys = memref.subview %y[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    %zs = memref.subview %z[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%xs : memref<16xf32, strided<[1], offset: ?>>) outs(%ys : memref<16xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %c2 : f32
      linalg.yield %m : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%ys : memref<16xf32, strided<[1], offset: ?>>) outs(%zs : memref<16xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %c2 : f32
      linalg.yield %m : f32
    }
    linalg.fill ins(%c2 : f32) outs(%xs : memref<16xf32, strided<[1], offset: ?>>)
  } {drc.kernel_role = "fused"}
  return
}

// A parallel loop that runs one nest per iteration calls it as a step too,
// whose pointers are then its own arguments (here the fused tile's scaling
// step again, its factor an argument).
// CHECK-LABEL: func.func private @loss_kernel0(
// CHECK: scf.forall
// CHECK-NEXT: arith.muli
// CHECK-NEXT: memref.subview
// CHECK-NEXT: memref.subview
// CHECK-NEXT: call @train_step_kernel0_fused_step0(
// CHECK-LABEL: func.func @loss(
func.func @loss(%x: memref<64xf32>, %y: memref<64xf32>) {
  %c3 = arith.constant 3.0 : f32
  scf.forall (%t) in (4) {
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    %ys = memref.subview %y[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%xs : memref<16xf32, strided<[1], offset: ?>>) outs(%ys : memref<16xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %c3 : f32
      linalg.yield %m : f32
    }
  }
  return
}

// Kernels that differ only in an attribute (here the constant each defines)
// stay apart; a third like the first calls it.
// CHECK-LABEL: func.func private @probe_kernel0(
// CHECK: arith.constant 2.000000e+00
// CHECK-LABEL: func.func private @probe_kernel1(
// CHECK: arith.constant 4.000000e+00
// CHECK-NOT: func.func private @probe_kernel2(
// CHECK-LABEL: func.func @probe(
// CHECK-NEXT: call @probe_kernel0(
// CHECK-NEXT: call @probe_kernel1(
// CHECK-NEXT: call @probe_kernel0(
func.func @probe(%x: memref<64xf32>) {
  scf.forall (%t) in (4) {
    %c = arith.constant 2.0 : f32
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.fill ins(%c : f32) outs(%xs : memref<16xf32, strided<[1], offset: ?>>)
  }
  scf.forall (%t) in (4) {
    %c = arith.constant 4.0 : f32
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.fill ins(%c : f32) outs(%xs : memref<16xf32, strided<[1], offset: ?>>)
  }
  scf.forall (%t) in (4) {
    %c = arith.constant 2.0 : f32
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.fill ins(%c : f32) outs(%xs : memref<16xf32, strided<[1], offset: ?>>)
  }
  return
}
