//===- GpuPrivatizeBuffers.cpp - Kernel temporaries as host buffers ------===//
#include "passes/GpuLoops.h"
#include "passes/Passes.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUPRIVATIZEBUFFERS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// Bytes of a static buffer, rounded up to 64 so every slice is aligned.
int64_t sliceBytes(MemRefType type) {
  return (mlir::drc::storedBytes(type) + 63) / 64 * 64;
}

struct GpuPrivatizeBuffersPass
    : mlir::drc::impl::GpuPrivatizeBuffersBase<GpuPrivatizeBuffersPass> {
  void runOnOperation() override {
    for (auto loop : getOperation().getBody().getOps<scf::ParallelOp>())
      privatize(loop);
  }

  void privatize(scf::ParallelOp loop) {
    SmallVector<memref::AllocOp> allocs;
    loop.getBody()->walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (type.hasStaticShape() && type.getLayout().isIdentity() &&
          type.getElementType().isIntOrFloat())
        allocs.push_back(alloc);
    });
    std::optional<mlir::drc::ConstantBounds> bounds =
        mlir::drc::constantBounds(loop);
    if (allocs.empty() || !bounds)
      return;
    const SmallVector<int64_t> &trips = bounds->trips;
    int64_t iterations = 1;
    for (int64_t n : trips)
      iterations *= n;

    // One byte buffer for all of them on the host's level, freed after the
    // loop: per iteration a slice holding each temporary in turn (one
    // kernel operand however many temporaries, and an iteration's together).
    SmallVector<int64_t> offsets;
    int64_t stride = 0;
    for (memref::AllocOp alloc : allocs) {
      offsets.push_back(stride);
      stride += sliceBytes(alloc.getType());
    }
    OpBuilder host(loop);
    Location loc = loop.getLoc();
    Value buffer = memref::AllocOp::create(
        host, loc,
        MemRefType::get({iterations * stride}, host.getIntegerType(8)));
    OpBuilder after(loop->getBlock(), std::next(loop->getIterator()));
    memref::DeallocOp::create(after, loc, buffer);
    // This iteration's number: the induction variables in row-major order.
    OpBuilder body = OpBuilder::atBlockBegin(loop.getBody());
    Value linear;
    for (auto [d, iv] : llvm::enumerate(loop.getInductionVars())) {
      Value i = arith::SubIOp::create(body, loc, iv, loop.getLowerBound()[d]);
      i = arith::DivUIOp::create(body, loc, i, loop.getStep()[d]);
      linear =
          linear ? arith::AddIOp::create(
                       body, loc,
                       arith::MulIOp::create(
                           body, loc, linear,
                           arith::ConstantIndexOp::create(body, loc, trips[d])),
                       i)
                 : i;
    }
    Value start = arith::MulIOp::create(
        body, loc, linear, arith::ConstantIndexOp::create(body, loc, stride));
    for (auto [alloc, offset] : llvm::zip(allocs, offsets)) {
      OpBuilder at(alloc);
      Value shift = arith::AddIOp::create(
          at, loc, start, arith::ConstantIndexOp::create(at, loc, offset));
      Value slice = memref::ViewOp::create(at, loc, alloc.getType(), buffer,
                                           shift, ValueRange{});
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.replaceAllUsesWith(slice);
      alloc.erase();
    }
  }
};

} // namespace
