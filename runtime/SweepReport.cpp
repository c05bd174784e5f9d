//===- SweepReport.cpp - report.md and plots from a sweep's records -------===//
#include "runtime/SweepReport.h"

#include "runtime/ProbeReport.h"
#include "runtime/TokenEfficiencyReport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace drc {
namespace {

/// Line colours of the plot, one per design in order (Okabe-Ito, readable
/// for colour-blind readers).
const char *const kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#F0E442"};

} // namespace

std::vector<SweepPoint> bestPoints(const SweepSpec &sweep,
                                   const std::vector<JsonValue> &records) {
  // (scheme, depth, lr) -> the records of its seeds.
  std::map<std::tuple<std::string, int64_t, double>,
           std::vector<const JsonValue *>>
      runs;
  for (const JsonValue &r : records)
    runs[{r.find("scheme")->asString(), r.find("n_layer")->asInt64(),
          r.find("lr")->asDouble()}]
        .push_back(&r);
  std::vector<SweepPoint> points;
  for (const SweepScheme &scheme : sweep.schemes)
    for (int64_t nLayer : sweep.nLayers) {
      SweepPoint best;
      for (double lr : scheme.lrs) {
        auto it = runs.find({scheme.label, nLayer, lr});
        if (it == runs.end() || it->second.size() < sweep.seeds.size())
          continue;
        SweepPoint p;
        p.scheme = scheme.label;
        p.nLayer = nLayer;
        p.lr = lr;
        p.seeds = static_cast<int>(it->second.size());
        if (const JsonValue *cell = it->second.front()->find("cell"))
          p.cell = cell->asString();
        std::map<std::string, double> domains;
        for (const JsonValue *r : it->second) {
          p.dModel = r->find("d_model")->asInt64();
          p.parameters = r->find("parameters")->asInt64();
          p.valLoss += r->find("val_loss")->asDouble() / p.seeds;
          p.tokensPerSecond += r->find("tokens_per_s")->asDouble() / p.seeds;
          for (const auto &[name, loss] : r->find("domain_val_loss")->members())
            domains[name] += loss.asDouble() / p.seeds;
        }
        p.domains.assign(domains.begin(), domains.end());
        if (best.seeds == 0 || p.valLoss < best.valLoss)
          best = std::move(p);
      }
      if (best.seeds > 0)
        points.push_back(std::move(best));
    }
  return points;
}

const SweepPoint *findPoint(const std::vector<SweepPoint> &points,
                            const std::string &scheme, int64_t nLayer) {
  for (const SweepPoint &p : points)
    if (p.scheme == scheme && p.nLayer == nLayer)
      return &p;
  return nullptr;
}

std::string svgFigureStart(double width, double height,
                           const std::string &title) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
      << "font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"18\" text-anchor=\"middle\">"
      << title << "</text>\n";
  return svg.str();
}

