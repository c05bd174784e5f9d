//===- SweepReport.h - report.md and plots from a sweep's records -*- C++
//-*-===//
//
// What a researcher reads after a sweep: for each design and depth, the
// final validation loss at the design's best learning rate (mean over
// seeds), overall and per domain, beside d/L; the change from the
// shallowest to the deepest depth (DepthBench's question: does depth still
// help?); and the loss-against-d/L figure as an SVG. Built from
// results.jsonl alone, so a partial sweep gives a partial report.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SWEEPREPORT_H
#define DRC_RUNTIME_SWEEPREPORT_H

#include "runtime/Json.h"
#include "runtime/SweepSpec.h"
#include "runtime/TokenEfficiency.h"

#include <map>
#include <string>
#include <vector>

namespace drc {

/// One (design, depth) point at its best learning rate.
struct SweepPoint {
  std::string scheme;
  int64_t nLayer = 0, dModel = 0, parameters = 0;
  double lr = 0;      ///< the best of the rates tried
  double valLoss = 0; ///< mean over the seeds at that rate
  int seeds = 0;
  std::vector<std::pair<std::string, double>> domains; ///< mean per domain
  double tokensPerSecond = 0;                          ///< mean over seeds
  std::string cell; ///< the id of its first seed's cell (for its probes)
};

/// The points of `records` (results.jsonl), designs in the grid's order and
/// depths ascending; a rate counts only when all its seeds finished.
std::vector<SweepPoint> bestPoints(const SweepSpec &sweep,
                                   const std::vector<JsonValue> &records);

/// The point of `scheme` at `nLayer`, or null.
const SweepPoint *findPoint(const std::vector<SweepPoint> &points,
                            const std::string &scheme, int64_t nLayer);

/// The opening of a report figure: an SVG of `width` x `height` on white with
/// `title` centred at the top (the caller closes it with </svg>).
std::string svgFigureStart(double width, double height,
                           const std::string &title);

/// The validation loss against d/L, one line per design, as SVG.
std::string lossPlotSvg(const std::vector<SweepPoint> &points);

/// report.md's text; it shows `plotFile` (relative to the report), the
/// layer probes of the points' cells found in `probes` (probes.json by cell
/// id; runtime/ProbeReport.h), and the token efficiency of entries with a
/// baseline from their cells' `curves` (runtime/TokenEfficiencyReport.h).
std::string sweepReport(const SweepSpec &sweep,
                        const std::vector<SweepPoint> &points, size_t cellsDone,
                        size_t cellsTotal, const std::string &plotFile,
                        const std::map<std::string, JsonValue> &probes = {},
                        const SweepCurves &curves = {});

} // namespace drc

#endif // DRC_RUNTIME_SWEEPREPORT_H
