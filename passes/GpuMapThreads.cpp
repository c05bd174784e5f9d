//===- GpuMapThreads.cpp - Parallel loop nests as thread blocks ----------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUMAPTHREADS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// The most blocks a grid may have along y or z.
constexpr int64_t kMaxGridYZ = 65535;

gpu::ParallelLoopDimMappingAttr dimMapping(MLIRContext *context,
                                           gpu::Processor processor) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  return gpu::ParallelLoopDimMappingAttr::get(context, processor, identity,
                                              identity);
}

void mapTo(scf::ParallelOp loop, ArrayRef<gpu::Processor> processors) {
  SmallVector<gpu::ParallelLoopDimMappingAttr> dims;
  for (gpu::Processor p : processors)
    dims.push_back(dimMapping(loop.getContext(), p));
  (void)gpu::setMappingAttr(loop, dims);
}

/// A top-level loop nest split into blocks of threads.
struct ThreadTiling : mlir::drc::ConstantBounds {
  int64_t x = -1, y = -1; ///< the dimensions on threads (y: none if -1)
  int64_t threadsX = 1, threadsY = 1;

  int64_t blocks(int64_t trip, int64_t threads) const {
    return (trip + threads - 1) / threads;
  }
  bool guarded() const {
    return trips[x] % threadsX != 0 || (y >= 0 && trips[y] % threadsY != 0);
  }
};

