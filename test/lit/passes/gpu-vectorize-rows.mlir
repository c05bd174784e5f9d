// drc-gpu-vectorize-rows (docs/cuda.md): inside a token loop (one token
// per GPU thread block) or on its own, a linalg op whose rows are
// contiguous becomes loops over its row dimension in steps of 4: vector
// loads of the operands that vary along the row, scalar loads (and a
// broadcast where needed) of those that do not, vector arithmetic, and a
// vector store, or, for a sum along the row, a vector.reduction into the
// accumulator. The parallel dimensions are one scf.parallel (the row's
// too, when it is one), the reduced ones scf.for loops inside it.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-vectorize-rows),canonicalize)" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-vectorize-rows{width=2}),canonicalize)" | FileCheck %s --check-prefix=WIDTH2
// RUN: not drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-vectorize-rows{width=1}))" 2>&1 | FileCheck %s --check-prefix=BAD

// A token's [4, 16] state plus a row of 16 times a per-stream coefficient,
// then the state's sum of squares per stream (after a zero fill).
// CHECK-LABEL: func.func @region
// CHECK-DAG: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: scf.forall
// CHECK: %[[X:.*]] = memref.subview %arg0
// CHECK: %[[U:.*]] = memref.expand_shape
// CHECK: %[[A:.*]] = memref.subview %arg2
// CHECK: %[[Y:.*]] = memref.subview %arg3
// CHECK: %[[S:.*]] = memref.subview %arg4
// CHECK: scf.parallel (%[[N:.*]], %[[C:.*]]) = (%[[C0]], %[[C0]]) to (%[[C4]], %[[C16]]) step (%[[C1]], %[[C4]]) {
// CHECK-NEXT: %[[XV:.*]] = vector.load %[[X]][%[[C0]], %[[N]], %[[C]]] : {{.*}}, vector<4xf32>
// CHECK-NEXT: %[[UV:.*]] = vector.load %[[U]][%[[C0]], %[[C0]], %[[C]]] : {{.*}}, vector<4xf32>
// CHECK-NEXT: %[[AS:.*]] = memref.load %[[A]][%[[C0]], %[[N]], %[[C0]]]
// CHECK-NEXT: %[[E:.*]] = math.exp %[[AS]] : f32
// CHECK-NEXT: %[[EV:.*]] = vector.broadcast %[[E]] : f32 to vector<4xf32>
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[UV]], %[[EV]] : vector<4xf32>
// CHECK-NEXT: %[[R:.*]] = arith.addf %[[XV]], %[[M]] : vector<4xf32>
// CHECK-NEXT: vector.store %[[R]], %[[Y]][%[[C0]], %[[N]], %[[C]]]
// The fill of [1, 4]: one vector store.
// CHECK: vector.store %[[ZEROS]], %[[S]][%[[C0]], %[[C0]]]
// CHECK: scf.parallel (%[[N2:.*]]) = (%[[C0]]) to (%[[C4]]) step (%[[C1]]) {
// CHECK-NEXT: scf.for %[[C2:.*]] = %[[C0]] to %[[C16]] step %[[C4]] {
// CHECK-NEXT: %[[YV:.*]] = vector.load %[[Y]][%[[C0]], %[[N2]], %[[C2]]]
// CHECK-NEXT: %[[ACC:.*]] = memref.load %[[S]][%[[C0]], %[[N2]]]
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[YV]], %[[YV]] : vector<4xf32>
// CHECK-NEXT: %[[SUM:.*]] = vector.reduction <add>, %[[SQ]], %[[ACC]] : vector<4xf32> into f32
// CHECK-NEXT: memref.store %[[SUM]], %[[S]][%[[C0]], %[[N2]]]
// CHECK-NOT: linalg.

// WIDTH2-LABEL: func.func @region
// WIDTH2: vector.load {{.*}} vector<2xf32>
// WIDTH2: vector.reduction <add>, {{.*}} : vector<2xf32> into f32

// Rows of 6 (4 does not divide them), a transpose, and a matrix product
// outside a token loop (cuBLASLt's, drc-gpu-linalg-to-loops) with the
// zero fill of its C, which cuBLASLt's overwriting replaces, stay.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK-NEXT: linalg.matmul
// CHECK-NOT: vector.

