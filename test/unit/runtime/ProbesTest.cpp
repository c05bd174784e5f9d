//===- ProbesTest.cpp - Layer probes on models with known answers ---------===//
//
// A plain C++ "model" whose blocks rotate a 2-d state z by θ_b (and may add
// a shift t_b) stands in for a compiled program, so every probe has a value
// in closed form:
//   - rotations commute: swapping two blocks changes nothing (P = 0);
//   - a block with θ = 0 is the identity: skipping it changes no later
//     update (C = 0) and no loss;
//   - skipping a rotation by θ_s rotates every later state back by θ_s, so
//     C(s,b) = |R(θ_b) - I| |R(-θ_s) - I| / |R(θ_b) - I| = 2 |sin(θ_s / 2)|;
//   - d(i,j) = |θ_i + ... + θ_{j-1}| / π.
//
//===----------------------------------------------------------------------===//
#include "runtime/Probes.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace {

constexpr int64_t kTokens = 3, kVocab = 4;

/// Block b: z <- R(θ_b) z + (t_b, 0), with the parameters blocks.<b>.theta
/// and blocks.<b>.shift.
/// The logits of z are its dot products with four directions 90° apart.
/// With `streams`, every sublayer's stream map is `map` for every token.
class RotationModel : public drc::ProbeProgram {
public:
  RotationModel(int64_t blocks, int64_t streams = 0,
                std::vector<float> map = {})
      : map(std::move(map)) {
    sizes = {kTokens, blocks, 2, kVocab, streams};
    for (int64_t b = 0; b < blocks; ++b) {
      theta.push_back(table
                          .add("blocks." + std::to_string(b) + ".theta", {1},
                               drc::Init::constant(0), false)
                          .offset);
      shift.push_back(table
                          .add("blocks." + std::to_string(b) + ".shift", {1},
                               drc::Init::constant(0), false)
                          .offset);
    }
  }

  /// The parameter buffer of (θ_0, t_0, θ_1, t_1, ...).
  std::vector<float> parametersOf(const std::vector<float> &values) const {
    std::vector<float> params(table.numElements(), 0.0f);
    for (size_t b = 0; b < theta.size(); ++b) {
      params[theta[b]] = values[2 * b];
      params[shift[b]] = values[2 * b + 1];
    }
    return params;
  }

  const drc::ParameterTable &parameters() const override { return table; }
  const drc::ProbeShape &shape() const override { return sizes; }

  float probe(const float *params, const int32_t *inputs,
              const int32_t *targets, float *states, float *lens,
              float *maps) override {
    float loss = run(params, inputs, targets, -1, states, lens);
    for (int64_t i = 0; sizes.streams && i < kTokens * 2 * sizes.blocks; ++i)
      std::copy(map.begin(), map.end(),
                maps + i * sizes.streams * sizes.streams);
    return loss;
  }
  float skip(int64_t block, const float *params, const int32_t *inputs,
             const int32_t *targets, float *states) override {
    return run(params, inputs, targets, block, states, nullptr);
  }
  float loss(const float *params, const int32_t *inputs,
             const int32_t *targets) override {
    std::vector<float> states(kTokens * (sizes.blocks + 1) * 2);
    return run(params, inputs, targets, -1, states.data(), nullptr);
  }

private:
  float run(const float *params, const int32_t *inputs, const int32_t *targets,
            int64_t skip, float *states, float *lens) {
    int64_t depths = sizes.blocks + 1;
    double loss = 0;
    for (int64_t t = 0; t < kTokens; ++t) {
      double x = 1.0 + inputs[t], y = 0.5;
      for (int64_t b = 0; b < depths; ++b) {
        float *z = states + (t * depths + b) * 2;
        z[0] = float(x);
        z[1] = float(y);
        double logits[kVocab] = {x, y, -x, -y};
        if (lens)
          for (int64_t v = 0; v < kVocab; ++v)
            lens[(t * depths + b) * kVocab + v] = float(logits[v]);
        if (b == sizes.blocks) {
          double top = std::max({x, y, -x, -y}), sum = 0;
          for (double l : logits)
            sum += std::exp(l - top);
          loss += top + std::log(sum) - logits[targets[t]];
          break;
        }
        if (b == skip)
          continue;
        double angle = params[theta[b]], c = std::cos(angle),
               s = std::sin(angle);
        double nx = c * x - s * y + params[shift[b]], ny = s * x + c * y;
        x = nx;
        y = ny;
      }
    }
    return float(loss / kTokens);
  }

