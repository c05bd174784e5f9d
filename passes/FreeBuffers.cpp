//===- FreeBuffers.cpp - Free each heap buffer where its block ends -------===//
//
// drc's programs, bufferized, allocate buffers that never leave the block
// making them: the step function's temporaries between kernels and a token
// tile's temporaries in a loop iteration. Each gets its memref.dealloc before
// that block's terminator, which is where MLIR's buffer-deallocation-pipeline
// puts them in such programs, without its ownership analysis and the
// canonicalizations around it (over a quarter of the CPU pipeline's time,
// on the whole module on one thread). A buffer
// that would outlive its block is reported, never leaked or freed early.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::drc {
#define GEN_PASS_DEF_FREEBUFFERS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A use through which the buffer (or a view of it) can outlive the block
/// that allocates it: a terminator's operand (returned or yielded) or an op
/// other than a view whose memref result may alias it. Sets `freed` when a
/// memref.dealloc of it is there already.
Operation *findEscape(memref::AllocOp alloc, bool &freed) {
  SmallVector<Value> aliases{alloc.getResult()};
  while (!aliases.empty()) {
    Value value = aliases.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<memref::DeallocOp>(user)) {
        freed = true;
        continue;
      }
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == value) {
        aliases.push_back(view.getViewDest());
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
        return user;
    }
  }
  return nullptr;
}

struct FreeBuffersPass : mlir::drc::impl::FreeBuffersBase<FreeBuffersPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk(
        [&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    OpBuilder builder(&getContext());
    for (memref::AllocOp alloc : allocs) {
      bool freed = false;
      if (Operation *escape = findEscape(alloc, freed)) {
        InFlightDiagnostic error =
            alloc.emitError()
            << "drc-free-buffers: this buffer may outlive the block that "
               "allocates it (through '"
            << escape->getName()
            << "'); drc frees every buffer where its block ends, so the "
               "program before bufferization must not return, yield or "
               "store a temporary";
        error.attachNote(escape->getLoc()) << "the use it escapes through";
        return signalPassFailure();
      }
      if (freed)
        continue;
      builder.setInsertionPoint(alloc->getBlock()->getTerminator());
      memref::DeallocOp::create(builder, alloc.getLoc(), alloc.getResult());
    }
  }
};

} // namespace
