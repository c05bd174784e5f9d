//===- SweepReportTest.cpp - Best learning rates and the report's tables --===//
#include "runtime/SweepReport.h"

#include <catch2/catch.hpp>

namespace {

drc::JsonValue record(const std::string &scheme, int64_t nLayer, double lr,
                      uint64_t seed, double loss) {
  drc::JsonValue r = drc::JsonValue::object();
  r.set("scheme", scheme);
  r.set("n_layer", nLayer);
  r.set("d_model", nLayer == 2 ? 132 : 96);
  r.set("parameters", 500000);
  r.set("lr", lr);
  r.set("seed", seed);
  r.set("val_loss", loss);
  drc::JsonValue domains = drc::JsonValue::object();
  domains.set("prose", loss + 0.5);
  r.set("domain_val_loss", std::move(domains));
  r.set("tokens_per_s", 1000.0);
  return r;
}

drc::SweepSpec sweep() {
  drc::SweepSpec s;
  s.path = "grid.toml";
  s.budget = 500000;
  s.nLayers = {2, 4};
  s.seeds = {1, 2};
  s.schemes = {{"preln", "", {1e-3, 2e-3}, ""}, {"hc", "", {2e-3}, ""}};
  return s;
}

} // namespace

TEST_CASE("each design and depth is reported at its best learning rate, "
          "averaged over seeds",
          "[sweep]") {
  std::vector<drc::JsonValue> records = {
      record("preln", 2, 1e-3, 1, 3.0), record("preln", 2, 1e-3, 2, 3.2),
      record("preln", 2, 2e-3, 1, 3.0), record("preln", 2, 2e-3, 2, 3.0),
      // At depth 4 only one seed of 2e-3 finished: 1e-3 is all there is.
      record("preln", 4, 1e-3, 1, 3.3), record("preln", 4, 1e-3, 2, 3.1),
      record("preln", 4, 2e-3, 1, 2.0), record("hc", 4, 2e-3, 1, 2.9),
      record("hc", 4, 2e-3, 2, 2.7)};
  std::vector<drc::SweepPoint> points = drc::bestPoints(sweep(), records);
  REQUIRE(points.size() == 3); // hc at depth 2 has no record yet
  CHECK(points[0].scheme == "preln");
  CHECK(points[0].nLayer == 2);
  CHECK(points[0].lr == 2e-3); // mean 3.0 beats 1e-3's 3.1
  CHECK(points[0].valLoss == Approx(3.0));
  CHECK(points[1].nLayer == 4);
  CHECK(points[1].lr == 1e-3);
  CHECK(points[1].valLoss == Approx(3.2));
  CHECK(points[1].seeds == 2);
  REQUIRE(points[1].domains.size() == 1);
  CHECK(points[1].domains[0].second == Approx(3.7));
  CHECK(points[2].scheme == "hc");
  CHECK(points[2].valLoss == Approx(2.8));

  std::string report =
      drc::sweepReport(sweep(), points, 9, 12, "loss-vs-depth.svg");
  CHECK(report.find("9 of 12 cells done") != std::string::npos);
  CHECK(report.find("| preln | 3.0000 (lr 0.002) | 3.2000 (lr 0.001) | "
                    "+0.2000 |") != std::string::npos);
  CHECK(report.find("| hc | — | 2.8000 (lr 0.002) | — |") != std::string::npos);
  std::string svg = drc::lossPlotSvg(points);
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.find(">preln</text>") != std::string::npos);
}
