// drc-gpu-block-regions (docs/cuda.md): a fused region's token loop becomes
// a block region, one thread block per token, its body phases: each op's
// parallel loop shared among the block's threads (row-major, consecutive
// threads on consecutive vectors of a row), each run of serial work that
// writes memory on one thread of a warp-wide phase. The token's
// temporaries become buffers the block shares; drc-gpu-privatize-buffers
// then gives every token a slice of one host buffer, and
// drc-gpu-launch-block-regions makes the region a launch with a barrier
// before each phase or load every thread runs whose accesses could race
// with those since the last barrier.
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions))" | FileCheck %s
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions{block-threads=32}))" | FileCheck %s --check-prefix=ROUNDS
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions,drc-gpu-privatize-buffers))" | FileCheck %s --check-prefix=SLICES
// RUN: drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions,drc-gpu-privatize-buffers,drc-gpu-launch-block-regions),canonicalize)" | FileCheck %s --check-prefix=LAUNCH
// RUN: not drc-opt %s --pass-pipeline="builtin.module(func.func(drc-gpu-block-regions{block-threads=48}))" 2>&1 | FileCheck %s --check-prefix=BAD

// A token's [4, 64] state scaled by a per-stream coefficient into a
// temporary (64 vectors of 4), the temporary's sum of squares (serial),
// then the temporary over that sum into the result (64 vectors).
// CHECK-LABEL: func.func @region
// CHECK: scf.parallel (%[[TOKEN:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK: %[[TMP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x64xf32>
// CHECK: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C64:.*]]) step
// CHECK: %[[COL:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.divui %[[T]], %{{.*}} : index
// CHECK: %[[C:.*]] = arith.muli %[[COL]], %{{.*}} : index
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[ROW]], %[[C]]]
// CHECK: vector.store %{{.*}}, %[[TMP]][%{{.*}}, %[[ROW]], %[[C]]]
// CHECK: } {drc.gpu_threads}
// CHECK: %[[ACC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1xf32>
// The accumulator's first store and its loop: one thread of a warp.
// CHECK: scf.parallel (%[[S:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[S]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[ACC]]
// CHECK-NEXT: scf.for
// CHECK: } {drc.gpu_threads}
// CHECK: scf.parallel
// CHECK: memref.load %[[ACC]]
// CHECK: } {drc.gpu_threads}
// CHECK: memref.dealloc %[[TMP]]
// CHECK: memref.dealloc %[[ACC]]
// CHECK: } {drc.gpu_block_region = 64 : i64}
// CHECK-NOT: scf.forall

// At most 32 threads: two rounds of 32 vectors.
// ROUNDS-LABEL: func.func @region
// ROUNDS: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%c32{{.*}}) step
// ROUNDS: scf.for %[[ROUND:.*]] = %{{.*}} to %c2{{.*}} step
// ROUNDS: %[[BASE:.*]] = arith.muli %[[ROUND]], %{{.*}} : index
// ROUNDS-NEXT: %{{.*}} = arith.addi %[[BASE]], %[[T]] : index
// ROUNDS: } {drc.gpu_block_region = 32 : i64}

// One host buffer for both temporaries, a 1088-byte slice per token (the
// [4, 64] temporary, then the accumulator, each rounded up to 64 bytes).
// SLICES-LABEL: func.func @region
// SLICES: %[[BUF:.*]] = memref.alloc() : memref<69632xi8>
// SLICES: scf.parallel
// SLICES: %[[START:.*]] = arith.muli %{{.*}}, %c1088 : index
// SLICES: memref.view %[[BUF]][%{{.*}}][] : memref<69632xi8> to memref<1x4x64xf32>
// SLICES: %[[AT:.*]] = arith.addi %[[START]], %c1024 : index
// SLICES: memref.view %[[BUF]][%[[AT]]][] : memref<69632xi8> to memref<1xf32>
// SLICES-NOT: memref.dealloc
// SLICES: } {drc.gpu_block_region = 64 : i64}
// SLICES: memref.dealloc %[[BUF]]

// One block of 64 threads per token, the phases' threads the block's
// first. Each phase reads what the one before wrote (the temporary, then
// the sum): a barrier before the second and the third, none after the last.
// LAUNCH-LABEL: func.func @region
// LAUNCH: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// LAUNCH: gpu.thread_id x
// LAUNCH-NOT: gpu.barrier
// LAUNCH: vector.store %{{.*}}, %[[TMP:view[_0-9]*]][
// LAUNCH: gpu.barrier
// LAUNCH-NOT: vector.store
// LAUNCH: memref.store %{{.*}}, %[[ACC:view[_0-9]*]][
// LAUNCH-NOT: gpu.barrier
// LAUNCH: vector.load %[[TMP]]
// LAUNCH: gpu.barrier
// LAUNCH: vector.load %[[TMP]]
// LAUNCH-NEXT: memref.load %[[ACC]]
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator
// LAUNCH-NOT: scf.parallel

