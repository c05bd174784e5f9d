//===- Schedule.cpp - Learning-rate schedule: warmup, then cosine ---------===//

#include "runtime/Schedule.h"

#include "runtime/Error.h"
#include "runtime/Json.h"

#include <cmath>
#include <numbers>
#include <string>

namespace drc {

LearningRateSchedule::LearningRateSchedule(double peakLr, int64_t numSteps,
                                           double warmupFraction,
                                           double finalFraction)
    : peak(peakLr), steps(numSteps), final(finalFraction) {
  if (!(peakLr > 0 && std::isfinite(peakLr)))
    throw InputError("learning rate " + formatNumber(peakLr) +
                     " must be a positive number");
  if (numSteps < 1)
    throw InputError("number of training steps " + std::to_string(numSteps) +
                     " must be at least 1");
  if (!(warmupFraction >= 0 && warmupFraction <= 1))
    throw InputError("warmup fraction " + formatNumber(warmupFraction) +
                     " must be between 0 and 1");
  if (!(finalFraction >= 0 && finalFraction <= 1))
    throw InputError("final learning-rate fraction " +
                     formatNumber(finalFraction) + " must be between 0 and 1");
  warmup = std::llround(warmupFraction * double(numSteps));
}

double LearningRateSchedule::at(int64_t step) const {
  if (step < 0 || step >= steps)
    throw Error("learning rate asked for step " + std::to_string(step) +
                " of a " + std::to_string(steps) + "-step schedule");
  if (step < warmup)
    return peak * double(step + 1) / double(warmup);
  int64_t span = steps - 1 - warmup;
  double progress = span == 0 ? 0.0 : double(step - warmup) / double(span);
  return peak * (final +
                 (1 - final) / 2 * (1 + std::cos(std::numbers::pi * progress)));
}

} // namespace drc
