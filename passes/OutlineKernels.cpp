//===- OutlineKernels.cpp - One function per loop nest -------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"

namespace mlir::drc {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

bool isKernel(Operation *op) {
  return isa<scf::ForallOp, scf::ForOp, scf::ParallelOp, linalg::LinalgOp>(op);
}

/// The text of `kernel` under a fixed name: equal for kernels that do the
/// same work on the same shapes (values from outside are its arguments).
std::string kernelBody(func::FuncOp kernel) {
  std::string name = kernel.getSymName().str(), text;
  kernel.setSymName("kernel");
  llvm::raw_string_ostream os(text);
  kernel->print(os, OpPrintingFlags().useLocalScope());
  kernel.setSymName(name);
  return text;
}

struct OutlineKernelsPass
    : mlir::drc::impl::OutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    // The first kernel of each body; later identical ones (the same nest in
    // every layer, and in both loss and train_step) call it instead.
    llvm::StringMap<func::FuncOp> kernelsByBody;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isPrivate() || fn.isExternal())
        continue;
      SmallVector<Operation *> kernels;
      for (Operation &op : fn.getBody().front())
        if (isKernel(&op) && op.getNumResults() == 0)
          kernels.push_back(&op);
      for (auto [index, op] : llvm::enumerate(kernels)) {
        // Wrap the nest in a region and outline the region.
        rewriter.setInsertionPoint(op);
        auto wrapper =
            scf::ExecuteRegionOp::create(rewriter, op->getLoc(), TypeRange{});
        Block *body = rewriter.createBlock(&wrapper.getRegion());
        rewriter.setInsertionPointToEnd(body);
        auto yield = scf::YieldOp::create(rewriter, op->getLoc());
        op->moveBefore(yield);
        std::string name =
            (fn.getSymName() + "_kernel" + std::to_string(index)).str();
        func::CallOp call;
        FailureOr<func::FuncOp> kernel = outlineSingleBlockRegion(
            rewriter, op->getLoc(), wrapper.getRegion(), name, &call);
        if (failed(kernel)) {
          fn.emitError("drc-outline-kernels: cannot outline a kernel");
          return signalPassFailure();
        }
        kernel->setPrivate();
        kernel->setNoInline(true);
        // The wrapper now holds only the call; put the call in its place.
        call->moveBefore(wrapper);
        rewriter.eraseOp(wrapper);
        auto [first, inserted] =
            kernelsByBody.try_emplace(kernelBody(*kernel), *kernel);
        if (!inserted) {
          call.setCallee(first->second.getSymName());
          rewriter.eraseOp(*kernel);
        }
      }
    }
  }
};

} // namespace
