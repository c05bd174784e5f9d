//===- GpuSinkConstants.cpp - Constants inside the kernels that use them -===//
#include "passes/Passes.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUSINKCONSTANTS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

struct GpuSinkConstantsPass
    : mlir::drc::impl::GpuSinkConstantsBase<GpuSinkConstantsPass> {
  void runOnOperation() override {
    for (auto loop : getOperation().getBody().getOps<scf::ParallelOp>()) {
      llvm::SmallDenseMap<Operation *, Operation *> clones;
      OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
      loop.getBody()->walk([&](Operation *user) {
        for (OpOperand &use : user->getOpOperands()) {
          Operation *def = use.get().getDefiningOp();
          if (!def || !def->hasTrait<OpTrait::ConstantLike>() ||
              loop->isAncestor(def))
            continue;
          Operation *&clone = clones[def];
          if (!clone)
            clone = b.clone(*def);
          use.set(clone->getResult(0));
        }
      });
    }
  }
};

} // namespace
