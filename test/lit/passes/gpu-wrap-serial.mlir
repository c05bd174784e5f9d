// drc-gpu-wrap-serial (docs/cuda.md).
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-wrap-serial))" | FileCheck %s --check-prefix=SERIAL

// Serial host work (a scalar load, arithmetic, a store) becomes the body of
// a one-iteration parallel loop; a stack scalar becomes a buffer; parallel
// loops, views and allocations stay where they are.
// SERIAL-LABEL: func.func @serial
// SERIAL: %[[TMP:.*]] = memref.alloc() : memref<f32>
// SERIAL: scf.parallel (%{{.*}}) = (%[[Z:.*]]) to (%[[O:.*]]) step (%[[O]])
// SERIAL-NEXT: memref.store %{{.*}}, %[[TMP]][]
// SERIAL-NEXT: scf.reduce
// SERIAL: scf.parallel (%{{.*}}) = (%c0) to (%c8) step (%c1)
// SERIAL: scf.parallel (%{{.*}}) = (%[[Z2:.*]]) to (%[[O2:.*]]) step (%[[O2]])
// SERIAL-NEXT: memref.load %[[TMP]][]
// SERIAL-NEXT: math.sqrt
// SERIAL-NEXT: memref.store
// SERIAL: memref.dealloc %[[TMP]]
// SERIAL-NEXT: return
func.func @serial(%x: memref<8xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloca() : memref<f32>
  memref.store %zero, %tmp[] : memref<f32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %x[%i] : memref<8xf32>
  }
  %s = memref.load %tmp[] : memref<f32>
  %r = math.sqrt %s : f32
  memref.store %r, %out[] : memref<f32>
  return
}

