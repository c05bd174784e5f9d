//===- OpGradientTest.cpp - Every differentiable op vs finite differences -===//
//
// Each op is compiled alone into an f64 program whose loss is the mean
// cross-entropy of the op's result, with every operand a parameter drawn from
// N(0, 1). cross_entropy is checked first on its own, so a failure below it
// points at the op. Tolerance: |g - fd| <= 1e-8 + 1e-5 |fd| with h = 1e-5;
// central differences in double are accurate to ~1e-10 here.
//
//===----------------------------------------------------------------------===//
#include "CompilerTestSupport.h"

#include "passes/Passes.h"
#include "test/reference/PreLnReference.h"

#include <functional>

using namespace drc::test;

namespace {

/// Compiles `body` (the inside of `loss`, which must yield %y of shape
/// [tokens, classes]) with parameters `params` ("@name : tensor<...>"); the
/// loss is the cross-entropy of %y against `labels` (the targets).
F64Program compileOp(CompilerContext &ctx, const std::string &params,
                     const std::string &body, int64_t tokens, int32_t classes,
                     const std::string &labels = "%targets") {
  std::string text = params + R"(
func.func @loss(%tokens: tensor<)" +
                     std::to_string(tokens) + R"(xi32>, %targets: tensor<)" +
                     std::to_string(tokens) +
                     R"(xi32>) -> tensor<f64> {
)" + body + R"(
  %loss = drc.cross_entropy %y, )" +
                     labels + R"( : (tensor<)" + std::to_string(tokens) + "x" +
                     std::to_string(classes) + R"(xf64>, tensor<)" +
                     std::to_string(tokens) +
                     R"(xi32>) -> tensor<f64>
  return %loss : tensor<f64>
})";
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx.context);
  INFO(ctx.diagnostics);
  REQUIRE(module);
  auto model = mlir::drc::CpuModel::compileModule(*module, tokens, {});
  INFO(ctx.diagnostics);
  REQUIRE(mlir::succeeded(model));
  F64Program program;
  program.model = std::move(*model);
  program.params.assign(program.model->parameters().numElements(), 0.0);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const drc::ParameterInfo &p : program.model->parameters().parameters())
    for (int64_t i = 0; i < p.numElements(); ++i)
      program.params[p.offset + i] = normal(rng);
  program.tokens = randomTokens(tokens, classes, 11);
  program.targets = randomTokens(tokens, classes, 12);
  return program;
}

std::string param(const std::string &name, const std::string &shape) {
  return "drc.param @" + name + " : tensor<" + shape +
         "xf64> init #drc.init<constant(0.0)> decay\n";
}

std::string ref(const std::string &name, const std::string &shape) {
  return "  %" + name + " = drc.param_ref @" + name + " : tensor<" + shape +
         "xf64>\n";
}

/// The mean cross-entropy, in double, of the logits logit(t, j) of `classes`
/// classes against the program's targets: the scalar reference an op's
/// compiled forward is checked against.
double referenceLoss(const F64Program &p, int classes,
                     const std::function<double(int, int)> &logit) {
  double total = 0;
  int tokens = static_cast<int>(p.targets.size());
  for (int t = 0; t < tokens; ++t) {
    std::vector<double> logits(classes);
    double top = -1e300, sum = 0;
    for (int j = 0; j < classes; ++j)
      top = std::max(top, logits[j] = logit(t, j));
    for (double l : logits)
      sum += std::exp(l - top);
    total += top + std::log(sum) - logits[p.targets[t]];
  }
  return total / tokens;
}

} // namespace

TEST_CASE("cross_entropy gradient matches finite differences", "[gradient]") {
  CompilerContext ctx;
  F64Program p = compileOp(ctx, param("y", "6x5"),
                           "  %y = drc.param_ref @y : tensor<6x5xf64>", 6, 5);
  checkGradients(p);
}

