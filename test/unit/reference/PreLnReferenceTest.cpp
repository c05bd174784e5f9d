//===- PreLnReferenceTest.cpp - Hand-checked Pre-LN reference -------------===//
//
// The reference is what the compiled model is judged against, so each piece is
// checked here against values worked out by hand from ARCHITECTURES.md §1
// (the literals below), not against another implementation.
//
//===----------------------------------------------------------------------===//
#include "test/reference/PreLnReference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace drc::reference;

namespace {

constexpr double kTight = 1e-12;
constexpr double kHand = 1e-9; // literals below carry >= 12 significant digits

double norm(const std::vector<double> &x) {
  double sum = 0.0;
  for (double v : x)
    sum += v * v;
  return std::sqrt(sum);
}

std::vector<double> randomTensor(std::mt19937 &rng, int64_t size,
                                 double std = 0.3) {
  std::normal_distribution<double> dist(0.0, std);
  std::vector<double> t(size);
  for (double &v : t)
    v = dist(rng);
  return t;
}

/// A small model whose weights are large enough (std 0.3) that attention
/// weights are far from uniform and every sublayer matters.
PreLnConfig smallConfig() {
  PreLnConfig c;
  c.vocab = 7;
  c.dModel = 8;
  c.nLayer = 2;
  c.nHead = 2;
  c.dFF = 16;
  c.batch = 2;
  c.seqLen = 5;
  return c;
}

PreLnParameters randomParameters(const PreLnConfig &c, unsigned seed) {
  std::mt19937 rng(seed);
  int64_t d = c.dModel;
  PreLnParameters p;
  p["embed.weight"] = randomTensor(rng, c.vocab * d, 1.0);
  for (int64_t b = 0; b < c.nLayer; ++b) {
    std::string prefix = "blocks." + std::to_string(b) + ".";
    p[prefix + "attn.norm.gain"] = randomTensor(rng, d, 0.2);
    for (double &g : p[prefix + "attn.norm.gain"])
      g += 1.0;
    for (const char *w : {"attn.wq", "attn.wk", "attn.wv", "attn.wo"})
      p[prefix + w] = randomTensor(rng, d * d);
    p[prefix + "ffn.norm.gain"] = randomTensor(rng, d, 0.2);
    for (double &g : p[prefix + "ffn.norm.gain"])
      g += 1.0;
    p[prefix + "ffn.w1"] = randomTensor(rng, c.dFF * d);
    p[prefix + "ffn.w3"] = randomTensor(rng, c.dFF * d);
    p[prefix + "ffn.w2"] = randomTensor(rng, d * c.dFF);
  }
  p["final_norm.gain"] = std::vector<double>(d, 1.0);
  p["unembed.weight"] = randomTensor(rng, c.vocab * d);
  return p;
}

std::vector<int32_t> someTokens(const PreLnConfig &c) {
  std::vector<int32_t> tokens(c.batch * c.seqLen);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>((3 * i + 1) % c.vocab);
  return tokens;
}

std::vector<double> identity(int64_t d) {
  std::vector<double> w(d * d, 0.0);
  for (int64_t i = 0; i < d; ++i)
    w[i * d + i] = 1.0;
  return w;
}

} // namespace

TEST_CASE("rmsNorm matches hand values row by row", "[reference]") {
  // Row 0: mean square (9 + 16) / 2 = 12.5. Row 1: all 2s, rms 2, so y = g.
  std::vector<double> y = rmsNorm({3, 4, 2, 2}, {1, 2}, 0.0);
  REQUIRE(y.size() == 4);
  CHECK(y[0] == Approx(0.848528137423857).epsilon(kHand));
  CHECK(y[1] == Approx(2.262741699796952).epsilon(kHand));
  CHECK(y[2] == Approx(1.0).epsilon(kTight));
  CHECK(y[3] == Approx(2.0).epsilon(kTight));

  // eps enters under the root: 3 / sqrt(12.5 + 1e-6).
  CHECK(rmsNorm({3, 4}, {1, 1}, 1e-6)[0] ==
        Approx(0.8485281034827337).epsilon(kHand));
  // A zero row stays zero thanks to eps instead of becoming NaN.
  CHECK(rmsNorm({0, 0}, {1, 1}, 1e-6) == std::vector<double>{0, 0});
  CHECK_THROWS_WITH(rmsNorm({1, 2, 3}, {1, 1}, 1e-6),
                    Catch::Contains("not a multiple of the gain width 2"));
}

