//===- OutlineKernels.cpp - One function per loop nest -------------------===//
#include "passes/Passes.h"

#include "passes/ViewArguments.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"

#include <functional>

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

/// Outlines `op` (a loop nest alone in its block position) into a private,
/// non-inlined function `name`; an identical function already outlined is
/// called instead. Returns false if outlining failed.
bool outline(IRRewriter &rewriter, Operation *op, const std::string &name,
             llvm::StringMap<func::FuncOp> &byBody,
             const std::function<void(func::FuncOp)> &beforeComparing) {
  // Wrap the nest in a region and outline the region.
  rewriter.setInsertionPoint(op);
  auto wrapper =
      scf::ExecuteRegionOp::create(rewriter, op->getLoc(), TypeRange{});
  Block *body = rewriter.createBlock(&wrapper.getRegion());
  rewriter.setInsertionPointToEnd(body);
  auto yield = scf::YieldOp::create(rewriter, op->getLoc());
  op->moveBefore(yield);
  func::CallOp call;
  FailureOr<func::FuncOp> kernel = outlineSingleBlockRegion(
      rewriter, op->getLoc(), wrapper.getRegion(), name, &call);
  if (failed(kernel))
    return false;
  kernel->setPrivate();
  kernel->setNoInline(true);
  // The wrapper now holds only the call; put the call in its place.
  call->moveBefore(wrapper);
  rewriter.eraseOp(wrapper);
  makeOffsetsArguments(*kernel, [&](unsigned index) {
    return SmallVector<OpOperand *>{&call->getOpOperand(index)};
  });
  beforeComparing(*kernel);
  auto [first, inserted] = byBody.try_emplace(kernelBody(*kernel), *kernel);
  if (!inserted) {
    call.setCallee(first->second.getSymName());
    rewriter.eraseOp(*kernel);
  }
  return true;
}

/// The loop nests directly in `block` (bufferized: they return nothing).
SmallVector<Operation *> nestsIn(Block &block) {
  SmallVector<Operation *> nests;
  for (Operation &op : block)
    if (isKernel(&op) && op.getNumResults() == 0)
      nests.push_back(&op);
  return nests;
}

struct OutlineKernelsPass
    : mlir::drc::impl::OutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    // The first kernel of each body; later identical ones (the same nest in
    // every layer, and in both loss and train_step) call it instead.
    llvm::StringMap<func::FuncOp> kernelsByBody;
    bool failedToOutline = false;
    // A kernel whose parallel loop runs several nests per iteration (a
    // fused region's tile: one nest per op) calls each as a step function.
    // Steps repeat across layers and within one (Sinkhorn's iterations), so
    // most become calls to one function: LLVM's loop passes, superlinear in
    // the loops of a function, then see a few small functions instead of
    // one with hundreds of loops.
    auto outlineSteps = [&](func::FuncOp kernel) {
      for (auto forall : kernel.getBody().front().getOps<scf::ForallOp>()) {
        SmallVector<Operation *> steps = nestsIn(*forall.getBody());
        if (steps.size() < 2)
          continue;
        for (auto [index, op] : llvm::enumerate(steps))
          failedToOutline |= !outline(
              rewriter, op,
              (kernel.getSymName() + "_step" + std::to_string(index)).str(),
              kernelsByBody, [](func::FuncOp) {});
      }
    };
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isPrivate() || fn.isExternal())
        continue;
      for (auto [index, op] : llvm::enumerate(nestsIn(fn.getBody().front())))
        failedToOutline |= !outline(
            rewriter, op,
            (fn.getSymName() + "_kernel" + std::to_string(index)).str(),
            kernelsByBody, outlineSteps);
      if (failedToOutline) {
        fn.emitError("drc-outline-kernels: cannot outline a kernel");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
