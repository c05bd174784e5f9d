//===- ProbeReport.h - The layer probes' part of a sweep report -*- C++ -*-===//
//
// report.md's "Layer probes" section and its heatmaps, from the probes.json
// (drc-probe's output, runtime/Probes.h) of each design's cell at its best
// learning rate: the late-layer causal and permutation pair percentages per
// design and depth (DepthBench's summary), single-layer pruning and the
// logit lens at the deepest depth, the stream maps' effective rank and Amax
// gains, accuracy by k on each depth task domain (runtime/DepthTask.h), and
// per design the angular-distance, causal-score and swap-score
// matrices as one SVG figure.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PROBEREPORT_H
#define DRC_RUNTIME_PROBEREPORT_H

#include "runtime/Json.h"
#include "runtime/SweepReport.h"

#include <map>
#include <string>
#include <vector>

namespace drc {

/// The figure file of a point's heatmaps: "probes-<design>-L<n>.svg".
std::string probeFigureFile(const SweepPoint &point);

/// The angular distance, causal score and swap score matrices of one
/// probes.json as three heatmaps in one SVG.
std::string probeHeatmapsSvg(const std::string &title, const JsonValue &probes);

/// The section's markdown; `probes` maps a cell id to its probes.json, and
/// a point whose cell has none is left out. Empty when no point has probes.
std::string probeReportSection(const std::vector<SweepPoint> &points,
                               const std::map<std::string, JsonValue> &probes);

} // namespace drc

#endif // DRC_RUNTIME_PROBEREPORT_H