TEST_CASE("rope at position 0 is the identity", "[reference]") {
  std::mt19937 rng(1);
  std::vector<double> head = randomTensor(rng, 8);
  CHECK(rope(head, 0, 10000) == head);
}

TEST_CASE("rope preserves the norm of a head", "[reference]") {
  std::mt19937 rng(2);
  std::vector<double> head = randomTensor(rng, 16);
  for (int64_t t : {1, 7, 255, 4096}) {
    std::vector<double> rotated = rope(head, t, 10000);
    CHECK(rotated != head);
    CHECK(norm(rotated) == Approx(norm(head)).epsilon(kTight));
  }
}

TEST_CASE("rope of a 4-dim head at position 1 matches hand values",
          "[reference]") {
  // Pairs (0, 2) and (1, 3); angles 1 · 10000^0 = 1 rad and
  // 1 · 10000^(-2/4) = 0.01 rad.
  std::vector<double> y = rope({1, 2, 3, 4}, 1, 10000);
  REQUIRE(y.size() == 4);
  CHECK(y[0] == Approx(-1.9841106485555495).epsilon(kHand)); // cos1 - 3 sin1
  CHECK(y[1] == Approx(1.959900667496664).epsilon(kHand));   // 2cos.01-4sin.01
  CHECK(y[2] == Approx(2.4623779024123156).epsilon(kHand));  // 3 cos1 + sin1
  CHECK(y[3] == Approx(4.019799668334994).epsilon(kHand));   // 4cos.01+2sin.01
  CHECK_THROWS_WITH(rope({1, 2, 3}, 1, 10000), Catch::Contains("even"));
}

TEST_CASE("attention over one token returns Wo v", "[reference]") {
  // seqLen 1 with three sequences: each token may only see itself.
  std::mt19937 rng(3);
  const int64_t d = 4, batch = 3;
  std::vector<double> u = randomTensor(rng, batch * d);
  std::vector<double> wq = randomTensor(rng, d * d),
                      wk = randomTensor(rng, d * d),
                      wv = randomTensor(rng, d * d),
                      wo = randomTensor(rng, d * d);
  std::vector<double> y = causalAttention(u, wq, wk, wv, wo, batch,
                                          /*seqLen=*/1, /*nHead=*/2, 10000);
  REQUIRE(y.size() == static_cast<size_t>(batch * d));
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<double> v(d, 0.0);
    for (int64_t o = 0; o < d; ++o)
      for (int64_t i = 0; i < d; ++i)
        v[o] += wv[o * d + i] * u[r * d + i];
    for (int64_t o = 0; o < d; ++o) {
      double expected = 0.0;
      for (int64_t i = 0; i < d; ++i)
        expected += wo[o * d + i] * v[i];
      CHECK(y[r * d + o] == Approx(expected).epsilon(kTight));
    }
  }
}

TEST_CASE("attention with rope and the 1/sqrt(d_h) scale matches hand values",
          "[reference]") {
  // One head of width 2, all projections the identity, u0 = e0, u1 = e1.
  // At t = 1: q1 = k1 = rope(e1, 1) = (-sin1, cos1), k0 = e0, so the scores
  // are -sin1/sqrt2 and 1/sqrt2, and p = softmax of those.
  std::vector<double> i2 = identity(2);
  std::vector<double> y = causalAttention({1, 0, 0, 1}, i2, i2, i2, i2,
                                          /*batch=*/1, /*seqLen=*/2,
                                          /*nHead=*/1, 10000);
  REQUIRE(y.size() == 4);
  CHECK(y[0] == Approx(1.0).epsilon(kTight)); // t = 0 sees only v0 = e0
  CHECK(y[1] == Approx(0.0).margin(kTight));
  CHECK(y[2] == Approx(0.21380900867641572).epsilon(kHand));
  CHECK(y[3] == Approx(0.7861909913235843).epsilon(kHand));
}