// Outside a token loop (a kernel of its own) an op is vectorised too.
// CHECK-LABEL: func.func @kernel
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[C0:.*]], %[[C0]]) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %[[C4:.*]]) {
// CHECK: vector.load
// CHECK: vector.store
// CHECK-NOT: linalg.

// BAD: drc-gpu-vectorize-rows: width must be at least 2
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#coef = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#sum = affine_map<(d0, d1, d2) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @region(%x: memref<64x4x16xf32>, %u: memref<64x16xf32>, %a: memref<64x4x1xf32>, %y: memref<64x4x16xf32>, %s: memref<64x4xf32>) {
  scf.forall (%t) in (64) {
    %xt = memref.subview %x[%t, 0, 0] [1, 4, 16] [1, 1, 1] : memref<64x4x16xf32> to memref<1x4x16xf32, strided<[64, 16, 1], offset: ?>>
    %ut = memref.subview %u[%t, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %ut3 = memref.expand_shape %ut [[0], [1, 2]] output_shape [1, 1, 16] : memref<1x16xf32, strided<[16, 1], offset: ?>> into memref<1x1x16xf32, strided<[16, 16, 1], offset: ?>>
    %at = memref.subview %a[%t, 0, 0] [1, 4, 1] [1, 1, 1] : memref<64x4x1xf32> to memref<1x4x1xf32, strided<[4, 1, 1], offset: ?>>
    %yt = memref.subview %y[%t, 0, 0] [1, 4, 16] [1, 1, 1] : memref<64x4x16xf32> to memref<1x4x16xf32, strided<[64, 16, 1], offset: ?>>
    %st = memref.subview %s[%t, 0] [1, 4] [1, 1] : memref<64x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id3, #row, #coef, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%xt, %ut3, %at : memref<1x4x16xf32, strided<[64, 16, 1], offset: ?>>, memref<1x1x16xf32, strided<[16, 16, 1], offset: ?>>, memref<1x4x1xf32, strided<[4, 1, 1], offset: ?>>)
        outs(%yt : memref<1x4x16xf32, strided<[64, 16, 1], offset: ?>>) {
    ^bb0(%xv: f32, %uv: f32, %av: f32, %o: f32):
      %e = math.exp %av : f32
      %m = arith.mulf %uv, %e : f32
      %r = arith.addf %xv, %m : f32
      linalg.yield %r : f32
    }
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%st : memref<1x4xf32, strided<[4, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#id3, #sum], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%yt : memref<1x4x16xf32, strided<[64, 16, 1], offset: ?>>)
        outs(%st : memref<1x4xf32, strided<[4, 1], offset: ?>>) {
    ^bb0(%v: f32, %acc: f32):
      %sq = arith.mulf %v, %v : f32
      %r = arith.addf %acc, %sq : f32
      linalg.yield %r : f32
    }
  }
  return
}

// Rows of 6 (4 does not divide them), a transposed read, and an op
// outside a token loop stay as they are.
func.func @left_alone(%x: memref<64x6xf32>, %y: memref<64x6xf32>, %p: memref<8x8xf32>, %q: memref<8x8xf32>) {
  scf.forall (%t) in (64) {
    %xt = memref.subview %x[%t, 0] [1, 6] [1, 1] : memref<64x6xf32> to memref<1x6xf32, strided<[6, 1], offset: ?>>
    %yt = memref.subview %y[%t, 0] [1, 6] [1, 1] : memref<64x6xf32> to memref<1x6xf32, strided<[6, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%xt : memref<1x6xf32, strided<[6, 1], offset: ?>>) outs(%yt : memref<1x6xf32, strided<[6, 1], offset: ?>>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.addf %v, %v : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%p : memref<8x8xf32>) outs(%q : memref<8x8xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
    }
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%q : memref<8x8xf32>)
  linalg.matmul ins(%p, %p : memref<8x8xf32>, memref<8x8xf32>) outs(%q : memref<8x8xf32>)
  return
}
func.func @kernel(%p: memref<8x8xf32>, %q: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<8x8xf32>) outs(%q : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %v : f32
    linalg.yield %r : f32
  }
  return
}

// A sum along a row of 16 vectors splits into 2 partial sums of 8 each,
// slice s summing the row's vectors s, s + 2, ... (consecutive threads on
// consecutive vectors), into a [1, 4, 2] temporary; then each output's
// first value plus its partial sums in order.
// CHECK-LABEL: func.func @split
// CHECK-DAG: %[[ZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: scf.forall
// CHECK: %[[X:.*]] = memref.subview %arg0
// CHECK: %[[S:.*]] = memref.subview %arg1
// CHECK: %[[P:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x4x2xf32>
// CHECK: scf.parallel (%[[N:.*]], %[[SL:.*]]) = (%[[C0]], %[[C0]]) to (%[[C4]], %[[C2]]) step (%[[C1]], %[[C1]]) {
// CHECK-NEXT: %[[SUM:.*]] = scf.for %[[J:.*]] = %[[C0]] to %[[C8]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT: %[[K:.*]] = arith.muli %[[J]], %[[C2]] : index
// CHECK-NEXT: %[[V:.*]] = arith.addi %[[K]], %[[SL]] : index
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[V]], %[[C4]] : index
// CHECK-NEXT: %[[XV:.*]] = vector.load %[[X]][%[[C0]], %[[N]], %[[COL]]]
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[XV]], %[[XV]] : vector<4xf32>
// CHECK-NEXT: %[[R:.*]] = vector.reduction <add>, %[[SQ]], %[[ACC]] : vector<4xf32> into f32
// CHECK-NEXT: scf.yield %[[R]] : f32
// CHECK: memref.store %[[SUM]], %[[P]][%[[C0]], %[[N]], %[[SL]]]
// CHECK: scf.parallel (%[[N2:.*]]) = (%[[C0]]) to (%[[C4]]) step (%[[C1]]) {
// CHECK-NEXT: %[[FIRST:.*]] = memref.load %[[S]][%[[C0]], %[[N2]]]
// CHECK-NEXT: %[[TOTAL:.*]] = scf.for %[[I:.*]] = %[[C0]] to %[[C2]] step %[[C1]] iter_args(%[[A:.*]] = %[[FIRST]]) -> (f32) {
// CHECK-NEXT: %[[PART:.*]] = memref.load %[[P]][%[[C0]], %[[N2]], %[[I]]]
// CHECK-NEXT: %[[NEXT:.*]] = arith.addf %[[A]], %[[PART]] : f32
// CHECK-NEXT: scf.yield %[[NEXT]] : f32
// CHECK: memref.store %[[TOTAL]], %[[S]][%[[C0]], %[[N2]]]
func.func @split(%x: memref<64x4x64xf32>, %s: memref<64x4xf32>) {
  scf.forall (%t) in (64) {
    %xt = memref.subview %x[%t, 0, 0] [1, 4, 64] [1, 1, 1] : memref<64x4x64xf32> to memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>
    %st = memref.subview %s[%t, 0] [1, 4] [1, 1] : memref<64x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id3, #sum], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%xt : memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>)
        outs(%st : memref<1x4xf32, strided<[4, 1], offset: ?>>) {
    ^bb0(%v: f32, %o: f32):
      %sq = arith.mulf %v, %v : f32
      %a = arith.addf %o, %sq : f32
      linalg.yield %a : f32
    }
  }
  return
}