TEST_CASE("cross_entropy of lookahead targets leaves out each sequence's "
          "last token",
          "[gradient]") {
  // Two sequences of 3 tokens: lookahead moves every target one token back
  // within its sequence (the target after next), and the last token of each
  // sequence has none, so the mean runs over 4 rows.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("y", "6x5"),
      "  %y = drc.param_ref @y : tensor<6x5xf64>\n"
      "  %after = drc.lookahead %targets {seq_len = 3 : i64} : tensor<6xi32>",
      6, 5, "%after");
  p.targets = {1, 2, 3, 4, 0, 1};
  const int after[6] = {2, 3, -1, 0, 1, -1};
  const double *y = &p.params[p.model->parameters().find("y")->offset];
  double total = 0;
  for (int t = 0; t < 6; ++t) {
    if (after[t] < 0)
      continue;
    double sum = 0;
    for (int j = 0; j < 5; ++j)
      sum += std::exp(y[t * 5 + j]);
    total += std::log(sum) - y[t * 5 + after[t]];
  }
  CHECK(p.loss() == Approx(total / 4).epsilon(1e-12));
  checkGradients(p);
  std::vector<double> grads = p.gradients();
  for (int j = 0; j < 5; ++j) { // rows 2 and 5 predict nothing
    CHECK(grads[2 * 5 + j] == 0.0);
    CHECK(grads[5 * 5 + j] == 0.0);
  }
}

TEST_CASE("add gradient matches finite differences", "[gradient]") {
  CompilerContext ctx;
  F64Program p = compileOp(ctx, param("a", "6x5") + param("b", "6x5"),
                           ref("a", "6x5") + ref("b", "6x5") +
                               "  %y = drc.add %a, %b : tensor<6x5xf64>",
                           6, 5);
  checkGradients(p);
}

TEST_CASE("rms_norm gradients match finite differences", "[gradient]") {
  CompilerContext ctx;
  SECTION("with a gain") {
    F64Program p =
        compileOp(ctx, param("x", "6x8") + param("g", "8"),
                  ref("x", "6x8") + ref("g", "8") +
                      "  %y = drc.rms_norm %x gain %g : (tensor<6x8xf64>, "
                      "tensor<8xf64>) -> tensor<6x8xf64>",
                  6, 8);
    checkGradients(p);
  }
  SECTION("parameter-free") {
    F64Program p = compileOp(
        ctx, param("x", "6x8"),
        ref("x", "6x8") +
            "  %y = drc.rms_norm %x {eps = 0.0 : f64} : (tensor<6x8xf64>) -> "
            "tensor<6x8xf64>",
        6, 8);
    checkGradients(p);
  }
}

TEST_CASE("matmul gradients match finite differences", "[gradient]") {
  CompilerContext ctx;
  struct Case {
    const char *attrs, *lhs, *rhs;
  } cases[] = {{"", "6x4", "4x5"},
               {"{transpose_lhs}", "4x6", "4x5"},
               {"{transpose_rhs}", "6x4", "5x4"},
               {"{transpose_lhs, transpose_rhs}", "4x6", "5x4"}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION("matmul " << c.attrs) {
      F64Program p = compileOp(ctx, param("a", c.lhs) + param("b", c.rhs),
                               ref("a", c.lhs) + ref("b", c.rhs) +
                                   "  %y = drc.matmul %a, %b " + c.attrs +
                                   " : (tensor<" + c.lhs + "xf64>, tensor<" +
                                   c.rhs + "xf64>) -> tensor<6x5xf64>",
                               6, 5);
      checkGradients(p);
    }
  }
}

