//===- ShapeSolver.h - d_model for a parameter budget -----------*- C++ -*-===//
//
// DepthBench's width-depth grid (ARCHITECTURES.md §1.2): at a fixed parameter
// budget N and depth L, the width d is the multiple of 2·n_head (so the head
// dimension is even) whose exact Pre-LN parameter count is closest to N.
// Parameters a residual scheme adds are not re-solved.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SHAPESOLVER_H
#define DRC_RUNTIME_SHAPESOLVER_H

#include <cstdint>

namespace drc {

/// What the budget counts.
enum class Budget {
  Total,    ///< N = L(4d² + 3d·d_ff + 2d) + 2Vd + d
  Backbone, ///< N_b = L(4d² + 3d·d_ff + 2d): the iso-backbone mode
};

struct SolvedShape {
  int64_t dModel = 0;
  int64_t dFF = 0;
  int64_t params = 0;   ///< the exact count the budget measures
  double deviation = 0; ///< params / budget - 1
  /// Within ±3% of the budget, as DepthBench requires.
  bool withinTolerance() const {
    return deviation >= -0.03 && deviation <= 0.03;
  }
};

/// Pre-LN's exact parameter count at width d (d_ff = 16·⌈8d/48⌉).
int64_t preLnParameters(int64_t vocab, int64_t nLayer, int64_t dModel,
                        Budget budget = Budget::Total);

/// The width closest to `budget` parameters at `nLayer` blocks. Throws
/// InputError for non-positive inputs.
SolvedShape solveShape(int64_t budget, int64_t nLayer, int64_t nHead,
                       int64_t vocab, Budget mode = Budget::Total);

} // namespace drc

#endif // DRC_RUNTIME_SHAPESOLVER_H
