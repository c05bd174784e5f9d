//===- ProbeReport.cpp - The layer probes' part of a sweep report ---------===//
#include "runtime/ProbeReport.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace drc {
namespace {

/// A matrix of probes.json (rows of numbers or nulls); null is NaN.
std::vector<std::vector<double>> matrixOf(const JsonValue &probes,
                                          std::string_view key) {
  std::vector<std::vector<double>> out;
  const JsonValue *m = probes.find(key);
  if (!m || !m->isArray())
    return out;
  for (const JsonValue &row : m->elements()) {
    out.emplace_back();
    for (const JsonValue &v : row.elements())
      out.back().push_back(v.isNumber() ? v.asDouble() : NAN);
  }
  return out;
}

std::vector<double> vectorOf(const JsonValue *v) {
  std::vector<double> out;
  if (v && v->isArray())
    for (const JsonValue &x : v->elements())
      out.push_back(x.isNumber() ? x.asDouble() : NAN);
  return out;
}

std::string percent(const JsonValue *late, std::string_view key) {
  const JsonValue *v = late ? late->find(key) : nullptr;
  return v && v->isNumber() ? formatFixed(100 * v->asDouble(), 0) + "%" : "—";
}

std::string cellText(double v, int digits) {
  return std::isfinite(v) ? formatFixed(v, digits) : "—";
}

/// White through blue to dark blue as t goes from 0 to 1.
std::string shade(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double stops[3][3] = {{255, 255, 255}, {86, 180, 233}, {0, 60, 120}};
  double u = t * 2;
  int i = std::min(int(u), 1);
  double f = u - i;
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x%02x",
                int(stops[i][0] + f * (stops[i + 1][0] - stops[i][0])),
                int(stops[i][1] + f * (stops[i + 1][1] - stops[i][1])),
                int(stops[i][2] + f * (stops[i + 1][2] - stops[i][2])));
  return text;
}

/// One heatmap panel at (x, y), `cell` pixels per entry, rows and columns
/// labelled from `first`.
void heatmap(std::ostringstream &svg, double x, double y, double cell,
             const std::string &title, const std::string &axes,
             const std::vector<std::vector<double>> &m, int first) {
  double top = 0;
  for (const auto &row : m)
    for (double v : row)
      if (std::isfinite(v))
        top = std::max(top, v);
  size_t n = m.size();
  svg << "<text x=\"" << x + cell * n / 2 << "\" y=\"" << y - 22
      << "\" text-anchor=\"middle\" font-weight=\"bold\">" << title
      << "</text>\n<text x=\"" << x + cell * n / 2 << "\" y=\"" << y - 8
      << "\" text-anchor=\"middle\" font-size=\"10\">" << axes << " (max "
      << formatFixed(top, 2) << ")</text>\n";
  for (size_t r = 0; r < n; ++r) {
    svg << "<text x=\"" << x - 4 << "\" y=\"" << y + cell * (r + 0.5) + 4
        << "\" text-anchor=\"end\" font-size=\"10\">" << first + r
        << "</text>\n";
    for (size_t c = 0; c < m[r].size(); ++c) {
      double v = m[r][c];
      double cx = x + cell * c, cy = y + cell * r;
      svg << "<rect x=\"" << cx << "\" y=\"" << cy << "\" width=\"" << cell
          << "\" height=\"" << cell << "\" fill=\""
          << (std::isfinite(v) ? shade(top > 0 ? v / top : 0) : "#eeeeee")
          << "\" stroke=\"white\"/>\n";
      if (std::isfinite(v) && cell >= 26)
        svg << "<text x=\"" << cx + cell / 2 << "\" y=\"" << cy + cell / 2 + 3
            << "\" text-anchor=\"middle\" font-size=\"9\" fill=\""
            << (top > 0 && v / top > 0.55 ? "white" : "black") << "\">"
            << formatFixed(v, 2) << "</text>\n";
    }
  }
  for (size_t c = 0; c < n; ++c)
    svg << "<text x=\"" << x + cell * (c + 0.5) << "\" y=\""
        << y + cell * n + 12 << "\" text-anchor=\"middle\" font-size=\"10\">"
        << first + c << "</text>\n";
}

