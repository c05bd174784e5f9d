//===- PreLnParameters.h - The Pre-LN parameter table for tests -*- C++ -*-===//
//
// What the compiler produces for a Pre-LN model (ARCHITECTURES.md §1.1 and
// §1.3), written out by hand so runtime tests can run without the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TEST_UNIT_RUNTIME_PRELNPARAMETERS_H
#define DRC_TEST_UNIT_RUNTIME_PRELNPARAMETERS_H

#include "runtime/ParameterTable.h"

#include <string>

namespace drc::test {

/// Pre-LN with vocabulary V, width d, L blocks and FFN width dff: matrices
/// TruncNormal(0.02, clip 0.06) with weight decay, gains Constant 1 without.
inline ParameterTable preLnParameters(int64_t V, int64_t d, int64_t L,
                                      int64_t dff) {
  const Init matrix = Init::truncNormal(0.02, 0.06);
  ParameterTable table;
  table.add("embed.weight", {V, d}, matrix, true);
  for (int64_t b = 0; b < L; ++b) {
    std::string prefix = "blocks." + std::to_string(b) + ".";
    table.add(prefix + "attn.norm.gain", {d}, Init::ones(), false);
    for (const char *w : {"wq", "wk", "wv", "wo"})
      table.add(prefix + "attn." + w, {d, d}, matrix, true);
    table.add(prefix + "ffn.norm.gain", {d}, Init::ones(), false);
    table.add(prefix + "ffn.w1", {dff, d}, matrix, true);
    table.add(prefix + "ffn.w3", {dff, d}, matrix, true);
    table.add(prefix + "ffn.w2", {d, dff}, matrix, true);
  }
  table.add("final_norm.gain", {d}, Init::ones(), false);
  table.add("unembed.weight", {V, d}, matrix, true);
  return table;
}

} // namespace drc::test

#endif // DRC_TEST_UNIT_RUNTIME_PRELNPARAMETERS_H