TEST_CASE("mix and view gradients match finite differences", "[gradient]") {
  // A set of 3 rows of width 5 per token mixed to 2 rows, viewed as 10
  // classes; coefficients shared or per token, read either way round.
  CompilerContext ctx;
  struct Case {
    const char *attrs, *coef;
  } cases[] = {{"", "3x2"},
               {"{transpose_coef}", "2x3"},
               {"", "6x3x2"},
               {"{transpose_coef}", "6x2x3"}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION("mix " << c.coef << " " << c.attrs) {
      F64Program p = compileOp(
          ctx, param("x", "6x3x5") + param("c", c.coef),
          ref("x", "6x3x5") + ref("c", c.coef) + "  %m = drc.mix %x by %c " +
              c.attrs + " : (tensor<6x3x5xf64>, tensor<" + c.coef +
              "xf64>) -> tensor<6x2x5xf64>\n"
              "  %y = drc.view %m : (tensor<6x2x5xf64>) -> tensor<6x10xf64>",
          6, 10);
      // The forward against a scalar C^T X and cross-entropy in double.
      const double *x = &p.params[p.model->parameters().find("x")->offset];
      const double *cf = &p.params[p.model->parameters().find("c")->offset];
      bool perToken = std::string(c.coef).size() > 3;
      bool transposed = std::string(c.attrs).size() > 0;
      double expected = referenceLoss(p, 10, [&](int t, int l) {
        int j = l / 5, w = l % 5;
        double y = 0;
        for (int i = 0; i < 3; ++i) {
          int at = transposed ? j * 3 + i : i * 2 + j;
          y += cf[(perToken ? t * 6 : 0) + at] * x[(t * 3 + i) * 5 + w];
        }
        return y;
      });
      CHECK(p.loss() == Approx(expected).epsilon(1e-12));
      checkGradients(p);
    }
  }
}

TEST_CASE("append and rows gradients match finite differences", "[gradient]") {
  // [x ; z] per token (2 + 1 rows of width 5), then rows [1, 3): x's second
  // row and z, viewed as 10 classes.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("x", "6x2x5") + param("z", "6x1x5"),
      ref("x", "6x2x5") + ref("z", "6x1x5") +
          "  %a = drc.append %x, %z : (tensor<6x2x5xf64>, tensor<6x1x5xf64>) "
          "-> tensor<6x3x5xf64>\n"
          "  %r = drc.rows %a at 1 : (tensor<6x3x5xf64>) -> tensor<6x2x5xf64>\n"
          "  %y = drc.view %r : (tensor<6x2x5xf64>) -> tensor<6x10xf64>",
      6, 10);
  const double *x = &p.params[p.model->parameters().find("x")->offset];
  const double *z = &p.params[p.model->parameters().find("z")->offset];
  double expected = referenceLoss(p, 10, [&](int t, int l) {
    return l < 5 ? x[(t * 2 + 1) * 5 + l] : z[t * 5 + l - 5];
  });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

TEST_CASE("squash gradients match finite differences", "[gradient]") {
  // Inputs ~N(0, 3) reach the saturated tails of both squashes.
  CompilerContext ctx;
  struct Case {
    const char *kind;
    double scale, temperature;
  } cases[] = {{"tanh", 1.0, 1.0},
               {"tanh", 0.5, 4.0},
               {"sigmoid", 1.0, 1.0},
               {"sigmoid", 2.0, 0.5},
               {"exp", 0.5, 2.0}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION(c.kind << " scale " << c.scale << " temperature "
                           << c.temperature) {
      F64Program p = compileOp(
          ctx, param("x", "6x5"),
          ref("x", "6x5") + "  %y = drc.squash \"" + c.kind +
              "\" %x {scale = " + std::to_string(c.scale) +
              " : f64, temperature = " + std::to_string(c.temperature) +
              " : f64} : tensor<6x5xf64>",
          6, 5);
      double *x = &p.params[p.model->parameters().find("x")->offset];
      for (int i = 0; i < 30; ++i)
        x[i] *= 3;
      double expected = referenceLoss(p, 5, [&](int t, int j) {
        double z = x[t * 5 + j] / c.temperature;
        std::string kind = c.kind;
        return c.scale * (kind == "tanh"  ? std::tanh(z)
                          : kind == "exp" ? std::exp(z)
                                          : 1 / (1 + std::exp(-z)));
      });
      CHECK(p.loss() == Approx(expected).epsilon(1e-12));
      checkGradients(p);
    }
  }
}