/// The task of `name` in a probes.json, or null.
const JsonValue *taskOf(const JsonValue *probes, const std::string &name) {
  const JsonValue *tasks = probes ? probes->find("depth_tasks") : nullptr;
  if (tasks && tasks->isArray())
    for (const JsonValue &task : tasks->elements())
      if (task.find("domain")->asString() == name)
        return &task;
  return nullptr;
}

/// Accuracy pooled over k at every depth of one task result.
std::vector<double> pooledAccuracy(const JsonValue &task) {
  std::vector<double> counts = vectorOf(task.find("answers_by_k")), out;
  for (const std::vector<double> &row :
       matrixOf(task, "accuracy_by_depth_and_k")) {
    double right = 0, all = 0;
    for (size_t k = 0; k < row.size() && k < counts.size(); ++k)
      if (counts[k] > 0) {
        right += row[k] * counts[k];
        all += counts[k];
      }
    out.push_back(all > 0 ? right / all : NAN);
  }
  return out;
}

/// The depth task tables: accuracy by k per design and depth, and pooled
/// accuracy of every depth state's logit lens at the deepest depth.
template <typename ProbesOf>
void depthTaskTables(std::ostringstream &md,
                     const std::vector<std::string> &order,
                     const std::vector<int64_t> &depths, ProbesOf probesOf) {
  std::vector<std::string> names;
  for (const std::string &scheme : order)
    for (int64_t L : depths)
      if (const JsonValue *p = probesOf(scheme, L))
        if (const JsonValue *tasks = p->find("depth_tasks"))
          for (const JsonValue &task : tasks->elements()) {
            std::string name = task.find("domain")->asString();
            if (std::find(names.begin(), names.end(), name) == names.end())
              names.push_back(name);
          }
  int64_t deepest = depths.back();
  for (const std::string &name : names) {
    size_t hops = 0;
    int64_t answers = 0;
    for (const std::string &scheme : order)
      for (int64_t L : depths)
        if (const JsonValue *task = taskOf(probesOf(scheme, L), name)) {
          std::vector<double> counts = vectorOf(task->find("answers_by_k"));
          hops = std::max(hops, counts.size());
          answers = 0;
          for (double c : counts)
            answers += int64_t(c);
        }
    md << "\n### Depth task '" << name << "': accuracy by k\n\nThe share of "
       << answers
       << " validation problems (per cell) whose answer is the model's most "
          "likely next token, by the number k of permutations composed (a "
          "model that only knows the answer is one of five symbols scores "
          "20%).\n\n| design | n_layer |";
    for (size_t k = 1; k <= hops; ++k)
      md << " k=" << k << " |";
    md << " all |\n|---|---|";
    for (size_t k = 0; k <= hops; ++k)
      md << "---|";
    md << "\n";
    for (const std::string &scheme : order)
      for (int64_t L : depths) {
        const JsonValue *task = taskOf(probesOf(scheme, L), name);
        if (!task)
          continue;
        std::vector<std::vector<double>> accuracy =
            matrixOf(*task, "accuracy_by_depth_and_k");
        md << "| " << scheme << " | " << L << " |";
        for (size_t k = 0; k < hops; ++k)
          md << " "
             << (k < accuracy.back().size() && std::isfinite(accuracy.back()[k])
                     ? formatFixed(100 * accuracy.back()[k], 0) + "%"
                     : "—")
             << " |";
        md << " " << formatFixed(100 * pooledAccuracy(*task).back(), 1)
           << "% |\n";
      }
    md << "\nWhere the answer appears at L" << deepest
       << ": the same accuracy (all k) read from each depth state z_b "
          "through the logit lens.\n\n| design |";
    for (int64_t b = 0; b <= deepest; ++b)
      md << " z" << b << " |";
    md << "\n|---|";
    for (int64_t b = 0; b <= deepest; ++b)
      md << "---|";
    md << "\n";
    for (const std::string &scheme : order)
      if (const JsonValue *task = taskOf(probesOf(scheme, deepest), name)) {
        md << "| " << scheme << " |";
        for (double v : pooledAccuracy(*task))
          md << " " << (std::isfinite(v) ? formatFixed(100 * v, 0) + "%" : "—")
             << " |";
        md << "\n";
      }
  }
}

} // namespace

