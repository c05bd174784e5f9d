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

/// Kernels by what they do, so that a nest identical to one outlined before
/// (the same nest in every layer, in both loss and train_step) calls that
/// one. Two kernels are the same when their types, attributes other than the
/// name, and bodies (op by op, ignoring locations; values from outside are
/// arguments) are. Compared structurally: printing each kernel to compare
/// the text cost a twentieth of the codegen pipeline (mHC L8 at d_model
/// 56: the pass took 0.45-0.8 s, now 0.1 s).
class KernelsByBody {
public:
  /// The kernel already outlined that `kernel` is the same as, or null
  /// (and `kernel` is recorded).
  func::FuncOp find(func::FuncOp kernel) {
    SmallVector<func::FuncOp, 1> &bucket = buckets[hash(kernel)];
    for (func::FuncOp first : bucket)
      if (same(first, kernel))
        return first;
    bucket.push_back(kernel);
    return nullptr;
  }

private:
  static llvm::hash_code hash(func::FuncOp kernel) {
    llvm::hash_code h = hash_value(kernel.getFunctionType());
    kernel.getBody().walk([&](Operation *op) {
      h = llvm::hash_combine(h, OperationEquivalence::computeHash(
                                    op, OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::IgnoreLocations));
    });
    return h;
  }
  /// Whether `a` and `b` are the same op under one name.
  static bool same(func::FuncOp a, func::FuncOp b) {
    StringAttr name = b.getSymNameAttr();
    b.setSymNameAttr(a.getSymNameAttr());
    bool equal = OperationEquivalence::isEquivalentTo(
        a, b, OperationEquivalence::IgnoreLocations);
    b.setSymNameAttr(name);
    return equal;
  }
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> buckets;
};

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
             KernelsByBody &byBody,
             const std::function<void(func::FuncOp)> &beforeComparing) {
  auto [kernel, call] = outlineNest(rewriter, op, name);
  kernel.setPrivate();
  kernel.setNoInline(true);
  makeOffsetsArguments(kernel, [&](unsigned index) {
    return SmallVector<OpOperand *>{&call->getOpOperand(index)};
  });
  beforeComparing(kernel);
  if (func::FuncOp first = byBody.find(kernel)) {
    call.setCallee(first.getSymName());
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
    KernelsByBody kernelsByBody;
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