TEST_CASE("scale and shift gradients match finite differences", "[gradient]") {
  // x [6, 2, 5] scaled by s and shifted by b, each broadcast from a suffix
  // shape (or none), then viewed as 10 classes.
  CompilerContext ctx;
  struct Case {
    const char *s, *b;
  } cases[] = {{"", "5"}, {"5", "2x5"}, {"2x5", "6x2x5"}, {"6x2x5", "5"}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION("scale [" << c.s << "] shift [" << c.b << "]") {
      std::string s = c.s, b = c.b;
      auto type = [](const std::string &shape) {
        return "tensor<" + (shape.empty() ? "" : shape + "x") + "f64>";
      };
      std::string params = param("x", "6x2x5") + param("b", b);
      std::string body = ref("x", "6x2x5") + ref("b", b);
      if (!s.empty()) {
        params += param("s", s);
        body += ref("s", s);
      }
      body += std::string("  %sx = drc.scale %x ") +
              (s.empty() ? "" : "by %s ") +
              "{factor = 0.5 : f64} : (tensor<6x2x5xf64>" +
              (s.empty() ? "" : ", " + type(s)) +
              ") -> tensor<6x2x5xf64>\n"
              "  %z = drc.shift %sx by %b : (tensor<6x2x5xf64>, " +
              type(b) +
              ") -> tensor<6x2x5xf64>\n"
              "  %y = drc.view %z : (tensor<6x2x5xf64>) -> tensor<6x10xf64>";
      F64Program p = compileOp(ctx, params, body, 6, 10);
      const drc::ParameterTable &table = p.model->parameters();
      const double *x = &p.params[table.find("x")->offset];
      const double *bv = &p.params[table.find("b")->offset];
      const double *sv =
          s.empty() ? nullptr : &p.params[table.find("s")->offset];
      auto at = [](const double *v, int64_t size, int i) {
        return v[i % size]; // a suffix shape broadcasts by index modulo
      };
      int64_t sSize = s.empty() ? 1 : table.find("s")->numElements();
      int64_t bSize = table.find("b")->numElements();
      double expected = referenceLoss(p, 10, [&](int t, int j) {
        int i = t * 10 + j;
        return 0.5 * x[i] * (sv ? at(sv, sSize, i) : 1.0) + at(bv, bSize, i);
      });
      CHECK(p.loss() == Approx(expected).epsilon(1e-12));
      checkGradients(p);
    }
  }
}

TEST_CASE("center gradient matches finite differences", "[gradient]") {
  // Each row of x [6, 3, 5] ~N(0, 3) minus its mean, viewed as 15 classes.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("x", "6x3x5"),
      ref("x", "6x3x5") +
          "  %c = drc.center %x : tensor<6x3x5xf64>\n"
          "  %y = drc.view %c : (tensor<6x3x5xf64>) -> tensor<6x15xf64>",
      6, 15);
  double *x = &p.params[p.model->parameters().find("x")->offset];
  for (int i = 0; i < 90; ++i)
    x[i] *= 3;
  double expected = referenceLoss(p, 15, [&](int t, int l) {
    const double *row = x + (t * 3 + l / 5) * 5;
    double mean = (row[0] + row[1] + row[2] + row[3] + row[4]) / 5;
    return row[l % 5] - mean;
  });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

/// An op along an axis of x [6, 3, 5] (1: over the rows of each token's set,
/// 2: within a row), viewed as 15 classes, for both axes: its forward against
/// `expected(at, axis, r, c)`, where at(row, col) reads the token's x, and
/// its gradients against finite differences. `attrs(axis)` are the op's
/// attributes; `prepare` maps each drawn N(0, 1) value of x.
static void checkAlongAxis(
    const std::string &op, const std::function<std::string(int)> &attrs,
    const std::function<double(double)> &prepare,
    const std::function<double(const std::function<double(int, int)> &, int,
                               int, int)> &expected) {
  CompilerContext ctx;
  for (int axis : {1, 2}) {
    DYNAMIC_SECTION(op << " axis " << axis) {
      F64Program p = compileOp(
          ctx, param("x", "6x3x5"),
          ref("x", "6x3x5") + "  %s = " + op + " %x " + attrs(axis) +
              " : tensor<6x3x5xf64>\n"
              "  %y = drc.view %s : (tensor<6x3x5xf64>) -> tensor<6x15xf64>",
          6, 15);
      double *x = &p.params[p.model->parameters().find("x")->offset];
      for (int i = 0; i < 90; ++i)
        x[i] = prepare(x[i]);
      double reference = referenceLoss(p, 15, [&](int t, int l) {
        auto at = [&](int row, int col) { return x[(t * 3 + row) * 5 + col]; };
        return expected(at, axis, l / 5, l % 5);
      });
      CHECK(p.loss() == Approx(reference).epsilon(1e-12));
      checkGradients(p);
    }
  }
}

