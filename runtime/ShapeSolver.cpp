//===- ShapeSolver.cpp - d_model for a parameter budget -------------------===//
#include "runtime/ShapeSolver.h"

#include "runtime/Error.h"
#include "runtime/ModelSpec.h"

#include <cmath>
#include <cstdlib>

namespace drc {

int64_t preLnParameters(int64_t vocab, int64_t nLayer, int64_t dModel,
                        Budget budget) {
  int64_t d = dModel, ff = defaultFFNWidth(d);
  int64_t backbone = nLayer * (4 * d * d + 3 * d * ff + 2 * d);
  return budget == Budget::Backbone ? backbone : backbone + 2 * vocab * d + d;
}

SolvedShape solveShape(int64_t budget, int64_t nLayer, int64_t nHead,
                       int64_t vocab, Budget mode) {
  if (budget <= 0 || nLayer <= 0 || nHead <= 0 || vocab <= 0)
    throw InputError("the shape solver needs a positive budget, n_layer, "
                     "n_head and vocab");
  // d* from 12Ld² + 2Vd = N (the embedding term dropped for N_b), then the
  // multiples of 2·n_head around it.
  double L = double(nLayer), V = mode == Budget::Total ? double(vocab) : 0.0;
  double estimate =
      (-V + std::sqrt(V * V + 12.0 * L * double(budget))) / (12.0 * L);
  int64_t step = 2 * nHead;
  int64_t base = std::max<int64_t>(1, int64_t(estimate / double(step)));
  SolvedShape best;
  for (int64_t m = std::max<int64_t>(1, base - 2); m <= base + 2; ++m) {
    int64_t d = m * step;
    int64_t n = preLnParameters(vocab, nLayer, d, mode);
    if (best.dModel == 0 ||
        std::llabs(n - budget) < std::llabs(best.params - budget))
      best = {d, defaultFFNWidth(d), n, double(n) / double(budget) - 1.0};
  }
  return best;
}

} // namespace drc