struct GpuMapThreadsPass
    : mlir::drc::impl::GpuMapThreadsBase<GpuMapThreadsPass> {
  using GpuMapThreadsBase::GpuMapThreadsBase;

  void runOnOperation() override {
    if (blockThreads < 1 || (blockThreads & (blockThreads - 1)) != 0) {
      getOperation().emitError("drc-gpu-map-threads: block-threads must be "
                               "a power of two");
      return signalPassFailure();
    }
    for (auto loop : llvm::make_early_inc_range(
             getOperation().getBody().getOps<scf::ParallelOp>())) {
      if (loop->hasAttr(mlir::drc::kGpuBlockRegionAttr))
        continue; // its blocks and threads are set (drc-gpu-block-regions)
      if (std::optional<mlir::drc::ConstantBounds> bounds =
              mlir::drc::constantBounds(loop))
        rewrite(loop, plan(ThreadTiling{*bounds}));
    }
  }

  /// Threads along the innermost dimension, then the next one while the
  /// block is less than half full; blocks halved (down to a warp) while the
  /// grid has fewer than min-blocks.
  ThreadTiling plan(ThreadTiling t) {
    int64_t rank = int64_t(t.trips.size());
    t.x = rank - 1;
    t.threadsX = std::min<int64_t>(t.trips[t.x], blockThreads);
    if (rank >= 2 && t.threadsX * 2 <= blockThreads) {
      t.y = rank - 2;
      t.threadsY = std::min<int64_t>(t.trips[t.y], blockThreads / t.threadsX);
    }
    auto gridSize = [&] {
      int64_t n = 1;
      for (int64_t d = 0; d < rank; ++d)
        n *= d == t.x   ? t.blocks(t.trips[d], t.threadsX)
             : d == t.y ? t.blocks(t.trips[d], t.threadsY)
                        : t.trips[d];
      return n;
    };
    while (gridSize() < minBlocks &&
           t.threadsX * t.threadsY > mlir::drc::kWarp) {
      if (t.threadsY > 1)
        t.threadsY = (t.threadsY + 1) / 2;
      else
        t.threadsX = (t.threadsX + 1) / 2;
    }
    return t;
  }

  void rewrite(scf::ParallelOp loop, const ThreadTiling &t) {
    if (llvm::all_of(t.trips, [](int64_t n) { return n == 1; }) ||
        llvm::is_contained(t.trips, 0))
      return; // serial work or nothing: gpu-map-parallel-loops maps it
    bool reduces = false;
    loop->walk([&](scf::ParallelOp p) { reduces |= p.getNumResults() != 0; });
    if (reduces)
      return; // reductions: left to gpu-map-parallel-loops
    OpBuilder b(loop), constants(loop);
    Location loc = loop.getLoc();
    llvm::SmallDenseMap<int64_t, Value> indices; // before the loops, once
    auto index = [&](int64_t v) {
      Value &c = indices[v];
      if (!c)
        c = arith::ConstantIndexOp::create(constants, loc, v);
      return c;
    };
    // The grid: x's blocks, y's blocks, then every other dimension.
    SmallVector<int64_t> gridDims = {t.x};
    SmallVector<int64_t> gridTrips = {t.blocks(t.trips[t.x], t.threadsX)};
    if (t.y >= 0) {
      gridDims.push_back(t.y);
      gridTrips.push_back(t.blocks(t.trips[t.y], t.threadsY));
    }
    for (int64_t d = 0; d < int64_t(t.trips.size()); ++d)
      if (d != t.x && d != t.y) {
        gridDims.push_back(d);
        gridTrips.push_back(t.trips[d]);
      }
    SmallVector<gpu::Processor> gridProcessors;
    for (size_t i = 0; i < gridTrips.size(); ++i) {
      gpu::Processor p = gpu::Processor::Sequential;
      if (i == 0)
        p = gpu::Processor::BlockX;
      else if (i < 3 && gridTrips[i] <= kMaxGridYZ)
        p = i == 1 ? gpu::Processor::BlockY : gpu::Processor::BlockZ;
      gridProcessors.push_back(p);
    }
    SmallVector<Value> zeros, ones, gridUpper, threadUpper;
    for (int64_t n : gridTrips) {
      zeros.push_back(index(0));
      ones.push_back(index(1));
      gridUpper.push_back(index(n));
    }
    threadUpper.push_back(index(t.threadsX));
    if (t.y >= 0)
      threadUpper.push_back(index(t.threadsY));
    ArrayRef<Value> threadZeros =
        ArrayRef(zeros).take_front(threadUpper.size());
    ArrayRef<Value> threadOnes = ArrayRef(ones).take_front(threadUpper.size());

    auto grid = scf::ParallelOp::create(b, loc, zeros, gridUpper, ones);
    constants.setInsertionPoint(grid);
    mapTo(grid, gridProcessors);
    b.setInsertionPointToStart(grid.getBody());
    auto block =
        scf::ParallelOp::create(b, loc, threadZeros, threadUpper, threadOnes);
    mapTo(block, t.y >= 0 ? ArrayRef<gpu::Processor>{gpu::Processor::ThreadX,
                                                     gpu::Processor::ThreadY}
                          : ArrayRef<gpu::Processor>{gpu::Processor::ThreadX});
    b.setInsertionPointToStart(block.getBody());

    // The original induction variables: lower + iteration * step, where a
    // threaded dimension's iteration is block * threads + thread.
    SmallVector<Value> iteration(t.trips.size());
    for (auto [i, d] : llvm::enumerate(gridDims))
      iteration[d] = grid.getInductionVars()[i];
    auto threaded = [&](int64_t d, int64_t threads, Value thread) {
      Value first = arith::MulIOp::create(b, loc, iteration[d], index(threads));
      iteration[d] = arith::AddIOp::create(b, loc, first, thread);
    };
    threaded(t.x, t.threadsX, block.getInductionVars()[0]);
    if (t.y >= 0)
      threaded(t.y, t.threadsY, block.getInductionVars()[1]);
    IRMapping map;
    for (auto [d, iv] : llvm::enumerate(loop.getInductionVars())) {
      Value scaled =
          t.steps[d] == 1
              ? iteration[d]
              : arith::MulIOp::create(b, loc, iteration[d], index(t.steps[d]));
      map.map(iv, t.lower[d] == 0
                      ? scaled
                      : arith::AddIOp::create(b, loc, scaled, index(t.lower[d]))
                            .getResult());
    }
    if (t.guarded()) {
      Value inside;
      for (int64_t d : {t.x, t.y}) {
        if (d < 0)
          continue;
        Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         iteration[d], index(t.trips[d]));
        inside = inside ? arith::AndIOp::create(b, loc, inside, lt) : lt;
      }
      auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, map);
    loop.erase();
    // A parallel loop inside a thread runs in that thread, as scf.for
    // loops (convert-parallel-loops-to-gpu refuses a parallel loop after
    // side effects in a mapped loop's body).
    SmallVector<scf::ParallelOp> nested;
    block.getBody()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp inner) {
      if (inner != block)
        nested.push_back(inner);
    });
    for (scf::ParallelOp inner : nested)
      mlir::drc::serialize(inner);
  }
};

} // namespace
