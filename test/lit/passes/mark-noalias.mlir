// RUN: drc-opt %s --drc-mark-noalias | FileCheck %s
// RUN: drc-opt %s --drc-mark-noalias --finalize-memref-to-llvm \
// RUN:   --convert-func-to-llvm --reconcile-unrealized-casts \
// RUN:   --drc-noalias-to-llvm | FileCheck %s --check-prefix=LLVM

#id = affine_map<(d0) -> (d0)>

// A step reading one buffer into another: both alone (separate
// allocations, or disjoint static rows of one).
// CHECK-LABEL: func.func private @copy(
// CHECK-SAME: attributes {drc.noalias_pointers = array<i64: 1, 6>}
// LLVM-LABEL: llvm.func @copy(
// LLVM-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.noalias},
// LLVM-NOT: drc.noalias_pointers
func.func private @copy(%in: memref<16xf32, strided<[1], offset: ?>>, %out: memref<16xf32, strided<[1], offset: ?>>) {
  memref.copy %in, %out : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
  return
}

// Called with overlapping views of one buffer, one written: neither is
// alone; the scalar argument is not a memref.
// CHECK-LABEL: func.func private @shift(
// CHECK-NOT: drc.noalias_pointers
// CHECK-SAME: {
func.func private @shift(%s: f32, %in: memref<16xf32, strided<[1], offset: ?>>, %out: memref<16xf32, strided<[1], offset: ?>>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%in : memref<16xf32, strided<[1], offset: ?>>) outs(%out : memref<16xf32, strided<[1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  }
  return
}

