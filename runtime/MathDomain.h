//===- MathDomain.h - Generated arithmetic text domain ----------*- C++ -*-===//
//
// A synthetic "math" domain whose text a model can only predict by
// computing: sums, differences, products and exact quotients of 1-5 digit
// numbers, expressions with parentheses evaluated one operation per step,
// and linear equations solved in two steps. One line per problem:
//
//   101+9368=9469
//   81*(35+49)*60=81*84*60=6804*60=408240
//   8x-17=15 -> 8x=32 -> x=4
//
// Everything is a pure function of (seed, stream, worksheet index), so the
// domain is the same on every machine.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_MATHDOMAIN_H
#define DRC_RUNTIME_MATHDOMAIN_H

#include "runtime/DomainWriter.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace drc {

/// Random streams of the math domain; train and val never share a worksheet.
enum class MathStream : uint64_t { Train = 0, Val = 1 };

/// One document: 16-48 problems, one per line, each line ending in '\n'.
std::string mathWorksheet(uint64_t seed, MathStream stream, uint64_t index);

/// Writes worksheets 0, 1, ... of each stream to `directory` until train has
/// at least `trainBytes` bytes of text and val at least `valBytes`. Throws
/// InputError when a size is zero.
DomainSizes buildMathDomain(const std::filesystem::path &directory,
                            uint64_t seed, size_t trainBytes, size_t valBytes,
                            size_t shardTokens = kDefaultShardTokens);

} // namespace drc

#endif // DRC_RUNTIME_MATHDOMAIN_H
