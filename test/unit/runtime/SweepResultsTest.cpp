//===- SweepResultsTest.cpp - A sweep's records of finished cells ---------===//
#include "runtime/SweepResults.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <fstream>

namespace {

const char *const kGrid = R"(
[sweep]
budget = 500000
n_layer = [2]
tokens_per_param = 2

[model]
vocab = 256
n_head = 2
seq_len = 64

[train]
batch = 8
lr = 3e-4

[[scheme]]
scheme = "preln"
)";

/// A results file holding one record for `cell` with spec text `spec`.
void writeRecord(const std::filesystem::path &file, const drc::SweepCell &cell,
                 const std::string &spec) {
  drc::JsonValue record = drc::JsonValue::object();
  record.set("cell", cell.id);
  record.set("spec", spec);
  std::ofstream(file) << drc::toJson(record) << "\n";
}

} // namespace

TEST_CASE("a sweep's record counts for its cell when the specs agree, "
          "however they are written",
          "[sweep]") {
  drc::test::ScratchDirectory dir;
  std::vector<drc::SweepCell> cells =
      drc::planSweep(drc::parseSweepSpec(kGrid, "grid.toml"));
  REQUIRE(cells.size() == 1);
  const drc::SweepCell &cell = cells[0];
  std::filesystem::path file = dir / "results.jsonl";

  // Another printer's digits and a comment: the same spec.
  std::string spec = cell.specToml;
  size_t lr = spec.find("lr = 0.0003\n");
  REQUIRE(lr != std::string::npos);
  writeRecord(file, cell,
              spec.substr(0, lr) + "lr = 0.00029999999999999997 # x\n" +
                  spec.substr(lr + 12));
  CHECK(drc::SweepResults(file).find(cell) != nullptr);

  // Another learning rate: refused, naming it.
  writeRecord(file, cell,
              spec.substr(0, lr) + "lr = 0.001\n" + spec.substr(lr + 12));
  drc::SweepResults other(file);
  CHECK(drc::test::inputErrorText([&] { other.find(cell); }) ==
        file.string() + ": holds a result for cell " + cell.id +
            " of a different spec (it has [train] lr = 0.001, but this "
            "command gives 0.0003: another grid, or this one changed); use "
            "another --out directory");
}
