//===- CompilerTestSupport.h - Compiling and probing models in tests -----===//
//
// Compiles drc modules (from a spec or from IR text) for the host, and wraps
// an f64 program so tests can compare its gradients with central finite
// differences of its own training objective.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TEST_UNIT_COMPILER_COMPILERTESTSUPPORT_H
#define DRC_TEST_UNIT_COMPILER_COMPILERTESTSUPPORT_H

#include "codegen/ModelCompiler.h"
#include "codegen/Registration.h"
#include "runtime/ModelSpec.h"
#include "runtime/ParameterInit.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace drc::test {

/// A context with every dialect drc's pipelines use; diagnostics go to
/// `diagnostics` so failures show in the test output.
struct CompilerContext {
  mlir::MLIRContext context;
  std::string diagnostics;
  CompilerContext() : context(registry()) {
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
  }
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    mlir::drc::registerCompilerDialects(r);
    return r;
  }
};

/// An f64 program and its buffers: the loss and its gradients.
struct F64Program {
  std::unique_ptr<mlir::drc::CpuModel> model;
  std::vector<double> params;
  std::vector<int32_t> tokens, targets;

  /// Every loss `loss` returns: next-token first, then auxiliary ones.
  std::vector<double> losses() {
    std::vector<double> out(model->objectiveWeights().size(), 0.0);
    REQUIRE(mlir::succeeded(model->jit().call(
        "loss", {params.data(), tokens.data(), targets.data(), out.data()})));
    return out;
  }

  double loss() { return losses().front(); }

  /// The training objective train_step differentiates: sum_i w_i losses_i.
  double objective() {
    std::vector<double> out = losses();
    double total = 0;
    for (size_t i = 0; i < out.size(); ++i)
      total += model->objectiveWeights()[i] * out[i];
    return total;
  }

  /// Gradients from train_step with lr = 0 (which leaves params unchanged).
  std::vector<double> gradients() {
    size_t n = params.size();
    std::vector<double> grads(n, 0.0), m(n, 0.0), v(n, 0.0);
    double lr = 0, step = 1, out[2] = {0, 0};
    std::vector<double> before = params;
    REQUIRE(mlir::succeeded(model->jit().call(
        "train_step", {params.data(), grads.data(), m.data(), v.data(),
                       tokens.data(), targets.data(), &lr, &step, out})));
    REQUIRE(params == before);
    return grads;
  }
};

/// `spec` compiled in double precision, with zero parameters and no tokens;
/// `pipeline` overrides the pipeline options taken from the spec (fusion).
inline F64Program
compileF64(CompilerContext &ctx, const ModelSpec &spec,
           std::optional<mlir::drc::TrainPipelineOptions> pipeline = {}) {
  mlir::drc::ImportOptions options;
  options.useF64 = true;
  mlir::FailureOr<std::unique_ptr<mlir::drc::CpuModel>> model;
  if (pipeline) {
    auto module = mlir::drc::importModelSpec(ctx.context, spec, options);
    INFO(ctx.diagnostics);
    REQUIRE(mlir::succeeded(module));
    model = mlir::drc::CpuModel::compileModule(**module, spec.tokensPerStep(),
                                               *pipeline);
  } else {
    model = mlir::drc::CpuModel::compile(ctx.context, spec, options);
  }
  INFO(ctx.diagnostics);
  REQUIRE(mlir::succeeded(model));
  F64Program program;
  program.model = std::move(*model);
  program.params.assign(program.model->parameters().numElements(), 0.0);
  return program;
}

/// `spec` compiled in double precision with `pipeline`, its parameters
/// wideParameters() and its tokens and targets random (seeds 21 and 22).
inline F64Program
compileWithTestData(CompilerContext &ctx, const ModelSpec &spec,
                    const mlir::drc::TrainPipelineOptions &pipeline);

/// Checks |a_i - b_i| / (1e-12 + |b_i|) <= tolerance for every i.
inline void checkRelativelyClose(const std::vector<double> &a,
                                 const std::vector<double> &b,
                                 double tolerance) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / (1e-12 + std::abs(b[i])));
  INFO("largest relative difference " << worst);
  CHECK(worst <= tolerance);
}

