//===- PermutationDomain.cpp - A synthetic depth task --------------------===//
#include "runtime/PermutationDomain.h"

#include "runtime/AtomicFile.h"
#include "runtime/CounterRandom.h"
#include "runtime/Error.h"

#include <algorithm>
#include <array>

namespace drc {
namespace {

constexpr int kSymbols = 5;

std::string problem(DocumentRandom &random, int maxHops) {
  int hops = static_cast<int>(random.between(1, maxHops));
  int symbol = static_cast<int>(random.between(0, kSymbols - 1));
  std::string line(1, char('a' + symbol));
  line += ':';
  for (int k = 0; k < hops; ++k) {
    // Fisher-Yates: every permutation of the five symbols equally likely.
    std::array<int, kSymbols> image{0, 1, 2, 3, 4};
    for (int i = kSymbols - 1; i > 0; --i)
      std::swap(image[i], image[random.between(0, i)]);
    if (k > 0)
      line += ',';
    for (int v : image)
      line += char('a' + v);
    symbol = image[symbol];
  }
  return line + '=' + char('a' + symbol);
}

} // namespace

std::string permutationWorksheet(uint64_t seed, bool val, uint64_t index,
                                 int maxHops) {
  DocumentRandom random(seed, val ? 1 : 0, index);
  int64_t lines = random.between(16, 48);
  std::string text;
  for (int64_t i = 0; i < lines; ++i)
    text += problem(random, maxHops) + "\n";
  return text;
}

std::optional<PermutationProblem>
parsePermutationProblem(std::string_view line) {
  auto isSymbol = [](char c) { return c >= 'a' && c < 'a' + kSymbols; };
  // "s:" then k blocks of five distinct symbols separated by ',' then '='.
  if (line.size() < 2 + kSymbols + 1 || !isSymbol(line[0]) || line[1] != ':' ||
      line.back() != '=' || (line.size() - 2) % (kSymbols + 1) != 0)
    return std::nullopt;
  int symbol = line[0] - 'a';
  PermutationProblem problem;
  problem.hops = static_cast<int>((line.size() - 2) / (kSymbols + 1));
  for (int k = 0; k < problem.hops; ++k) {
    std::string_view block = line.substr(2 + k * (kSymbols + 1), kSymbols);
    char after = line[2 + k * (kSymbols + 1) + kSymbols];
    if (after != (k + 1 == problem.hops ? '=' : ','))
      return std::nullopt;
    std::array<bool, kSymbols> seen{};
    for (char c : block) {
      if (!isSymbol(c) || seen[c - 'a'])
        return std::nullopt;
      seen[c - 'a'] = true;
    }
    symbol = block[symbol] - 'a';
  }
  problem.answer = char('a' + symbol);
  return problem;
}

DomainSizes buildPermutationDomain(const std::filesystem::path &directory,
                                   uint64_t seed, int maxHops,
                                   size_t trainBytes, size_t valBytes,
                                   size_t shardTokens) {
  if (maxHops < 1 || maxHops > kMaxPermutationHops)
    throw InputError("the perm domain's largest number of permutations must "
                     "be in 1.." +
                     std::to_string(kMaxPermutationHops) + ", got " +
                     std::to_string(maxHops));
  DomainSizes sizes = buildGeneratedDomain(
      directory, "perm", trainBytes, valBytes, shardTokens,
      [&](bool val, uint64_t index) {
        return permutationWorksheet(seed, val, index, maxHops);
      });
  writeFileAtomically((directory / "TASK").string(),
                      std::string(kPermutationTask) + "\n");
  return sizes;
}

} // namespace drc
