//===- TokenEfficiencyTest.cpp - Tokens to a baseline's loss, E(T)
//---------===//
#include "runtime/TokenEfficiency.h"
#include "runtime/TokenEfficiencyReport.h"

#include "runtime/AtomicFile.h"

#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <cmath>

namespace {

/// Losses falling linearly in tokens at `rate` per 1000 tokens from 5,
/// evaluated every 100 tokens up to 1000: linear interpolation is exact.
drc::LossCurve linear(double rate) {
  drc::LossCurve c;
  for (int i = 1; i <= 10; ++i) {
    c.tokens.push_back(100.0 * i);
    c.loss.push_back(5 - rate * 100.0 * i / 1000);
  }
  return c;
}

} // namespace

TEST_CASE("tokens to reach a loss, between evaluations", "[efficiency]") {
  drc::LossCurve c{{100, 200, 300}, {3.0, 2.0, 1.5}};
  CHECK(*drc::tokensToReach(c, 2.5) == Approx(150));
  CHECK(*drc::tokensToReach(c, 2.0) == Approx(200));
  CHECK(*drc::tokensToReach(c, 1.75) == Approx(250));
  CHECK(*drc::tokensToReach(c, 3.5) == Approx(100)); // already at the first
  CHECK_FALSE(drc::tokensToReach(c, 1.4));
  // The first crossing counts, not a later one after a rise.
  drc::LossCurve bumpy{{100, 200, 300, 400}, {3.0, 2.0, 2.6, 1.0}};
  CHECK(*drc::tokensToReach(bumpy, 2.5) == Approx(150));
}

TEST_CASE("E(T) of a design that learns twice as fast is 2", "[efficiency]") {
  std::vector<double> e = drc::tokenEfficiency(linear(1), linear(2));
  REQUIRE(e.size() == 10);
  // At T = 100 the design reaches the loss at 50 tokens, before its first
  // evaluation: 100 is all that can be said (E >= 1).
  CHECK(e[0] == Approx(1));
  for (size_t i = 1; i < e.size(); ++i)
    CHECK(e[i] == Approx(2));
  // Against itself E = 1; a slower design never reaches the final loss.
  for (double v : drc::tokenEfficiency(linear(1), linear(1)))
    CHECK(v == Approx(1));
  std::vector<double> slow = drc::tokenEfficiency(linear(2), linear(1));
  CHECK(slow[4] == Approx(0.5)); // T = 500: reached at 1000
  CHECK(std::isnan(slow[9]));
}

TEST_CASE("loss curves come from metrics.jsonl", "[efficiency]") {
  drc::test::ScratchDirectory dir;
  drc::writeFileAtomically(
      (dir / "metrics.jsonl").string(),
      "{\"step\":1,\"tokens\":100,\"val_loss\":3.5,\"val_loss_next2\":4}\n"
      "{\"step\":2,\"tokens\":200,\"val_loss\":3.0,\"val_loss_next2\":3.8}\n");
  drc::LossCurve c = drc::readLossCurve(dir / "metrics.jsonl", "val_loss");
  CHECK(c.tokens == std::vector<double>{100, 200});
  CHECK(c.loss == std::vector<double>{3.5, 3.0});
  CHECK(drc::readLossCurve(dir / "metrics.jsonl", "val_loss_next2").loss ==
        std::vector<double>{4, 3.8});
  CHECK(drc::readLossCurve(dir / "metrics.jsonl", "nothing").tokens.empty());
}

TEST_CASE("the report compares entries with a baseline at each depth",
          "[efficiency]") {
  drc::SweepSpec sweep;
  sweep.nLayers = {2, 4};
  sweep.schemes = {{"base", "", {1e-3}, "", "", ""},
                   {"wide", "", {1e-3}, "", "base", ""},
                   {"other", "", {1e-3}, "", "", ""}};
  std::vector<drc::SweepPoint> points(3);
  points[0].scheme = "base";
  points[0].nLayer = 2;
  points[0].cell = "base-L2";
  points[1].scheme = "wide";
  points[1].nLayer = 2;
  points[1].cell = "wide-L2";
  points[2].scheme = "wide";
  points[2].nLayer = 4; // no baseline point at this depth: no row
  points[2].cell = "wide-L4";
  drc::SweepCurves curves;
  curves["base-L2"]["val_loss"] = linear(1);
  curves["wide-L2"]["val_loss"] = linear(2);
  curves["wide-L4"]["val_loss"] = linear(2);
  std::string md = drc::tokenEfficiencySection(sweep, points, curves);
  CHECK(md.find("## Tokens to the baseline's loss") == 0);
  CHECK(md.find("| wide | base | 2 | 4.0000 | 500 (E 2.00) | 2.00 / 2.00 / "
                "2.00 / 2.00 | — | — |") != std::string::npos);
  CHECK(md.find("| wide | base | 4 |") == std::string::npos);

  curves["base-L2"]["val_loss"] = linear(2);
  curves["wide-L2"]["val_loss"] = linear(1);
  md = drc::tokenEfficiencySection(sweep, points, curves);
  CHECK(md.find("not reached (+1.0000)") != std::string::npos);

  sweep.schemes[1].baseline.clear();
  CHECK(drc::tokenEfficiencySection(sweep, points, curves).empty());
}
