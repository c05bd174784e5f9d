//===- CheckpointTest.cpp - Save, resume, and refuse the wrong model ------===//

#include "runtime/Checkpoint.h"

#include "runtime/Error.h"
#include "runtime/ParameterInit.h"
#include "runtime/Safetensors.h"

#include "InputErrorText.h"
#include "PreLnParameters.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

using namespace drc;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;

namespace {

/// Parameters, moments and state as a trainer would hold them.
struct Run {
  explicit Run(const ParameterTable &table)
      : params(size_t(table.numElements())), m(params.size()),
        v(params.size()) {
    initParameters(table, 5, params.data());
    for (size_t i = 0; i < params.size(); ++i) {
      m[i] = float(i) * 1e-3f;
      v[i] = float(i) * 1e-6f + 1;
    }
  }
  std::vector<float> params, m, v;
};

TrainState someState() {
  TrainState state;
  state.step = 1200;
  state.seed = 18446744073709551557ull;
  state.specFingerprint = "sha256:ab12";
  state.extra = {{"data_position", "98304"}, {"run", "pre-ln-L2"}};
  return state;
}

/// Same values at every parameter's elements (padding is not saved).
bool sameParameters(const ParameterTable &table, const std::vector<float> &a,
                    const std::vector<float> &b) {
  for (const ParameterInfo &p : table.parameters())
    if (std::memcmp(a.data() + p.offset, b.data() + p.offset,
                    size_t(p.numElements()) * sizeof(float)) != 0)
      return false;
  return true;
}

} // namespace

TEST_CASE("a checkpoint round-trips weights, moments and state",
          "[Checkpoint]") {
  ScratchDirectory dir;
  std::string path = dir / "step-1200.safetensors";
  ParameterTable table = test::preLnParameters(32, 16, 2, 48);
  Run saved(table);
  saveCheckpoint(path, table, saved.params.data(), saved.m.data(),
                 saved.v.data(), someState());

  Run loaded(ParameterTable{});
  loaded.params.assign(saved.params.size(), -1);
  loaded.m.assign(saved.params.size(), -1);
  loaded.v.assign(saved.params.size(), -1);
  TrainState state =
      loadCheckpoint(path, table, "sha256:ab12", loaded.params.data(),
                     loaded.m.data(), loaded.v.data());
  CHECK(sameParameters(table, saved.params, loaded.params));
  CHECK(sameParameters(table, saved.m, loaded.m));
  CHECK(sameParameters(table, saved.v, loaded.v));
  CHECK(state.step == 1200);
  CHECK(state.seed == 18446744073709551557ull);
  CHECK(state.specFingerprint == "sha256:ab12");
  CHECK(state.extra == someState().extra);

  // The documented tensor names and metadata keys.
  SafetensorsFile file(path);
  std::set<std::string> names;
  for (const TensorEntry &t : file.tensors())
    names.insert(t.name);
  CHECK(names.size() == 3 * table.size());
  for (const char *name :
       {"embed.weight", "optim.m.embed.weight", "optim.v.embed.weight",
        "blocks.1.attn.wq", "blocks.1.ffn.norm.gain", "blocks.1.ffn.w2",
        "optim.v.blocks.1.ffn.w3", "final_norm.gain", "unembed.weight"})
    CHECK(names.count(name));
  CHECK(file.find("blocks.0.ffn.w1")->shape == std::vector<int64_t>{48, 16});
  CHECK(file.metadata().at("format") == "drc-checkpoint");
  CHECK(file.metadata().at("format_version") == "1");
  CHECK(file.metadata().at("step") == "1200");
  CHECK(file.metadata().at("seed") == "18446744073709551557");
  CHECK(file.metadata().at("spec_fingerprint") == "sha256:ab12");
  CHECK(file.metadata().at("data_position") == "98304");
}