TEST_CASE("softmax gradients match finite differences", "[gradient]") {
  // x ~N(0, 3).
  checkAlongAxis(
      "drc.softmax",
      [](int axis) { return "{axis = " + std::to_string(axis) + " : i64}"; },
      [](double x) { return 3 * x; },
      [](const std::function<double(int, int)> &at, int axis, int r, int c) {
        double sum = 0;
        for (int j = 0; j < (axis == 1 ? 3 : 5); ++j)
          sum += std::exp(axis == 1 ? at(j, c) : at(r, j));
        return std::exp(at(r, c)) / sum;
      });
}

TEST_CASE("normalize gradients match finite differences", "[gradient]") {
  // Positive x in [0.5, 2] (Sinkhorn's operands are exp(.)), with a large
  // eps so that eps's part is tested too.
  checkAlongAxis(
      "drc.normalize",
      [](int axis) {
        return "{axis = " + std::to_string(axis) + " : i64, eps = 0.25 : f64}";
      },
      [](double x) { return 1.25 + 0.75 * std::tanh(x); },
      [](const std::function<double(int, int)> &at, int axis, int r, int c) {
        double sum = 0.25;
        for (int j = 0; j < (axis == 1 ? 3 : 5); ++j)
          sum += axis == 1 ? at(j, c) : at(r, j);
        return at(r, c) / sum;
      });
}

TEST_CASE("linear on the rows of a set matches finite differences",
          "[gradient]") {
  // Every row of x [6, 2, 4] mapped by W [5, 4], viewed as 10 classes.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("x", "6x2x4") + param("w", "5x4"),
      ref("x", "6x2x4") + ref("w", "5x4") +
          "  %l = drc.linear %x, %w : (tensor<6x2x4xf64>, tensor<5x4xf64>) "
          "-> tensor<6x2x5xf64>\n"
          "  %y = drc.view %l : (tensor<6x2x5xf64>) -> tensor<6x10xf64>",
      6, 10);
  const double *x = &p.params[p.model->parameters().find("x")->offset];
  const double *w = &p.params[p.model->parameters().find("w")->offset];
  double expected = referenceLoss(p, 10, [&](int t, int l) {
    int r = l / 5, o = l % 5;
    double y = 0;
    for (int i = 0; i < 4; ++i)
      y += x[(t * 2 + r) * 4 + i] * w[o * 4 + i];
    return y;
  });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

TEST_CASE("normed_linear gradients match finite differences", "[gradient]") {
  // Every row of x [6, 2, 8] normalised, then projected by W1 and W2
  // [3, 8]: the two results' rows joined, [6, 4, 3], are 12 classes.
  // Forward against the scalar definition rms_norm(x) W^T (eps = 1e-6),
  // gradients against finite differences.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("x", "6x2x8") + param("w1", "3x8") + param("w2", "3x8"),
      ref("x", "6x2x8") + ref("w1", "3x8") + ref("w2", "3x8") +
          "  %z:2 = drc.normed_linear %x, %w1, %w2 : (tensor<6x2x8xf64>, "
          "tensor<3x8xf64>, tensor<3x8xf64>) -> (tensor<6x2x3xf64>, "
          "tensor<6x2x3xf64>)\n"
          "  %both = drc.append %z#0, %z#1 : (tensor<6x2x3xf64>, "
          "tensor<6x2x3xf64>) -> tensor<6x4x3xf64>\n"
          "  %y = drc.view %both : (tensor<6x4x3xf64>) -> tensor<6x12xf64>",
      6, 12);
  const double *x = &p.params[p.model->parameters().find("x")->offset];
  const double *w1 = &p.params[p.model->parameters().find("w1")->offset];
  const double *w2 = &p.params[p.model->parameters().find("w2")->offset];
  double expected = referenceLoss(p, 12, [&](int t, int l) {
    int set = l / 3, o = l % 3; // rows 0, 1 from W1; 2, 3 from W2
    const double *row = x + (t * 2 + set % 2) * 8;
    const double *w = set < 2 ? w1 : w2;
    double ss = 0, y = 0;
    for (int i = 0; i < 8; ++i) {
      ss += row[i] * row[i];
      y += row[i] * w[o * 8 + i];
    }
    return y / std::sqrt(ss / 8 + 1e-6);
  });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

