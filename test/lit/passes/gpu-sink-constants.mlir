// drc-gpu-sink-constants (docs/cuda.md): the constants a top-level
// parallel loop (a future kernel) uses are cloned into its body, once per
// loop, in the order of first use; those it uses only in its bounds stay
// outside.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-sink-constants))" | FileCheck %s

// CHECK-LABEL: func.func @kernels
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.parallel (%[[I:.*]]) = (%[[C0]]) to (%[[C16]]) step (%[[C1]]) {
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[TWO:.*]] = arith.constant dense<2.000000e+00> : vector<4xf32>
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[I]], %[[C4]] : index
// CHECK-NEXT: %[[V:.*]] = vector.load %arg0[%[[ROW]]]
// CHECK-NEXT: %[[W:.*]] = arith.mulf %[[V]], %[[TWO]] : vector<4xf32>
// CHECK-NEXT: %[[W2:.*]] = arith.mulf %[[W]], %[[TWO]] : vector<4xf32>
// CHECK-NEXT: vector.store %[[W2]], %arg0[%[[ROW]]]
// The second loop gets its own copies.
// CHECK: scf.parallel
// CHECK-NEXT: arith.constant 4 : index
// CHECK-NEXT: arith.constant dense<2.000000e+00> : vector<4xf32>
func.func @kernels(%x: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %two = arith.constant dense<2.0> : vector<4xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %row = arith.muli %i, %c4 : index
    %v = vector.load %x[%row] : memref<64xf32>, vector<4xf32>
    %w = arith.mulf %v, %two : vector<4xf32>
    %w2 = arith.mulf %w, %two : vector<4xf32>
    vector.store %w2, %x[%row] : memref<64xf32>, vector<4xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %row = arith.muli %i, %c4 : index
    %v = vector.load %x[%row] : memref<64xf32>, vector<4xf32>
    %w = arith.mulf %v, %two : vector<4xf32>
    vector.store %w, %x[%row] : memref<64xf32>, vector<4xf32>
    scf.reduce
  }
  return
}
