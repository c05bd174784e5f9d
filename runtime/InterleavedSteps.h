//===- InterleavedSteps.h - Step-time ratios robust to drift ----*- C++ -*-===//
//
// On a shared machine a program's speed drifts by 10% within minutes, so two
// programs timed one after the other differ by more than the effect being
// measured. drc-time therefore interleaves them step by step with a
// reference program: a program's ratio in a round is its step time over the
// mean of the two reference steps beside it (a second or so apart); its
// summary is the median over rounds, with the range.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_INTERLEAVEDSTEPS_H
#define DRC_RUNTIME_INTERLEAVEDSTEPS_H

#include <cstddef>
#include <vector>

namespace drc {

/// One round's step seconds: programs[i] ran between reference[i] and
/// reference[i + 1], so reference has one more entry than programs. The
/// starts, where recorded, are when each step began (steady_clock seconds).
struct InterleavedRound {
  std::vector<double> reference;
  std::vector<double> programs;
  std::vector<double> referenceStarts;
  std::vector<double> programStarts;
};

/// One program over all rounds.
struct StepRatio {
  double medianSeconds = 0;
  double medianRatio = 0, minRatio = 0, maxRatio = 0;
};

/// Program `program`'s step over the mean of the reference steps beside it.
double neighbourRatio(const InterleavedRound &round, size_t program);

/// The median of `values` (the mean of the middle two for an even count);
/// 0 for none.
double median(std::vector<double> values);

/// Each program's median step and its ratio to the reference steps beside
/// it, over `rounds` (at least one; every round with the same number of
/// programs). Throws drc::Error for rounds of the wrong shape.
std::vector<StepRatio>
summarizeInterleaved(const std::vector<InterleavedRound> &rounds);

} // namespace drc

#endif // DRC_RUNTIME_INTERLEAVEDSTEPS_H
