//===- ApproximateMath.cpp - Vectorisable f32 exp
//--------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::drc {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

struct ApproximateMathPass
    : mlir::drc::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef op) {
      return op == math::ExpOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
