//===- SweepSpec.h - A width-depth sweep's .toml grid -----------*- C++ -*-===//
//
// DepthBench's protocol (ARCHITECTURES.md §4.1) as a file a researcher
// writes: residual designs, a parameter budget, the depths to try (each
// depth's width solved to the budget within ±3%), one training recipe shared
// by every cell (tokens per parameter, batch, schedule), an optional
// learning-rate grid per design, and seeds (docs/bench.md). Planning turns it
// into cells, each a complete model spec that drc-train accepts as it is.
// Everything checkable without training is checked while planning, so a
// sweep never fails halfway on bad input.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SWEEPSPEC_H
#define DRC_RUNTIME_SWEEPSPEC_H

#include "runtime/ModelSpec.h"
#include "runtime/ShapeSolver.h"

#include <cstdint>
#include <string>
#include <vector>

namespace drc {

/// One `[[scheme]]` entry: a residual design and the learning rates it is
/// tried at.
struct SweepScheme {
  std::string label;        ///< its name in results and the report
  std::string residualToml; ///< the cell specs' [residual] table
  std::vector<double> lrs;  ///< peak learning rates (the best one counts)
  std::string where;        ///< "grid.toml:line:col" of the entry
  /// The label of the entry whose loss this one's token efficiency is
  /// measured against (runtime/TokenEfficiency.h); empty: none.
  std::string baseline;
  std::string baselineWhere; ///< of the baseline key
};

struct SweepSpec {
  std::string path;
  int64_t budget = 0; ///< parameters, counted as `budgetMode` says
  Budget budgetMode = Budget::Total;
  std::vector<int64_t> nLayers;
  std::vector<uint64_t> seeds;
  double tokensPerParam = 20; ///< training tokens = tokensPerParam · budget
  /// Validation batches the layer probes of each finished cell read; 0: none.
  int64_t probeBatches = 2;
  std::vector<SweepScheme> schemes;
  std::string modelToml; ///< the shared [model] table, without d_model/n_layer
  std::string trainToml; ///< the shared [train] table, without steps/lr/seed
  int64_t vocab = 0, nHead = 0, seqLen = 0, batch = 0;
  double lr = 0;           ///< [train] lr: a scheme's default grid
  std::string budgetWhere; ///< for the error when a depth has no width
};

/// One run of the sweep.
struct SweepCell {
  std::string id;     ///< "hc-L4-lr0.002-s1": a directory name, unique
  std::string scheme; ///< the entry's label
  int64_t nLayer = 0;
  SolvedShape shape; ///< d_model, d_ff and the Pre-LN count it was solved by
  double lr = 0;
  uint64_t seed = 0;
  int64_t steps = 0;
  std::string specToml; ///< the cell's complete model spec
  ModelSpec spec;       ///< specToml, parsed and validated
};

/// Parses and validates the grid at `path`; throws InputError
/// ("path:line:col: ...") on anything wrong.
SweepSpec loadSweepSpec(const std::string &path);

/// Parses grid text (for tests); `path` is used in messages and to resolve
/// a relative scheme_file.
SweepSpec parseSweepSpec(const std::string &text, const std::string &path);

/// Every (scheme, depth, learning rate, seed) cell, in that nesting order.
/// Throws InputError when a depth has no width within ±3% of the budget or
/// a cell's spec is invalid (located as "GRID (cell ID):line:col" in the
/// cell's spec text).
std::vector<SweepCell> planSweep(const SweepSpec &sweep);

} // namespace drc

#endif // DRC_RUNTIME_SWEEPSPEC_H
