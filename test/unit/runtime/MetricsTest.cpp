//===- MetricsTest.cpp - metrics.jsonl writing and exact resume -----------===//

#include "runtime/Metrics.h"

#include "runtime/Error.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace drc;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void appendText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

/// The record a run logs at `step`; `clockSkew` changes only timing fields.
JsonValue record(int64_t step, double clockSkew) {
  JsonValue r = JsonValue::object();
  r.set("step", step);
  r.set("train_loss", float(5.0 / double(step + 1)));
  r.set("val_loss", float(5.5 / double(step + 1)));
  r.set("val_loss.math", float(4.0 / double(step + 2)));
  r.set("lr", 1e-3 * double(step) / 400);
  r.set("tokens_per_s", 41200.5 + clockSkew);
  r.set("elapsed_s", double(step) * 0.5 + clockSkew);
  r.set("step_ms", 12.0 + clockSkew);
  return r;
}

/// `text` with every timing field removed from every line.
std::string withoutTiming(const std::string &text) {
  std::string out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    JsonValue r = parseJson(line, "metrics");
    std::vector<std::string> timing;
    for (const auto &[key, value] : r.members())
      if (isTimingField(key))
        timing.push_back(key);
    for (const std::string &key : timing)
      r.erase(key);
    out += toJson(r) + "\n";
  }
  return out;
}

} // namespace

TEST_CASE("each record is one JSON line", "[Metrics]") {
  ScratchDirectory dir;
  std::string path = dir / "metrics.jsonl";
  {
    MetricsWriter writer = MetricsWriter::create(path);
    JsonValue r = JsonValue::object();
    r.set("step", 0);
    r.set("train_loss", 5.5451774f);
    r.set("lr", NAN);
    writer.write(r);
    r.set("step", 100);
    r.set("train_loss", 3.25f);
    writer.write(r);
  }
  CHECK(readText(path) == "{\"step\":0,\"train_loss\":5.5451775,\"lr\":null}\n"
                          "{\"step\":100,\"train_loss\":3.25,\"lr\":null}\n");
  // create() starts over.
  MetricsWriter::create(path);
  CHECK(readText(path).empty());
}

TEST_CASE("records need an integer step", "[Metrics]") {
  ScratchDirectory dir;
  MetricsWriter writer = MetricsWriter::create(dir / "metrics.jsonl");
  JsonValue r = JsonValue::object();
  r.set("loss", 1.0);
  CHECK_THROWS_AS(writer.write(r), Error);
  r.set("step", 1.5);
  CHECK_THROWS_AS(writer.write(r), Error);
}

TEST_CASE("a resumed run's file equals an uninterrupted run's apart from "
          "timing fields",
          "[Metrics]") {
  ScratchDirectory dir;
  std::string straight = dir / "straight.jsonl";
  std::string resumed = dir / "resumed.jsonl";
  {
    MetricsWriter writer = MetricsWriter::create(straight);
    for (int64_t step = 0; step <= 400; step += 100)
      writer.write(record(step, 0));
  }
  {
    // Evaluates at 0..300, checkpoints at 200, crashes while writing 400.
    MetricsWriter writer = MetricsWriter::create(resumed);
    for (int64_t step = 0; step <= 300; step += 100)
      writer.write(record(step, 0.25));
  }
  std::string interrupted = readText(resumed);
  appendText(resumed, "{\"step\":400,\"train_lo");
  {
    MetricsWriter writer = MetricsWriter::openForResume(resumed, 200);
    // Lines up to the checkpoint stay byte for byte; 300 and the fragment go.
    CHECK(readText(resumed) ==
          interrupted.substr(0, interrupted.find("{\"step\":300")));
    for (int64_t step = 300; step <= 400; step += 100)
      writer.write(record(step, 7.0));
  }
  CHECK(readText(resumed) != readText(straight));
  CHECK(withoutTiming(readText(resumed)) == withoutTiming(readText(straight)));
}

TEST_CASE("resuming keeps everything up to the step and creates a missing "
          "file",
          "[Metrics]") {
  ScratchDirectory dir;
  std::string path = dir / "metrics.jsonl";
  MetricsWriter::openForResume(path, 100).write(record(100, 0));
  std::string text = readText(path);
  MetricsWriter::openForResume(path, 100);
  CHECK(readText(path) == text);
  MetricsWriter::openForResume(path, 99);
  CHECK(readText(path).empty());
}

TEST_CASE("a damaged metrics line is an InputError naming file:line",
          "[Metrics]") {
  ScratchDirectory dir;
  std::string path = dir / "metrics.jsonl";
  appendText(path, "{\"step\":0}\n{\"loss\":1}\n");
  CHECK(inputErrorText([&] { MetricsWriter::openForResume(path, 10); }) ==
        path + ":2: metrics line has no integer \"step\"; the file is not a "
               "drc metrics.jsonl (move it away to start anew)");
  std::ofstream(path, std::ios::trunc) << "{\"step\":0}\n{\"step\":1,}\n";
  CHECK(inputErrorText([&] { MetricsWriter::openForResume(path, 10); }) ==
        path + ":2:11: invalid JSON: expected a member name in double quotes "
               "but found '}'");
}

TEST_CASE("timing fields are the keys ending in _s or _ms", "[Metrics]") {
  CHECK(isTimingField("elapsed_s"));
  CHECK(isTimingField("tokens_per_s"));
  CHECK(isTimingField("step_ms"));
  CHECK_FALSE(isTimingField("step"));
  CHECK_FALSE(isTimingField("val_loss"));
  CHECK_FALSE(isTimingField("lr"));
  CHECK_FALSE(isTimingField("tokens"));
}
