//===- GpuWrapSerial.cpp - Serial host work as one-thread kernels --------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUWRAPSERIAL
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// Ops the host runs itself (they compute no data in device memory) or
/// hands to the device: kernels-to-be, and the matrix products left to
/// cuBLASLt (drc-gpu-linalg-to-loops).
bool staysOnHost(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         op->hasTrait<OpTrait::IsTerminator>() ||
         isa<memref::AllocOp, memref::DeallocOp, memref::GetGlobalOp,
             ViewLikeOpInterface, scf::ParallelOp, gpu::LaunchFuncOp,
             linalg::LinalgOp>(op);
}

struct GpuWrapSerialPass
    : mlir::drc::impl::GpuWrapSerialBase<GpuWrapSerialPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    // A scratch scalar on the stack becomes a buffer the kernels share.
    mlir::drc::allocasToHeap(body);
    SmallVector<SmallVector<Operation *>> runs;
    for (Operation &op : body) {
      if (staysOnHost(&op)) {
        if (!runs.empty() && !runs.back().empty())
          runs.emplace_back();
        continue;
      }
      if (runs.empty())
        runs.emplace_back();
      runs.back().push_back(&op);
    }
    OpBuilder builder(&getContext());
    for (ArrayRef<Operation *> run : runs) {
      if (run.empty())
        continue;
      llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
      for (Operation *op : run)
        for (Value result : op->getResults())
          for (Operation *user : result.getUsers())
            if (!inRun.contains(
                    func.getBody().front().findAncestorOpInBlock(*user))) {
              op->emitError("drc-gpu-wrap-serial: a value of this serial "
                            "host op is used outside its run of serial ops, "
                            "so the run cannot become one kernel");
              return signalPassFailure();
            }
      Location loc = run.front()->getLoc();
      builder.setInsertionPoint(run.front());
      Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
      Value one = arith::ConstantIndexOp::create(builder, loc, 1);
      auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                          ValueRange{one}, ValueRange{one});
      Operation *yield = loop.getBody()->getTerminator();
      for (Operation *op : run)
        op->moveBefore(yield);
    }
  }
};

} // namespace