TEST_CASE("attention averages uniformly and restarts at each sequence when q "
          "is zero",
          "[reference]") {
  // Wq = 0 makes every score 0, so position t averages v_0..v_t of its own
  // sequence; Wv = Wo = I makes the output that average.
  const int64_t d = 2;
  std::vector<double> zero(d * d, 0.0), i2 = identity(d);
  std::vector<double> u = {1, 2, 3,  4,  5, 6, /*sequence 1:*/ 7,
                           8, 9, 10, 11, 12};
  std::vector<double> y = causalAttention(u, zero, i2, i2, i2, /*batch=*/2,
                                          /*seqLen=*/3, /*nHead=*/1, 10000);
  std::vector<double> expected = {1, 2, 2, 3, 3, 4, 7, 8, 8, 9, 9, 10};
  REQUIRE(y.size() == expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    CHECK(y[i] == Approx(expected[i]).epsilon(kTight));
}

TEST_CASE("attention positions restart at each sequence", "[reference]") {
  // Two identical sequences in one batch must give identical outputs.
  std::mt19937 rng(8);
  const int64_t d = 8, seqLen = 4;
  std::vector<double> sequence = randomTensor(rng, seqLen * d);
  std::vector<double> u = sequence;
  u.insert(u.end(), sequence.begin(), sequence.end());
  std::vector<double> wq = randomTensor(rng, d * d),
                      wk = randomTensor(rng, d * d),
                      wv = randomTensor(rng, d * d),
                      wo = randomTensor(rng, d * d);
  std::vector<double> y = causalAttention(u, wq, wk, wv, wo, /*batch=*/2,
                                          seqLen, /*nHead=*/2, 10000);
  REQUIRE(y.size() == u.size());
  for (int64_t i = 0; i < seqLen * d; ++i)
    CHECK(y[seqLen * d + i] == Approx(y[i]).epsilon(kTight));
}

TEST_CASE("swiglu matches hand values", "[reference]") {
  // u = (1, 2); W1 u = (1, -2); W3 u = (3, 2);
  // hidden = (SiLU(1)·3, SiLU(-2)·2); W2 = [[1, 0], [1, 1]].
  std::vector<double> y = swiglu({1, 2}, /*w1=*/{1, 0, 0, -1},
                                 /*w3=*/{1, 1, 2, 0}, /*w2=*/{1, 0, 1, 1},
                                 /*dFF=*/2);
  REQUIRE(y.size() == 2);
  CHECK(y[0] == Approx(2.193175735890015).epsilon(kHand));
  CHECK(y[1] == Approx(1.7163640478015445).epsilon(kHand));

  // A non-square case: d = 2, dFF = 3, two rows.
  std::vector<double> z = swiglu({1, 2, 0, 0}, std::vector<double>(6, 0.5),
                                 std::vector<double>(6, 1.0),
                                 std::vector<double>(6, 1.0), /*dFF=*/3);
  // Row 0: each hidden unit is SiLU(1.5) · 3; output = 3 · that.
  double silu15 = 1.5 / (1.0 + std::exp(-1.5));
  REQUIRE(z.size() == 4);
  CHECK(z[0] == Approx(9.0 * silu15).epsilon(kTight));
  CHECK(z[1] == Approx(9.0 * silu15).epsilon(kTight));
  CHECK(z[2] == Approx(0.0).margin(kTight));
  CHECK(z[3] == Approx(0.0).margin(kTight));
}

TEST_CASE("crossEntropy matches hand values", "[reference]") {
  // softmax(0, ln 3) = (1/4, 3/4): losses ln(4/3) and ln 4.
  std::vector<double> logits = {0, std::log(3.0), 0, std::log(3.0)};
  CHECK(crossEntropy(logits, {1, 0}) ==
        Approx((0.28768207245178085 + 1.3862943611198906) / 2).epsilon(kHand));
  // Large logits must not overflow.
  CHECK(crossEntropy({1000, 1000 + std::log(3.0)}, {1}) ==
        Approx(0.28768207245178085).epsilon(kHand));
  CHECK_THROWS_WITH(crossEntropy(logits, {2, 0}),
                    Catch::Contains("target 2 at position 0"));
}

TEST_CASE("uniform logits give a loss of ln V", "[reference]") {
  CHECK(crossEntropy(std::vector<double>(3 * 11, 2.5), {0, 5, 10}) ==
        Approx(std::log(11.0)).epsilon(kTight));

  // Through the whole model: a zero unembedding makes every logit 0.
  PreLnConfig c = smallConfig();
  PreLnParameters p = randomParameters(c, 4);
  p["unembed.weight"].assign(c.vocab * c.dModel, 0.0);
  std::vector<int32_t> tokens = someTokens(c);
  CHECK(preLnLoss(c, p, tokens, tokens) ==
        Approx(std::log(double(c.vocab))).epsilon(kTight));
}

TEST_CASE("a zero-layer model is unembed of the normed embedding",
          "[reference]") {
  PreLnConfig c{/*vocab=*/2, /*dModel=*/2, /*nLayer=*/0, /*nHead=*/1,
                /*dFF=*/2,   /*batch=*/1,  /*seqLen=*/1};
  PreLnParameters p = {{"embed.weight", {3, 4, 1, 0}},
                       {"final_norm.gain", {1, 1}},
                       {"unembed.weight", {1, 0, 0, 1}}};
  // logits = (3, 4) / sqrt(12.5 + 1e-6); loss = logsumexp(logits) - logits[1].
  std::vector<double> logits = preLnLogits(c, p, {0});
  REQUIRE(logits.size() == 2);
  CHECK(logits[0] == Approx(0.8485281034827337).epsilon(kHand));
  CHECK(logits[1] == Approx(1.1313708046436448).epsilon(kHand));
  CHECK(preLnLoss(c, p, {0}, {1}) == Approx(0.5616926725568117).epsilon(kHand));
}

TEST_CASE("the model composes the sublayers as Pre-LN residuals",
          "[reference]") {
  // Spelled out from ARCHITECTURES.md §1 with the separately checked pieces:
  // h = E[x]; per block h += Attn(RMSNorm(h)); h += FFN(RMSNorm(h));
  // logits = W_U RMSNorm_final(h).
  PreLnConfig c = smallConfig();
  PreLnParameters p = randomParameters(c, 9);
  std::vector<int32_t> tokens = someTokens(c);
  const int64_t d = c.dModel, n = c.batch * c.seqLen;

  std::vector<double> h;
  for (int32_t token : tokens)
    h.insert(h.end(), p["embed.weight"].begin() + token * d,
             p["embed.weight"].begin() + (token + 1) * d);
  for (int64_t b = 0; b < c.nLayer; ++b) {
    std::string prefix = "blocks." + std::to_string(b) + ".";
    std::vector<double> attn = causalAttention(
        rmsNorm(h, p[prefix + "attn.norm.gain"], c.eps), p[prefix + "attn.wq"],
        p[prefix + "attn.wk"], p[prefix + "attn.wv"], p[prefix + "attn.wo"],
        c.batch, c.seqLen, c.nHead, c.ropeTheta);
    for (int64_t i = 0; i < n * d; ++i)
      h[i] += attn[i];
    std::vector<double> ffn = swiglu(
        rmsNorm(h, p[prefix + "ffn.norm.gain"], c.eps), p[prefix + "ffn.w1"],
        p[prefix + "ffn.w3"], p[prefix + "ffn.w2"], c.dFF);
    for (int64_t i = 0; i < n * d; ++i)
      h[i] += ffn[i];
  }
  std::vector<double> normed = rmsNorm(h, p["final_norm.gain"], c.eps);
  std::vector<double> expected(n * c.vocab, 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t v = 0; v < c.vocab; ++v)
      for (int64_t i = 0; i < d; ++i)
        expected[r * c.vocab + v] +=
            p["unembed.weight"][v * d + i] * normed[r * d + i];

  std::vector<double> logits = preLnLogits(c, p, tokens);
  REQUIRE(logits.size() == expected.size());
  for (size_t i = 0; i < logits.size(); ++i)
    CHECK(logits[i] == Approx(expected[i]).epsilon(kTight));
}

TEST_CASE("a later token does not change earlier logits", "[reference]") {
  PreLnConfig c = smallConfig();
  PreLnParameters p = randomParameters(c, 5);
  std::vector<int32_t> tokens = someTokens(c);
  std::vector<double> before = preLnLogits(c, p, tokens);

  const int64_t changed = 3; // position in sequence 0
  tokens[changed] = (tokens[changed] + 1) % c.vocab;
  std::vector<double> after = preLnLogits(c, p, tokens);

  REQUIRE(before.size() == static_cast<size_t>(c.batch * c.seqLen * c.vocab));
  auto rowChanged = [&](int64_t row) {
    for (int64_t j = 0; j < c.vocab; ++j)
      if (before[row * c.vocab + j] != after[row * c.vocab + j])
        return true;
    return false;
  };
  for (int64_t t = 0; t < c.seqLen; ++t) {
    INFO("sequence 0, position " << t);
    CHECK(rowChanged(t) == (t >= changed));
  }
  for (int64_t t = 0; t < c.seqLen; ++t) {
    INFO("sequence 1, position " << t);
    CHECK_FALSE(rowChanged(c.seqLen + t));
  }
}

TEST_CASE("every parameter of every block affects the loss", "[reference]") {
  // Guards against a parameter that is read but not wired in.
  PreLnConfig c = smallConfig();
  PreLnParameters p = randomParameters(c, 6);
  std::vector<int32_t> tokens = someTokens(c);
  std::vector<int32_t> targets(tokens.rbegin(), tokens.rend());
  double base = preLnLoss(c, p, tokens, targets);
  for (const auto &[name, tensor] : p) {
    INFO(name);
    PreLnParameters perturbed = p;
    for (double &v : perturbed[name])
      v *= 1.5;
    CHECK(std::abs(preLnLoss(c, perturbed, tokens, targets) - base) > 1e-6);
  }
}

TEST_CASE("bad parameters and inputs are named", "[reference]") {
  PreLnConfig c = smallConfig();
  PreLnParameters p = randomParameters(c, 7);
  std::vector<int32_t> tokens = someTokens(c);

  SECTION("missing") {
    p.erase("blocks.1.ffn.w3");
    CHECK_THROWS_AS(preLnLoss(c, p, tokens, tokens), std::invalid_argument);
    CHECK_THROWS_WITH(preLnLoss(c, p, tokens, tokens),
                      Catch::Contains("missing parameter 'blocks.1.ffn.w3'"));
  }
  SECTION("wrong size") {
    p["blocks.0.attn.wk"].pop_back();
    CHECK_THROWS_WITH(
        preLnLoss(c, p, tokens, tokens),
        Catch::Contains("'blocks.0.attn.wk' has 63 elements, expected 64"));
  }
  SECTION("unexpected") {
    p["blocks.2.attn.wq"] = std::vector<double>(64, 0.0);
    CHECK_THROWS_WITH(
        preLnLoss(c, p, tokens, tokens),
        Catch::Contains("unexpected parameter 'blocks.2.attn.wq'"));
  }
  SECTION("token out of range") {
    tokens[4] = static_cast<int32_t>(c.vocab);
    CHECK_THROWS_WITH(preLnLoss(c, p, tokens, someTokens(c)),
                      Catch::Contains("token 7 at position 4"));
  }
  SECTION("wrong token count") {
    tokens.pop_back();
    CHECK_THROWS_WITH(preLnLoss(c, p, tokens, tokens),
                      Catch::Contains("expected batch*seqLen = 10"));
  }
  SECTION("odd head width") {
    c.nHead = 8; // d_h = 8 / 8 = 1 cannot hold rotate-half pairs
    CHECK_THROWS_WITH(preLnLoss(c, p, tokens, tokens),
                      Catch::Contains("heads of even width"));
  }
}