  drc::ParameterTable table;
  std::vector<int64_t> theta, shift; ///< offsets of each block's parameters
  drc::ProbeShape sizes;
  std::vector<float> map;
};

drc::ProbeResult probeRotations(RotationModel &model,
                                const std::vector<float> &values) {
  std::vector<float> params = model.parametersOf(values);
  return drc::runProbes(model, params.data(), 2,
                        [](int64_t batch, int32_t *inputs, int32_t *targets) {
                          for (int64_t t = 0; t < kTokens; ++t) {
                            inputs[t] = int32_t(t + batch);
                            targets[t] = int32_t((t + batch) % kVocab);
                          }
                        });
}

} // namespace

TEST_CASE("commuting blocks have zero swap scores and identity blocks zero "
          "causal scores",
          "[probes]") {
  RotationModel model(4);
  // θ = 0.3, 0 (identity), 0.5, 0.2; no shifts.
  std::vector<float> params = {0.3f, 0, 0, 0, 0.5f, 0, 0.2f, 0};
  drc::ProbeResult r = probeRotations(model, params);
  REQUIRE(r.blocks == 4);
  REQUIRE(r.tokens == 2 * kTokens);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = i + 1; j < 4; ++j)
      CHECK(r.swap.at(i, j) == Approx(0).margin(1e-6));
  for (int64_t b = 2; b < 4; ++b)
    CHECK(r.causal.at(1, b) == Approx(0).margin(1e-6));
  CHECK(r.pruning[1] == Approx(0).margin(1e-6));
  // C(s,b) = 2 |sin(θ_s / 2)| for every later block b that updates z; the
  // identity block 1 has no update to change (u_1 = 0: undefined).
  for (auto [s, theta] : {std::pair<int64_t, double>{0, 0.3}, {2, 0.5}})
    for (int64_t b = s + 1; b < 4; ++b)
      if (b != 1)
        CHECK(r.causal.at(s, b) ==
              Approx(2 * std::sin(theta / 2)).epsilon(1e-4));
  CHECK(std::isnan(r.causal.at(0, 1)));
  // Undefined entries (s >= b; i >= j) stay NaN and print as null.
  CHECK(std::isnan(r.causal.at(2, 1)));
  CHECK(std::isnan(r.swap.at(3, 3)));
}

TEST_CASE("angular distance is the rotation between depth states, and the "
          "logit lens ends at the model's own distribution",
          "[probes]") {
  RotationModel model(3);
  std::vector<float> params = {0.3f, 0, 0.4f, 0, 0.2f, 0};
  drc::ProbeResult r = probeRotations(model, params);
  CHECK(r.angular.at(0, 1) == Approx(0.3 / M_PI).epsilon(1e-4));
  CHECK(r.angular.at(1, 3) == Approx(0.6 / M_PI).epsilon(1e-4));
  CHECK(r.angular.at(3, 0) == Approx(0.9 / M_PI).epsilon(1e-4));
  CHECK(r.angular.at(2, 2) == 0);
  CHECK(r.lensLoss.back() == Approx(r.loss).epsilon(1e-5));
  CHECK(r.lensKL.back() == Approx(0).margin(1e-9));
  CHECK(r.lensTop5.back() == 1); // four logits: the top "5" is all of them
  CHECK(r.lensKL.front() > 0);
}

