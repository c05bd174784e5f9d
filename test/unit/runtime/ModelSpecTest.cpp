//===- ModelSpecTest.cpp - A run's spec and the model fingerprint ---------===//
#include "runtime/ModelSpec.h"

#include "EditedText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <fstream>

namespace {

/// A spec of a user's scheme, named relative to the spec, with comments.
const char *const kSpec = R"(# my experiment
[model]
vocab = 256
d_model = 32
n_layer = 2
n_head = 2
seq_len = 16

[residual]
scheme_file = "schemes/../schemes/mine.mlir" # the scheme under test
streams = 2

[train]
batch = 4
steps = 12
lr = 3e-4
seed = 3
)";

/// kSpec with `from` replaced by `to` (which must occur).
std::string edited(const std::string &from, const std::string &to) {
  return drc::test::editedText(kSpec, from, to);
}

/// A scratch directory holding schemes/mine.mlir (the spec parser only
/// checks that the file exists).
struct SchemeDirectory : drc::test::ScratchDirectory {
  SchemeDirectory() {
    std::filesystem::create_directories(*this / "schemes");
    std::ofstream(*this / "schemes/mine.mlir") << "module {}\n";
  }
};

} // namespace

TEST_CASE("a run's spec reads back as the same program with the run's steps "
          "and seed, from anywhere",
          "[spec]") {
  SchemeDirectory dir;
  drc::ModelSpec spec =
      drc::parseModelSpec(kSpec, (dir / "spec.toml").string());
  std::string run = drc::runSpecText(spec, 40, 7);
  CHECK(run.rfind("# The run's spec: " + (dir / "spec.toml").string() +
                      " with the run's steps and seed\n",
                  0) == 0);
  // Read from elsewhere: the scheme file's path is absolute in the text.
  drc::ModelSpec again = drc::parseModelSpec(run, "/nowhere/spec.toml");
  CHECK(again.train.steps == 40);
  CHECK(again.train.seed == 7);
  CHECK(again.train.lr == spec.train.lr);
  CHECK(again.residual.schemeFile == (dir / "schemes/mine.mlir").string());
  REQUIRE(again.residual.options.size() == 1);
  CHECK(again.residual.options[0].name == "streams");
  CHECK(again.residual.options[0].integer == 2);
  CHECK(drc::programFingerprint(again) == drc::programFingerprint(spec));
}

TEST_CASE("a user's scheme file counts in the fingerprint by its absolute "
          "path, however the spec reaches it",
          "[spec]") {
  SchemeDirectory dir;
  std::filesystem::create_directories(dir / "sub");
  drc::ModelSpec direct =
      drc::parseModelSpec(kSpec, (dir / "spec.toml").string());
  drc::ModelSpec roundabout =
      drc::parseModelSpec(kSpec, (dir / "sub/../spec.toml").string());
  CHECK(direct.residual.schemeFile != roundabout.residual.schemeFile);
  CHECK(drc::modelFingerprint(direct) == drc::modelFingerprint(roundabout));
  CHECK(drc::modelFingerprint(direct).find(
            "file:" + (dir / "schemes/mine.mlir").string()) == 0);
}

TEST_CASE("two run specs differ at the first key one sets otherwise",
          "[spec]") {
  SchemeDirectory dir;
  std::string path = (dir / "spec.toml").string();
  auto run = [&](const std::string &text, int64_t steps = 12) {
    return drc::runSpecText(drc::parseModelSpec(text, path), steps, 3);
  };
  auto difference = [&](const std::string &given) {
    return drc::specDifference(run(kSpec), "run/spec.toml", given);
  };
  // Comments, the header and how a value is written do not count.
  CHECK(difference(run(edited("lr = 3e-4", "lr = 0.0003 # slower"))) == "");
  CHECK(difference(run(edited("lr = 3e-4", "lr = 1e-3"))) ==
        "[train] lr = 0.0003, but this command gives 0.001");
  CHECK(difference(run(kSpec, 13)) ==
        "[train] steps = 12, but this command gives 13");
  CHECK(difference(run(edited("streams = 2\n", ""))) ==
        "[residual] streams = 2, but this command leaves it unset");
  CHECK(difference(run(edited("streams = 2", "streams = 2\ndynamic = true"))) ==
        "no [residual] dynamic, but this command sets it to true");
}
