//===- GpuLoops.h - What the GPU passes share about parallel loops -*- C++
//-*-===//
#ifndef DRC_PASSES_GPULOOPS_H
#define DRC_PASSES_GPULOOPS_H

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace mlir::drc {

/// An scf.parallel's constant bounds, per dimension.
struct ConstantBounds {
  SmallVector<int64_t> lower, steps, trips; ///< trips: iterations
};

/// The bounds of `loop` when they are all constant (and steps positive).
inline std::optional<ConstantBounds> constantBounds(scf::ParallelOp loop) {
  ConstantBounds b;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    b.lower.push_back(*l);
    b.steps.push_back(*s);
    b.trips.push_back(std::max<int64_t>(0, (*u - *l + *s - 1) / *s));
  }
  return b;
}

} // namespace mlir::drc

#endif // DRC_PASSES_GPULOOPS_H
