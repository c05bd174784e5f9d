//===- InterleavedSteps.cpp - Step-time ratios robust to drift ----------===//
#include "runtime/InterleavedSteps.h"

#include "runtime/Error.h"

#include <algorithm>
#include <string>

namespace drc {

double neighbourRatio(const InterleavedRound &round, size_t program) {
  return round.programs[program] /
         ((round.reference[program] + round.reference[program + 1]) / 2);
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return (values[(n - 1) / 2] + values[n / 2]) / 2;
}

std::vector<StepRatio>
summarizeInterleaved(const std::vector<InterleavedRound> &rounds) {
  if (rounds.empty())
    throw Error("no timed rounds to summarize");
  size_t programs = rounds.front().programs.size();
  for (const InterleavedRound &round : rounds)
    if (round.programs.size() != programs ||
        round.reference.size() != programs + 1)
      throw Error("an interleaved round needs one reference step around "
                  "each program step (" +
                  std::to_string(round.reference.size()) + " reference, " +
                  std::to_string(round.programs.size()) + " program steps)");
  std::vector<StepRatio> out(programs);
  for (size_t p = 0; p < programs; ++p) {
    std::vector<double> seconds, ratios;
    for (const InterleavedRound &round : rounds) {
      seconds.push_back(round.programs[p]);
      ratios.push_back(neighbourRatio(round, p));
    }
    out[p].medianSeconds = median(seconds);
    out[p].medianRatio = median(ratios);
    out[p].minRatio = *std::min_element(ratios.begin(), ratios.end());
    out[p].maxRatio = *std::max_element(ratios.begin(), ratios.end());
  }
  return out;
}

} // namespace drc