TEST_CASE("a weights-only load reads the parameters and nothing else",
          "[Checkpoint]") {
  ScratchDirectory dir;
  std::string path = dir / "c.safetensors";
  ParameterTable table = test::preLnParameters(32, 16, 1, 48);
  Run saved(table);
  saveCheckpoint(path, table, saved.params.data(), saved.m.data(),
                 saved.v.data(), someState());
  std::vector<float> params(saved.params.size(), -1);
  TrainState state =
      loadCheckpointWeights(path, table, "sha256:ab12", params.data());
  CHECK(sameParameters(table, saved.params, params));
  CHECK(state.step == 1200);
}

TEST_CASE("a checkpoint for another model is refused with the reason",
          "[Checkpoint]") {
  ScratchDirectory dir;
  std::string path = dir / "c.safetensors";
  const Init matrix = Init::truncNormal(0.02, 0.06);
  ParameterTable written;
  written.add("embed.weight", {8, 64}, matrix, true);
  written.add("blocks.0.attn.wq", {32, 64}, matrix, true);
  Run run(written);
  saveCheckpoint(path, written, run.params.data(), run.m.data(), run.v.data(),
                 someState());
  std::vector<float> params(1 << 14), m(1 << 14), v(1 << 14);
  auto loadWith = [&](const ParameterTable &table,
                      std::string_view fingerprint = "sha256:ab12") {
    return inputErrorText([&] {
      loadCheckpoint(path, table, fingerprint, params.data(), m.data(),
                     v.data());
    });
  };

  SECTION("shape mismatch") {
    ParameterTable expected;
    expected.add("embed.weight", {8, 64}, matrix, true);
    expected.add("blocks.0.attn.wq", {64, 64}, matrix, true);
    CHECK(loadWith(expected) ==
          "checkpoint " + path +
              ": tensor 'blocks.0.attn.wq' has shape [32, 64] but the spec "
              "expects [64, 64]; was it written for another model spec?");
  }
  SECTION("missing tensor") {
    ParameterTable expected = written;
    expected.add("final_norm.gain", {64}, Init::ones(), false);
    CHECK(loadWith(expected) ==
          "checkpoint " + path +
              ": tensors 'final_norm.gain', 'optim.m.final_norm.gain', "
              "'optim.v.final_norm.gain' are missing; was it written for "
              "another model spec?");
  }
  SECTION("extra tensors") {
    ParameterTable expected;
    expected.add("embed.weight", {8, 64}, matrix, true);
    CHECK(loadWith(expected) ==
          "checkpoint " + path +
              ": holds tensors 'blocks.0.attn.wq', 'optim.m.blocks.0.attn.wq', "
              "'optim.v.blocks.0.attn.wq' that the model spec does not have; "
              "was it written for another model spec?");
  }
  SECTION("fingerprint mismatch") {
    CHECK(loadWith(written, "sha256:cd34") ==
          "checkpoint " + path +
              ": was written for the model spec with fingerprint "
              "'sha256:ab12' but the compiled model's is 'sha256:cd34'; use "
              "the artifact compiled from the checkpoint's spec, or start a "
              "new run");
  }
  SECTION("not a drc checkpoint") {
    float w[1] = {1};
    writeSafetensors(path, {{"w", DType::F32, {1}, w}}, {});
    CHECK(loadWith(written) ==
          "checkpoint " + path +
              ": metadata has no 'format'; the file is not a drc checkpoint "
              "(or was damaged)");
  }
  SECTION("a newer format") {
    float w[1] = {1};
    writeSafetensors(path, {{"w", DType::F32, {1}, w}},
                     {{"format", "drc-checkpoint"}, {"format_version", "2"}});
    CHECK(loadWith(written) ==
          "checkpoint " + path +
              ": format version '2' is not the one this drc reads (1); load "
              "it with the drc version that wrote it");
  }
}

TEST_CASE("reserved metadata keys cannot be overridden", "[Checkpoint]") {
  ScratchDirectory dir;
  ParameterTable table;
  table.add("w", {4}, Init::zeros(), true);
  Run run(table);
  TrainState state = someState();
  state.extra["step"] = "7";
  CHECK_THROWS_WITH(saveCheckpoint(dir / "c.safetensors", table,
                                   run.params.data(), run.m.data(),
                                   run.v.data(), state),
                    "checkpoint metadata key 'step' is reserved");
}
