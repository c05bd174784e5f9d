//===- Progress.h - One progress line for long work -------------*- C++ -*-===//
//
//   step 120/1000 | loss 2.314 | 41.2k tok/s | ETA 3m12s
//
// On a terminal the line is rewritten in place (\r) at most four times a
// second; in a log (CI, a file, a pipe) a full line is printed at most once
// every N seconds, so logs stay short.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PROGRESS_H
#define DRC_RUNTIME_PROGRESS_H

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace drc {

/// "45s", "3m12s", "2h05m", "3d04h"; "?" for a negative or non-finite value.
std::string formatDuration(double seconds);

/// Three significant digits with a k/M/G suffix: "812", "41.2k", "3.41M".
std::string formatRate(double perSecond);

/// Seconds left, extrapolating the average pace so far; negative when there
/// is no pace yet (nothing done, or no time elapsed).
double estimateRemaining(int64_t doneSinceStart, int64_t remaining,
                         double elapsedS);

/// "<label> <done>/<total>[ | <detail>] | <rate> <unit>/s | ETA <eta>"; the
/// rate part is left out when `rateUnit` is empty.
std::string formatProgress(std::string_view label, int64_t done, int64_t total,
                           std::string_view detail, double rate,
                           std::string_view rateUnit, double etaS);

/// Shows the progress of `total` units of work (steps, shards, ...).
class ProgressLine {
public:
  struct Options {
    /// The unit of work, first on the line ("step").
    std::string label = "step";
    /// What the rate counts ("tok" for tokens); empty for no rate.
    std::string rateUnit = "tok";
    /// Minimum seconds between lines when not writing to a terminal.
    double logIntervalS = 30;
    /// Minimum seconds between redraws on a terminal.
    double ttyIntervalS = 0.25;
    /// Whether `out` is a terminal; by default isatty(fileno(out)).
    std::function<bool(std::FILE *)> isTerminal;
    /// Seconds on a monotonic clock; by default std::chrono::steady_clock.
    std::function<double()> clock;
  };

  /// `startDone` is where the work starts (the resume step), so that rate and
  /// ETA count only the work done by this process.
  ProgressLine(std::FILE *out, int64_t total, Options options,
               int64_t startDone = 0);

  /// Reports that `done` units are complete and `rateCount` rate units (e.g.
  /// tokens) were processed since the start; prints if the throttle allows.
  /// `detail` goes in the middle of the line ("loss 2.314").
  void update(int64_t done, double rateCount, std::string_view detail);

  /// Prints the last state unconditionally and ends the line.
  void finish();

private:
  std::string render(double now) const;
  void print(const std::string &line);

  std::FILE *out;
  int64_t total;
  Options options;
  bool terminal;
  int64_t startDone;
  double startTime;
  bool printed = false; ///< update() has printed at least once
  double lastPrint = 0;
  size_t lastWidth = 0;
  int64_t done = 0;
  double rateCount = 0;
  std::string detail;
  bool pending = false; ///< a state not yet printed
};

} // namespace drc

#endif // DRC_RUNTIME_PROGRESS_H
