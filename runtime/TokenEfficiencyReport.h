//===- TokenEfficiencyReport.h - E(T) in a sweep report ---------*- C++ -*-===//
//
// report.md's "Tokens to the baseline's loss" section: for every sweep entry
// with `baseline = "LABEL"`, at each depth both have a point at, the tokens
// it needs to reach the baseline's final validation loss and E(T)
// (runtime/TokenEfficiency.h) through training, for the next-token loss and,
// when both cells have a next-2-token head, for that head's loss.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TOKENEFFICIENCYREPORT_H
#define DRC_RUNTIME_TOKENEFFICIENCYREPORT_H

#include "runtime/SweepReport.h"
#include "runtime/TokenEfficiency.h"

#include <string>
#include <vector>

namespace drc {

/// The section's markdown; empty when no entry names a baseline or no
/// curves of such a pair were found.
std::string tokenEfficiencySection(const SweepSpec &sweep,
                                   const std::vector<SweepPoint> &points,
                                   const SweepCurves &curves);

} // namespace drc

#endif // DRC_RUNTIME_TOKENEFFICIENCYREPORT_H
