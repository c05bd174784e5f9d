//===- ProbeProgramTest.cpp - The compiled probe functions ----------------===//
//
// The probe functions (ImportOptions::probes) checked against identities:
// @probe's loss is the model's, the logit lens of z_L is the model's own
// distribution, a skipped block leaves the depth states before it alone,
// skipping the last block of an L = 2 model is the L = 1 model with the same
// weights (an AttnRes bank gets no rows from it), skipping the middle block
// of three is the two-block model with the others' weights (the skip chain
// runs a later block from a state the model never gives it), and HC's
// stream maps are the identity at init.
//
//===----------------------------------------------------------------------===//
#include "CompilerTestSupport.h"

#include "codegen/CpuProbeModel.h"
#include "runtime/Probes.h"

#include <functional>

namespace {

using drc::test::CompilerContext;

std::unique_ptr<mlir::drc::CpuProbeModel>
compileProbes(CompilerContext &ctx, const drc::ModelSpec &spec) {
  auto program = mlir::drc::CpuProbeModel::compile(ctx.context, spec);
  INFO(ctx.diagnostics);
  REQUIRE(mlir::succeeded(program));
  return std::move(*program);
}

/// `spec` with n_layer = 1 instead of 2.
drc::ModelSpec oneBlock(const std::string &residual) {
  drc::ModelSpec spec = drc::test::tinySpec(residual);
  spec.model.nLayer = 1;
  return spec;
}

/// Parameters for `to`: each copied from `params` of `from`, where it is
/// named `source(name)`.
std::vector<float>
parametersOf(const mlir::drc::CpuProbeModel &to,
             const mlir::drc::CpuProbeModel &from,
             const std::vector<float> &params,
             const std::function<std::string(std::string)> &source) {
  std::vector<float> values(to.parameters().numElements(), 0.0f);
  for (const drc::ParameterInfo &p : to.parameters().parameters()) {
    const drc::ParameterInfo *q = from.parameters().find(source(p.name));
    REQUIRE(q != nullptr);
    std::copy_n(params.begin() + q->offset, p.numElements(),
                values.begin() + p.offset);
  }
  return values;
}

double crossEntropy(const float *logits, int64_t vocab, int32_t target) {
  double top = *std::max_element(logits, logits + vocab), sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(double(logits[v]) - top);
  return top + std::log(sum) - logits[target];
}

} // namespace

TEST_CASE("probe functions agree with the model for every library scheme",
          "[probes]") {
  std::string scheme = GENERATE("preln", "lns", "deepnorm", "hc", "mhc",
                                "attnres", "attnres-block", "moda", "vwn");
  INFO("scheme " << scheme);
  CompilerContext ctx;
  drc::ModelSpec spec = drc::test::tinySpec("scheme = \"" + scheme + "\"");
  auto program = compileProbes(ctx, spec);
  const drc::ProbeShape &shape = program->shape();
  REQUIRE(shape.blocks == 2);
  REQUIRE(shape.tokens == spec.tokensPerStep());
  std::vector<float> params = drc::test::wideParameters(program->parameters());
  std::vector<int32_t> tokens = drc::test::randomTokens(shape.tokens, 32, 1),
                       targets = drc::test::randomTokens(shape.tokens, 32, 2);
  int64_t depths = shape.blocks + 1, n = shape.streams;
  std::vector<float> states(shape.tokens * depths * shape.width),
      lens(shape.tokens * depths * shape.vocab),
      maps(n ? shape.tokens * 2 * shape.blocks * n * n : 0),
      skipped(states.size());
  float loss = program->probe(params.data(), tokens.data(), targets.data(),
                              states.data(), lens.data(), maps.data());
  CHECK(loss ==
        Approx(program->loss(params.data(), tokens.data(), targets.data()))
            .epsilon(1e-6));
  // The lens of z_L is the model's own output.
  double lensLoss = 0;
  for (int64_t t = 0; t < shape.tokens; ++t)
    lensLoss +=
        crossEntropy(lens.data() + (t * depths + shape.blocks) * shape.vocab,
                     shape.vocab, targets[t]);
  CHECK(lensLoss / shape.tokens == Approx(loss).epsilon(1e-5));
  // Without block 1, z_0 and z_1 are as before.
  program->skip(1, params.data(), tokens.data(), targets.data(),
                skipped.data());
  for (int64_t t = 0; t < shape.tokens; ++t)
    for (int64_t b = 0; b <= 1; ++b)
      for (int64_t w = 0; w < shape.width; ++w) {
        int64_t at = (t * depths + b) * shape.width + w;
        REQUIRE(skipped[at] == Approx(states[at]).margin(1e-6));
      }
}

TEST_CASE("skipping the last block of two is the one-block model with the "
          "same weights",
          "[probes]") {
  // For AttnRes this is "the skipped block appends nothing": the bank the
  // readout mixes has the rows of block 0 alone.
  std::string scheme =
      GENERATE("preln", "hc", "mhc", "attnres", "attnres-block", "vwn");
  INFO("scheme " << scheme);
  std::string residual = "scheme = \"" + scheme + "\"";
  CompilerContext ctx, oneCtx;
  auto two = compileProbes(ctx, drc::test::tinySpec(residual));
  drc::ModelSpec oneSpec = oneBlock(residual);
  auto one = compileProbes(oneCtx, oneSpec);
  std::vector<float> params = drc::test::wideParameters(two->parameters());
  std::vector<float> oneParams =
      parametersOf(*one, *two, params, [](std::string name) { return name; });
  std::vector<int32_t> tokens = drc::test::randomTokens(16, 32, 3),
                       targets = drc::test::randomTokens(16, 32, 4);
  const drc::ProbeShape &shape = two->shape();
  std::vector<float> states(16 * 3 * shape.width), lens(16 * 3 * shape.vocab),
      maps(16 * 4 * shape.streams * shape.streams);
  two->probe(params.data(), tokens.data(), targets.data(), states.data(),
             lens.data(), maps.data());
  float skipped =
      two->skip(1, params.data(), tokens.data(), targets.data(), states.data());
  CHECK(skipped ==
        Approx(one->loss(oneParams.data(), tokens.data(), targets.data()))
            .epsilon(1e-6));
}