// Causal attention's masked row max (a kernel of its own): the row's index
// is a vector, its first plus [0, 1, 2, 3], compared with the row number;
// the max splits into partial maxima from -inf like a sum.
// CHECK-LABEL: func.func @masked
// CHECK-DAG: %[[LANES:.*]] = arith.constant dense<[0, 1, 2, 3]> : vector<4xindex>
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.parallel (%[[ROW:.*]], %[[SL:.*]]) =
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[NEGINF]]) -> (f32) {
// CHECK: %[[K:.*]] = arith.addi %{{.*}}, %[[SL]] : index
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK-NEXT: %[[V:.*]] = vector.load %arg0[%[[ROW]], %[[COL]]]
// CHECK: %[[FIRST:.*]] = vector.broadcast %[[COL]] : index to vector<4xindex>
// CHECK: %[[COLS:.*]] = arith.addi %[[FIRST]], %[[LANES]] : vector<4xindex>
// CHECK: %[[ROWS:.*]] = vector.broadcast %[[ROW]] : index to vector<4xindex>
// CHECK: %[[KEEP:.*]] = arith.cmpi ule, %[[COLS]], %[[ROWS]] : vector<4xindex>
// CHECK: %[[M:.*]] = arith.select %[[KEEP]], %[[V]], %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: vector.reduction <maximumf>, %[[M]], %[[ACC]] : vector<4xf32> into f32
// CHECK: scf.parallel
// CHECK: arith.maximumf
func.func @masked(%s: memref<64x64xf32>, %m: memref<64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<64x64xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = linalg.index 1 : index
    %r = linalg.index 0 : index
    %keep = arith.cmpi ule, %c, %r : index
    %x = arith.select %keep, %v, %ninf : f32
    %max = arith.maximumf %o, %x : f32
    linalg.yield %max : f32
  }
  return
}
