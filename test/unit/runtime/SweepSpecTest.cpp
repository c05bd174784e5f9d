//===- SweepSpecTest.cpp - Sweep grids: cells, shapes and bad input -------===//
#include "runtime/SweepSpec.h"

#include "EditedText.h"
#include "InputErrorText.h"

#include <catch2/catch.hpp>

using drc::test::inputErrorText;

namespace {

/// A small grid: two designs, two depths, HC with two learning rates.
const char *const kGrid = R"(
[sweep]
budget = 500000
n_layer = [2, 4]
seeds = [1]
tokens_per_param = 2

[model]
vocab = 256
n_head = 2
seq_len = 64

[train]
batch = 8
lr = 2e-3
eval_every = 1000

[[scheme]]
scheme = "preln"

[[scheme]]
label = "hc4"
scheme = "hc"
streams = 4
lr = [1e-3, 2e-3]
)";

/// kGrid with `from` replaced by `to` (which must occur).
std::string edited(const std::string &from, const std::string &to) {
  return drc::test::editedText(kGrid, from, to);
}

} // namespace

TEST_CASE("a sweep grid plans one cell per scheme, depth, rate and seed",
          "[sweep]") {
  drc::SweepSpec sweep = drc::parseSweepSpec(kGrid, "grid.toml");
  std::vector<drc::SweepCell> cells = drc::planSweep(sweep);
  REQUIRE(cells.size() == 6); // preln x 2 depths + hc4 x 2 depths x 2 rates
  CHECK(cells[0].id == "preln-L2-lr0.002-s1");
  CHECK(cells[2].id == "hc4-L2-lr0.001-s1");
  CHECK(cells[5].id == "hc4-L4-lr0.002-s1");
  for (const drc::SweepCell &cell : cells) {
    INFO(cell.id);
    // Each depth's width is the solver's, and the cell spec says so.
    drc::SolvedShape s = drc::solveShape(500000, cell.nLayer, 2, 256);
    CHECK(cell.spec.model.dModel == s.dModel);
    CHECK(cell.spec.model.nLayer == cell.nLayer);
    CHECK(cell.spec.model.dFF == s.dFF);
    CHECK(cell.shape.withinTolerance());
    // Every cell trains on the same tokens: 2 per budgeted parameter.
    CHECK(cell.steps == (2 * 500000 + 8 * 64 - 1) / (8 * 64));
    CHECK(cell.spec.train.steps == cell.steps);
    CHECK(cell.spec.train.lr == cell.lr);
    CHECK(cell.spec.train.seed == 1);
    CHECK(cell.spec.train.evalEvery == 1000); // the shared recipe
  }
  CHECK(cells[0].spec.residual.scheme == "preln");
  CHECK(cells[3].spec.residual.scheme == "hc");
  REQUIRE(cells[3].spec.residual.options.size() == 1);
  CHECK(cells[3].spec.residual.options[0].name == "streams");
  CHECK(cells[3].spec.residual.options[0].integer == 4);
  // A cell's spec stands alone: parsed again, it is the same model.
  drc::ModelSpec again = drc::parseModelSpec(cells[3].specToml, "cell.toml");
  CHECK(drc::modelFingerprint(again) == drc::modelFingerprint(cells[3].spec));
}

TEST_CASE("a sweep grid's mistakes are errors at their place", "[sweep]") {
  auto plan = [](const std::string &text) {
    return drc::planSweep(drc::parseSweepSpec(text, "grid.toml"));
  };
  SECTION("an unknown scheme names the library") {
    std::string e =
        inputErrorText([&] { plan(edited("\"preln\"", "\"prelm\"")); });
    CHECK(e.find("grid.toml:19:10: [[scheme]] scheme 'prelm' is not in the "
                 "library") == 0);
    CHECK(e.find("did you mean 'preln'?") != std::string::npos);
  }
  SECTION("a depth with no width within 3% of the budget") {
    // At 16 layers the widths 48 and 52 miss 500k by -6.3% and +9%.
    std::string e = inputErrorText(
        [&] { plan(edited("n_layer = [2, 4]", "n_layer = [2, 16]")); });
    CHECK(e.find("grid.toml:3:10: [sweep] budget = 500000 has no d_model "
                 "within ±3% at n_layer = 16: the closest, d_model = 48") == 0);
  }
  SECTION("keys the sweep sets itself") {
    std::string e = inputErrorText(
        [&] { plan(edited("seq_len = 64", "seq_len = 64\nd_model = 64")); });
    CHECK(e.find("grid.toml:12:11: [model] d_model is solved per depth from "
                 "[sweep] budget in a sweep; remove it") == 0);
    e = inputErrorText(
        [&] { plan(edited("batch = 8", "batch = 8\nsteps = 10")); });
    CHECK(e.find("[train] steps follows from [sweep] tokens_per_param") !=
          std::string::npos);
  }
  SECTION("a misspelt [sweep] key") {
    std::string e =
        inputErrorText([&] { plan(edited("seeds = [1]", "seed = [1]")); });
    CHECK(e.find("grid.toml:5:1: unknown key 'seed' in [sweep]; did you mean "
                 "'seeds'?") == 0);
  }
  SECTION("a misspelt [model] key, found in the cell specs") {
    std::string e = inputErrorText(
        [&] { plan(edited("n_head = 2", "n_head = 2\nn_heads = 2")); });
    CHECK(e.find("grid.toml (cell preln-L2-lr0.002-s1)") == 0);
    CHECK(e.find("unknown key 'n_heads' in [model]; did you mean 'n_head'?") !=
          std::string::npos);
  }
  SECTION("a scheme entry without a scheme") {
    std::string e = inputErrorText(
        [&] { plan(edited("scheme = \"preln\"", "label = \"x\"")); });
    CHECK(e.find("grid.toml:18:1: [[scheme]] needs scheme = \"NAME\"") == 0);
  }
  SECTION("two entries with one label") {
    std::string e = inputErrorText(
        [&] { plan(edited("label = \"hc4\"", "label = \"preln\"")); });
    CHECK(e.find("[[scheme]] label 'preln' is used twice") !=
          std::string::npos);
  }
  SECTION("a baseline that is no entry, or the entry itself") {
    std::string e = inputErrorText([&] {
      plan(edited("streams = 4", "streams = 4\nbaseline = \"pre\""));
    });
    CHECK(e.find("grid.toml:25:12: [[scheme]] hc4 has baseline 'pre', which "
                 "is not the label of an entry (labels: hc4, preln)") == 0);
    e = inputErrorText([&] {
      plan(edited("streams = 4", "streams = 4\nbaseline = \"hc4\""));
    });
    CHECK(e.find("which is the entry itself") != std::string::npos);
    drc::SweepSpec ok = drc::parseSweepSpec(
        edited("streams = 4", "streams = 4\nbaseline = \"preln\""),
        "grid.toml");
    CHECK(ok.schemes[1].baseline == "preln");
    CHECK(ok.schemes[0].baseline.empty());
    // Not part of the cells' [residual] tables: their specs are unchanged.
    CHECK(drc::planSweep(ok)[2].specToml ==
          drc::planSweep(drc::parseSweepSpec(kGrid, "grid.toml"))[2].specToml);
  }
  SECTION("no budget") {
    std::string e =
        inputErrorText([&] { plan(edited("budget = 500000\n", "")); });
    CHECK(e.find("grid.toml: [sweep] budget must be set") == 0);
  }
}
