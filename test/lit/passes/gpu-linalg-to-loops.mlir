// drc-gpu-linalg-to-loops (docs/cuda.md): every linalg op becomes parallel
// loops (sequential over reductions), except the matrix products at the
// function's top level that cuBLASLt can run: f32, static, and A, B and C
// each with contiguous rows or contiguous columns.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-linalg-to-loops))" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-linalg-to-loops{library-gemms=false}))" | FileCheck %s --check-prefix=LOOPS

// CHECK-LABEL: func.func @products
// A projection (B read transposed: contiguous columns) after a zero fill of
// its C, and a batch of products after a view, stay for cuBLASLt; the fills
// stay too, marked: the product overwrites C instead (cuBLAS's beta = 0).
// CHECK: linalg.fill {drc.folded_fill} ins(%{{.*}} : f32) outs(%arg2 : memref<64x32xf32>)
// CHECK-NEXT: linalg.matmul indexing_maps = [{{.*}}] {drc.overwrites} ins(%arg0, %arg1 : memref<64x16xf32>, memref<32x16xf32>)
// CHECK: linalg.fill {drc.folded_fill}
// CHECK-NEXT: memref.subview
// CHECK-NEXT: linalg.batch_matmul {drc.overwrites} ins(%arg3, %arg4
// A product after a fill of ones adds to them; one whose B has neither
// contiguous rows nor columns, one in f64, one inside a token loop, and an
// elementwise op become loops, and so do the fills before them.
// CHECK-NOT: linalg.fill
// CHECK: linalg.matmul ins(%arg0
// CHECK-NOT: linalg.
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK-NOT: linalg.
// CHECK: return
// LOOPS-LABEL: func.func @products
// LOOPS-NOT: linalg.
// LOOPS: return
func.func @products(%x: memref<64x16xf32>, %w: memref<32x16xf32>, %y: memref<64x32xf32>,
                    %q: memref<4x8x16xf32>, %k: memref<4x16x8xf32>, %s: memref<4x8x8xf32>,
                    %wide: memref<16x64xf32>, %d: memref<8x8xf64>, %x2: memref<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<64x32xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<64x16xf32>, memref<32x16xf32>) outs(%y : memref<64x32xf32>)
  linalg.fill ins(%zero : f32) outs(%s : memref<4x8x8xf32>)
  %unused = memref.subview %s[0, 0, 0] [1, 8, 8] [1, 1, 1] : memref<4x8x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  linalg.batch_matmul ins(%q, %k : memref<4x8x16xf32>, memref<4x16x8xf32>) outs(%s : memref<4x8x8xf32>)
  linalg.fill ins(%one : f32) outs(%y : memref<64x32xf32>)
  linalg.matmul ins(%x, %x2 : memref<64x16xf32>, memref<16x32xf32>) outs(%y : memref<64x32xf32>)
  %every = memref.subview %wide[0, 0] [16, 32] [1, 2] : memref<16x64xf32> to memref<16x32xf32, strided<[64, 2]>>
  linalg.matmul ins(%x, %every : memref<64x16xf32>, memref<16x32xf32, strided<[64, 2]>>) outs(%y : memref<64x32xf32>)
  linalg.matmul ins(%d, %d : memref<8x8xf64>, memref<8x8xf64>) outs(%d : memref<8x8xf64>)
  scf.forall (%t) in (4) {
    %qt = memref.subview %q[%t, 0, 0] [1, 8, 16] [1, 1, 1] : memref<4x8x16xf32> to memref<8x16xf32, strided<[16, 1], offset: ?>>
    %kt = memref.subview %k[%t, 0, 0] [1, 16, 8] [1, 1, 1] : memref<4x16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
    %st = memref.subview %s[%t, 0, 0] [1, 8, 8] [1, 1, 1] : memref<4x8x8xf32> to memref<8x8xf32, strided<[8, 1], offset: ?>>
    linalg.matmul ins(%qt, %kt : memref<8x16xf32, strided<[16, 1], offset: ?>>, memref<16x8xf32, strided<[8, 1], offset: ?>>) outs(%st : memref<8x8xf32, strided<[8, 1], offset: ?>>)
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%y : memref<64x32xf32>) {
  ^bb0(%o: f32):
    %r = arith.addf %o, %o : f32
    linalg.yield %r : f32
  }
  return
}
