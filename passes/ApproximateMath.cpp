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
    // Only the exps change: no folding, constant CSE or region
    // simplification of the rest of the function (which the driver would
    // otherwise do on every iteration, over the whole train step; the
    // canonicalizations after bufferization do it once).
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
