//===- Schedule.h - Learning-rate schedule: warmup, then cosine -*- C++ -*-===//
//
// ARCHITECTURES.md §1.4: linear warmup over the first n_w = 0.1·n_steps
// steps, then a cosine from the peak η down to 0.1·η at the last step.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SCHEDULE_H
#define DRC_RUNTIME_SCHEDULE_H

#include <cstdint>

namespace drc {

/// The learning rate of every step of one run. With s the 0-based step,
/// N = numSteps, n_w = warmupSteps(), f = finalFraction:
///
///   s <  n_w:  lr = η·(s+1)/n_w
///   s >= n_w:  lr = η·[f + (1−f)/2·(1 + cos(π·p))],
///              p = (s − n_w)/(N − 1 − n_w), or 0 when N − 1 − n_w = 0
///
/// Warmup uses s+1 (as llm.c does) rather than §1.4's s so that step 0 does
/// not run with lr 0, which would spend its batch on the moments only; the
/// last warmup step then reaches η. The cosine is stretched so that the last
/// step, s = N−1, runs at exactly f·η (§1.4's denominator N − n_w would stop
/// one step short of it).
///
/// n_w = round(warmupFraction·N), half away from zero. Rounding rather than
/// flooring makes the count immune to the product's floating-point error:
/// 0.7·90 evaluates to 62.99999999999999, which floors to 62.
class LearningRateSchedule {
public:
  /// Throws InputError unless peakLr > 0, numSteps >= 1, warmupFraction in
  /// [0, 1] and finalFraction in [0, 1].
  LearningRateSchedule(double peakLr, int64_t numSteps,
                       double warmupFraction = 0.1, double finalFraction = 0.1);

  /// lr for 0-based step `step` in [0, numSteps); throws drc::Error outside.
  double at(int64_t step) const;

  double peakLr() const { return peak; }
  int64_t numSteps() const { return steps; }
  int64_t warmupSteps() const { return warmup; }
  double finalFraction() const { return final; }

private:
  double peak;
  int64_t steps;
  int64_t warmup;
  double final;
};

} // namespace drc

#endif // DRC_RUNTIME_SCHEDULE_H
