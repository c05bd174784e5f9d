//===- ShapeSolverTest.cpp - DepthBench's reference grid ------------------===//
#include "runtime/ShapeSolver.h"

#include <catch2/catch.hpp>

// ARCHITECTURES.md §1.2: with V = 50280, n_h = 16 and N = N(L24, d1024) the
// solver reproduces DepthBench's grid exactly, d_ff and N included.
TEST_CASE("the shape solver reproduces DepthBench's reference grid",
          "[shape]") {
  const int64_t vocab = 50280;
  int64_t budget = drc::preLnParameters(vocab, 24, 1024);
  CHECK(budget == 405'406'720);
  struct Row {
    int64_t layers, d, dff;
    double millions;
  } grid[] = {{16, 1216, 3248, 406.5}, {20, 1120, 2992, 414.1},
              {24, 1024, 2736, 405.4}, {28, 960, 2560, 406.2},
              {32, 896, 2400, 399.4},  {42, 800, 2144, 404.2},
              {70, 640, 1712, 409.2}};
  for (const Row &r : grid) {
    INFO("L = " << r.layers);
    drc::SolvedShape s = drc::solveShape(budget, r.layers, 16, vocab);
    CHECK(s.dModel == r.d);
    CHECK(s.dFF == r.dff);
    CHECK(s.params / 1e6 == Approx(r.millions).margin(0.05));
    CHECK(s.withinTolerance());
  }
}

TEST_CASE("the iso-backbone mode fixes N_b", "[shape]") {
  int64_t nb = drc::preLnParameters(256, 8, 256, drc::Budget::Backbone);
  drc::SolvedShape s = drc::solveShape(nb, 8, 4, 256, drc::Budget::Backbone);
  CHECK(s.dModel == 256);
  CHECK(s.deviation == 0.0);
  // Half the depth: ~√2 the width, rounded to a multiple of 2·n_head.
  s = drc::solveShape(nb, 4, 4, 256, drc::Budget::Backbone);
  CHECK(s.dModel % 8 == 0);
  CHECK(s.withinTolerance());
}

TEST_CASE("a budget no width fits within 3% is flagged", "[shape]") {
  // 2·n_head = 64-wide steps at a tiny budget: the nearest width is far off.
  drc::SolvedShape s = drc::solveShape(100'000, 2, 32, 256);
  CHECK_FALSE(s.withinTolerance());
  CHECK_THROWS_WITH(drc::solveShape(0, 2, 4, 256),
                    Catch::Contains("positive budget"));
}
