// drc-gpu-block-regions refuses a fused region with a temporary allocated
// inside one of its ops: the threads sharing the op's iterations would
// share it (or, on the stack, grow it in a loop).
// RUN: not drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions))" 2>&1 | FileCheck %s

// CHECK: error: drc-gpu-block-regions: a temporary allocated inside an op of a fused region

func.func @nested(%x: memref<64x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.forall (%t) in (64) {
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      %tmp = memref.alloca() : memref<1xf32>
      %v = memref.load %x[%t, %i] : memref<64x4xf32>
      memref.store %v, %tmp[%c0] : memref<1xf32>
      scf.reduce
    }
  }
  return
}
