// drc-free-buffers: each heap buffer freed before its block's terminator.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-free-buffers))" -split-input-file -verify-diagnostics | FileCheck %s

// A step temporary (read through a view after the loop) is freed where the
// function ends; a tile's temporary where its iteration ends; a buffer on
// the stack and one already freed are left alone.
// CHECK-LABEL: func.func @scopes
// CHECK: %[[STEP:.*]] = memref.alloc() : memref<64x8xf32>
// CHECK: scf.forall
// CHECK: %[[TILE:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK-NOT: memref.dealloc %[[STEP]]
// CHECK: memref.dealloc %[[TILE]]
// CHECK-NEXT: }
// CHECK: %[[DONE:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: memref.dealloc %[[DONE]]
// CHECK-NOT: memref.dealloc %[[DONE]]
// CHECK: memref.dealloc %[[STEP]]
// CHECK-NEXT: return
func.func @scopes(%x: memref<64x8xf32>, %out: memref<8xf32>) {
  %step = memref.alloc() : memref<64x8xf32>
  memref.copy %x, %step : memref<64x8xf32> to memref<64x8xf32>
  scf.forall (%t) in (4) {
    %tile = memref.alloc() : memref<16x8xf32>
    %stack = memref.alloca() : memref<8xf32>
    %rows = memref.subview %step[0, 0] [16, 8] [1, 1] : memref<64x8xf32> to memref<16x8xf32, strided<[8, 1]>>
    memref.copy %rows, %tile : memref<16x8xf32, strided<[8, 1]>> to memref<16x8xf32>
  }
  %done = memref.alloc() : memref<4xf32>
  memref.dealloc %done : memref<4xf32>
  %row = memref.subview %step[0, 0] [1, 8] [1, 1] : memref<64x8xf32> to memref<8xf32, strided<[1]>>
  memref.copy %row, %out : memref<8xf32, strided<[1]>> to memref<8xf32>
  return
}

// -----

// A buffer whose view is returned would be freed before its reader: an
// error, not a leak or a use after free.
func.func @returned() -> memref<4xf32, strided<[1], offset: 2>> {
  // expected-error @below {{drc-free-buffers: this buffer may outlive the block that allocates it (through 'func.return')}}
  %buffer = memref.alloc() : memref<8xf32>
  %view = memref.subview %buffer[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  // expected-note @below {{the use it escapes through}}
  return %view : memref<4xf32, strided<[1], offset: 2>>
}

// -----

// Yielded out of a loop: the same error.
func.func @yielded(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloca() : memref<4xf32>
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%prev = %init) -> memref<4xf32> {
    // expected-error @below {{this buffer may outlive the block}}
    %next = memref.alloc() : memref<4xf32>
    // expected-note @below {{the use it escapes through}}
    scf.yield %next : memref<4xf32>
  }
  return
}
