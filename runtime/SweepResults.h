//===- SweepResults.h - A sweep's results.jsonl -----------------*- C++ -*-===//
//
// One JSON record per finished cell (docs/bench.md lists the fields). The
// file is rewritten atomically with each new record, so a sweep killed at
// any point leaves a valid file; a restarted sweep skips the cells it holds.
// Each record carries its cell's spec, so results of another grid in the
// same directory are refused instead of mixed in.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SWEEPRESULTS_H
#define DRC_RUNTIME_SWEEPRESULTS_H

#include "runtime/Evaluation.h"
#include "runtime/Json.h"
#include "runtime/SweepSpec.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace drc {

class SweepResults {
public:
  /// Reads `file` if it exists. Throws InputError for a malformed file.
  explicit SweepResults(std::filesystem::path file);

  /// The record of `cell`, or null. Throws InputError when the file holds a
  /// record under the cell's id for a different spec.
  const JsonValue *find(const SweepCell &cell) const;

  /// Adds `cell`'s record and rewrites the file atomically.
  void add(const SweepCell &cell, int64_t parameters, const EvalResult &final,
           double wallSeconds, double tokensPerSecond);

  /// Every record, in the order the cells finished.
  std::vector<JsonValue> list() const;

  const std::filesystem::path &file() const { return path; }

private:
  std::filesystem::path path;
  std::string text; ///< the file as written, one record per line
  std::map<std::string, JsonValue> records;
  std::vector<std::string> order; ///< cell ids, first record first
};

} // namespace drc

#endif // DRC_RUNTIME_SWEEPRESULTS_H
