//===- TokenEfficiency.h - Tokens to reach a baseline's loss ----*- C++ -*-===//
//
// VWN's headline metric (ARCHITECTURES.md §5): how many fewer tokens a
// design needs to reach a baseline's loss. With T the baseline's training
// tokens at one of its evaluations and T_x(T) the first token count at which
// the design's validation loss is at or below the baseline's loss at T,
//
//   E(T) = T / T_x(T)
//
// E > 1: the design gets there sooner. drc reads both curves from the
// validation losses of the cells' metrics.jsonl (fixed validation windows,
// so unlike the paper's training loss they need no smoothing), interpolated
// linearly between evaluations. A sweep entry with `baseline = "LABEL"`
// gets a report section of its E(T) against that entry at each depth
// (runtime/TokenEfficiencyReport.h).
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TOKENEFFICIENCY_H
#define DRC_RUNTIME_TOKENEFFICIENCY_H

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace drc {

/// Loss at each evaluation, tokens ascending.
struct LossCurve {
  std::vector<double> tokens, loss;
};

/// `key` ("val_loss", "val_loss_next2") of every record of a metrics.jsonl
/// that has it. Throws InputError for an unreadable or malformed file.
LossCurve readLossCurve(const std::filesystem::path &metrics,
                        const std::string &key);

/// The first token count at which `curve` is at or below `target`, linearly
/// interpolated between the evaluation before and the one that reaches it
/// (the first evaluation's tokens when that one already does: an upper
/// bound); nullopt when no evaluation reaches it.
std::optional<double> tokensToReach(const LossCurve &curve, double target);

/// E(T) at each evaluation of `baseline`; NaN where `other` never reaches
/// the baseline's loss.
std::vector<double> tokenEfficiency(const LossCurve &baseline,
                                    const LossCurve &other);

/// The curves of a sweep's cells: cell id -> metric key -> curve.
using SweepCurves = std::map<std::string, std::map<std::string, LossCurve>>;

} // namespace drc

#endif // DRC_RUNTIME_TOKENEFFICIENCY_H
