//===- Probes.h - Layer-level probes of a trained model ---------*- C++ -*-===//
//
// The probes of ARCHITECTURES.md §4.3 over the depth states z_0 ... z_L a
// probe program computes (runtime/ProbeProgram.h), as means over the tokens
// of some validation batches:
//
//   angular distance   d(i,j) = mean_t arccos(cos(z_i, z_j)) / pi
//   causal score       C(s,b) = mean_t |u_b^{skip s} - u_b| / |u_b|, s < b,
//                      u_b = z_{b+1} - z_b (tokens with u_b = 0 left out)
//   swap score         P(i,j) = |L_swap(i,j) - L| / L: blocks i and j trade
//                      every parameter "blocks.<i>.*" <-> "blocks.<j>.*"
//   pruning            L_skip(b) - L
//   logit lens         CE(p_b, y), KL(p_L || p_b), |top5(p_b) & top5(p_L)|/5
//   late-layer pairs   among pairs of blocks both >= L/4, the fractions with
//                      C > 0.45 and with P > 0.15
//   stream maps        (HC-style schemes) P_{0->k} = T_{k-1} ... T_0 per
//                      token: its entropy effective rank (token mean) and
//                      Amax gains, the largest absolute row sum (forward)
//                      and column sum (backward), token max
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PROBES_H
#define DRC_RUNTIME_PROBES_H

#include "runtime/Corpus.h"
#include "runtime/DepthTask.h"
#include "runtime/Json.h"
#include "runtime/ModelSpec.h"
#include "runtime/ProbeProgram.h"

#include <cstdio>
#include <functional>
#include <vector>

namespace drc {

/// A square matrix of probe values, row-major; NaN where undefined.
struct ProbeMatrix {
  int64_t size = 0;
  std::vector<double> values;

  explicit ProbeMatrix(int64_t size = 0);
  double &at(int64_t row, int64_t col) { return values[row * size + col]; }
  double at(int64_t row, int64_t col) const { return values[row * size + col]; }
};

struct ProbeResult {
  int64_t step = 0; ///< of the checkpoint probed (probeCheckpoint)
  int64_t blocks = 0;
  int64_t tokens = 0;          ///< scored per probe
  double loss = 0;             ///< L: the model's mean cross-entropy
  ProbeMatrix angular;         ///< (L+1) x (L+1)
  ProbeMatrix causal;          ///< L x L, row s (skipped), column b > s
  ProbeMatrix swap;            ///< L x L, i < j
  std::vector<double> pruning; ///< L
  std::vector<double> lensLoss, lensKL, lensTop5; ///< L+1
  int64_t streams = 0; ///< n of the stream maps; 0: none
  std::vector<double> erank, amaxForward, amaxBackward; ///< P_{0->k}, k=1..2L
  /// Accuracy by k of each task domain (probeCheckpoint).
  std::vector<DepthTaskResult> tasks;

  /// The first block of the late-layer pairs: ceil(L/4).
  int64_t lateFirstBlock() const;
  /// Late-layer pairs (both blocks >= L/4) of `m` and the fraction of them
  /// above `threshold`; {0, NaN} when there are none.
  std::pair<int64_t, double> latePairs(const ProbeMatrix &m,
                                       double threshold) const;

  JsonValue toJson() const;
};

/// One batch of `tokens` inputs and targets.
using ProbeBatch =
    std::function<void(int64_t index, int32_t *inputs, int32_t *targets)>;

/// Runs every probe over `batches` batches; `progress(done, total)` is told
/// after each program call. Throws Error when two blocks' parameters differ
/// in names or shapes (they cannot be swapped).
ProbeResult
runProbes(ProbeProgram &program, const float *params, int64_t batches,
          const ProbeBatch &batch,
          const std::function<void(int64_t, int64_t)> &progress = {});

/// Throws InputError unless every domain of `corpus` has the full
/// validation batches `batches` probe batches of `spec` take from it.
void checkProbeBatches(const ModelSpec &spec, const Corpus &corpus,
                       int64_t batches);

/// The probes of `checkpoint` (weights of `spec`) over `batches` validation
/// batches of `corpus`: batch i is full batch i / D of domain i % D; then
/// the depth task of every task domain over at most [train] eval_tokens of
/// its validation text. A progress line to `progress` starts with `label`.
/// Throws what checkProbeBatches, taskDomains, runDepthTask and
/// loadCheckpointWeights throw.
ProbeResult probeCheckpoint(ProbeProgram &program, const ModelSpec &spec,
                            const std::string &checkpoint, const Corpus &corpus,
                            int64_t batches, const std::string &label,
                            std::FILE *progress = stderr);

/// Singular values of the n x n row-major matrix `m`, largest first.
std::vector<double> singularValues(const std::vector<double> &m, int64_t n);

/// exp(-sum_i p_i ln p_i), p_i = sv_i / sum_j sv_j; 0 for the zero matrix.
double effectiveRank(const std::vector<double> &m, int64_t n);

} // namespace drc

#endif // DRC_RUNTIME_PROBES_H
