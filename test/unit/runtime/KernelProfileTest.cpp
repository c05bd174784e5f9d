//===- KernelProfileTest.cpp - Time per GPU kernel -----------------------===//
#include "runtime/KernelProfile.h"

#include <catch2/catch.hpp>

TEST_CASE("a kernel profile sums launches by kernel, longest first", "[cuda]") {
  drc::KernelProfile profile;
  profile.record("short", 0.001);
  profile.record("long", 0.003);
  profile.record("short", 0.001);
  profile.record("tiny", 0.0001);
  std::string report = profile.report(2);
  INFO(report);
  size_t longLine = report.find("long "), shortLine = report.find("short ");
  REQUIRE(longLine != std::string::npos);
  REQUIRE(shortLine != std::string::npos);
  CHECK(longLine < shortLine);
  CHECK(report.find("tiny") == std::string::npos); // not in the top 2
  CHECK_THAT(report, Catch::Matchers::Contains(
                         "long                                        1       "
                         "3.00     3000.0   58.8%"));
  CHECK_THAT(report, Catch::Matchers::Contains(
                         "short                                       2       "
                         "2.00     1000.0   39.2%"));
  CHECK_THAT(report, Catch::Matchers::Contains(
                         "all                                         4       "
                         "5.10   (3 kernels)"));
}
