//===- GpuLaunchBlockRegions.cpp - Block regions as launches -------------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPULAUNCHBLOCKREGIONS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// Whether `op` reads memory (a load between two phases, on every thread).
bool reads(Operation &op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(&op);
  return effects && effects.hasEffect<MemoryEffects::Read>();
}

struct GpuLaunchBlockRegionsPass
    : mlir::drc::impl::GpuLaunchBlockRegionsBase<GpuLaunchBlockRegionsPass> {
  void runOnOperation() override {
    for (auto loop : llvm::make_early_inc_range(
             getOperation().getBody().getOps<scf::ParallelOp>()))
      if (loop->hasAttr(mlir::drc::kGpuBlockRegionAttr) && failed(launch(loop)))
        return signalPassFailure();
  }

  LogicalResult launch(scf::ParallelOp region) {
    std::optional<mlir::drc::ConstantBounds> bounds =
        mlir::drc::constantBounds(region);
    if (!bounds || bounds->trips.size() != 1)
      return region.emitError("drc-gpu-launch-block-regions: a block region "
                              "must be one-dimensional with constant bounds");
    int64_t threads =
        cast<IntegerAttr>(region->getAttr(mlir::drc::kGpuBlockRegionAttr))
            .getInt();
    Location loc = region.getLoc();
    IRRewriter rewriter(region);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(rewriter, loc, index(bounds->trips[0]),
                                        one, one, index(threads), one, one);
    Block &body = launch.getBody().front();
    rewriter.setInsertionPointToEnd(&body);
    auto end = gpu::TerminatorOp::create(rewriter, loc);

    // The token: lower + block * step.
    rewriter.setInsertionPointToStart(&body);
    Value token = launch.getBlockIds().x;
    if (bounds->steps[0] != 1)
      token =
          arith::MulIOp::create(rewriter, loc, token, index(bounds->steps[0]));
    if (bounds->lower[0] != 0)
      token =
          arith::AddIOp::create(rewriter, loc, token, index(bounds->lower[0]));
    region.getInductionVars()[0].replaceAllUsesWith(token);
    Block *from = region.getBody();
    body.getOperations().splice(end->getIterator(), from->getOperations(),
                                from->begin(),
                                from->getTerminator()->getIterator());
    rewriter.eraseOp(region);

    // Each phase a thread-mapped scf.forall; a barrier before one when a
    // load every thread ran since the last phase may read what it writes.
    MLIRContext *ctx = &getContext();
    ArrayAttr mapping = rewriter.getArrayAttr(
        {gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)});
    bool loaded = false;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto phase = dyn_cast<scf::ParallelOp>(op);
      if (!phase || !phase->hasAttr(mlir::drc::kGpuThreadsAttr)) {
        if (phase || op.getNumRegions() != 0 ||
            !(isMemoryEffectFree(&op) || reads(op) ||
              op.hasTrait<OpTrait::IsTerminator>()))
          return op.emitError("drc-gpu-launch-block-regions: work outside a "
                              "phase that writes memory");
        loaded |= reads(op);
        continue;
      }
      std::optional<mlir::drc::ConstantBounds> phaseBounds =
          mlir::drc::constantBounds(phase);
      if (!phaseBounds || phaseBounds->trips.size() != 1 ||
          phaseBounds->lower[0] != 0 || phaseBounds->steps[0] != 1 ||
          phaseBounds->trips[0] > threads)
        return phase.emitError("drc-gpu-launch-block-regions: a phase must "
                               "run from 0 in steps of 1 on at most the "
                               "block's threads");
      rewriter.setInsertionPoint(phase);
      if (loaded)
        gpu::BarrierOp::create(rewriter, loc);
      loaded = false;
      auto forall = scf::ForallOp::create(
          rewriter, phase.getLoc(),
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(phaseBounds->trips[0])},
          ValueRange{}, mapping);
      Block *inner = forall.getBody();
      phase.getInductionVars()[0].replaceAllUsesWith(
          forall.getInductionVars()[0]);
      inner->getOperations().splice(
          inner->getTerminator()->getIterator(),
          phase.getBody()->getOperations(), phase.getBody()->begin(),
          phase.getBody()->getTerminator()->getIterator());
      rewriter.eraseOp(phase);
    }
    rewriter.setInsertionPointToStart(&body);
    DiagnosedSilenceableFailure mapped =
        transform::gpu::mapNestedForallToThreadsImpl(
            rewriter, std::nullopt, launch, {threads, 1, 1}, /*warpSize=*/32,
            /*syncAfterDistribute=*/true);
    if (failed(mapped.checkAndReport()))
      return launch.emitError("drc-gpu-launch-block-regions: the phases "
                              "could not be mapped onto threads");
    return success();
  }
};

} // namespace
