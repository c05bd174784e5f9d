//===- TokenEfficiencyReport.cpp - E(T) in a sweep report -----------------===//
#include "runtime/TokenEfficiencyReport.h"

#include "runtime/Json.h"

#include <cmath>
#include <sstream>

namespace drc {
namespace {

/// "612k", "1.25M", "500": token counts as a reader compares them.
std::string tokenCount(double tokens) {
  if (tokens >= 1e6)
    return formatFixed(tokens / 1e6, 2) + "M";
  if (tokens >= 1e4)
    return formatFixed(tokens / 1e3, 0) + "k";
  return formatFixed(tokens, 0);
}

const LossCurve *curveOf(const SweepCurves &curves, const std::string &cell,
                         const std::string &key) {
  auto it = curves.find(cell);
  if (it == curves.end())
    return nullptr;
  auto curve = it->second.find(key);
  return curve == it->second.end() || curve->second.tokens.empty()
             ? nullptr
             : &curve->second;
}

/// "612k (E 1.45)" or "not reached (+0.012)" for one curve pair; E(T) at a
/// quarter, half, three quarters and all of the baseline's tokens.
std::string comparison(const LossCurve &baseline, const LossCurve &other,
                       std::string &efficiencies) {
  std::vector<double> e = tokenEfficiency(baseline, other);
  double end = baseline.tokens.back();
  efficiencies.clear();
  for (double fraction : {0.25, 0.5, 0.75, 1.0}) {
    size_t i = 0;
    while (i + 1 < e.size() && baseline.tokens[i] < fraction * end - 0.5)
      ++i;
    efficiencies += (efficiencies.empty() ? "" : " / ") +
                    (std::isfinite(e[i]) ? formatFixed(e[i], 2) : "—");
  }
  std::optional<double> reach = tokensToReach(other, baseline.loss.back());
  if (!reach)
    return "not reached (" +
           std::string(other.loss.back() >= baseline.loss.back() ? "+" : "") +
           formatFixed(other.loss.back() - baseline.loss.back(), 4) + ")";
  return tokenCount(*reach) + " (E " + formatFixed(end / *reach, 2) + ")";
}

} // namespace

std::string tokenEfficiencySection(const SweepSpec &sweep,
                                   const std::vector<SweepPoint> &points,
                                   const SweepCurves &curves) {
  auto pointOf = [&](const std::string &scheme, int64_t nLayer) {
    return findPoint(points, scheme, nLayer);
  };
  std::ostringstream rows;
  bool nextTwo = false;
  for (const SweepScheme &scheme : sweep.schemes) {
    if (scheme.baseline.empty())
      continue;
    for (int64_t nLayer : sweep.nLayers) {
      const SweepPoint *p = pointOf(scheme.label, nLayer);
      const SweepPoint *b = pointOf(scheme.baseline, nLayer);
      const LossCurve *curve = p ? curveOf(curves, p->cell, "val_loss") : 0;
      const LossCurve *base = b ? curveOf(curves, b->cell, "val_loss") : 0;
      if (!curve || !base)
        continue;
      std::string e, e2;
      rows << "| " << scheme.label << " | " << scheme.baseline << " | "
           << nLayer << " | " << formatFixed(base->loss.back(), 4) << " | "
           << comparison(*base, *curve, e) << " | " << e << " |";
      const LossCurve *curve2 = curveOf(curves, p->cell, "val_loss_next2");
      const LossCurve *base2 = curveOf(curves, b->cell, "val_loss_next2");
      if (curve2 && base2) {
        nextTwo = true;
        rows << " " << comparison(*base2, *curve2, e2) << " | " << e2 << " |";
      } else {
        rows << " — | — |";
      }
      rows << "\n";
    }
  }
  if (rows.str().empty())
    return "";
  std::ostringstream md;
  md << "## Tokens to the baseline's loss\n\nFor each entry with a "
        "baseline: the tokens it needs to reach the baseline's final "
        "validation loss, and E(T) = T / T_x(T) at a quarter, half, three "
        "quarters and all of the baseline's training tokens T, where T_x(T) "
        "is the first token count at which the entry's validation loss is "
        "at or below the baseline's at T (linear between evaluations, each "
        "cell at its best learning rate, first seed). E > 1: fewer tokens "
        "than the baseline"
     << (nextTwo ? "; the next-2 columns do the same with the "
                   "next-2-token head's validation loss"
                 : "")
     << " (VWN paper, 8x width at 3T tokens: E 2.5 next-token, 3.5 "
        "next-2-token).\n\n| design | baseline | n_layer | baseline's final "
        "loss | tokens to it | E(T) at ¼ / ½ / ¾ / end | next-2: tokens to "
        "it | next-2: E(T) |\n|---|---|---|---|---|---|---|---|\n"
     << rows.str();
  return md.str();
}

} // namespace drc