// BAD: drc-gpu-block-regions: block-threads must be a multiple of 32 up to 1024
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @region(%x: memref<64x4x64xf32>, %a: memref<64x4xf32>, %y: memref<64x4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%t) in (64) {
    %xt = memref.subview %x[%t, 0, 0] [1, 4, 64] [1, 1, 1] : memref<64x4x64xf32> to memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>
    %yt = memref.subview %y[%t, 0, 0] [1, 4, 64] [1, 1, 1] : memref<64x4x64xf32> to memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>
    %tmp = memref.alloca() {alignment = 64 : i64} : memref<1x4x64xf32>
    scf.parallel (%i, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c4) {
      %v = vector.load %xt[%c0, %i, %c] : memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>, vector<4xf32>
      %s = memref.load %a[%t, %i] : memref<64x4xf32>
      %sv = vector.broadcast %s : f32 to vector<4xf32>
      %m = arith.mulf %v, %sv : vector<4xf32>
      vector.store %m, %tmp[%c0, %i, %c] : memref<1x4x64xf32>, vector<4xf32>
      scf.reduce
    }
    %acc = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
    memref.store %zero, %acc[%c0] : memref<1xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %c = %c0 to %c64 step %c4 {
        %v = vector.load %tmp[%c0, %i, %c] : memref<1x4x64xf32>, vector<4xf32>
        %old = memref.load %acc[%c0] : memref<1xf32>
        %sq = arith.mulf %v, %v : vector<4xf32>
        %new = vector.reduction <add>, %sq, %old : vector<4xf32> into f32
        memref.store %new, %acc[%c0] : memref<1xf32>
      }
    }
    scf.parallel (%i, %c) = (%c0, %c0) to (%c4, %c64) step (%c1, %c4) {
      %v = vector.load %tmp[%c0, %i, %c] : memref<1x4x64xf32>, vector<4xf32>
      %s = memref.load %acc[%c0] : memref<1xf32>
      %sv = vector.broadcast %s : f32 to vector<4xf32>
      %d = arith.divf %v, %sv : vector<4xf32>
      vector.store %d, %yt[%c0, %i, %c] : memref<1x4x64xf32, strided<[256, 64, 1], offset: ?>>, vector<4xf32>
      scf.reduce
    }
  }
  return
}


// A token's scalars: a one-element fill (a one-iteration parallel loop)
// and the serial sum after it are one phase on thread 0; a load every
// thread runs ends the merging, so the store after it is a phase of its
// own.
// CHECK-LABEL: func.func @scalars
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<1xf32>
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[ACC]][%[[T]]] : memref<1xf32>
// CHECK-NEXT: scf.for
// CHECK: } {drc.gpu_threads}
// CHECK-NEXT: %[[SUM:.*]] = memref.load %[[ACC]]
// CHECK-NEXT: %{{.*}} = arith.constant
// CHECK: scf.parallel
// CHECK: memref.store %[[SUM]]
// CHECK: } {drc.gpu_threads}
// CHECK-NOT: drc.gpu_threads
// CHECK: } {drc.gpu_block_region = 32 : i64}
// The load every thread runs reads the sum thread 0 wrote: a barrier
// before it.
// LAUNCH-LABEL: func.func @scalars
// LAUNCH: scf.for
// LAUNCH: gpu.barrier
// LAUNCH-NEXT: memref.load %view
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator
func.func @scalars(%x: memref<64x4xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%t) in (64) {
    %acc = memref.alloca() : memref<1xf32>
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      memref.store %zero, %acc[%i] : memref<1xf32>
      scf.reduce
    }
    scf.for %i = %c0 to %c4 step %c1 {
      %v = memref.load %x[%t, %i] : memref<64x4xf32>
      %old = memref.load %acc[%c0] : memref<1xf32>
      %new = arith.addf %old, %v : f32
      memref.store %new, %acc[%c0] : memref<1xf32>
    }
    %sum = memref.load %acc[%c0] : memref<1xf32>
    memref.store %sum, %y[%t] : memref<64xf32>
  }
  return
}

// Phases on buffers apart need no barrier between them: a token's two
// scalars filled (two temporaries of one privatized slice, bytes apart),
// then a row sum into a third; the phase that reads all three waits for
// them. A load every thread runs, then a phase that overwrites what it read:
// a barrier between them.
// LAUNCH-LABEL: func.func @apart
// LAUNCH: gpu.launch
// LAUNCH: memref.store %{{.*}}, %[[A:view[_0-9]*]][
// LAUNCH-NOT: gpu.barrier
// LAUNCH: memref.store %{{.*}}, %[[B:view[_0-9]*]][
// LAUNCH-NOT: gpu.barrier
// LAUNCH: vector.store
// LAUNCH: gpu.barrier
// LAUNCH: memref.load %[[A]]
// LAUNCH: gpu.barrier
// LAUNCH-NEXT: %[[OLD:.*]] = memref.load %arg1[
// LAUNCH: gpu.barrier
// LAUNCH: memref.store %{{.*}}, %arg1[
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator
func.func @apart(%x: memref<64x256xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%t) in (64) {
    %a = memref.alloca() : memref<1xf32>
    %b = memref.alloca() : memref<1xf32>
    %rows = memref.alloca() : memref<256xf32>
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      memref.store %zero, %a[%i] : memref<1xf32>
      scf.reduce
    }
    %mid = memref.load %x[%t, %c0] : memref<64x256xf32>
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      memref.store %one, %b[%i] : memref<1xf32>
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c256) step (%c4) {
      %v = vector.load %x[%t, %c] : memref<64x256xf32>, vector<4xf32>
      vector.store %v, %rows[%c] : memref<256xf32>, vector<4xf32>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      %va = memref.load %a[%i] : memref<1xf32>
      %vb = memref.load %b[%i] : memref<1xf32>
      %r = memref.load %rows[%i] : memref<256xf32>
      %s = arith.addf %va, %vb : f32
      %s2 = arith.addf %s, %r : f32
      %s3 = arith.addf %s2, %mid : f32
      memref.store %s3, %y[%t] : memref<64xf32>
      scf.reduce
    }
    %old = memref.load %y[%t] : memref<64xf32>
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      %n = arith.addf %old, %one : f32
      memref.store %n, %y[%t] : memref<64xf32>
      scf.reduce
    }
  }
  return
}

