//===- PermutationDomain.h - A synthetic depth task -------------*- C++ -*-===//
//
// A generated "perm" domain whose answers take a known, adjustable amount of
// serial computation: a start symbol, then k permutations of the five
// symbols a-e, then the symbol the start ends at after applying them in
// order. A permutation p is written as p(a)p(b)p(c)p(d)p(e):
//
//   c:bdace,eacbd,dbeac=e      c -> a (bdace) -> e (eacbd) -> c ... (k = 3)
//
// Composing permutations of five elements (the S5 word problem) is the
// standard hard case of state tracking: no fixed number of layers does it for
// every k, so accuracy by k shows how much computation a model gets from its
// depth. The answer is the token after '='; everything else on a line is
// random and unpredictable beyond its format. k is uniform in 1..maxHops.
//
// A domain built by buildPermutationDomain holds a file TASK reading
// "permutations"; drc-probe and drc-bench then score the answers of its
// validation text by k (runtime/DepthTask.h).
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PERMUTATIONDOMAIN_H
#define DRC_RUNTIME_PERMUTATIONDOMAIN_H

#include "runtime/DomainWriter.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace drc {

/// The TASK file's text for this domain.
inline constexpr std::string_view kPermutationTask = "permutations";
/// The largest k the generator accepts.
inline constexpr int kMaxPermutationHops = 32;

/// One document: 16-48 lines, each ending in '\n'. Train (`val` false) and
/// val documents never coincide. maxHops must be in 1..kMaxPermutationHops.
std::string permutationWorksheet(uint64_t seed, bool val, uint64_t index,
                                 int maxHops);

/// A line of the task, up to and including its '=': its number of
/// permutations k and the answer.
struct PermutationProblem {
  int hops = 0;
  char answer = 0;
};

/// Parses `line` ("c:bdace,eacbd=" without the answer) and computes its
/// answer; nullopt when the text is not a problem of the task.
std::optional<PermutationProblem>
parsePermutationProblem(std::string_view line);

/// Writes worksheets to `directory` (at least `trainBytes` of train text and
/// `valBytes` of val text) and the TASK file. Throws InputError for a zero
/// size or maxHops outside 1..kMaxPermutationHops.
DomainSizes buildPermutationDomain(const std::filesystem::path &directory,
                                   uint64_t seed, int maxHops,
                                   size_t trainBytes, size_t valBytes,
                                   size_t shardTokens = kDefaultShardTokens);

} // namespace drc

#endif // DRC_RUNTIME_PERMUTATIONDOMAIN_H