/// drc.rope over a parameter x [6, width]: 2 heads, sequences of 3 tokens,
/// theta 10, its output the logits over `width` classes.
constexpr int kRopeTokens = 6, kRopeHeads = 2, kRopeSeqLen = 3;
constexpr double kRopeTheta = 10.0;
static F64Program compileRope(CompilerContext &ctx, int width) {
  std::string shape = std::to_string(kRopeTokens) + "x" + std::to_string(width);
  std::string type = "tensor<" + shape + "xf64>";
  return compileOp(ctx, param("x", shape),
                   ref("x", shape) + "  %y = drc.rope %x {n_head = " +
                       std::to_string(kRopeHeads) +
                       " : i64, seq_len = " + std::to_string(kRopeSeqLen) +
                       " : i64, theta = " + std::to_string(kRopeTheta) +
                       " : f64} : (" + type + ") -> " + type,
                   kRopeTokens, width);
}

TEST_CASE("rope gradient matches finite differences", "[gradient]") {
  CompilerContext ctx;
  F64Program p = compileRope(ctx, 8);
  checkGradients(p);
}

// Heads of 14, half-heads of 7 (d_model 56 with 4 heads): drc-cpu-tile
// reads each row of 7 and its partner half and cos/sin rows as vectors
// (LLVM gathered them across heads). The output equals the scalar
// reference's rotation, the gradients finite differences.
TEST_CASE("rope over half-heads of 7 matches the reference", "[gradient]") {
  const int tokens = kRopeTokens, width = 28, nHead = kRopeHeads,
            seqLen = kRopeSeqLen;
  const double theta = kRopeTheta;
  CompilerContext ctx;
  F64Program p = compileRope(ctx, width);
  const double *x = &p.params[p.model->parameters().find("x")->offset];
  const int dh = width / nHead;
  std::vector<double> out(static_cast<size_t>(tokens) * width);
  for (int t = 0; t < tokens; ++t)
    for (int h = 0; h < nHead; ++h) {
      std::vector<double> head(x + t * width + h * dh,
                               x + t * width + (h + 1) * dh);
      std::vector<double> rotated =
          drc::reference::rope(head, t % seqLen, theta);
      std::copy(rotated.begin(), rotated.end(),
                out.begin() + t * width + h * dh);
    }
  double expected = referenceLoss(
      p, width, [&](int t, int l) { return out[size_t(t) * width + l]; });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

TEST_CASE("causal_attention gradients match finite differences", "[gradient]") {
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx, param("q", "8x8") + param("k", "8x8") + param("v", "8x8"),
      ref("q", "8x8") + ref("k", "8x8") + ref("v", "8x8") +
          "  %y, %lse = drc.causal_attention %q, %k, %v {n_head = 2 : i64, "
          "seq_len = 4 : i64} : (tensor<8x8xf64>, tensor<8x8xf64>, "
          "tensor<8x8xf64>) -> (tensor<8x8xf64>, tensor<8x2xf64>)",
      8, 8);
  checkGradients(p);
}

