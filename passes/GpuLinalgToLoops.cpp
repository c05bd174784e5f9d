//===- GpuLinalgToLoops.cpp - Kernels' loops, or the BLAS's products -----===//
#include "passes/LibraryGemm.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPULINALGTOLOOPS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// The zero fill of `product`'s C just before it (views may come between),
/// if any: the product can then overwrite C instead of adding to zeros.
linalg::FillOp zeroFillBefore(linalg::LinalgOp product) {
  Value c = product.getDpsInits()[0];
  for (Operation *op = product->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<ViewLikeOpInterface>(op) || op->hasTrait<OpTrait::ConstantLike>())
      continue;
    auto fill = dyn_cast<linalg::FillOp>(op);
    if (!fill || fill.getOutputs()[0] != c ||
        !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
      return {};
    return fill;
  }
  return {};
}

struct GpuLinalgToLoopsPass
    : mlir::drc::impl::GpuLinalgToLoopsBase<GpuLinalgToLoopsPass> {
  using GpuLinalgToLoopsBase::GpuLinalgToLoopsBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    llvm::SmallPtrSet<Operation *, 16> kept;
    for (linalg::LinalgOp op : ops) {
      if (!libraryGemms || !isa<func::FuncOp>(op->getParentOp()) ||
          !mlir::drc::libraryGemm(op, mlir::drc::typeView))
        continue;
      kept.insert(op);
      if (linalg::FillOp fill = zeroFillBefore(op)) {
        fill->setAttr(mlir::drc::kFoldedFill, UnitAttr::get(&getContext()));
        op->setAttr(mlir::drc::kOverwrites, UnitAttr::get(&getContext()));
        kept.insert(fill);
      }
    }
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      if (kept.contains(op))
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op->emitError("drc-gpu-linalg-to-loops: could not lower this op to "
                      "loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
