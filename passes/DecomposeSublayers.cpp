//===- DecomposeSublayers.cpp - Sublayers -> kernel-level ops ------------===//
#include "passes/Passes.h"

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

struct DecomposeSublayersPass
    : mlir::drc::impl::DecomposeSublayersBase<DecomposeSublayersPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeLinear, DecomposeAttention, DecomposeSwiGLU>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