// Two overlapping views both only read (interleaved columns): alone; the
// written allocation too.
// CHECK-LABEL: func.func private @sum_columns(
// CHECK-SAME: attributes {drc.noalias_pointers = array<i64: 1, 8, 15>}
func.func private @sum_columns(%a: memref<8x1xf32, strided<[2, 1], offset: ?>>, %b: memref<8x1xf32, strided<[2, 1], offset: ?>>, %out: memref<8x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<8x1xf32, strided<[2, 1], offset: ?>>, memref<8x1xf32, strided<[2, 1], offset: ?>>) outs(%out : memref<8x1xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// A kernel passing its arguments on: whether its steps' arguments overlap
// follows from its own callers. It writes through @copy, so its second
// argument is written; the entry passes disjoint buffers.
// CHECK-LABEL: func.func private @kernel(
// CHECK-SAME: attributes {drc.noalias_pointers = array<i64: 1, 6>}
func.func private @kernel(%x: memref<64xf32>, %y: memref<64xf32>) {
  scf.forall (%t) in (4) {
    %o = arith.muli %t, %t : index
    %xs = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    %ys = memref.subview %y[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    func.call @copy(%xs, %ys) : (memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  }
  return
}

// A kernel whose caller passes it overlapping views of one buffer, the
// second written by what it calls: neither is alone, and its step's views
// of them may overlap too.
// CHECK-LABEL: func.func private @overlapping_kernel(
// CHECK-NOT: drc.noalias_pointers
// CHECK-SAME: {
func.func private @overlapping_kernel(%x: memref<32xf32, strided<[1], offset: ?>>, %y: memref<32xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %xs = memref.subview %x[%c0] [16] [1] : memref<32xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
  %ys = memref.subview %y[%c0] [16] [1] : memref<32xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
  func.call @other_copy(%xs, %ys) : (memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  return
}

// Only called from @overlapping_kernel, whose two arguments may overlap.
// CHECK-LABEL: func.func private @other_copy(
// CHECK-NOT: drc.noalias_pointers
// CHECK-SAME: {
func.func private @other_copy(%in: memref<16xf32, strided<[1], offset: ?>>, %out: memref<16xf32, strided<[1], offset: ?>>) {
  memref.copy %in, %out : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
  return
}

// A memref that is not a view of an allocation or an argument (here one
// chosen at run time) may overlap anything.
// CHECK-LABEL: func.func private @unknown(
// CHECK-NOT: drc.noalias_pointers
// CHECK-SAME: {
func.func private @unknown(%in: memref<16xf32, strided<[1], offset: ?>>, %out: memref<16xf32, strided<[1], offset: ?>>) {
  memref.copy %in, %out : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[1], offset: ?>>
  return
}

// The public entry point: its arguments are separate buffers.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: drc.noalias_pointers
func.func @train_step(%x: memref<64xf32>, %y: memref<64xf32>, %flag: i1) {
  %c1 = arith.constant 1.0 : f32
  call @kernel(%x, %y) : (memref<64xf32>, memref<64xf32>) -> ()
  // Rows 0-15 and 16-31 of one buffer: disjoint static spans.
  %a = memref.alloc() : memref<32xf32>
  %lo = memref.subview %a[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  %hi = memref.subview %a[16] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 16>>
  %lo_d = memref.cast %lo : memref<16xf32, strided<[1]>> to memref<16xf32, strided<[1], offset: ?>>
  %hi_d = memref.cast %hi : memref<16xf32, strided<[1], offset: 16>> to memref<16xf32, strided<[1], offset: ?>>
  call @copy(%lo_d, %hi_d) : (memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  // Rows 0-15 and 8-23: they overlap.
  %mid = memref.subview %a[8] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 8>>
  %mid_d = memref.cast %mid : memref<16xf32, strided<[1], offset: 8>> to memref<16xf32, strided<[1], offset: ?>>
  call @shift(%c1, %lo_d, %mid_d) : (f32, memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  // Interleaved columns of one buffer, only read.
  %m = memref.alloc() : memref<8x2xf32>
  %c0m = memref.subview %m[0, 0] [8, 1] [1, 1] : memref<8x2xf32> to memref<8x1xf32, strided<[2, 1]>>
  %c1m = memref.subview %m[0, 1] [8, 1] [1, 1] : memref<8x2xf32> to memref<8x1xf32, strided<[2, 1], offset: 1>>
  %c0d = memref.cast %c0m : memref<8x1xf32, strided<[2, 1]>> to memref<8x1xf32, strided<[2, 1], offset: ?>>
  %c1d = memref.cast %c1m : memref<8x1xf32, strided<[2, 1], offset: 1>> to memref<8x1xf32, strided<[2, 1], offset: ?>>
  %sum = memref.alloc() : memref<8x1xf32>
  call @sum_columns(%c0d, %c1d, %sum) : (memref<8x1xf32, strided<[2, 1], offset: ?>>, memref<8x1xf32, strided<[2, 1], offset: ?>>, memref<8x1xf32>) -> ()
  // Two overlapping views of one buffer as a kernel's arguments.
  %w = memref.alloc() : memref<48xf32>
  %w0 = memref.subview %w[0] [32] [1] : memref<48xf32> to memref<32xf32, strided<[1]>>
  %w1 = memref.subview %w[16] [32] [1] : memref<48xf32> to memref<32xf32, strided<[1], offset: 16>>
  %w0d = memref.cast %w0 : memref<32xf32, strided<[1]>> to memref<32xf32, strided<[1], offset: ?>>
  %w1d = memref.cast %w1 : memref<32xf32, strided<[1], offset: 16>> to memref<32xf32, strided<[1], offset: ?>>
  call @overlapping_kernel(%w0d, %w1d) : (memref<32xf32, strided<[1], offset: ?>>, memref<32xf32, strided<[1], offset: ?>>) -> ()
  // One of two buffers, chosen at run time, copied into the other's rows.
  %b = memref.alloc() : memref<32xf32>
  %pick = arith.select %flag, %a, %b : memref<32xf32>
  %p = memref.subview %pick[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  %pd = memref.cast %p : memref<16xf32, strided<[1]>> to memref<16xf32, strided<[1], offset: ?>>
  call @unknown(%pd, %hi_d) : (memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>) -> ()
  memref.dealloc %a : memref<32xf32>
  memref.dealloc %b : memref<32xf32>
  memref.dealloc %m : memref<8x2xf32>
  memref.dealloc %sum : memref<8x1xf32>
  memref.dealloc %w : memref<48xf32>
  return
}
