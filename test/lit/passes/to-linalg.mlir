// RUN: drc-opt %s --drc-train-step --drc-to-linalg | FileCheck %s
// RUN: drc-opt %s --drc-train-step --drc-to-linalg --drc-cpu-tile | FileCheck %s --check-prefix=TILE
// RUN: drc-opt %s --drc-train-step --drc-to-linalg --drc-cpu-codegen | FileCheck %s --check-prefix=LLVM

drc.param @g : tensor<16xf32> init #drc.init<constant(1.0)>
drc.param @w : tensor<32x16xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay
drc.param @e : tensor<32x16xf32> init #drc.init<trunc_normal(0.02, 0.06)> decay

func.func @loss(%x: tensor<256xi32>, %y: tensor<256xi32>) -> tensor<f32> {
  %e = drc.param_ref @e : tensor<32x16xf32>
  %g = drc.param_ref @g : tensor<16xf32>
  %w = drc.param_ref @w : tensor<32x16xf32>
  %h = drc.embed %e[%x] : (tensor<32x16xf32>, tensor<256xi32>) -> tensor<256x16xf32>
  %n = drc.rms_norm %h gain %g : (tensor<256x16xf32>, tensor<16xf32>) -> tensor<256x16xf32>
  %z = drc.linear %n, %w : (tensor<256x16xf32>, tensor<32x16xf32>) -> tensor<256x32xf32>
  %l = drc.cross_entropy %z, %y : (tensor<256x32xf32>, tensor<256xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// Buffers: the decay group first (@w at 0, @e at 512), then @g at 1024; every
// parameter 16-element aligned; results through `out`.
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[P:.*]]: memref<1040xf32>, %{{.*}}: memref<256xi32>, %{{.*}}: memref<256xi32>, %[[OUT:.*]]: memref<1xf32>)
// CHECK-SAME: llvm.emit_c_interface
// CHECK-DAG: memref.subview %[[P]][512] [512] [1]
// CHECK-DAG: memref.subview %[[P]][1024] [16] [1]
// CHECK-DAG: memref.subview %[[P]][0] [512] [1]
// CHECK: linalg.matmul
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}] : memref<1xf32>

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[TP:.*]]: memref<1040xf32>, %[[G:.*]]: memref<1040xf32>, %[[M:.*]]: memref<1040xf32>, %[[V:.*]]: memref<1040xf32>, %{{.*}}: memref<256xi32>, %{{.*}}: memref<256xi32>, %{{.*}}: memref<f32>, %{{.*}}: memref<f32>, %{{.*}}: memref<2xf32>)
// Gradients land in their slots of the gradient buffer.
// CHECK: bufferization.materialize_in_destination {{.*}} in restrict writable
// Global norm over the whole gradient buffer, then AdamW in place over the
// decay range [0, 1024) and the no-decay range [1024, 1040).
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[G]] : memref<1040xf32>)
// CHECK: math.sqrt
// CHECK: memref.subview %[[TP]][0] [1024] [1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<1024xf32, strided<[1]>>
// CHECK: memref.subview %[[TP]][1024] [16] [1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<16xf32, strided<[1], offset: 1024>>

// The matmuls split rows across threads and run a vectorised register tile
// whose accumulator starts from zeros in registers and is carried through
// the k loop alone.
// TILE: scf.forall
// TILE: scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (vector<{{[0-9]+}}x16xf32>)
// TILE: vector.contract

// Every loop nest is its own function; entry points call them.
// LLVM: llvm.func @loss_kernel0(
// LLVM: llvm.func @train_step(
// LLVM: llvm.call @train_step_kernel
// LLVM: llvm.func @_mlir_ciface_train_step