TEST_CASE("skipping the middle block of three is the two-block model with "
          "the other blocks' weights",
          "[probes]") {
  // Block 2 runs from the state entering block 1 (for AttnRes a bank two
  // rows short of its own), then the end: the skip chain's functions, not
  // the ones the model's own blocks need.
  std::string scheme = GENERATE("preln", "hc", "mhc", "attnres", "vwn");
  INFO("scheme " << scheme);
  std::string residual = "scheme = \"" + scheme + "\"";
  CompilerContext ctx, twoCtx;
  drc::ModelSpec threeSpec = drc::test::tinySpec(residual);
  threeSpec.model.nLayer = 3;
  auto three = compileProbes(ctx, threeSpec);
  auto two = compileProbes(twoCtx, drc::test::tinySpec(residual));
  std::vector<float> params = drc::test::wideParameters(three->parameters());
  std::vector<float> twoParams =
      parametersOf(*two, *three, params, [](std::string name) {
        if (name.rfind("blocks.1.", 0) == 0)
          name.replace(0, 9, "blocks.2.");
        return name;
      });
  std::vector<int32_t> tokens = drc::test::randomTokens(16, 32, 5),
                       targets = drc::test::randomTokens(16, 32, 6);
  const drc::ProbeShape &shape = three->shape();
  int64_t Z = shape.width, n = shape.streams;
  std::vector<float> states(16 * 4 * Z), lens(16 * 4 * shape.vocab),
      maps(16 * 6 * n * n), twoStates(16 * 3 * Z),
      twoLens(16 * 3 * shape.vocab), twoMaps(16 * 4 * n * n);
  three->probe(params.data(), tokens.data(), targets.data(), states.data(),
               lens.data(), maps.data());
  float skipped = three->skip(1, params.data(), tokens.data(), targets.data(),
                              states.data());
  float expected = two->probe(twoParams.data(), tokens.data(), targets.data(),
                              twoStates.data(), twoLens.data(), twoMaps.data());
  CHECK(skipped == Approx(expected).epsilon(1e-5));
  // z_2 and z_3 without block 1 are the two-block model's z_1 and z_2.
  for (int64_t t = 0; t < 16; ++t)
    for (int64_t b = 1; b <= 2; ++b)
      for (int64_t w = 0; w < Z; ++w)
        REQUIRE(states[(t * 4 + b + 1) * Z + w] ==
                Approx(twoStates[(t * 3 + b) * Z + w]).margin(1e-5));
}

TEST_CASE("a Pre-LN block whose outputs are zero is an identity the probes "
          "see as one",
          "[probes]") {
  CompilerContext ctx;
  drc::ModelSpec spec = drc::test::tinySpec();
  spec.model.nLayer = 3;
  auto program = compileProbes(ctx, spec);
  std::vector<float> params = drc::test::wideParameters(program->parameters());
  for (const char *name : {"blocks.1.attn.wo", "blocks.1.ffn.w2"}) {
    const drc::ParameterInfo *p = program->parameters().find(name);
    std::fill_n(params.begin() + p->offset, p->numElements(), 0.0f);
  }
  drc::ProbeResult r = drc::runProbes(
      *program, params.data(), 2, [](int64_t i, int32_t *in, int32_t *out) {
        std::vector<int32_t> t = drc::test::randomTokens(17, 32, 7 + i);
        std::copy_n(t.begin(), 16, in);
        std::copy_n(t.begin() + 1, 16, out);
      });
  CHECK(r.pruning[1] == Approx(0).margin(1e-6));
  CHECK(r.causal.at(1, 2) == Approx(0).margin(1e-5));
  CHECK(r.angular.at(1, 2) == Approx(0).margin(1e-3)); // z_2 = z_1
  CHECK(r.pruning[0] != Approx(0).margin(1e-4));
}

TEST_CASE("HC's stream maps are the identity at init", "[probes]") {
  CompilerContext ctx;
  drc::ModelSpec spec = drc::test::tinySpec("scheme = \"hc\"");
  auto program = compileProbes(ctx, spec);
  REQUIRE(program->shape().streams == 4);
  std::vector<float> params(program->parameters().numElements(), 0.0f);
  drc::initParameters(program->parameters(), 1, params.data());
  drc::ProbeResult r = drc::runProbes(
      *program, params.data(), 1, [](int64_t, int32_t *in, int32_t *out) {
        std::vector<int32_t> t = drc::test::randomTokens(17, 32, 9);
        std::copy_n(t.begin(), 16, in);
        std::copy_n(t.begin() + 1, 16, out);
      });
  REQUIRE(r.erank.size() == 4);
  for (int64_t k = 0; k < 4; ++k) {
    CHECK(r.erank[k] == Approx(4));
    CHECK(r.amaxForward[k] == Approx(1));
    CHECK(r.amaxBackward[k] == Approx(1));
  }
}