// Phases of at most a warp's threads run on the first warp: a step on a
// token's four values after the one that wrote them, reading another
// thread's, needs only a warp barrier; the phase of 64 threads that reads
// the result, a block barrier.
// LAUNCH-LABEL: func.func @warp
// LAUNCH: memref.store %{{.*}}, %[[M:view[_0-9]*]][
// LAUNCH-NOT: gpu.barrier
// LAUNCH: nvvm.bar.warp.sync %{{.*}} : i32
// LAUNCH-NOT: gpu.barrier
// LAUNCH: memref.load %[[M]]
// LAUNCH: memref.store %{{.*}}, %[[N:view[_0-9]*]][
// LAUNCH-NOT: nvvm.bar.warp.sync
// LAUNCH: gpu.barrier
// LAUNCH: memref.load %[[N]]
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator
func.func @warp(%x: memref<64x4xf32>, %y: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.forall (%t) in (64) {
    %m = memref.alloca() : memref<4xf32>
    %n = memref.alloca() : memref<4xf32>
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      %v = memref.load %x[%t, %i] : memref<64x4xf32>
      memref.store %v, %m[%i] : memref<4xf32>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      %i1 = arith.addi %i, %c1 : index
      %j = arith.remui %i1, %c4 : index
      %v = memref.load %m[%j] : memref<4xf32>
      memref.store %v, %n[%i] : memref<4xf32>
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c64) step (%c1) {
      %k = arith.remui %c, %c4 : index
      %v = memref.load %n[%k] : memref<4xf32>
      memref.store %v, %y[%t, %c] : memref<64x64xf32>
      scf.reduce
    }
  }
  return
}

// What the footprints cannot tell apart gets a barrier: a call's accesses
// are unknown; two slices of one argument are one buffer; a linalg op's
// reads are its operands' (the serial copy of a temporary the phase
// before wrote).
// LAUNCH-LABEL: func.func @conservative
// LAUNCH: memref.store %{{.*}}, %view[
// LAUNCH: gpu.barrier
// LAUNCH: call @opaque
// LAUNCH: gpu.barrier
// LAUNCH: memref.store %{{.*}}, %[[Y0:subview[_0-9]*]][
// LAUNCH: gpu.barrier
// LAUNCH: memref.load %[[Y1:subview[_0-9]*]][
// LAUNCH: memref.store %{{.*}}, %[[C:view[_0-9]*]][
// LAUNCH: gpu.barrier
// LAUNCH: linalg.copy ins(%[[C]]
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator
func.func private @opaque(memref<4xf32>)
func.func @conservative(%x: memref<64x4xf32>, %y: memref<64x4xf32>, %z: memref<64x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.forall (%t) in (64) {
    %a = memref.alloca() : memref<4xf32>
    %b = memref.alloca() : memref<4xf32>
    %c = memref.alloca() : memref<4xf32>
    %y0 = memref.subview %y[%t, 0] [1, 2] [1, 1] : memref<64x4xf32> to memref<2xf32, strided<[1], offset: ?>>
    %y1 = memref.subview %y[%t, 2] [1, 2] [1, 1] : memref<64x4xf32> to memref<2xf32, strided<[1], offset: ?>>
    %zt = memref.subview %z[%t, 0] [1, 4] [1, 1] : memref<64x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %k = arith.remui %i, %c4 : index
      %v = memref.load %x[%t, %k] : memref<64x4xf32>
      memref.store %v, %a[%k] : memref<4xf32>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      func.call @opaque(%b) : (memref<4xf32>) -> ()
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %k = arith.remui %i, %c2 : index
      %v = memref.load %x[%t, %k] : memref<64x4xf32>
      memref.store %v, %y0[%k] : memref<2xf32, strided<[1], offset: ?>>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %k = arith.remui %i, %c2 : index
      %v = memref.load %y1[%k] : memref<2xf32, strided<[1], offset: ?>>
      memref.store %v, %c[%k] : memref<4xf32>
      scf.reduce
    }
    linalg.copy ins(%c : memref<4xf32>) outs(%zt : memref<4xf32, strided<[1], offset: ?>>)
  }
  return
}
