//===- GpuLoops.h - What the GPU passes share about parallel loops -*- C++
//-*-===//
#ifndef DRC_PASSES_GPULOOPS_H
#define DRC_PASSES_GPULOOPS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::drc {

/// Threads that run in lockstep on an NVIDIA GPU: a block holds whole ones.
inline constexpr int64_t kWarp = 32;

/// On a top-level scf.parallel: a fused region's token loop whose every
/// iteration is one thread block of this many threads (an integer), its
/// body a sequence of phases (drc-gpu-block-regions).
inline constexpr llvm::StringLiteral kGpuBlockRegionAttr =
    "drc.gpu_block_region";

/// On a one-dimensional scf.parallel directly in a block region's body: a
/// phase, its iterations the block's first threads, a barrier before it
/// where its accesses could race with the phases' before it.
inline constexpr llvm::StringLiteral kGpuThreadsAttr = "drc.gpu_threads";

/// An scf.parallel's constant bounds, per dimension.
struct ConstantBounds {
  SmallVector<int64_t> lower, steps, trips; ///< trips: iterations
};

/// The bounds of `loop` when they are all constant (and steps positive).
inline std::optional<ConstantBounds> constantBounds(scf::ParallelOp loop) {
  ConstantBounds b;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    b.lower.push_back(*l);
    b.steps.push_back(*s);
    b.trips.push_back(std::max<int64_t>(0, (*u - *l + *s - 1) / *s));
  }
  return b;
}

/// Bytes a static buffer's elements take (an i1 a whole byte, as stored).
inline int64_t storedBytes(MemRefType type) {
  return type.getNumElements() *
         int64_t((type.getElementTypeBitWidth() + 7) / 8);
}

/// Each memref.alloca directly in `body` as a memref.alloc (same type and
/// alignment) freed before the block's terminator: a buffer the threads
/// of a kernel share, instead of one on each thread's stack.
inline void allocasToHeap(Block &body) {
  for (auto alloca :
       llvm::make_early_inc_range(body.getOps<memref::AllocaOp>())) {
    OpBuilder b(alloca);
    auto alloc = memref::AllocOp::create(b, alloca.getLoc(), alloca.getType(),
                                         alloca.getDynamicSizes(),
                                         alloca.getAlignmentAttr());
    alloca.replaceAllUsesWith(alloc.getResult());
    alloca.erase();
    b.setInsertionPoint(body.getTerminator());
    memref::DeallocOp::create(b, alloc.getLoc(), alloc);
  }
}

/// `loop` (no results) as a nest of scf.for loops in its place: the work
/// of one GPU thread.
inline void serialize(scf::ParallelOp loop) {
  OpBuilder b(loop);
  scf::buildLoopNest(
      b, loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(),
      loop.getStep(), [&](OpBuilder &inner, Location, ValueRange ivs) {
        IRMapping map;
        map.map(loop.getInductionVars(), ivs);
        for (Operation &op : loop.getBody()->without_terminator())
          inner.clone(op, map);
      });
  loop.erase();
}

} // namespace mlir::drc

#endif // DRC_PASSES_GPULOOPS_H
