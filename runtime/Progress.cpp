//===- Progress.cpp - One progress line for long work ---------------------===//

#include "runtime/Progress.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <unistd.h>

namespace drc {

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  long long s = std::llround(seconds);
  char buf[48];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return buf;
}

std::string formatRate(double perSecond) {
  if (!std::isfinite(perSecond) || perSecond < 0)
    return "?";
  static const char *const suffixes[] = {"", "k", "M", "G", "T"};
  double value = perSecond;
  char buf[64];
  for (int s = 0;; ++s) {
    // Fewer decimals as the value grows keeps three significant digits; the
    // check runs on the rounded text so that 9.996 becomes "10.0", not "10.00".
    for (int decimals = 2; decimals >= 0; --decimals) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
      if (std::atof(buf) < std::pow(10.0, 3 - decimals))
        break;
    }
    if (std::atof(buf) < 1000 || s == 4)
      return std::string(buf) + suffixes[s];
    value /= 1000;
  }
}

double estimateRemaining(int64_t doneSinceStart, int64_t remaining,
                         double elapsedS) {
  if (doneSinceStart <= 0 || !(elapsedS > 0))
    return -1;
  return elapsedS / double(doneSinceStart) * double(remaining);
}

std::string formatProgress(std::string_view label, int64_t done, int64_t total,
                           std::string_view detail, double rate,
                           std::string_view rateUnit, double etaS) {
  std::string line = std::string(label) + " " + std::to_string(done) + "/" +
                     std::to_string(total);
  if (!detail.empty())
    line += " | " + std::string(detail);
  if (!rateUnit.empty())
    line += " | " + formatRate(rate) + " " + std::string(rateUnit) + "/s";
  return line + " | ETA " + formatDuration(etaS);
}

ProgressLine::ProgressLine(std::FILE *out, int64_t total, Options options,
                           int64_t startDone)
    : out(out), total(total), options(std::move(options)), startDone(startDone),
      done(startDone) {
  if (!this->options.clock)
    this->options.clock = [] {
      return std::chrono::duration<double>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  if (!this->options.isTerminal)
    this->options.isTerminal = [](std::FILE *f) {
      return ::isatty(::fileno(f)) == 1;
    };
  terminal = this->options.isTerminal(out);
  startTime = this->options.clock();
}

std::string ProgressLine::render(double now) const {
  double elapsed = now - startTime;
  double rate = elapsed > 0 ? rateCount / elapsed : -1;
  return formatProgress(
      options.label, done, total, detail, rate, options.rateUnit,
      estimateRemaining(done - startDone, total - done, elapsed));
}

void ProgressLine::print(const std::string &line) {
  if (terminal) {
    // Blank out the tail of a longer previous line.
    std::string padded = line;
    if (padded.size() < lastWidth)
      padded.append(lastWidth - padded.size(), ' ');
    std::fprintf(out, "\r%s", padded.c_str());
    lastWidth = line.size();
  } else {
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fflush(out);
  pending = false;
}

void ProgressLine::update(int64_t done, double rateCount,
                          std::string_view detail) {
  this->done = done;
  this->rateCount = rateCount;
  this->detail = detail;
  pending = true;
  double now = options.clock();
  double interval = terminal ? options.ttyIntervalS : options.logIntervalS;
  if (printed && now - lastPrint < interval)
    return;
  printed = true;
  lastPrint = now;
  print(render(now));
}

void ProgressLine::finish() {
  if (pending)
    print(render(options.clock()));
  if (terminal && lastWidth > 0)
    std::fputc('\n', out);
  std::fflush(out);
  lastWidth = 0;
}

} // namespace drc
