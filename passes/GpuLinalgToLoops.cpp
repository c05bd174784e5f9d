//===- GpuLinalgToLoops.cpp - Kernels' loops, or the BLAS's products -----===//
#include "passes/LibraryGemm.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPULINALGTOLOOPS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

struct GpuLinalgToLoopsPass
    : mlir::drc::impl::GpuLinalgToLoopsBase<GpuLinalgToLoopsPass> {
  using GpuLinalgToLoopsBase::GpuLinalgToLoopsBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      if (libraryGemms && isa<func::FuncOp>(op->getParentOp()) &&
          mlir::drc::libraryGemm(op, mlir::drc::typeView))
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
