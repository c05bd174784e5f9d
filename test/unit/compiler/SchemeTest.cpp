//===- SchemeTest.cpp - The residual scheme library on tiny models -------===//
//
// Every scheme of models/schemes/ compiled for a tiny model: its whole-model
// gradients against finite differences in double; the designs that
// ARCHITECTURES.md marks ≡PLN@0 against Pre-LN at init; HC's mixing matrix
// in use (the dropped-A_r bug cannot pass).
//
//===----------------------------------------------------------------------===//
#include "CompilerTestSupport.h"

#include "runtime/ModelSpec.h"

#include <map>

using namespace drc::test;

namespace {

/// A 2-block model, vocab 32, d 16, 16 tokens per step.
drc::ModelSpec tinySpec(const std::string &residual, double normEps = 1e-6) {
  return drc::parseModelSpec(R"(
[model]
vocab = 32
d_model = 16
n_layer = 2
n_head = 2
seq_len = 8
norm_eps = )" + std::to_string(normEps) +
                                 R"(
[residual]
)" + residual + R"(
[train]
batch = 2
steps = 10
lr = 1e-3
)",
                             "tiny.toml");
}

/// The f64 program of `spec` with its training-init parameters (seed 1).
F64Program compileAtInit(CompilerContext &ctx, const drc::ModelSpec &spec) {
  mlir::drc::ImportOptions options;
  options.useF64 = true;
  auto model = mlir::drc::CpuModel::compile(ctx.context, spec, options);
  INFO(ctx.diagnostics);
  REQUIRE(mlir::succeeded(model));
  F64Program program;
  program.model = std::move(*model);
  const drc::ParameterTable &table = program.model->parameters();
  std::vector<float> params(table.numElements());
  drc::initParameters(table, 1, params.data());
  program.params.assign(params.begin(), params.end());
  int64_t n = spec.tokensPerStep();
  program.tokens = randomTokens(n, 32, 7);
  program.targets = randomTokens(n, 32, 8);
  return program;
}

std::map<std::string, std::vector<double>>
byName(const drc::ParameterTable &table, const std::vector<double> &flat) {
  std::map<std::string, std::vector<double>> out;
  for (const drc::ParameterInfo &p : table.parameters())
    out[p.name].assign(flat.begin() + p.offset,
                       flat.begin() + p.offset + p.numElements());
  return out;
}

} // namespace

TEST_CASE("every library scheme's gradients match finite differences",
          "[scheme][gradient]") {
  std::string scheme =
      GENERATE("preln", "postln", "sandwich", "lns", "deepnorm", "keel", "hc",
               "attnres", "attnres-block");
  INFO("scheme " << scheme);
  drc::ModelSpec spec = tinySpec("scheme = \"" + scheme + "\"");
  CompilerContext ctx;
  F64Program program = compileAtInit(ctx, spec);
  std::vector<float> wide = wideParameters(program.model->parameters());
  program.params.assign(wide.begin(), wide.end());
  checkGradients(program, /*maxPerParam=*/3);
}

// ≡PLN@0: with the topology parameters at init the logits, as a function of
// the backbone weights, are Pre-LN's up to RMSNorm's ε. Backbone weights
// match by name (the init of a parameter depends on its name and the seed
// only). At ε = 0 the identity is exact for HC and AttnRes, so double
// precision leaves only rounding: 1e-10 relative. mHC's Sinkhorn adds 1e-6
// to each denominator, so the rows of H^res sum to 1 - O(1e-6) and the state
// shrinks by that much per sublayer: 1e-5. At the default ε = 1e-6 the
// states are scaled (HC's readout is n·h, AttnRes's mixes are h/(k+1)) and ε
// no longer cancels: the step-0 loss stays within 1e-3 relative.
// The worked example of docs/schemes.md claims the same.
TEST_CASE("HC, mHC, Full and Block AttnRes equal Pre-LN at init",
          "[scheme][equivalence]") {
  std::string scheme = GENERATE("hc", "mhc", "attnres", "attnres-block",
                                "docs/examples/depth-weighted.mlir");
  double tolerance = scheme == "mhc" ? 1e-5 : 1e-10;
  std::string residual = "scheme = \"" + scheme + "\"";
  if (scheme == "attnres-block")
    residual += "\nblock_size = 3"; // a block that straddles both blocks
  if (scheme.ends_with(".mlir"))
    residual = "scheme_file = \"" DRC_SOURCE_DIR "/" + scheme + "\"";
  INFO("scheme " << scheme);
  CompilerContext preCtx, ctx;
  F64Program pre = compileAtInit(preCtx, tinySpec("", 0.0));
  F64Program other = compileAtInit(ctx, tinySpec(residual, 0.0));
  double preLoss = pre.loss(), loss = other.loss();
  CHECK(std::abs(loss - preLoss) <= tolerance * preLoss);

  auto preGrads = byName(pre.model->parameters(), pre.gradients());
  auto grads = byName(other.model->parameters(), other.gradients());
  for (const auto &[name, expected] : preGrads) {
    INFO("backbone parameter " << name);
    REQUIRE(grads.count(name));
    double scale = 0;
    for (double g : expected)
      scale = std::max(scale, std::abs(g));
    for (size_t i = 0; i < expected.size(); ++i)
      CHECK(std::abs(grads[name][i] - expected[i]) <=
            10 * tolerance * scale + 1e-14);
  }

  CompilerContext preEps, eps;
  double preDefault = compileAtInit(preEps, tinySpec("")).loss();
  double otherDefault = compileAtInit(eps, tinySpec(residual)).loss();
  CHECK(std::abs(otherDefault - preDefault) <= 1e-3 * preDefault);
}

TEST_CASE("HC uses its stream-mixing matrix A_r", "[scheme][hc]") {
  // Dropping A_r (H <- H + beta f^T, lucidrains/hyper-connections #8) is
  // invisible at init, where A_r = I. With A_r in use its gradient is not
  // zero at init, and a random static A_r changes the loss (by ~4e-4 here;
  // with A_r dropped the f64 loss would not move at all).
  CompilerContext ctx;
  F64Program hc = compileAtInit(ctx, tinySpec("scheme = \"hc\""));
  double atInit = hc.loss();
  std::vector<double> grads = hc.gradients();
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0.0, 0.5);
  int mixes = 0;
  for (const drc::ParameterInfo &p : hc.model->parameters().parameters()) {
    if (!p.name.ends_with("res.a0_mix"))
      continue;
    ++mixes;
    double norm = 0;
    for (int64_t i = 0; i < p.numElements(); ++i) {
      norm += grads[p.offset + i] * grads[p.offset + i];
      hc.params[p.offset + i] += normal(rng);
    }
    INFO(p.name);
    CHECK(std::sqrt(norm) > 1e-6);
  }
  CHECK(mixes == 4);
  CHECK(std::abs(hc.loss() - atInit) > 1e-6);
}
