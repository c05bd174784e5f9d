//===- TokenEfficiency.cpp - Tokens to reach a baseline's loss ------------===//
#include "runtime/TokenEfficiency.h"

#include "runtime/Json.h"
#include "runtime/TomlFields.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace drc {

LossCurve readLossCurve(const std::filesystem::path &metrics,
                        const std::string &key) {
  std::istringstream lines(readInputFile(metrics.string(), "metrics"));
  LossCurve curve;
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty())
      continue;
    JsonValue record = parseJson(line, metrics.string(), number);
    const JsonValue *tokens = record.find("tokens");
    const JsonValue *loss = record.find(key);
    if (tokens && tokens->isNumber() && loss && loss->isNumber()) {
      curve.tokens.push_back(tokens->asDouble());
      curve.loss.push_back(loss->asDouble());
    }
  }
  return curve;
}

std::optional<double> tokensToReach(const LossCurve &curve, double target) {
  for (size_t i = 0; i < curve.loss.size(); ++i) {
    if (curve.loss[i] > target)
      continue;
    if (i == 0)
      return curve.tokens[0];
    // Linear between (T_{i-1}, l_{i-1} > target) and (T_i, l_i <= target).
    double fraction =
        (curve.loss[i - 1] - target) / (curve.loss[i - 1] - curve.loss[i]);
    return curve.tokens[i - 1] +
           fraction * (curve.tokens[i] - curve.tokens[i - 1]);
  }
  return std::nullopt;
}

std::vector<double> tokenEfficiency(const LossCurve &baseline,
                                    const LossCurve &other) {
  std::vector<double> out;
  for (size_t i = 0; i < baseline.loss.size(); ++i) {
    std::optional<double> reach = tokensToReach(other, baseline.loss[i]);
    out.push_back(reach && *reach > 0
                      ? baseline.tokens[i] / *reach
                      : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

} // namespace drc
