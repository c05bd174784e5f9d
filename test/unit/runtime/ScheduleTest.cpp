//===- ScheduleTest.cpp - Warmup + cosine learning rate -------------------===//

#include "runtime/Schedule.h"

#include "runtime/Error.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace drc;

TEST_CASE("warmup is linear from eta/n_w and reaches eta at its last step",
          "[Schedule]") {
  LearningRateSchedule lr(1e-3, 1000);
  REQUIRE(lr.warmupSteps() == 100);
  CHECK(lr.at(0) == 1e-3 * 1 / 100);
  CHECK(lr.at(1) == 1e-3 * 2 / 100);
  CHECK(lr.at(49) == 1e-3 * 50 / 100);
  CHECK(lr.at(99) == 1e-3);
}

TEST_CASE("the cosine runs from eta after warmup to 0.1 eta at the last step",
          "[Schedule]") {
  // n_w = round(100.1) = 100; the cosine spans steps 100..1000.
  LearningRateSchedule lr(1e-3, 1001);
  REQUIRE(lr.warmupSteps() == 100);
  CHECK(lr.at(100) == Approx(1e-3).epsilon(1e-14));
  CHECK(lr.at(550) == Approx(0.55e-3).epsilon(1e-14));
  CHECK(lr.at(1000) == Approx(1e-4).epsilon(1e-14));
  // s = 325: p = 1/4, lr = eta (0.1 + 0.45 (1 + cos(pi/4))).
  CHECK(lr.at(325) ==
        Approx(1e-3 * (0.1 + 0.45 * (1 + std::sqrt(0.5)))).epsilon(1e-14));
  for (int64_t s = 101; s < 1001; ++s)
    CHECK(lr.at(s) <= lr.at(s - 1));
}

TEST_CASE("warmup and final fractions are configurable", "[Schedule]") {
  LearningRateSchedule noWarmup(2e-3, 11, 0.0, 0.0);
  CHECK(noWarmup.warmupSteps() == 0);
  CHECK(noWarmup.at(0) == 2e-3);
  CHECK(noWarmup.at(5) == Approx(1e-3).epsilon(1e-14));
  CHECK(noWarmup.at(10) == Approx(0.0).margin(1e-18));

  // 0.7 * 90 is 62.99999999999999 in double; n_w rounds it to 63.
  LearningRateSchedule long_(1e-3, 90, 0.7);
  CHECK(long_.warmupSteps() == 63);
  CHECK(long_.at(62) == 1e-3);

  LearningRateSchedule allWarmup(1e-3, 10, 1.0);
  CHECK(allWarmup.at(9) == 1e-3);

  // A single step: the warmup rounds to 0 and the cosine has no span.
  LearningRateSchedule one(1e-3, 1);
  CHECK(one.at(0) == 1e-3);
}

TEST_CASE("bad schedule settings are InputErrors", "[Schedule]") {
  CHECK_THROWS_AS(LearningRateSchedule(0.0, 100), InputError);
  CHECK_THROWS_AS(LearningRateSchedule(NAN, 100), InputError);
  CHECK_THROWS_AS(LearningRateSchedule(1e-3, 0), InputError);
  CHECK_THROWS_AS(LearningRateSchedule(1e-3, 100, 1.5), InputError);
  CHECK_THROWS_AS(LearningRateSchedule(1e-3, 100, 0.1, -0.1), InputError);
  CHECK_THROWS_WITH(LearningRateSchedule(1e-3, 100, -0.5),
                    "warmup fraction -0.5 must be between 0 and 1");
  LearningRateSchedule lr(1e-3, 100);
  CHECK_THROWS_AS(lr.at(100), Error);
  CHECK_THROWS_AS(lr.at(-1), Error);
}
