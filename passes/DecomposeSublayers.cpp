//===- DecomposeSublayers.cpp - Sublayers -> kernel-level ops ------------===//
#include "passes/TokenLocalRegions.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::drc {
#define GEN_PASS_DEF_DECOMPOSESUBLAYERS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

/// x W^T for a weight stored [out, in].
Value projection(PatternRewriter &rewriter, Location loc, Value x, Value w) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  SmallVector<int64_t> shape(xType.getShape());
  shape.back() = wType.getDimSize(0);
  auto type = RankedTensorType::get(shape, xType.getElementType());
  auto op = MatmulOp::create(rewriter, loc, type, x, w);
  op.setTransposeRhs(true);
  return op;
}

struct DecomposeLinear : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, projection(rewriter, op.getLoc(), op.getInput(), op.getWeight()));
    return success();
  }
};

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value u = op.getInput();
    auto rope = [&](Value x) {
      return RopeOp::create(rewriter, loc, x.getType(), x, op.getNHeadAttr(),
                            op.getSeqLenAttr(), op.getRopeThetaAttr(),
                            UnitAttr());
    };
    Value query = projection(rewriter, loc, u, op.getWq());
    Value q = rope(query);
    Value k = rope(projection(rewriter, loc, u, op.getWk()));
    Value v = projection(rewriter, loc, u, op.getWv());
    auto type = cast<RankedTensorType>(u.getType());
    auto lseType = RankedTensorType::get(
        {type.getDimSize(0), static_cast<int64_t>(op.getNHead())},
        type.getElementType());
    auto core =
        CausalAttentionOp::create(rewriter, loc, TypeRange{type, lseType}, q, k,
                                  v, op.getNHeadAttr(), op.getSeqLenAttr());
    Value heads = core.getResult();
    // MoDA: the token's depth keys join the same softmax, scored with the
    // un-rotated query (relative offset 0).
    if (Value keys = op.getDepthKeys())
      heads = DepthAttentionOp::create(rewriter, loc, type, query, keys,
                                       op.getDepthValues(), heads,
                                       core.getLse(), op.getNHeadAttr());
    rewriter.replaceOp(op, projection(rewriter, loc, heads, op.getWo()));
    return success();
  }
};

struct DecomposeSwiGLU : OpRewritePattern<SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGLUOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value gate = projection(rewriter, loc, op.getInput(), op.getW1());
    Value up = projection(rewriter, loc, op.getInput(), op.getW3());
    Value hidden = SiluMulOp::create(rewriter, loc, gate, up);
    rewriter.replaceOp(op, projection(rewriter, loc, hidden, op.getW2()));
    return success();
  }
};

/// The projections reading `norm`, in block order, when they are all narrow
/// (HC's coefficients of N-hat(H), AttnRes's depth logits of its normalised
/// bank) and their weights can be read where the first one is; else none.
SmallVector<LinearOp> narrowProjectionsOf(RMSNormOp norm) {
  SmallVector<LinearOp> linears;
  for (OpOperand &use : norm->getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (!linear || use.getOperandNumber() != 0 ||
        linear->getBlock() != norm->getBlock())
      return {};
    auto w = cast<RankedTensorType>(linear.getWeight().getType());
    if (!isNarrowMatrix(w.getDimSize(0), w.getDimSize(1)))
      return {};
    linears.push_back(linear);
  }
  llvm::sort(linears,
             [](LinearOp x, LinearOp y) { return x->isBeforeInBlock(y); });
  // A weight read later (a parameter reference next to its projection)
  // moves up; one computed there leaves the norm as it is.
  for (LinearOp linear : linears)
    if (Operation *def = linear.getWeight().getDefiningOp();
        def && def->getBlock() == norm->getBlock() &&
        linears.front()->isBeforeInBlock(def) && def->getNumOperands() != 0)
      return {};
  return linears;
}

/// A norm read only by narrow projections and those projections become one
/// normed_linear of the norm's input, the gain folded into each weight
/// (rms_norm(x, g) W^T = rms_norm(x) (W g)^T): the normalised rows are
/// never formed.
void foldNormsIntoProjections(ModuleOp module) {
  SmallVector<std::pair<RMSNormOp, SmallVector<LinearOp>>> folds;
  module.walk([&](RMSNormOp norm) {
    if (SmallVector<LinearOp> linears = narrowProjectionsOf(norm);
        !linears.empty())
      folds.emplace_back(norm, std::move(linears));
  });
  for (auto &[norm, linears] : folds) {
    Operation *first = linears.front();
    OpBuilder b(first);
    SmallVector<Value> weights;
    SmallVector<Type> types;
    for (LinearOp linear : linears) {
      Value w = linear.getWeight();
      if (Operation *def = w.getDefiningOp();
          def && def->getBlock() == first->getBlock() &&
          first->isBeforeInBlock(def))
        def->moveBefore(first);
      if (Value gain = norm.getGain())
        w = ScaleOp::create(b, linear.getLoc(), w.getType(), w, gain,
                            b.getF64FloatAttr(1.0));
      weights.push_back(w);
      types.push_back(linear.getType());
    }
    auto folded = NormedLinearOp::create(
        b, norm.getLoc(), types, norm.getInput(), weights, norm.getEpsAttr());
    for (auto [linear, result] : llvm::zip(linears, folded.getResults())) {
      linear.replaceAllUsesWith(result);
      linear.erase();
    }
    norm.erase();
  }
}

struct DecomposeSublayersPass
    : mlir::drc::impl::DecomposeSublayersBase<DecomposeSublayersPass> {
  void runOnOperation() override {
    foldNormsIntoProjections(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeLinear, DecomposeAttention, DecomposeSwiGLU>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