// Long enough sequences for drc-cpu-tile's register tiles to split each
// attention product into several row and column tiles, where a causal
// product skips the tiles and terms above the diagonal (seq 64), and its k
// loop into 256-long blocks (seq 1024): the forward equals a scalar
// reference and the gradients finite differences. Heads that are not
// multiples of 8 (the mini sweep's d_model 56, 80 and 112 with 4 heads
// have 14, 20 and 28): one of 12 takes one register tile across the head,
// each row one vector of 12 lanes; one of 20 is split into products over
// its first 16 columns and its last 4; left scalar, their products would
// read the scores above the diagonal, which the softmax never writes.
TEST_CASE("causal_attention skips the masked tiles of long sequences exactly",
          "[gradient]") {
  struct Shape {
    int tokens, width, seqLen, nHead, perParam;
  };
  for (Shape shape : {Shape{128, 16, 64, 2, 24}, Shape{1024, 8, 1024, 1, 4},
                      Shape{128, 24, 64, 2, 24}, Shape{128, 40, 64, 2, 24}}) {
    INFO("seq_len " << shape.seqLen << ", head " << shape.width / shape.nHead);
    std::string qkv =
        std::to_string(shape.tokens) + "x" + std::to_string(shape.width);
    std::string type = "tensor<" + qkv + "xf64>";
    CompilerContext ctx;
    F64Program p = compileOp(
        ctx, param("q", qkv) + param("k", qkv) + param("v", qkv),
        ref("q", qkv) + ref("k", qkv) + ref("v", qkv) +
            "  %y, %lse = drc.causal_attention %q, %k, %v {n_head = " +
            std::to_string(shape.nHead) +
            " : i64, seq_len = " + std::to_string(shape.seqLen) +
            " : i64} : (" + type + ", " + type + ", " + type + ") -> (" + type +
            ", tensor<" + std::to_string(shape.tokens) + "x" +
            std::to_string(shape.nHead) + "xf64>)",
        shape.tokens, shape.width);
    const drc::ParameterTable &table = p.model->parameters();
    auto rows = [&](const char *name) {
      const double *at = &p.params[table.find(name)->offset];
      return std::vector<double>(at, at + shape.tokens * shape.width);
    };
    std::vector<double> out = drc::reference::causalAttentionCore(
        rows("q"), rows("k"), rows("v"), shape.tokens / shape.seqLen,
        shape.seqLen, shape.nHead);
    double expected = referenceLoss(p, shape.width, [&](int t, int l) {
      return out[static_cast<size_t>(t) * shape.width + l];
    });
    CHECK(p.loss() == Approx(expected).epsilon(1e-12));
    checkGradients(p, shape.perParam);
  }
}

TEST_CASE("causal_attention's log-sum-exp gradient matches finite "
          "differences",
          "[gradient]") {
  // A loss of the output and the log-sum-exp together (the per-head lse
  // [8, 2] spread over the 8 columns by a fixed matrix), as a softmax merged
  // with other keys would read them.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx,
      param("q", "8x8") + param("k", "8x8") + param("v", "8x8") +
          param("spread", "8x2"),
      ref("q", "8x8") + ref("k", "8x8") + ref("v", "8x8") +
          ref("spread", "8x2") +
          "  %o, %lse = drc.causal_attention %q, %k, %v {n_head = 2 : i64, "
          "seq_len = 4 : i64} : (tensor<8x8xf64>, tensor<8x8xf64>, "
          "tensor<8x8xf64>) -> (tensor<8x8xf64>, tensor<8x2xf64>)\n"
          "  %l = drc.linear %lse, %spread : (tensor<8x2xf64>, "
          "tensor<8x2xf64>) -> tensor<8x8xf64>\n"
          "  %y = drc.add %o, %l : tensor<8x8xf64>",
      8, 8);
  checkGradients(p);
}

