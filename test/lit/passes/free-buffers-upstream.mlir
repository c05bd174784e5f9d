// drc-free-buffers frees where MLIR's buffer-deallocation-pipeline does in
// programs like drc's (buffers that never leave their block): the same IR
// after the same cleanup.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-free-buffers,cse,canonicalize))" > %t.drc
// RUN: drc-opt %s --pass-pipeline="builtin.module(buffer-deallocation-pipeline)" > %t.upstream
// RUN: diff %t.drc %t.upstream
// RUN: FileCheck %s < %t.drc

// CHECK-LABEL: func.func @step
// CHECK-COUNT-3: memref.dealloc
// CHECK-NOT: memref.dealloc
func.func @step(%x: memref<64x8xf32>, %out: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %step = memref.alloc() : memref<64x8xf32>
  memref.copy %x, %step : memref<64x8xf32> to memref<64x8xf32>
  scf.forall (%t) in (4) {
    %tile = memref.alloc() : memref<16x8xf32>
    %rows = memref.subview %step[0, 0] [16, 8] [1, 1] : memref<64x8xf32> to memref<16x8xf32, strided<[8, 1]>>
    memref.copy %rows, %tile : memref<16x8xf32, strided<[8, 1]>> to memref<16x8xf32>
    scf.for %i = %c0 to %n step %c1 {
      %row = memref.alloc() : memref<8xf32>
      %first = memref.subview %tile[0, 0] [1, 8] [1, 1] : memref<16x8xf32> to memref<8xf32, strided<[1]>>
      memref.copy %first, %row : memref<8xf32, strided<[1]>> to memref<8xf32>
    }
  }
  %last = memref.subview %step[63, 0] [1, 8] [1, 1] : memref<64x8xf32> to memref<8xf32, strided<[1], offset: 504>>
  memref.copy %last, %out : memref<8xf32, strided<[1], offset: 504>> to memref<8xf32>
  return
}
