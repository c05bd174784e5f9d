//===- GpuBlockRegions.cpp - A fused region's token on a thread block ----===//
//
// A fused residual region's tile loop (scf.forall, one token per iteration
// on the GPU) becomes a block region: each iteration a thread block, whose
// threads share the iterations of each op's parallel loop and run the
// token's serial work on one thread, phase after phase. This is still the
// GPU loop form the CPU can run (CudaTargetTest); drc-gpu-launch-block-
// regions later makes each block region a launch with a barrier between
// phases that could race.
//
//===----------------------------------------------------------------------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUBLOCKREGIONS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

using mlir::drc::kWarp;

/// `n` rounded up to whole warps.
int64_t wholeWarps(int64_t n) { return (n + kWarp - 1) / kWarp * kWarp; }

/// Whether every thread of a block may run `op` alike: it writes nothing
/// (views, index arithmetic, constants, loads) and holds no code.
bool replicable(Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && effects.onlyHasEffect<MemoryEffects::Read>();
}

struct GpuBlockRegionsPass
    : mlir::drc::impl::GpuBlockRegionsBase<GpuBlockRegionsPass> {
  using GpuBlockRegionsBase::GpuBlockRegionsBase;

  void runOnOperation() override {
    if (blockThreads < kWarp || blockThreads % kWarp != 0 ||
        blockThreads > 1024) {
      getOperation().emitError("drc-gpu-block-regions: block-threads must "
                               "be a multiple of 32 up to 1024");
      return signalPassFailure();
    }
    for (auto forall : llvm::make_early_inc_range(
             getOperation().getBody().getOps<scf::ForallOp>()))
      if (failed(rewrite(forall)))
        return signalPassFailure();
  }

  /// The index constant `v`.
  Value index(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }

  LogicalResult rewrite(scf::ForallOp forall) {
    auto constant = [](ArrayRef<OpFoldResult> values) {
      return getConstantIntValues(values).has_value();
    };
    if (!constant(forall.getMixedLowerBound()) ||
        !constant(forall.getMixedUpperBound()) ||
        !constant(forall.getMixedStep()) || !forall.getOutputs().empty() ||
        forall.getMapping())
      return success(); // not a bufferized tile loop: left as it is
    Block *body = forall.getBody();
    Location loc = forall.getLoc();

    // The token's temporaries are the block's: every thread reads what
    // another wrote (drc-gpu-privatize-buffers gives each token a slice).
    mlir::drc::allocasToHeap(*body);
    // A loop nested in an op's loop runs in that op's thread.
    SmallVector<scf::ParallelOp> nested;
    for (Operation &op : *body)
      for (Region &region : op.getRegions())
        region.walk([&](scf::ParallelOp inner) { nested.push_back(inner); });
    for (scf::ParallelOp inner : llvm::reverse(nested)) {
      if (inner.getNumResults() != 0)
        return inner.emitError("drc-gpu-block-regions: a parallel loop "
                               "with results inside a fused region");
      mlir::drc::serialize(inner);
    }

    // Phases: each parallel loop shared among the threads, each run of
    // other work that writes memory on one thread.
    int64_t threads = kWarp;
    SmallVector<Operation *> run;
    auto closeRun = [&]() -> LogicalResult {
      if (run.empty())
        return success();
      for (Operation *op : run)
        for (Operation *user : op->getUsers())
          if (!llvm::is_contained(run, body->findAncestorOpInBlock(*user)))
            return op->emitError("drc-gpu-block-regions: serial work in a "
                                 "fused region whose results are used after "
                                 "it");
      // At the run's last op: the pure ops between its ops (constants,
      // views) then dominate the phase.
      OpBuilder b(run.back());
      openPhase(b, loc, 1);
      for (Operation *op : run)
        op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
      run.clear();
      return success();
    };
    for (Operation &op :
         llvm::make_early_inc_range(body->without_terminator())) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op);
          loop && loop.getNumResults() == 0) {
        if (failed(closeRun()))
          return failure();
        FailureOr<int64_t> used = share(loop);
        if (failed(used))
          return failure();
        threads = std::max(threads, *used);
        continue;
      }
      if (isa<memref::AllocOp, memref::DeallocOp>(op))
        continue; // one per token, privatized
      if (replicable(&op)) {
        // A load may read what the run writes: the run ends before it.
        if (!isMemoryEffectFree(&op) && failed(closeRun()))
          return failure();
        continue; // every thread
      }
      run.push_back(&op);
    }
    if (failed(closeRun()))
      return failure();
    mergeSingleThreadPhases(body);
    singleThread.clear();
    // A buffer allocated per iteration of a phase would be one per token
    // (drc-gpu-privatize-buffers), shared by the threads running them; an
    // alloca there, in a thread's loop over its iterations, would grow the
    // stack. Neither is made by the passes before.
    WalkResult shared = body->walk([&](Operation *op) {
      if (!isa<memref::AllocOp, memref::AllocaOp>(op) || op->getBlock() == body)
        return WalkResult::advance();
      op->emitError("drc-gpu-block-regions: a temporary allocated inside an "
                    "op of a fused region");
      return WalkResult::interrupt();
    });
    if (shared.wasInterrupted())
      return failure();

    // The token loop itself, one iteration per block.
    IRRewriter rewriter(forall);
    scf::ParallelOp region;
    if (failed(scf::forallToParallelLoop(rewriter, forall, &region)))
      return forall.emitError("drc-gpu-block-regions: the token loop could "
                              "not become a parallel loop");
    region->setAttr(mlir::drc::kGpuBlockRegionAttr,
                    rewriter.getI64IntegerAttr(threads));
    return success();
  }

  /// The current region's one-iteration phases (openPhase) and the block
  /// their work is in.
  llvm::DenseMap<Operation *, Block *> singleThread;

  /// Puts each one-iteration phase's work at the start of the next one's,
  /// when only views, index arithmetic and allocations come between them:
  /// the same thread runs both, in order, with one barrier fewer (a token's
  /// scalars: a one-element fill, a norm's inverse, an accumulator's start).
  void mergeSingleThreadPhases(Block *body) {
    Operation *previous = nullptr;
    for (Operation &op :
         llvm::make_early_inc_range(body->without_terminator())) {
      if (auto it = singleThread.find(&op); it != singleThread.end()) {
        if (previous) {
          // Both run on thread 0: the earlier's index is the later's.
          cast<scf::ParallelOp>(previous)
              .getInductionVars()[0]
              .replaceAllUsesWith(
                  cast<scf::ParallelOp>(op).getInductionVars()[0]);
          Block *from = singleThread.lookup(previous), *to = it->second;
          to->getOperations().splice(to->begin(), from->getOperations(),
                                     from->begin(),
                                     from->getTerminator()->getIterator());
          singleThread.erase(previous);
          previous->erase();
        }
        previous = &op;
        continue;
      }
      if (!isMemoryEffectFree(&op) &&
          !isa<memref::AllocOp, memref::DeallocOp>(op))
        previous = nullptr;
    }
  }

  /// Opens a phase of `iterations` iterations at `b`'s insertion point: a
  /// loop over a multiple of 32 threads, up to block-threads, in which
  /// thread t runs iterations t, t + threads, ...; `b` is left where the
  /// body of an iteration goes. Returns the iteration's number. (At least a
  /// warp even for one iteration: canonicalization would otherwise inline
  /// a one-iteration loop, and a warp is what the GPU runs anyway.)
  Value openPhase(OpBuilder &b, Location loc, int64_t iterations) {
    int64_t threads = std::min<int64_t>(wholeWarps(iterations), blockThreads);
    int64_t rounds = (iterations + threads - 1) / threads;
    Value zero = index(b, loc, 0), one = index(b, loc, 1);
    auto phase =
        scf::ParallelOp::create(b, loc, zero, index(b, loc, threads), one);
    phase->setAttr(mlir::drc::kGpuThreadsAttr, b.getUnitAttr());
    b.setInsertionPoint(phase.getBody()->getTerminator());
    Value iteration = phase.getInductionVars()[0];
    if (rounds > 1) {
      auto each = scf::ForOp::create(b, loc, zero, index(b, loc, rounds), one);
      b.setInsertionPoint(each.getBody()->getTerminator());
      iteration = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, each.getInductionVar(),
                                index(b, loc, threads)),
          phase.getInductionVars()[0]);
    }
    if (rounds * threads != iterations) {
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, iteration,
                                index(b, loc, iterations));
      auto guard = scf::IfOp::create(b, loc, inside, false);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    if (iterations == 1)
      singleThread[phase] = b.getInsertionBlock();
    return iteration;
  }

  /// Shares `loop`'s iterations among a phase's threads (openPhase), in
  /// row-major order, so consecutive threads take consecutive iterations
  /// of the innermost dimension. Returns the threads it uses.
  FailureOr<int64_t> share(scf::ParallelOp loop) {
    std::optional<mlir::drc::ConstantBounds> bounds =
        mlir::drc::constantBounds(loop);
    if (!bounds)
      return loop.emitError("drc-gpu-block-regions: a parallel loop with "
                            "bounds that are not constants in a fused region");
    int64_t iterations = 1;
    for (int64_t n : bounds->trips)
      iterations *= n;
    if (iterations == 0) {
      loop.erase();
      return 0;
    }
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    Value rest = openPhase(b, loc, iterations);
    IRMapping map;
    for (int64_t d = int64_t(bounds->trips.size()) - 1; d >= 0; --d) {
      int64_t trip = bounds->trips[d];
      Value i = rest;
      if (d > 0) {
        i = arith::RemUIOp::create(b, loc, rest, index(b, loc, trip));
        rest = arith::DivUIOp::create(b, loc, rest, index(b, loc, trip));
      }
      if (bounds->steps[d] != 1)
        i = arith::MulIOp::create(b, loc, i, index(b, loc, bounds->steps[d]));
      if (bounds->lower[d] != 0)
        i = arith::AddIOp::create(b, loc, i, index(b, loc, bounds->lower[d]));
      map.map(loop.getInductionVars()[d], i);
    }
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, map);
    loop.erase();
    return std::min<int64_t>(wholeWarps(iterations), blockThreads);
  }
};

} // namespace