TEST_CASE("depth_attention merged with causal_attention is one softmax and "
          "matches finite differences",
          "[gradient]") {
  // Two sequences of 4 tokens, 2 heads of width 4, and 3 depth keys per
  // token: the merge of causal_attention's (out, lse) with the depth keys
  // must equal a single softmax over both key sets, and its gradients
  // (through the lse too) must match finite differences.
  CompilerContext ctx;
  F64Program p = compileOp(
      ctx,
      param("q", "8x8") + param("k", "8x8") + param("v", "8x8") +
          param("dk", "8x3x8") + param("dv", "8x3x8"),
      ref("q", "8x8") + ref("k", "8x8") + ref("v", "8x8") + ref("dk", "8x3x8") +
          ref("dv", "8x3x8") +
          "  %o, %lse = drc.causal_attention %q, %k, %v {n_head = 2 : i64, "
          "seq_len = 4 : i64} : (tensor<8x8xf64>, tensor<8x8xf64>, "
          "tensor<8x8xf64>) -> (tensor<8x8xf64>, tensor<8x2xf64>)\n"
          "  %y = drc.depth_attention %q, %dk, %dv merge %o, %lse "
          "{n_head = 2 : i64} : (tensor<8x8xf64>, tensor<8x3x8xf64>, "
          "tensor<8x3x8xf64>, tensor<8x8xf64>, tensor<8x2xf64>) -> "
          "tensor<8x8xf64>",
      8, 8);
  auto at = [&](const char *name) {
    return &p.params[p.model->parameters().find(name)->offset];
  };
  const double *q = at("q"), *k = at("k"), *v = at("v"), *dk = at("dk"),
               *dv = at("dv");
  double expected = referenceLoss(p, 8, [&](int t, int j) {
    int h = j / 4, first = t / 4 * 4;
    std::vector<double> scores;
    std::vector<const double *> values;
    auto key = [&](const double *kr, const double *vr) {
      double dot = 0;
      for (int e = 0; e < 4; ++e)
        dot += q[t * 8 + h * 4 + e] * kr[h * 4 + e];
      scores.push_back(dot / 2.0);
      values.push_back(vr + h * 4);
    };
    for (int s = first; s <= t; ++s)
      key(k + s * 8, v + s * 8);
    for (int i = 0; i < 3; ++i)
      key(dk + (t * 3 + i) * 8, dv + (t * 3 + i) * 8);
    double top = *std::max_element(scores.begin(), scores.end()), sum = 0,
           y = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
      sum += std::exp(scores[i] - top);
      y += std::exp(scores[i] - top) * values[i][j % 4];
    }
    return y / sum;
  });
  CHECK(p.loss() == Approx(expected).epsilon(1e-12));
  checkGradients(p);
}

TEST_CASE("silu_mul gradients match finite differences", "[gradient]") {
  CompilerContext ctx;
  F64Program p = compileOp(ctx, param("a", "6x5") + param("b", "6x5"),
                           ref("a", "6x5") + ref("b", "6x5") +
                               "  %y = drc.silu_mul %a, %b : tensor<6x5xf64>",
                           6, 5);
  checkGradients(p);
}

TEST_CASE("embed gradient matches finite differences", "[gradient]") {
  CompilerContext ctx;
  // Tokens repeat (6 tokens over 5 rows), so the scatter-add must sum.
  F64Program p = compileOp(
      ctx, param("e", "5x5"),
      ref("e", "5x5") + "  %y = drc.embed %e[%tokens] : (tensor<5x5xf64>, "
                        "tensor<6xi32>) -> tensor<6x5xf64>",
      6, 5);
  checkGradients(p);
}

TEST_CASE("autodiff rejects an op without a gradient rule", "[gradient]") {
  CompilerContext ctx;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      R"(
drc.param @x : tensor<4x4xf64> init #drc.init<constant(0.0)>
func.func @loss(%t: tensor<4xi32>, %u: tensor<4xi32>) -> tensor<f64> {
  %x = drc.param_ref @x : tensor<4x4xf64>
  %y = drc.rms_norm_grad %x grad %x : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  %l = drc.cross_entropy %y, %u : (tensor<4x4xf64>, tensor<4xi32>) -> tensor<f64>
  return %l : tensor<f64>
})",
      &ctx.context);
  REQUIRE(module);
  mlir::PassManager pm(&ctx.context);
  mlir::drc::buildTrainStepPipeline(pm, {});
  CHECK(mlir::failed(pm.run(*module)));
  CHECK_THAT(ctx.diagnostics,
             Catch::Contains("'drc.rms_norm_grad' has no gradient rule"));
}