std::string probeFigureFile(const SweepPoint &point) {
  return "probes-" + point.scheme + "-L" + std::to_string(point.nLayer) +
         ".svg";
}

std::string probeHeatmapsSvg(const std::string &title,
                             const JsonValue &probes) {
  auto angular = matrixOf(probes, "angular_distance");
  auto causal = matrixOf(probes, "causal_score");
  auto swap = matrixOf(probes, "swap_score");
  size_t depths = angular.size();
  double cell = std::clamp(240.0 / std::max<size_t>(depths, 1), 8.0, 34.0);
  double panel = cell * depths + 70, width = 3 * panel + 40,
         height = cell * depths + 110;
  std::ostringstream svg;
  svg << svgFigureStart(width, height, title);
  heatmap(svg, 50, 70, cell, "angular distance d(i,j)", "depth states z_i, z_j",
          angular, 0);
  heatmap(svg, 50 + panel, 70, cell, "causal score C(s,b)",
          "row: skipped block s, column: block b", causal, 0);
  heatmap(svg, 50 + 2 * panel, 70, cell, "swap score P(i,j)",
          "blocks i, j exchanged", swap, 0);
  svg << "</svg>\n";
  return svg.str();
}

std::string probeReportSection(const std::vector<SweepPoint> &points,
                               const std::map<std::string, JsonValue> &probes) {
  auto probesOf = [&](const SweepPoint &p) -> const JsonValue * {
    auto it = probes.find(p.cell);
    return it == probes.end() ? nullptr : &it->second;
  };
  std::vector<std::string> order;
  std::vector<int64_t> depths;
  for (const SweepPoint &p : points)
    if (probesOf(p)) {
      if (std::find(order.begin(), order.end(), p.scheme) == order.end())
        order.push_back(p.scheme);
      if (std::find(depths.begin(), depths.end(), p.nLayer) == depths.end())
        depths.push_back(p.nLayer);
    }
  if (order.empty())
    return "";
  std::sort(depths.begin(), depths.end());
  auto find = [&](const std::string &scheme, int64_t nLayer) {
    const SweepPoint *p = findPoint(points, scheme, nLayer);
    return p && probesOf(*p) ? p : nullptr;
  };
  std::ostringstream md;
  const JsonValue *any = probesOf(*find(order.front(), depths.front()));
  md << "## Layer probes\n\nEach design's cell at its best learning rate "
        "(first seed), over "
     << any->find("tokens")->asInt64()
     << " validation tokens (docs/probes.md has the definitions).\n\n"
     << "### Late-layer pairs\n\nAmong pairs of blocks both at or after "
        "L/4: the share with a causal score C > 0.45 and with a swap score "
        "P > 0.15 (DepthBench: at L32, Pre-LN ≈1% / ≈8%, HC ≈7% / ≈35%, "
        "Full AttnRes ≈16% / ≈46%).\n\n| design |";
  for (int64_t L : depths)
    md << " L" << L << " C / P |";
  md << "\n|---|";
  for (size_t i = 0; i < depths.size(); ++i)
    md << "---|";
  md << "\n";
  for (const std::string &scheme : order) {
    md << "| " << scheme << " |";
    for (int64_t L : depths) {
      const SweepPoint *p = find(scheme, L);
      const JsonValue *late = p ? probesOf(*p)->find("late_pairs") : nullptr;
      const JsonValue *pairs = late ? late->find("pairs") : nullptr;
      if (!p)
        md << " — |";
      else if (!pairs || pairs->asInt64() == 0)
        md << " no pairs |";
      else
        md << " " << percent(late, "causal_above_0.45") << " / "
           << percent(late, "swap_above_0.15") << " (" << pairs->asInt64()
           << " pairs) |";
    }
    md << "\n";
  }

  int64_t deepest = depths.back();
  auto perBlockTable = [&](const std::string &heading, const std::string &intro,
                           int64_t columns, int first,
                           const std::string &prefix, auto values) {
    md << "\n### " << heading << "\n\n" << intro << "\n\n| design |";
    for (int64_t c = 0; c < columns; ++c)
      md << " " << prefix << first + c << " |";
    md << "\n|---|";
    for (int64_t c = 0; c < columns; ++c)
      md << "---|";
    md << "\n";
    for (const std::string &scheme : order) {
      const SweepPoint *p = find(scheme, deepest);
      if (!p)
        continue;
      std::vector<double> v = values(*probesOf(*p));
      md << "| " << scheme << " |";
      for (int64_t c = 0; c < columns; ++c)
        md << " " << cellText(c < int64_t(v.size()) ? v[c] : NAN, 3) << " |";
      md << "\n";
    }
  };
  perBlockTable("Single-layer pruning at L" + std::to_string(deepest),
                "The validation loss change when block b is skipped.", deepest,
                0, "b",
                [](const JsonValue &j) { return vectorOf(j.find("pruning")); });
  perBlockTable("Logit lens at L" + std::to_string(deepest),
                "The loss of reading each depth state z_b out through the "
                "final norm and W_U (z_" +
                    std::to_string(deepest) + " is the model's own output).",
                deepest + 1, 0, "z", [](const JsonValue &j) {
                  const JsonValue *lens = j.find("logit_lens");
                  return vectorOf(lens ? lens->find("loss") : nullptr);
                });

  bool maps = false;
  for (const SweepPoint &p : points)
    maps |= probesOf(p) && probesOf(p)->find("stream_maps");
  if (maps) {
    md << "\n### Stream maps\n\nThe composed map of all 2L sublayers, "
          "P = T_{2L−1} ⋯ T_0: its effective rank (token mean; n is full "
          "rank) and Amax gains, the largest absolute row sum (forward) and "
          "column sum (backward) over tokens (mHC paper: ≈1.6 for mHC, "
          "≈3000 for HC at 27B).\n\n| design | n_layer | streams | erank | "
          "Amax forward | Amax backward |\n|---|---|---|---|---|---|\n";
    for (const std::string &scheme : order)
      for (int64_t L : depths) {
        const SweepPoint *p = find(scheme, L);
        const JsonValue *m = p ? probesOf(*p)->find("stream_maps") : nullptr;
        if (!m)
          continue;
        auto last = [&](const char *key) {
          std::vector<double> v = vectorOf(m->find(key));
          return cellText(v.empty() ? NAN : v.back(), 2);
        };
        md << "| " << scheme << " | " << L << " | "
           << m->find("streams")->asInt64() << " | " << last("erank") << " | "
           << last("amax_forward") << " | " << last("amax_backward") << " |\n";
      }
  }

  depthTaskTables(
      md, order, depths,
      [&](const std::string &scheme, int64_t L) -> const JsonValue * {
        const SweepPoint *p = find(scheme, L);
        return p ? probesOf(*p) : nullptr;
      });

  md << "\n### Heatmaps at L" << deepest << "\n\n";
  for (const std::string &scheme : order)
    if (const SweepPoint *p = find(scheme, deepest))
      md << "![" << scheme << " probes](" << probeFigureFile(*p) << ")\n\n";
  return md.str();
}

} // namespace drc
