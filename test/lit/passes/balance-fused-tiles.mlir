// RUN: drc-opt %s --drc-balance-fused-tiles | FileCheck %s
// RUN: drc-opt %s --drc-balance-fused-tiles=min-tiles=16 | FileCheck %s --check-prefix=LOW

// A fused region's loop over 128 tiles: dynamic, one tile at a time.
// CHECK-LABEL: func.func private @train_step_kernel3_fused(
// CHECK: omp.wsloop schedule(dynamic) {
func.func private @train_step_kernel3_fused(%out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c128) step (%c1) {
        memref.store %zero, %out[%i] : memref<128xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Over 16 tiles (fewer than min-tiles, 64 by default): static, so each
// thread keeps the tiles whose data its cache holds.
// CHECK-LABEL: func.func private @loss_kernel4_fused(
// CHECK: omp.wsloop {
// LOW-LABEL: func.func private @loss_kernel4_fused(
// LOW: omp.wsloop schedule(dynamic) {
func.func private @loss_kernel4_fused(%out: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c32) step (%c2) {
        memref.store %zero, %out[%i] : memref<32xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Not a fused region's kernel (a matrix product's, an attention's): as it was.
// CHECK-LABEL: func.func private @train_step_kernel5_matmul(
// CHECK: omp.wsloop {
// LOW-LABEL: func.func private @train_step_kernel5_matmul(
// LOW: omp.wsloop {
func.func private @train_step_kernel5_matmul(%out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c128) step (%c1) {
        memref.store %zero, %out[%i] : memref<128xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// A loop whose bounds are not constants: as it was.
// CHECK-LABEL: func.func private @train_step_kernel6_fused(
// CHECK: omp.wsloop {
func.func private @train_step_kernel6_fused(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.store %zero, %out[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
