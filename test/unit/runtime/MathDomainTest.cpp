//===- MathDomainTest.cpp - The generated arithmetic domain ---------------===//
#include "runtime/MathDomain.h"

#include "runtime/Corpus.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <sstream>
#include <stdexcept>

using drc::test::ScratchDirectory;
namespace fs = std::filesystem;

namespace {

/// An independent evaluator for the generator's notation: integers,
/// parenthesised negatives, + - * / with the usual precedence, and "Nx"
/// terms with x bound to `x`.
class Evaluator {
public:
  Evaluator(std::string_view text, int64_t x) : text(text), x(x) {}

  int64_t evaluate() {
    int64_t value = sum();
    if (at != text.size())
      throw std::runtime_error("trailing text in '" + std::string(text) + "'");
    return value;
  }

private:
  std::string_view text;
  int64_t x;
  size_t at = 0;

  char peek() const { return at < text.size() ? text[at] : '\0'; }

  int64_t sum() {
    int64_t value = product();
    while (peek() == '+' || peek() == '-') {
      char op = text[at++];
      int64_t right = product();
      value = op == '+' ? value + right : value - right;
    }
    return value;
  }

  int64_t product() {
    int64_t value = primary();
    while (peek() == '*' || peek() == '/') {
      char op = text[at++];
      int64_t right = primary();
      if (op == '/' && (right == 0 || value % right != 0))
        throw std::runtime_error("inexact division in '" + std::string(text) +
                                 "'");
      value = op == '*' ? value * right : value / right;
    }
    return value;
  }

  int64_t primary() {
    if (peek() == '(') {
      ++at;
      int64_t value = sum();
      if (peek() != ')')
        throw std::runtime_error("missing ')' in '" + std::string(text) + "'");
      ++at;
      return value;
    }
    bool negative = peek() == '-';
    if (negative)
      ++at;
    size_t start = at;
    int64_t value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek())))
      value = value * 10 + (text[at++] - '0');
    if (at == start && peek() != 'x')
      throw std::runtime_error("expected a number in '" + std::string(text) +
                               "'");
    if (peek() == 'x') {
      ++at;
      value = (at - 1 == start ? 1 : value) * x;
    }
    return negative ? -value : value;
  }
};

std::vector<std::string> split(std::string_view text, std::string_view by) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(by, start)) != std::string_view::npos;
       start = at + by.size())
    parts.emplace_back(text.substr(start, at - start));
  parts.emplace_back(text.substr(start));
  return parts;
}

/// Checks one problem line: all sides of every '=' agree, and for an
/// equation every step holds for the stated solution.
void checkProblem(const std::string &line) {
  INFO(line);
  std::vector<std::string> steps = split(line, " -> ");
  int64_t x = 0;
  if (steps.size() > 1)
    x = Evaluator(split(steps.back(), "=").back(), 0).evaluate();
  for (const std::string &step : steps) {
    std::vector<std::string> sides = split(step, "=");
    REQUIRE(sides.size() >= 2);
    int64_t value = Evaluator(sides.front(), x).evaluate();
    for (const std::string &side : sides)
      REQUIRE(Evaluator(side, x).evaluate() == value);
  }
}

} // namespace

TEST_CASE("math worksheets are deterministic and streams differ",
          "[MathDomain]") {
  std::string sheet = drc::mathWorksheet(7, drc::MathStream::Train, 3);
  CHECK(drc::mathWorksheet(7, drc::MathStream::Train, 3) == sheet);
  CHECK(drc::mathWorksheet(7, drc::MathStream::Val, 3) != sheet);
  CHECK(drc::mathWorksheet(7, drc::MathStream::Train, 4) != sheet);
  CHECK(drc::mathWorksheet(8, drc::MathStream::Train, 3) != sheet);
}

TEST_CASE("every generated problem is correct arithmetic", "[MathDomain]") {
  size_t lines = 0, equations = 0, multiStep = 0;
  for (uint64_t index = 0; index < 200; ++index) {
    std::istringstream sheet(
        drc::mathWorksheet(1, drc::MathStream::Train, index));
    for (std::string line; std::getline(sheet, line); ++lines) {
      checkProblem(line);
      equations += line.find(" -> ") != std::string::npos;
      multiStep += split(line, "=").size() > 2;
    }
  }
  // 16-48 problems per sheet; about 10% equations and 25% expressions.
  CHECK(lines > 200 * 16);
  CHECK(equations > lines / 20);
  CHECK(multiStep > lines / 8);
}

TEST_CASE("the math domain reaches the requested sizes and loads",
          "[MathDomain]") {
  ScratchDirectory dir;
  drc::DomainSizes sizes = drc::buildMathDomain(dir / "math", 1, 20000, 3000);
  CHECK(sizes.train.tokens >= 20000);
  CHECK(sizes.val.tokens >= 3000);
  drc::Corpus corpus = drc::loadCorpus(dir.path(), drc::kByteVocabSize);
  REQUIRE(corpus.domains.size() == 1);
  CHECK(corpus.domains[0].train.size() == sizes.train.tokens);
  // Digits and a few operators: well below the 8 bits of a uniform byte.
  CHECK(corpus.domains[0].valUnigramEntropy > 2.0);
  CHECK(corpus.domains[0].valUnigramEntropy < 3.2);

  CHECK_THAT(drc::test::inputErrorText(
                 [&] { drc::buildMathDomain(dir / "none", 1, 0, 10); }),
             Catch::Matchers::Contains("positive number"));
}
