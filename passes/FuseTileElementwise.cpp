//===- FuseTileElementwise.cpp - One loop nest per elementwise chain -----===//
//
// A fused region's tile lowers to one linalg op per drc op: each reads and
// writes a tile-sized temporary (16 tokens x 4 streams x 256 channels is
// 64 KiB, beyond L1), and a stream mix by a width-1 operand (HC's
// h ⊗ β, the write of a sublayer's output into n streams) is a zero fill
// plus a "reduction" over one element. This pass makes such a mix
// elementwise, lets it write its result instead of adding to zeros, and
// merges single-use elementwise producers into their consumers inside the
// tile, so a chain of them is one pass over the tile. A kernel a tile
// computes twice (the backward's recomputed forward values) is computed once.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::drc {
#define GEN_PASS_DEF_FUSETILEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A generic whose reduction loops all run once is elementwise: the loops
/// are dropped (index 0 in every map) and the rest are parallel.
struct UnitReductionToParallel : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned> reductions;
    op.getReductionDims(reductions);
    if (reductions.empty() || !op.hasPureTensorSemantics() ||
        !op.getBody()->getOps<linalg::IndexOp>().empty() ||
        llvm::any_of(reductions, [&](unsigned d) { return ranges[d] != 1; }))
      return failure();
    MLIRContext *ctx = op.getContext();
    unsigned rank = ranges.size(), kept = 0;
    SmallVector<AffineExpr> replacement(rank);
    for (unsigned d = 0; d < rank; ++d)
      replacement[d] = llvm::is_contained(reductions, d)
                           ? getAffineConstantExpr(0, ctx)
                           : getAffineDimExpr(kept++, ctx);
    SmallVector<AffineMap> maps;
    llvm::SmallBitVector bare(kept);
    for (AffineMap map : op.getIndexingMapsArray()) {
      maps.push_back(map.replaceDimsAndSymbols(replacement, {}, kept, 0));
      for (AffineExpr e : maps.back().getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          bare.set(dim.getPosition());
    }
    // Every loop left must still take its extent from some operand.
    if (!bare.all())
      return failure();
    auto parallel = linalg::GenericOp::create(
        rewriter, op.getLoc(), op.getResultTypes(), op.getDpsInputs(),
        op.getDpsInits(), maps,
        SmallVector<utils::IteratorType>(kept, utils::IteratorType::parallel));
    rewriter.inlineRegionBefore(op.getRegion(), parallel.getRegion(),
                                parallel.getRegion().end());
    rewriter.replaceOp(op, parallel.getResults());
    return success();
  }
};

/// An elementwise generic (all loops parallel, each output element written
/// once) whose init is a fill reads the fill's value, not the tensor: the
/// zeros are never written. `0 + x` becomes `x` (the sign of a zero result
/// may differ; nothing downstream tells them apart).
struct ReadFillValue : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        op.getNumLoops() != op.getNumParallelLoops())
      return failure();
    bool changed = false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      auto fill = init.get().getDefiningOp<linalg::FillOp>();
      BlockArgument out = op.getMatchingBlockArgument(&init);
      if (!fill || out.use_empty() ||
          !op.getMatchingIndexingMap(&init).isPermutation())
        continue;
      Value value = fill.getInputs().front();
      // The adds that read the output, before it is replaced.
      SmallVector<arith::AddFOp> adds;
      if (matchPattern(value, m_PosZeroFloat()))
        for (Operation *user : out.getUsers())
          if (auto add = dyn_cast<arith::AddFOp>(user))
            adds.push_back(add);
      rewriter.modifyOpInPlace(op, [&] {
        out.replaceAllUsesWith(value);
        init.set(fill.getOutputs().front());
      });
      for (arith::AddFOp add : adds)
        rewriter.replaceOp(add,
                           add.getLhs() == value ? add.getRhs() : add.getLhs());
      changed = true;
    }
    return success(changed);
  }
};

/// A tile computing the same kernel twice (a backward region's recomputed
/// forward value next to another use of it, e.g. a norm's sum of squares)
/// keeps the first: same inputs, same body, and inits that are equal as far
/// as the body can tell (fills of one value, or empty tensors).
struct MergeRepeatedKernels : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<scf::ForallOp>(op->getParentOp()) || !op.hasPureTensorSemantics())
      return failure();
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
      if (auto earlier = dyn_cast<linalg::GenericOp>(prev);
          earlier && sameKernel(earlier, op)) {
        rewriter.replaceOp(op, earlier.getResults());
        return success();
      }
    return failure();
  }

  static bool sameKernel(linalg::GenericOp a, linalg::GenericOp b) {
    llvm::DenseMap<Value, Value> inside;
    auto equal = [&](Value x, Value y) -> LogicalResult {
      if (x == y || inside.lookup(x) == y)
        return success();
      if (x.getType() != y.getType())
        return failure();
      if (x.getDefiningOp<tensor::EmptyOp>() &&
          y.getDefiningOp<tensor::EmptyOp>())
        return success();
      auto fx = x.getDefiningOp<linalg::FillOp>();
      auto fy = y.getDefiningOp<linalg::FillOp>();
      return success(fx && fy &&
                     fx.getInputs().front() == fy.getInputs().front());
    };
    auto mark = [&](Value x, Value y) { inside[x] = y; };
    return OperationEquivalence::isEquivalentTo(
        a, b, equal, mark, OperationEquivalence::IgnoreLocations);
  }
};

/// Merge an elementwise producer into its only user when both are in
/// the same fused-region tile and the consumer reads each produced element
/// once (its map for the operand is a permutation of its loops): nothing is
/// computed twice, and kernels outside regions stay as they are (the
/// unfused program is the reference).
bool fusibleInTile(OpOperand *operand) {
  Operation *consumer = operand->getOwner();
  Operation *producer = operand->get().getDefiningOp();
  auto generic = dyn_cast<linalg::GenericOp>(consumer);
  return producer && generic && producer->getBlock() == consumer->getBlock() &&
         isa<scf::ForallOp>(consumer->getParentOp()) && producer->hasOneUse() &&
         generic.getMatchingIndexingMap(operand).isPermutation();
}

struct FuseTileElementwisePass
    : mlir::drc::impl::FuseTileElementwiseBase<FuseTileElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<UnitReductionToParallel, ReadFillValue, MergeRepeatedKernels>(
        &getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusibleInTile);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
