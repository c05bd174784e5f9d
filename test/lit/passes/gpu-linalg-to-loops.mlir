// drc-gpu-linalg-to-loops (docs/cuda.md): every linalg op becomes parallel
// loops (sequential over reductions), except the matrix products at the
// function's top level that cuBLASLt can run: f32, static, and A, B and C
// each with contiguous rows or contiguous columns.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-linalg-to-loops))" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-linalg-to-loops{library-gemms=false}))" | FileCheck %s --check-prefix=LOOPS

// CHECK-LABEL: func.func @products
// A projection (B read transposed: contiguous columns) and a batch of
// products stay for cuBLASLt.
// CHECK: linalg.matmul indexing_maps
// CHECK-SAME: ins(%arg0, %arg1 : memref<64x16xf32>, memref<32x16xf32>)
// CHECK: linalg.batch_matmul ins(%arg3, %arg4
// A product whose B has neither contiguous rows nor columns, one in f64,
// one inside a token loop, and an elementwise op become loops.
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
                    %wide: memref<16x64xf32>, %d: memref<8x8xf64>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<64x16xf32>, memref<32x16xf32>) outs(%y : memref<64x32xf32>)
  linalg.batch_matmul ins(%q, %k : memref<4x8x16xf32>, memref<4x16x8xf32>) outs(%s : memref<4x8x8xf32>)
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
