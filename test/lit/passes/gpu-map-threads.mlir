// drc-gpu-map-threads (docs/cuda.md), then upstream's mapping and launch
// conversion, which keep the mapping it chose.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-map-threads{min-blocks=1}))" | FileCheck %s --check-prefix=TILE
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-map-threads{min-blocks=1},gpu-map-parallel-loops,convert-parallel-loops-to-gpu))" | FileCheck %s --check-prefix=LAUNCH
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-map-threads))" | FileCheck %s --check-prefix=SMALL

// Rows of 1000 contiguous elements: thread x along the row (4 blocks of 256,
// the last one guarded), block y per row.
// TILE-LABEL: func.func @rows
// TILE: %[[C4:.*]] = arith.constant 4 : index
// TILE-NEXT: %[[C8:.*]] = arith.constant 8 : index
// TILE-NEXT: %[[C256:.*]] = arith.constant 256 : index
// TILE-NEXT: %[[C1000:.*]] = arith.constant 1000 : index
// TILE: scf.parallel (%[[BX:.*]], %[[ROW:.*]]) = ({{.*}}) to (%[[C4]], %[[C8]])
// TILE: scf.parallel (%[[TX:.*]]) = ({{.*}}) to (%[[C256]])
// TILE: %[[FIRST:.*]] = arith.muli %[[BX]], %[[C256]]
// TILE: %[[COL:.*]] = arith.addi %[[FIRST]], %[[TX]]
// TILE: %[[IN:.*]] = arith.cmpi slt, %[[COL]], %[[C1000]]
// TILE: scf.if %[[IN]]
// TILE: memref.load %{{.*}}[%[[ROW]], %[[COL]]]
// TILE: mapping = [#gpu.loop_dim_map<processor = thread_x
// TILE: mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y

// LAUNCH-LABEL: func.func @rows
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %{{.*}}, {{.*}} = %{{.*}}) threads({{.*}}) in ({{.*}} = %[[T:.*]], {{.*}} = %{{.*}}, {{.*}} = %{{.*}})
// With the default min-blocks (264), blocks shrink to a warp: 32 x 8 of them.
// SMALL-LABEL: func.func @rows
// SMALL: %[[C32:.*]] = arith.constant 32 : index
// SMALL-NEXT: %[[C8:.*]] = arith.constant 8 : index
// SMALL: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%[[C32]], %[[C8]])
// SMALL: scf.parallel (%{{.*}}) = ({{.*}}) to (%[[C32]])
// SMALL: scf.if
func.func @rows(%x: memref<8x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c1000) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<8x1000xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %x[%i, %j] : memref<8x1000xf32>
  }
  return
}

// Short rows (16 per row) fill the block with 16 rows (thread y); the
// sizes divide, so there is no guard. A loop nested in the body runs
// inside its thread.
// TILE-LABEL: func.func @short_rows
// TILE: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c1{{.*}}, %c4{{.*}})
// TILE: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c16{{.*}}, %c16{{.*}})
// TILE-NOT: scf.if
// TILE: scf.for %{{.*}} = %c0 to %c2 step %c1
// TILE: mapping = [#gpu.loop_dim_map<processor = thread_x{{.*}}>, #gpu.loop_dim_map<processor = thread_y
func.func @short_rows(%x: memref<64x16xf32>, %y: memref<64x16x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<64x16xf32>
    scf.parallel (%k) = (%c0) to (%c2) step (%c1) {
      memref.store %v, %y[%i, %j, %k] : memref<64x16x2xf32>
    }
  }
  return
}

// A one-iteration loop (serial work) is left as it is.
// TILE-LABEL: func.func @serial
// TILE: scf.parallel (%{{.*}}) = (%c0) to (%c1) step (%c1) {
// TILE-NOT: mapping
// TILE: return
func.func @serial(%x: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    %v = memref.load %x[] : memref<f32>
    %w = math.sqrt %v : f32
    memref.store %w, %x[] : memref<f32>
  }
  return
}
