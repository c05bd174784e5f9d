// drc-gpu-align-vectors (docs/cuda.md): a vector load or store gets the
// alignment of the whole vector when its element offset from a buffer's
// start is provably a multiple of the vector's length, the buffer (a
// function argument, an allocation, an alloca that says so) starting at a
// multiple of buffer-alignment bytes.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-align-vectors))" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-align-vectors{buffer-alignment=8}))" | FileCheck %s --check-prefix=ALIGN8

// Rows of 16 floats: a token's row starts at 16 t, and the column steps by
// 4 from 0, so both accesses are 16-byte aligned; a parameter view at a
// static offset of 4100 floats is aligned too, one at 4098 is not.
// CHECK-LABEL: func.func @rows
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<4xf32>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<16xf32, strided<[1], offset: 4100>>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32, strided<[1], offset: 4098>>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<4xf32>
// Without a 16-byte buffer alignment, only 8-byte vectors are proven.
// ALIGN8-LABEL: func.func @rows
// ALIGN8-NOT: alignment = 16
func.func @rows(%x: memref<64x16xf32>, %p: memref<8192xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %w = memref.subview %p[4100] [16] [1] : memref<8192xf32> to memref<16xf32, strided<[1], offset: 4100>>
  %v = memref.subview %p[4098] [16] [1] : memref<8192xf32> to memref<16xf32, strided<[1], offset: 4098>>
  scf.forall (%t) in (64) {
    %row = memref.subview %x[%t, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.for %c = %c0 to %c16 step %c4 {
      %a = vector.load %row[%c0, %c] : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<4xf32>
      %b = vector.load %w[%c] : memref<16xf32, strided<[1], offset: 4100>>, vector<4xf32>
      %d = vector.load %v[%c] : memref<16xf32, strided<[1], offset: 4098>>, vector<4xf32>
      %s = arith.addf %a, %b : vector<4xf32>
      %r = arith.addf %s, %d : vector<4xf32>
      vector.store %r, %row[%c0, %c] : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<4xf32>
    }
  }
  return
}

// What is not proven stays unmarked: rows of 6 floats (a token's row
// starts at 6 t), a column stepping by 2, an alloca with no alignment, a
// slice of a byte buffer at a multiple of 8 bytes, and a vector of 32
// bytes. An alloca aligned to 64 and a slice at a multiple of 64 bytes are
// aligned.
// CHECK-LABEL: func.func @unproven
// CHECK: vector.load %{{.*}} : memref<1x6xf32, strided<[6, 1], offset: ?>>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<16xf32>, vector<8xf32>
func.func @unproven(%x: memref<64x6xf32>, %y: memref<16xf32>, %bytes: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c12 = arith.constant 12 : index
  %plain = memref.alloca() : memref<16xf32>
  %aligned = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
  scf.forall (%t) in (8) {
    %row = memref.subview %x[%t, 0] [1, 6] [1, 1] : memref<64x6xf32> to memref<1x6xf32, strided<[6, 1], offset: ?>>
    %a = vector.load %row[%c0, %c0] : memref<1x6xf32, strided<[6, 1], offset: ?>>, vector<4xf32>
    scf.for %c = %c0 to %c12 step %c2 {
      %b = vector.load %y[%c] : memref<16xf32>, vector<4xf32>
    }
    %d = vector.load %plain[%c0] : memref<16xf32>, vector<4xf32>
    %e = vector.load %aligned[%c4] : memref<16xf32>, vector<4xf32>
    %at8 = arith.muli %t, %c8 : index
    %near = memref.view %bytes[%at8][] : memref<4096xi8> to memref<16xf32>
    %f = vector.load %near[%c0] : memref<16xf32>, vector<4xf32>
    %at64 = arith.muli %t, %c64 : index
    %slice = memref.view %bytes[%at64][] : memref<4096xi8> to memref<16xf32>
    %g = vector.load %slice[%c0] : memref<16xf32>, vector<4xf32>
    %h = vector.load %y[%c8] : memref<16xf32>, vector<8xf32>
  }
  return
}
