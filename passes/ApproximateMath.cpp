//===- ApproximateMath.cpp - Vectorisable f32 exp
//--------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

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
    // One walk: only the exps change (the greedy driver also folded and
    // simplified the rest of the function, the whole train step, on each
    // of its iterations; the canonicalizations after bufferization do that
    // once).
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
