//===- Metrics.h - metrics.jsonl: one JSON object per eval ------*- C++ -*-===//
//
// RUNDIR/metrics.jsonl holds one compact JSON object per line, e.g.
//   {"step":500,"train_loss":3.12,"val_loss":3.2,"val_loss.web":3.4,
//    "lr":0.0009,"tokens_per_s":41200.5,"elapsed_s":812.2}
// Keys are free-form; "step" (an integer) is required. Each line is written
// with one write() and fsynced, so after a crash the file holds whole lines
// plus at most one unterminated fragment. A resumed run drops the lines past
// its checkpoint, so its file matches an uninterrupted run's apart from the
// timing fields.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_METRICS_H
#define DRC_RUNTIME_METRICS_H

#include "runtime/Json.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace drc {

/// Timing fields measure wall-clock time and differ between an interrupted
/// and an uninterrupted run: by convention every key ending in "_s" (seconds,
/// and rates per second such as "tokens_per_s") or "_ms". All other fields
/// are reproducible and must not end that way.
bool isTimingField(std::string_view key);

/// Appends records to a metrics.jsonl file.
class MetricsWriter {
public:
  /// Starts `path` empty (replacing an existing file) for a fresh run.
  static MetricsWriter create(const std::string &path);

  /// Continues `path` for a run resumed from a checkpoint taken after step
  /// `resumeStep`: keeps the lines whose step is <= resumeStep, drops later
  /// ones (the interrupted run logged them after its last checkpoint, and the
  /// resumed run will log them again) and a trailing unterminated fragment
  /// left by a crash, rewriting the file atomically. A missing file is
  /// created. Throws InputError("path:line: ...") for a line that is not a
  /// JSON object with an integer "step".
  static MetricsWriter openForResume(const std::string &path,
                                     int64_t resumeStep);

  ~MetricsWriter();
  MetricsWriter(MetricsWriter &&other) noexcept;
  MetricsWriter &operator=(MetricsWriter &&other) noexcept;
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;

  /// Appends `record` (an object with an integer "step") as one line and
  /// fsyncs it. Throws drc::Error for a malformed record or an I/O failure.
  void write(const JsonValue &record);

  const std::string &path() const { return path_; }

private:
  MetricsWriter(std::string path, int fd) : path_(std::move(path)), fd(fd) {}

  std::string path_;
  int fd = -1;
};

} // namespace drc

#endif // DRC_RUNTIME_METRICS_H
