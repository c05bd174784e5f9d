//===- MathDomain.cpp - Generated arithmetic text domain ------------------===//
#include "runtime/MathDomain.h"

#include "runtime/CounterRandom.h"

#include <vector>

namespace drc {
namespace {

std::string binary(int64_t a, char op, int64_t b, int64_t result) {
  return std::to_string(a) + op + std::to_string(b) + "=" +
         std::to_string(result);
}

/// An arithmetic expression tree, printed with only the parentheses that
/// precedence needs, and reduced one operation at a time.
class Expression {
public:
  explicit Expression(DocumentRandom &random) {
    root = grow(random, static_cast<int>(random.between(2, 4)));
  }

  /// "e0=e1=...=value", each step evaluating one operation.
  std::string solution() {
    std::string line = print(root, 0, false);
    while (nodes[root].op != 0) {
      reduce(findNext(root));
      line += "=" + print(root, 0, false);
    }
    return line;
  }

private:
  struct Node {
    char op; ///< '+', '-', '*', or 0 for a number
    int64_t value;
    int left, right;
  };
  std::vector<Node> nodes;
  int root;

  int grow(DocumentRandom &random, int operations) {
    if (operations == 0) {
      nodes.push_back({0, random.between(1, 99), -1, -1});
      return static_cast<int>(nodes.size()) - 1;
    }
    int leftOperations = static_cast<int>(random.between(0, operations - 1));
    int left = grow(random, leftOperations);
    int right = grow(random, operations - 1 - leftOperations);
    char op = "+-*"[random.between(0, 2)];
    nodes.push_back({op, 0, left, right});
    return static_cast<int>(nodes.size()) - 1;
  }

  static int precedence(char op) { return op == '*' ? 2 : 1; }

  std::string print(int node, int parentPrecedence, bool rightOperand) const {
    const Node &n = nodes[node];
    if (n.op == 0) {
      // "7-(-4)", not "7--4", once a step has produced a negative operand.
      std::string number = std::to_string(n.value);
      return n.value < 0 && parentPrecedence > 0 ? "(" + number + ")" : number;
    }
    int own = precedence(n.op);
    // A right operand of equal precedence keeps its parentheses: needed for
    // '-', and for '+' and '*' they show the grouping the steps follow.
    bool parenthesize =
        own < parentPrecedence || (rightOperand && own == parentPrecedence);
    std::string text =
        print(n.left, own, false) + n.op + print(n.right, own, true);
    return parenthesize ? "(" + text + ")" : text;
  }

  /// The operation a person would do next: among operations on two numbers,
  /// the first '*', else the first one.
  int findNext(int node) const {
    std::vector<int> ready;
    collectReady(node, ready);
    for (int candidate : ready)
      if (nodes[candidate].op == '*')
        return candidate;
    return ready.front();
  }

  void collectReady(int node, std::vector<int> &ready) const {
    const Node &n = nodes[node];
    if (n.op == 0)
      return;
    if (nodes[n.left].op == 0 && nodes[n.right].op == 0) {
      ready.push_back(node);
      return;
    }
    collectReady(n.left, ready);
    collectReady(n.right, ready);
  }

  void reduce(int node) {
    Node &n = nodes[node];
    int64_t a = nodes[n.left].value, b = nodes[n.right].value;
    n.value = n.op == '+' ? a + b : n.op == '-' ? a - b : a * b;
    n.op = 0;
  }
};

/// "ax+b=c -> ax=c-b -> x=v" with a >= 2 and b != 0.
std::string linearEquation(DocumentRandom &random) {
  int64_t a = random.between(2, 12);
  int64_t x = random.between(-20, 50);
  int64_t b = random.between(1, 60) * (random.between(0, 1) ? 1 : -1);
  int64_t c = a * x + b;
  std::string ax = std::to_string(a) + "x";
  std::string sign = b > 0 ? "+" : "";
  return ax + sign + std::to_string(b) + "=" + std::to_string(c) + " -> " + ax +
         "=" + std::to_string(c - b) + " -> x=" + std::to_string(x);
}

std::string problem(DocumentRandom &random) {
  int64_t kind = random.between(0, 99);
  if (kind < 25) {
    int64_t a = random.number(5), b = random.number(5);
    return binary(a, '+', b, a + b);
  }
  if (kind < 40) {
    int64_t a = random.number(5), b = random.number(5);
    return binary(a, '-', b, a - b);
  }
  if (kind < 55) {
    int64_t a = random.number(3), b = random.number(2);
    return binary(a, '*', b, a * b);
  }
  if (kind < 65) {
    int64_t divisor = random.between(2, 99), quotient = random.number(3);
    return binary(divisor * quotient, '/', divisor, quotient);
  }
  if (kind < 90) {
    Expression expression(random);
    return expression.solution();
  }
  return linearEquation(random);
}

} // namespace

std::string mathWorksheet(uint64_t seed, MathStream stream, uint64_t index) {
  DocumentRandom random(seed, static_cast<uint64_t>(stream), index);
  int64_t problems = random.between(16, 48);
  std::string text;
  for (int64_t i = 0; i < problems; ++i)
    text += problem(random) + "\n";
  return text;
}

DomainSizes buildMathDomain(const std::filesystem::path &directory,
                            uint64_t seed, size_t trainBytes, size_t valBytes,
                            size_t shardTokens) {
  return buildGeneratedDomain(
      directory, "math", trainBytes, valBytes, shardTokens,
      [&](bool val, uint64_t index) {
        return mathWorksheet(seed, val ? MathStream::Val : MathStream::Train,
                             index);
      });
}

} // namespace drc
