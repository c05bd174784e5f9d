//===- GpuLaunchBlockRegions.cpp - Block regions as launches -------------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPULAUNCHBLOCKREGIONS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// Whether `op` only reads memory (a load between two phases, which every
/// thread runs).
bool onlyReads(Operation &op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(&op);
  return effects && effects.hasEffect<MemoryEffects::Read>() &&
         effects.onlyHasEffect<MemoryEffects::Read>();
}

/// Where a phase (or a load between phases) reads and writes: buffers by
/// the allocation or argument of the host function they view, a token's
/// temporaries, which drc-gpu-privatize-buffers made views of its slice of
/// one scratch buffer at the slice's start + a constant, by byte range.
class Footprint {
public:
  /// Adds `op`'s accesses and those of the ops in its regions.
  void add(Operation *op) {
    op->walk([&](Operation *inner) {
      // An op reporting its effects is taken at its word (a linalg op
      // reports its operands'); the walk visits the ops inside any other.
      auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
      if (!effects) {
        if (!inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
            !isMemoryEffectFree(inner))
          unknown = true;
        return;
      }
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (const MemoryEffects::EffectInstance &effect : list) {
        bool read = isa<MemoryEffects::Read>(effect.getEffect()),
             write = isa<MemoryEffects::Write>(effect.getEffect());
        if (!read && !write)
          continue; // an allocation or free: none inside phases
        Value value = effect.getValue();
        if (!value || !isa<MemRefType>(value.getType())) {
          unknown = true;
          continue;
        }
        std::optional<Span> at = span(value);
        if (!at)
          unknown = true;
        else
          (write ? writes : reads).push_back(*at);
      }
    });
  }

  /// Whether running `next` without a barrier after this footprint could
  /// race: one writes bytes the other reads or writes.
  bool conflicts(const Footprint &next) const {
    if (unknown || next.unknown)
      return true;
    auto any = [](ArrayRef<Span> a, ArrayRef<Span> b) {
      return llvm::any_of(a, [&](const Span &x) {
        return llvm::any_of(b, [&](const Span &y) { return x.overlaps(y); });
      });
    };
    return any(writes, next.reads) || any(writes, next.writes) ||
           any(reads, next.writes);
  }

  void merge(const Footprint &other) {
    llvm::append_range(reads, other.reads);
    llvm::append_range(writes, other.writes);
    unknown |= other.unknown;
  }

private:
  /// Where an access may fall: anywhere in `root` (the buffer it views; a
  /// memref.get_global's symbol stands for its buffer), or, for an access
  /// through a memref.view of static type at byte shift `start` + lo,
  /// bytes [lo, hi) from `start` in the view's source `origin` (two such
  /// ranges compare only with the same origin and start).
  struct Span {
    Value root, origin, start;
    Attribute global;
    int64_t lo = 0, hi = INT64_MAX; ///< INT64_MAX: anywhere in root
    bool overlaps(const Span &o) const {
      if (root != o.root && !(global && global == o.global))
        return false;
      if (hi == INT64_MAX || o.hi == INT64_MAX || origin != o.origin ||
          start != o.start)
        return true;
      return lo < o.hi && o.lo < hi;
    }
  };
  SmallVector<Span> reads, writes;
  bool unknown = false;

  /// Where an access to `value` may fall; none when the buffer it views is
  /// not one of the host function's (an argument, an allocation, a global).
  static std::optional<Span> span(Value value) {
    Span s;
    // Views that stay inside their source's bytes: a memref.view's range
    // holds for an access through these only.
    bool inside = true;
    while (true) {
      auto view = value.getDefiningOp<memref::ViewOp>();
      auto type = view ? cast<MemRefType>(view.getType()) : MemRefType();
      if (view && type.hasStaticShape() && inside && s.hi == INT64_MAX) {
        // The view nearest the access: start + a constant, or the shift.
        s.origin = view.getSource();
        s.start = view.getByteShift();
        if (auto add = s.start.getDefiningOp<arith::AddIOp>())
          if (std::optional<int64_t> c = getConstantIntValue(add.getRhs())) {
            s.start = add.getLhs();
            s.lo = *c;
          }
        s.hi = s.lo + mlir::drc::storedBytes(type);
      }
      if (auto viewLike = value.getDefiningOp<ViewLikeOpInterface>()) {
        inside &= isa<memref::SubViewOp, memref::ExpandShapeOp,
                      memref::CollapseShapeOp, memref::CastOp, memref::ViewOp>(
            viewLike);
        value = viewLike.getViewSource();
        continue;
      }
      break;
    }
    s.root = value;
    if (auto global = value.getDefiningOp<memref::GetGlobalOp>())
      s.global = global.getNameAttr();
    auto argument = dyn_cast<BlockArgument>(value);
    if (!s.global && !value.getDefiningOp<memref::AllocOp>() &&
        !value.getDefiningOp<memref::AllocaOp>() &&
        !(argument &&
          isa<FunctionOpInterface>(argument.getOwner()->getParentOp())))
      return std::nullopt;
    return s;
  }
};

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

    // Each phase a thread-mapped scf.forall. A barrier goes before a phase,
    // or a load every thread runs between phases, whose accesses could race
    // with those since the last barrier: one writes what the other reads or
    // writes. Phases on other buffers (a scalar's fill beside a partial sum
    // over a row) run one after another without one. A phase of at most a
    // warp's threads that races only with such phases since the last
    // barrier (a Sinkhorn step on a token's 4 x 4 matrix after the one
    // before) runs on the first warp like them: a warp barrier orders them.
    MLIRContext *ctx = &getContext();
    ArrayAttr mapping = rewriter.getArrayAttr(
        {gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)});
    // Since the last barrier: what the block's threads did (loads every
    // thread runs, phases of more than a warp) and what the first warp's
    // did (phases of at most a warp), and of that what came since the last
    // warp barrier.
    Footprint block, firstWarp, sinceWarpBarrier;
    auto barrierBefore = [&](Operation &op, bool warp) {
      Footprint here;
      here.add(&op);
      rewriter.setInsertionPoint(&op);
      if (block.conflicts(here) || (!warp && firstWarp.conflicts(here))) {
        gpu::BarrierOp::create(rewriter, loc);
        block = firstWarp = sinceWarpBarrier = Footprint();
      } else if (warp && sinceWarpBarrier.conflicts(here)) {
        NVVM::SyncWarpOp::create(
            rewriter, loc,
            arith::ConstantIntOp::create(rewriter, loc, -1, 32).getResult());
        sinceWarpBarrier = Footprint();
      }
      if (warp) {
        firstWarp.merge(here);
        sinceWarpBarrier.merge(here);
      } else {
        block.merge(here);
      }
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto phase = dyn_cast<scf::ParallelOp>(op);
      if (!phase || !phase->hasAttr(mlir::drc::kGpuThreadsAttr)) {
        if (phase || op.getNumRegions() != 0 ||
            !(isMemoryEffectFree(&op) || onlyReads(op) ||
              op.hasTrait<OpTrait::IsTerminator>()))
          return op.emitError("drc-gpu-launch-block-regions: work outside a "
                              "phase that writes memory");
        if (onlyReads(op))
          barrierBefore(op, /*warp=*/false);
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
      barrierBefore(op, /*warp=*/phaseBounds->trips[0] <= mlir::drc::kWarp);
      rewriter.setInsertionPoint(phase);
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
            /*syncAfterDistribute=*/false);
    if (failed(mapped.checkAndReport()))
      return launch.emitError("drc-gpu-launch-block-regions: the phases "
                              "could not be mapped onto threads");
    return success();
  }
};

} // namespace
