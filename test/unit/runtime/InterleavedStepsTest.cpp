//===- InterleavedStepsTest.cpp - Step-time ratios against neighbours -----===//

#include "runtime/InterleavedSteps.h"

#include "runtime/Error.h"

#include <catch2/catch.hpp>

using namespace drc;

TEST_CASE("median of odd, even and empty lists", "[InterleavedSteps]") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({}) == 0);
}

TEST_CASE("a program's ratio is over the mean of the reference steps beside "
          "it, so a drift that is linear in time cancels",
          "[InterleavedSteps]") {
  // The machine slows by 10% a step: reference steps 1.0, 1.2, 1.4 and
  // programs timed between them at 1.1 and 1.3 times a 1.5x slowdown, and an
  // unchanged program.
  InterleavedRound drifting{{1.0, 1.2, 1.4}, {1.1 * 1.5, 1.3}};
  InterleavedRound steady{{1.0, 1.0, 1.0}, {1.4, 1.0}};
  InterleavedRound noisy{{1.0, 1.0, 1.0}, {1.7, 0.9}};
  std::vector<StepRatio> r = summarizeInterleaved({drifting, steady, noisy});
  REQUIRE(r.size() == 2);
  CHECK(r[0].medianRatio == Approx(1.5));
  CHECK(r[0].minRatio == Approx(1.4));
  CHECK(r[0].maxRatio == Approx(1.7));
  CHECK(r[0].medianSeconds == Approx(1.65));
  CHECK(r[1].medianRatio == Approx(1.0));
  CHECK(r[1].minRatio == Approx(0.9));
  CHECK(r[1].medianSeconds == Approx(1.0));
}

TEST_CASE("rounds must put a reference step around every program step",
          "[InterleavedSteps]") {
  CHECK_THROWS_AS(summarizeInterleaved({}), Error);
  CHECK_THROWS_WITH(summarizeInterleaved({{{1.0, 1.0}, {1.0, 1.0}}}),
                    Catch::Contains("one reference step around each program"));
  CHECK_THROWS_AS(summarizeInterleaved(
                      {{{1.0, 1.0}, {1.0}}, {{1.0, 1.0, 1.0}, {1.0, 1.0}}}),
                  Error);
}
