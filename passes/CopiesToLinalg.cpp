//===- CopiesToLinalg.cpp - memref.copy as a loop-nest kernel -------------===//
#include "passes/Passes.h"

namespace mlir::drc {
#define GEN_PASS_DEF_COPIESTOLINALG
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

struct CopiesToLinalgPass
    : mlir::drc::impl::CopiesToLinalgBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};

} // namespace