/// A [residual] table for each library scheme, with options that keep
/// tinySpec's 2-block model interesting (Block AttnRes with 3 sublayers per
/// block, VWN with 4 segments and its next-2-token head).
inline const std::vector<std::string> &libraryResiduals() {
  static const std::vector<std::string> residuals = {
      "scheme = \"preln\"",    "scheme = \"postln\"",
      "scheme = \"sandwich\"", "scheme = \"lns\"",
      "scheme = \"deepnorm\"", "scheme = \"keel\"",
      "scheme = \"hc\"",       "scheme = \"mhc\"",
      "scheme = \"attnres\"",  "scheme = \"attnres-block\"\nblock_size = 3",
      "scheme = \"moda\"",     "scheme = \"vwn\"\nn = 4\nmtp = true"};
  return residuals;
}

/// A 2-block model, vocab 32, d 16 (or `dModel`), 16 tokens per step, with
/// the given [residual] table body.
inline ModelSpec tinySpec(const std::string &residual = "",
                          double normEps = 1e-6, int dModel = 16) {
  return parseModelSpec(R"(
[model]
vocab = 32
d_model = )" + std::to_string(dModel) +
                            R"(
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

/// Parameters drawn like training init but wider (std 0.3 for matrices, 1
/// for gains and coefficients), so every nonlinearity is exercised away from
/// its linear regime and no coefficient sits at a special value.
inline std::vector<float> wideParameters(const ParameterTable &table) {
  std::vector<float> params(table.numElements(), 0.0f);
  ParameterTable wide;
  for (const ParameterInfo &p : table.parameters())
    wide.add(p.name, p.shape,
             p.init.kind == Init::Kind::TruncNormal
                 ? Init::truncNormal(0.3, 0.9)
                 : Init::truncNormal(1.0, 2.0),
             p.decay);
  initParameters(wide, 5, params.data());
  return params;
}

inline std::vector<int32_t> randomTokens(size_t n, int32_t vocab,
                                         uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t &x : t)
    x = static_cast<int32_t>(rng() % vocab);
  return t;
}

inline F64Program
compileWithTestData(CompilerContext &ctx, const ModelSpec &spec,
                    const mlir::drc::TrainPipelineOptions &pipeline) {
  F64Program program = compileF64(ctx, spec, pipeline);
  std::vector<float> params = wideParameters(program.model->parameters());
  program.params.assign(params.begin(), params.end());
  int64_t n = spec.tokensPerStep();
  program.tokens = randomTokens(n, 32, 21);
  program.targets = randomTokens(n, 32, 22);
  return program;
}

/// Checks every gradient entry of `program` (or `maxPerParam` evenly spread
/// ones per parameter) against a central difference with step h:
/// |g - fd| <= atol + rtol |fd|.
inline void checkGradients(F64Program &program, int maxPerParam = 1 << 30,
                           double h = 1e-5, double atol = 1e-8,
                           double rtol = 1e-5) {
  std::vector<double> grads = program.gradients();
  for (const ParameterInfo &p : program.model->parameters().parameters()) {
    int64_t count = p.numElements();
    int64_t stride = std::max<int64_t>(1, count / maxPerParam);
    for (int64_t i = 0; i < count; i += stride) {
      int64_t at = p.offset + i;
      double saved = program.params[at];
      program.params[at] = saved + h;
      double up = program.objective();
      program.params[at] = saved - h;
      double down = program.objective();
      program.params[at] = saved;
      double fd = (up - down) / (2 * h);
      INFO("parameter " << p.name << " element " << i << ": autodiff "
                        << grads[at] << ", finite difference " << fd);
      CHECK(std::abs(grads[at] - fd) <= atol + rtol * std::abs(fd));
    }
  }
}

} // namespace drc::test

#endif // DRC_TEST_UNIT_COMPILER_COMPILERTESTSUPPORT_H