std::string lossPlotSvg(const std::vector<SweepPoint> &points) {
  const double width = 640, height = 400, left = 70, right = 150, top = 30,
               bottom = 50;
  double xMin = 1e300, xMax = -1e300, yMin = 1e300, yMax = -1e300;
  for (const SweepPoint &p : points) {
    double x = std::log(double(p.dModel) / double(p.nLayer));
    xMin = std::min(xMin, x);
    xMax = std::max(xMax, x);
    yMin = std::min(yMin, p.valLoss);
    yMax = std::max(yMax, p.valLoss);
  }
  if (points.empty())
    xMin = xMax = yMin = yMax = 0;
  double xPad = std::max(0.05 * (xMax - xMin), 0.05),
         yPad = std::max(0.08 * (yMax - yMin), 0.002);
  xMin -= xPad, xMax += xPad, yMin -= yPad, yMax += yPad;
  auto sx = [&](double x) {
    return left + (x - xMin) / (xMax - xMin) * (width - left - right);
  };
  auto sy = [&](double y) {
    return top + (yMax - y) / (yMax - yMin) * (height - top - bottom);
  };
  std::ostringstream svg;
  svg << svgFigureStart(width, height,
                        "final validation loss against d/L (best learning "
                        "rate)");
  // Axes, with ticks at the measured d/L values and at 5 loss levels.
  double x0 = left, x1 = width - right, y0 = height - bottom, y1 = top;
  svg << "<path d=\"M" << x0 << " " << y1 << " V" << y0 << " H" << x1
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  std::set<double> ratios;
  for (const SweepPoint &p : points)
    ratios.insert(double(p.dModel) / double(p.nLayer));
  for (double r : ratios)
    svg << "<text x=\"" << sx(std::log(r)) << "\" y=\"" << y0 + 16
        << "\" text-anchor=\"middle\">" << formatFixed(r, 1) << "</text>\n";
  svg << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << height - 10
      << "\" text-anchor=\"middle\">d/L (log scale; deeper and narrower "
         "to the left)</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = yMin + (yMax - yMin) * i / 4;
    svg << "<text x=\"" << x0 - 6 << "\" y=\"" << sy(y) + 4
        << "\" text-anchor=\"end\">" << formatFixed(y, 3) << "</text>\n";
  }
  std::vector<std::string> order;
  for (const SweepPoint &p : points)
    if (std::find(order.begin(), order.end(), p.scheme) == order.end())
      order.push_back(p.scheme);
  for (size_t s = 0; s < order.size(); ++s) {
    const char *colour = kColours[s % std::size(kColours)];
    std::vector<const SweepPoint *> line;
    for (const SweepPoint &p : points)
      if (p.scheme == order[s])
        line.push_back(&p);
    std::sort(line.begin(), line.end(), [](auto *a, auto *b) {
      return double(a->dModel) / a->nLayer < double(b->dModel) / b->nLayer;
    });
    svg << "<polyline fill=\"none\" stroke=\"" << colour
        << "\" stroke-width=\"2\" points=\"";
    for (const SweepPoint *p : line)
      svg << sx(std::log(double(p->dModel) / p->nLayer)) << ","
          << sy(p->valLoss) << " ";
    svg << "\"/>\n";
    for (const SweepPoint *p : line)
      svg << "<circle cx=\"" << sx(std::log(double(p->dModel) / p->nLayer))
          << "\" cy=\"" << sy(p->valLoss) << "\" r=\"3\" fill=\"" << colour
          << "\"/>\n";
    double ly = top + 10 + 18 * s;
    svg << "<line x1=\"" << x1 + 15 << "\" y1=\"" << ly << "\" x2=\"" << x1 + 35
        << "\" y2=\"" << ly << "\" stroke=\"" << colour
        << "\" stroke-width=\"2\"/><text x=\"" << x1 + 40 << "\" y=\"" << ly + 4
        << "\">" << order[s] << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string sweepReport(const SweepSpec &sweep,
                        const std::vector<SweepPoint> &points, size_t cellsDone,
                        size_t cellsTotal, const std::string &plotFile,
                        const std::map<std::string, JsonValue> &probes,
                        const SweepCurves &curves) {
  std::ostringstream md;
  md << "# Width-depth sweep: " << sweep.path << "\n\n"
     << cellsDone << " of " << cellsTotal << " cells done. Budget "
     << sweep.budget << " parameters ("
     << (sweep.budgetMode == Budget::Total ? "all" : "backbone only")
     << ", each depth's d_model within ±3%), " << sweep.tokensPerParam
     << " training tokens per budgeted parameter, " << sweep.seeds.size()
     << " seed(s). Each loss is the final validation loss at the design's "
        "best learning rate for that depth (mean over seeds; a rate counts "
        "once all its seeds finished).\n\n"
     << "![validation loss against d/L](" << plotFile << ")\n\n";
  // Loss table: designs by depth.
  md << "## Validation loss\n\n| design |";
  std::map<int64_t, int64_t> widths;
  for (const SweepPoint &p : points)
    widths[p.nLayer] = p.dModel;
  for (const auto &[nLayer, dModel] : widths)
    md << " L" << nLayer << " (d " << dModel << ", d/L "
       << formatFixed(double(dModel) / nLayer, 1) << ") |";
  md << " deepest − shallowest |\n|---|";
  for (size_t i = 0; i <= widths.size(); ++i)
    md << "---|";
  md << "\n";
  std::vector<std::string> order;
  for (const SweepPoint &p : points)
    if (std::find(order.begin(), order.end(), p.scheme) == order.end())
      order.push_back(p.scheme);
  auto pointOf = [&](const std::string &scheme, int64_t nLayer) {
    return findPoint(points, scheme, nLayer);
  };
  for (const std::string &scheme : order) {
    md << "| " << scheme << " |";
    const SweepPoint *first = nullptr, *last = nullptr;
    for (const auto &entry : widths) {
      const SweepPoint *p = pointOf(scheme, entry.first);
      md << " "
         << (p ? formatFixed(p->valLoss, 4) + " (lr " + formatNumber(p->lr) +
                     ")"
               : std::string("—"))
         << " |";
      if (p) {
        first = first ? first : p;
        last = p;
      }
    }
    md << " "
       << (first && last && first != last
               ? (last->valLoss >= first->valLoss ? "+" : "") +
                     formatFixed(last->valLoss - first->valLoss, 4)
               : std::string("—"))
       << " |\n";
  }
  // Per-domain losses.
  md << "\n## Validation loss per domain\n\n| design | n_layer |";
  std::vector<std::string> domains;
  for (const SweepPoint &p : points)
    for (const auto &d : p.domains)
      if (std::find(domains.begin(), domains.end(), d.first) == domains.end())
        domains.push_back(d.first);
  for (const std::string &d : domains)
    md << " " << d << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < domains.size(); ++i)
    md << "---|";
  md << "\n";
  for (const SweepPoint &p : points) {
    md << "| " << p.scheme << " | " << p.nLayer << " |";
    for (const std::string &d : domains) {
      auto it = std::find_if(p.domains.begin(), p.domains.end(),
                             [&](const auto &e) { return e.first == d; });
      md << " " << (it == p.domains.end() ? "—" : formatFixed(it->second, 4))
         << " |";
    }
    md << "\n";
  }
  // Cost.
  md << "\n## Parameters and speed\n\n| design | n_layer | d_model | "
        "parameters | tokens/s (this machine) |\n|---|---|---|---|---|\n";
  for (const SweepPoint &p : points)
    md << "| " << p.scheme << " | " << p.nLayer << " | " << p.dModel << " | "
       << p.parameters << " | " << formatFixed(p.tokensPerSecond, 0) << " |\n";
  std::string efficiency = tokenEfficiencySection(sweep, points, curves);
  if (!efficiency.empty())
    md << "\n" << efficiency;
  md << "\n" << probeReportSection(points, probes);
  md << "\nThe records behind these tables are in results.jsonl, each "
        "cell's probes in cells/CELL/probes.json (docs/bench.md).\n";
  return md.str();
}

} // namespace drc
