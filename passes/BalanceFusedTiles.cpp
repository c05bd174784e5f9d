//===- BalanceFusedTiles.cpp - A large fused region's tiles, on demand ----===//
//
// drc-balance-fused-tiles: a fused region's worksharing loop of many tiles
// is scheduled dynamically, so a thread on the slower core of a shared
// machine does not hold the other at the region's end (Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/KernelRole.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::drc {
#define GEN_PASS_DEF_BALANCEFUSEDTILES
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// The iterations of a one-dimensional loop nest with constant bounds.
std::optional<int64_t> tripCount(omp::LoopNestOp nest) {
  if (nest.getLoopLowerBounds().size() != 1)
    return std::nullopt;
  auto lower = getConstantIntValue(nest.getLoopLowerBounds()[0]);
  auto upper = getConstantIntValue(nest.getLoopUpperBounds()[0]);
  auto step = getConstantIntValue(nest.getLoopSteps()[0]);
  if (!lower || !upper || !step || *step <= 0)
    return std::nullopt;
  return (*upper - *lower + *step - 1) / *step;
}

struct BalanceFusedTilesPass
    : mlir::drc::impl::BalanceFusedTilesBase<BalanceFusedTilesPass> {
  using BalanceFusedTilesBase::BalanceFusedTilesBase;

  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (!drc::isKernelOfRole(kernel.getSymName(), drc::kFusedRole))
        continue;
      kernel.walk([&](omp::WsloopOp loop) {
        auto nest = dyn_cast<omp::LoopNestOp>(loop.getWrappedLoop());
        std::optional<int64_t> tiles = nest ? tripCount(nest) : std::nullopt;
        if (!tiles || *tiles < minTiles || loop.getScheduleKind())
          return;
        loop.setScheduleKindAttr(omp::ClauseScheduleKindAttr::get(
            loop.getContext(), omp::ClauseScheduleKind::Dynamic));
      });
    }
  }
};

} // namespace