TEST_CASE("blocks that do not commute have swap scores, and pruning is the "
          "loss change",
          "[probes]") {
  RotationModel model(2);
  std::vector<float> values = {0.8f, 1.5f, -0.6f, 0};
  drc::ProbeResult r = probeRotations(model, values);
  std::vector<float> params = model.parametersOf(values);
  std::vector<float> swapped = model.parametersOf({-0.6f, 0, 0.8f, 1.5f});
  int32_t inputs[kTokens], targets[kTokens];
  double base = 0, swapLoss = 0, skip0 = 0;
  std::vector<float> states(kTokens * 3 * 2);
  for (int64_t batch = 0; batch < 2; ++batch) {
    for (int64_t t = 0; t < kTokens; ++t) {
      inputs[t] = int32_t(t + batch);
      targets[t] = int32_t((t + batch) % kVocab);
    }
    base += model.loss(params.data(), inputs, targets) / 2;
    swapLoss += model.loss(swapped.data(), inputs, targets) / 2;
    skip0 += model.skip(0, params.data(), inputs, targets, states.data()) / 2;
  }
  CHECK(r.loss == Approx(base));
  CHECK(r.swap.at(0, 1) == Approx(std::fabs(swapLoss - base) / base));
  CHECK(r.swap.at(0, 1) > 0.01);
  CHECK(r.pruning[0] == Approx(skip0 - base));
}

TEST_CASE("late-layer pairs count the pairs of blocks at or after L/4",
          "[probes]") {
  drc::ProbeResult r;
  r.blocks = 8; // late blocks 2..7: 15 pairs
  r.causal = drc::ProbeMatrix(8);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = i + 1; j < 8; ++j)
      r.causal.at(i, j) = (i == 2 || i == 0) ? 0.9 : 0.1;
  CHECK(r.lateFirstBlock() == 2);
  auto [pairs, fraction] = r.latePairs(r.causal, 0.45);
  CHECK(pairs == 15);
  CHECK(fraction == Approx(5.0 / 15)); // (2,3) ... (2,7); block 0 is early
  r.blocks = 2;                        // only block 1 is late: no pairs
  r.causal = drc::ProbeMatrix(2);
  CHECK(r.latePairs(r.causal, 0.45).first == 0);
  CHECK(std::isnan(r.latePairs(r.causal, 0.45).second));
}

TEST_CASE("stream maps compose per token into effective rank and Amax",
          "[probes]") {
  SECTION("2 I: full rank, gains doubling with each sublayer") {
    RotationModel model(2, 2, {2, 0, 0, 2});
    drc::ProbeResult r = probeRotations(model, {0.1f, 0, 0.2f, 0});
    REQUIRE(r.erank.size() == 4);
    for (int64_t k = 0; k < 4; ++k) {
      CHECK(r.erank[k] == Approx(2));
      CHECK(r.amaxForward[k] == Approx(std::pow(2.0, k + 1)));
      CHECK(r.amaxBackward[k] == Approx(std::pow(2.0, k + 1)));
    }
  }
  SECTION("a rank-one averaging map, rows summing to one") {
    RotationModel model(1, 2, {0.5f, 0.5f, 0.5f, 0.5f});
    drc::ProbeResult r = probeRotations(model, {0.1f, 0});
    CHECK(r.erank[1] == Approx(1));
    CHECK(r.amaxForward[1] == Approx(1));
    CHECK(r.amaxBackward[1] == Approx(1));
  }
  SECTION("a row sum is not a column sum") {
    // [[1, 1], [0, 0.5]]: rows 2 and 0.5, columns 1 and 1.5.
    RotationModel model(1, 2, {1, 1, 0, 0.5f});
    drc::ProbeResult r = probeRotations(model, {0.1f, 0});
    CHECK(r.amaxForward[0] == Approx(2));
    CHECK(r.amaxBackward[0] == Approx(1.5));
  }
}

TEST_CASE("singular values and effective rank of small matrices", "[probes]") {
  // diag(3, 1) rotated by 30° on both sides.
  double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
  std::vector<double> m = {3 * c * c + s * s, -3 * c * s + s * c,
                           3 * s * c - c * s, -3 * s * s - c * c};
  std::vector<double> sv = drc::singularValues(m, 2);
  CHECK(sv[0] == Approx(3));
  CHECK(sv[1] == Approx(1));
  double p = 0.75, q = 0.25;
  CHECK(drc::effectiveRank(m, 2) ==
        Approx(std::exp(-(p * std::log(p) + q * std::log(q)))));
  std::vector<double> eye = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  CHECK(drc::effectiveRank(eye, 3) == Approx(3));
  CHECK(drc::effectiveRank(std::vector<double>(9, 0.0), 3) == 0);
}
