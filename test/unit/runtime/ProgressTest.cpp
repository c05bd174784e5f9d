//===- ProgressTest.cpp - Progress line formatting and throttling ---------===//

#include "runtime/Progress.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace drc;

namespace {

/// Captures what a ProgressLine prints.
class Capture {
public:
  Capture() : file(::open_memstream(&buffer, &size)) {}
  ~Capture() {
    std::fclose(file);
    std::free(buffer);
  }
  std::FILE *stream() { return file; }
  std::string text() {
    std::fflush(file);
    return std::string(buffer, size);
  }

private:
  char *buffer = nullptr;
  size_t size = 0;
  std::FILE *file;
};

} // namespace

TEST_CASE("durations", "[Progress]") {
  CHECK(formatDuration(0) == "0s");
  CHECK(formatDuration(45.4) == "45s");
  CHECK(formatDuration(59.6) == "1m00s");
  CHECK(formatDuration(192) == "3m12s");
  CHECK(formatDuration(3600) == "1h00m");
  CHECK(formatDuration(7500) == "2h05m");
  CHECK(formatDuration(90000) == "1d01h");
  CHECK(formatDuration(-1) == "?");
  CHECK(formatDuration(NAN) == "?");
}

TEST_CASE("rates keep three significant digits", "[Progress]") {
  CHECK(formatRate(0.5) == "0.50");
  CHECK(formatRate(9.996) == "10.0");
  CHECK(formatRate(812) == "812");
  CHECK(formatRate(999.6) == "1.00k");
  CHECK(formatRate(41234) == "41.2k");
  CHECK(formatRate(412345) == "412k");
  CHECK(formatRate(3.41e6) == "3.41M");
  CHECK(formatRate(2e9) == "2.00G");
  CHECK(formatRate(-1) == "?");
}

TEST_CASE("ETA extrapolates this process's pace", "[Progress]") {
  CHECK(estimateRemaining(100, 900, 50) == 450);
  CHECK(estimateRemaining(0, 900, 50) < 0);
  CHECK(estimateRemaining(10, 900, 0) < 0);
  CHECK(formatProgress("step", 120, 1000, "loss 2.314", 41234, "tok", 192) ==
        "step 120/1000 | loss 2.314 | 41.2k tok/s | ETA 3m12s");
  CHECK(formatProgress("shard", 3, 8, "", 0, "", -1) == "shard 3/8 | ETA ?");
}

TEST_CASE("in a log, a full line at most every N seconds", "[Progress]") {
  Capture out;
  double now = 100;
  ProgressLine::Options options;
  options.logIntervalS = 30;
  options.isTerminal = [](std::FILE *) { return false; };
  options.clock = [&] { return now; };
  ProgressLine progress(out.stream(), 1000, options, 200);
  now = 110;
  progress.update(210, 40960, "loss 3.000");
  now = 120;
  progress.update(220, 81920, "loss 2.900");
  now = 140;
  progress.update(240, 163840, "loss 2.800"); // 30 s since the last line
  now = 150;
  progress.update(250, 204800, "loss 2.700");
  progress.finish();
  CHECK(out.text() ==
        "step 210/1000 | loss 3.000 | 4.10k tok/s | ETA 13m10s\n"
        "step 240/1000 | loss 2.800 | 4.10k tok/s | ETA 12m40s\n"
        "step 250/1000 | loss 2.700 | 4.10k tok/s | ETA 12m30s\n");
}

TEST_CASE("on a terminal, one line redrawn at most four times a second",
          "[Progress]") {
  Capture out;
  double now = 0;
  ProgressLine::Options options;
  options.label = "doc";
  options.rateUnit = "B";
  options.isTerminal = [](std::FILE *) { return true; };
  options.clock = [&] { return now; };
  ProgressLine progress(out.stream(), 100, options);
  now = 1;
  progress.update(10, 1e6, "long detail text");
  now = 1.1;
  progress.update(11, 1.1e6, "skipped");
  now = 1.25;
  progress.update(12, 1.2e6, "short");
  progress.finish();
  std::string first = "\rdoc 10/100 | long detail text | 1.00M B/s | ETA 9s";
  // The shorter second line blanks out the first one's tail.
  std::string second =
      "\rdoc 12/100 | short | 960k B/s | ETA 9s" + std::string(12, ' ');
  CHECK(out.text() == first + second + "\n");
}
