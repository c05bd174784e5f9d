//===- OutlineKernels.cpp - One function per loop nest -------------------===//
#include "passes/KernelRole.h"
#include "passes/Passes.h"

#include "passes/ViewArguments.h"

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

/// Moves `op` (a loop nest with no results) into a new function `name`
/// before the function holding it and calls that in its place. The values
/// it uses from outside become the arguments, in the order of a post-order
/// walk; an index constant among them is also cloned at the top of the
/// body, where its uses then read it. This is MLIR's
/// outlineSingleBlockRegion on a region holding `op`, with the same result,
/// except that the uses are redirected by one walk of the nest rather than
/// by scanning all uses of each captured value, which the function's
/// buffers and common constants have by the thousand (quadratic).
std::pair<func::FuncOp, func::CallOp>
outlineNest(IRRewriter &rewriter, Operation *op, const std::string &name) {
  llvm::SmallPtrSet<Region *, 4> outside;
  for (Region *region = op->getParentRegion(); region;
       region = region->getParentRegion())
    outside.insert(region);
  llvm::SetVector<Value> captures;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (outside.contains(operand.getParentRegion()))
        captures.insert(operand);
  });
  Location loc = op->getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op->getParentOfType<func::FuncOp>());
  auto kernel = func::FuncOp::create(
      rewriter, loc, name,
      rewriter.getFunctionType(ValueRange(captures.getArrayRef()).getTypes(),
                               {}));
  Block *body = kernel.addEntryBlock();
  rewriter.setInsertionPoint(op);
  auto call =
      func::CallOp::create(rewriter, loc, kernel, captures.getArrayRef());
  rewriter.setInsertionPointToEnd(body);
  auto ret = func::ReturnOp::create(rewriter, loc);
  op->moveBefore(ret);
  DenseMap<Value, Value> inside;
  for (auto [value, argument] : llvm::zip(captures, body->getArguments())) {
    Value replacement = argument;
    if (auto constant = value.getDefiningOp<arith::ConstantIndexOp>()) {
      rewriter.setInsertionPointToStart(body);
      replacement = rewriter.clone(*constant)->getResult(0);
    }
    inside[value] = replacement;
  }
  op->walk([&](Operation *nested) {
    for (OpOperand &operand : nested->getOpOperands())
      if (Value replacement = inside.lookup(operand.get()))
        operand.set(replacement);
  });
  return {kernel, call};
}

/// Outlines `op` (a loop nest alone in its block position) into a private,
/// non-inlined function `name`; an identical function already outlined is
/// called instead.
void outline(IRRewriter &rewriter, Operation *op, const std::string &name,
             llvm::StringMap<func::FuncOp> &byBody,
             const std::function<void(func::FuncOp)> &beforeComparing) {
  auto [kernel, call] = outlineNest(rewriter, op, name);
  kernel.setPrivate();
  kernel.setNoInline(true);
  makeOffsetsArguments(kernel, [&](unsigned index) {
    return SmallVector<OpOperand *>{&call->getOpOperand(index)};
  });
  beforeComparing(kernel);
  auto [first, inserted] = byBody.try_emplace(kernelBody(kernel), kernel);
  if (!inserted) {
    call.setCallee(first->second.getSymName());
    rewriter.eraseOp(kernel);
  }
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
    // A kernel's parallel loop calls each nest of its iteration as a step
    // function (a fused region's tile runs one per op). Steps repeat across
    // layers and within one (Sinkhorn's iterations), so most become calls
    // to one function: LLVM's loop passes, superlinear in the loops of a
    // function, then see a few small functions instead of one with hundreds
    // of loops. A step's pointers are its arguments, which can be noalias
    // (drc-mark-noalias); in the body of the parallel loop, which OpenMP
    // outlines, they would be loaded from its context.
    auto outlineSteps = [&](func::FuncOp kernel) {
      for (auto forall : kernel.getBody().front().getOps<scf::ForallOp>()) {
        SmallVector<Operation *> steps = nestsIn(*forall.getBody());
        for (auto [index, op] : llvm::enumerate(steps))
          outline(rewriter, op, kernelStepName(kernel.getSymName(), index),
                  kernelsByBody, [](func::FuncOp) {});
      }
    };
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isPrivate() || fn.isExternal())
        continue;
      for (auto [index, op] : llvm::enumerate(nestsIn(fn.getBody().front()))) {
        std::string name =
            (fn.getSymName() + "_kernel" + std::to_string(index)).str();
        if (auto role = op->getAttrOfType<StringAttr>(kKernelRoleAttr))
          name = kernelRoleName(name, role.getValue());
        outline(rewriter, op, name, kernelsByBody, outlineSteps);
      }
    }
  }
};

} // namespace
