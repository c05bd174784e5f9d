//===- CudaProgramTest.cpp - Replaying a manifest on a recording device ---===//
//
// A stand-in device keeps memory in host vectors and records launches, so
// the host side of a GPU program (buffers, copies, launch order, kernel
// parameters, results) is checked on a machine without a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudaProgram.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include "ColumnMajorReference.h"
#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>

namespace {

class RecordingDevice : public drc::CudaDevice {
public:
  std::map<uint64_t, std::vector<char>> memory;
  std::vector<std::string> kernels;          ///< launched, in order
  std::vector<std::vector<uint64_t>> params; ///< each launch's, as u64
  std::function<void()> onSynchronize;
  std::string ptx;
  int freed = 0;

  uint64_t allocate(size_t bytes) override {
    uint64_t address = 0x10000 * (memory.size() + 1);
    memory[address].assign(bytes, 0);
    return address;
  }
  void free(uint64_t) override { ++freed; }
  void copyToDevice(uint64_t address, const void *data, size_t bytes) override {
    REQUIRE(memory.at(address).size() == bytes);
    std::memcpy(memory.at(address).data(), data, bytes);
  }
  void copyToHost(void *data, uint64_t address, size_t bytes) override {
    REQUIRE(memory.at(address).size() == bytes);
    std::memcpy(data, memory.at(address).data(), bytes);
  }
  void *loadModule(const std::string &text) override {
    if (text == "bad cubin")
      throw drc::Error("the CUDA driver rejected the module: bad");
    ptx = text;
    return this;
  }
  void *function(void *, const std::string &name) override {
    names.push_back(name);
    return reinterpret_cast<void *>(names.size());
  }
  void launch(void *function, const uint32_t grid[3], const uint32_t block[3],
              void **parameters) override {
    CHECK(grid[0] >= 1);
    CHECK(block[0] >= 1);
    std::string name = names.at(reinterpret_cast<size_t>(function) - 1);
    std::vector<uint64_t> values;
    for (size_t i = 0; i < 7; ++i)
      values.push_back(*static_cast<uint64_t *>(parameters[i]));
    // A recorded launch keeps the parameters it had (as CUDA's does).
    queue([this, name, values] {
      kernels.push_back(name);
      params.push_back(values);
    });
  }
  std::vector<drc::ColumnMajorGemm> prepared, gemms;
  void prepareGemm(const drc::ColumnMajorGemm &gemm) override {
    prepared.push_back(gemm);
  }
  /// Computes the product as cuBLAS defines it, on the host memory.
  void gemm(const drc::ColumnMajorGemm &g, uint64_t x, uint64_t y,
            uint64_t d) override {
    queue([this, g, x, y, d] {
      gemms.push_back(g);
      drc::test::columnMajorGemm(g, at(x), at(y), at(d));
    });
  }
  void synchronize() override {
    REQUIRE_FALSE(capturing);
    if (onSynchronize)
      onSynchronize();
  }

  /// Stream capture: launches and products recorded instead of run, and
  /// run when the graph is launched. `refuse` makes the next capture fail:
  /// at its first launch ("launch") or when it ends ("instantiate").
  std::string refuse;
  int captures = 0, graphLaunches = 0, graphsDestroyed = 0;
  void beginCapture() override {
    REQUIRE_FALSE(capturing);
    capturing = true;
    ++captures;
    recording.clear();
  }
  void *endCapture() override {
    REQUIRE(capturing);
    capturing = false;
    if (refuse == "instantiate")
      throw drc::Error("CUDA cuGraphInstantiate failed: refused");
    graphs.push_back(std::move(recording));
    return reinterpret_cast<void *>(graphs.size());
  }
  void launchGraph(void *graph) override {
    ++graphLaunches;
    for (const std::function<void()> &work :
         graphs.at(reinterpret_cast<size_t>(graph) - 1))
      work();
  }
  void destroyGraph(void *) override { ++graphsDestroyed; }
  /// The host address of a device address inside an allocation.
  float *at(uint64_t address) {
    auto it = std::prev(memory.upper_bound(address));
    return reinterpret_cast<float *>(it->second.data() + (address - it->first));
  }
  float *floats(uint64_t address) {
    return reinterpret_cast<float *>(memory.at(address).data());
  }

private:
  std::vector<std::string> names;
  bool capturing = false;
  std::vector<std::function<void()>> recording;
  std::vector<std::vector<std::function<void()>>> graphs;

  /// Runs `work` now, or records it while capturing.
  void queue(std::function<void()> work) {
    if (!capturing)
      return work();
    if (refuse == "launch")
      throw drc::Error("CUDA cuLaunchKernel failed: "
                       "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
    recording.push_back(std::move(work));
  }
};

/// A view of `buffer`: 8 elements from offset 0, stride 1.
std::string view(int buffer, const char *dtype = "f32") {
  return R"j({"buffer": )j" + std::to_string(buffer) + R"j(, "dtype": ")j" +
         dtype + R"j(", "offset": 0, "sizes": [1], "strides": [1]})j";
}

/// loss(params[8], tokens[4], targets[4], out[1]) with a scratch and a
/// constant buffer and two launches; train_step(params, grads, m, v,
/// tokens, targets, lr, step, out[2]) with one launch.
std::string manifest() {
  return R"j({"format": "drc-cuda-1", "chip": "sm_90", "spec": "s;tokens=4", "ptx": "kernels.ptx",
  "memref_abi": "descriptor", "functions": {
  "loss": {"arguments": [{"shape": [8], "dtype": "f32"}, {"shape": [4], "dtype": "i32"},
                         {"shape": [4], "dtype": "i32"}, {"shape": [1], "dtype": "f32"}],
           "arena_bytes": 16,
           "buffers": [{"buffer": 4, "bytes": 16, "offset": 0}, {"buffer": 5, "bytes": 8, "f32": [1.5, 2]}],
           "launches": [{"kernel": "loss_a", "grid": [2, 1, 1], "block": [4, 1, 1], "operands": [)j" +
         view(0) + ", " + view(5) + R"j(]},
                        {"kernel": "loss_b", "grid": [1, 1, 1], "block": [1, 1, 1], "operands": [)j" +
         view(4) + ", " + view(3) + R"j(]}]},
  "train_step": {"arguments": [{"shape": [8], "dtype": "f32"}, {"shape": [8], "dtype": "f32"},
                               {"shape": [8], "dtype": "f32"}, {"shape": [8], "dtype": "f32"},
                               {"shape": [4], "dtype": "i32"}, {"shape": [4], "dtype": "i32"},
                               {"shape": [], "dtype": "f32"}, {"shape": [], "dtype": "f32"},
                               {"shape": [2], "dtype": "f32"}],
           "arena_bytes": 0, "buffers": [],
           "launches": [{"kernel": "step", "grid": [1, 1, 1], "block": [8, 1, 1], "operands": [)j" +
         view(0) + ", " + view(8) + R"j(]}]}},
  "parameters": "param w shape=8 offset=0 init=zeros decay=1\n"})j";
}

/// The manifest above and a stand-in PTX file, in `dir`.
void writeArtifacts(const drc::test::ScratchDirectory &dir) {
  drc::writeFileAtomically((dir / "manifest.json").string(), manifest());
  drc::writeFileAtomically((dir / "kernels.ptx").string(), "// ptx\n");
}

} // namespace

TEST_CASE("a GPU program replays its manifest on the device", "[cuda]") {
  drc::test::ScratchDirectory dir;
  writeArtifacts(dir);
  RecordingDevice device;
  {
    drc::CudaProgram program(device, dir.path());
    CHECK(device.ptx == "// ptx\n");
    CHECK(program.tokensPerCall() == 4);
    CHECK_FALSE(program.hasNextTwoHead());
    CHECK(program.parameters().numElements() == 16); // padded to 16 floats
    // loss: 4 arguments and a constant; train_step: 9 arguments, the
    // parameters shared with loss; the scratch arena last.
    REQUIRE(device.memory.size() == 14);
    // The constant is on the device before any call.
    uint64_t constant = 0x10000 * 5, arena = 0x10000 * 14;
    CHECK(device.floats(constant)[1] == 2.0f);

    float params[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t tokens[4] = {1, 2, 3, 4}, targets[4] = {5, 6, 7, 8};
    uint64_t lossOut = 0x10000 * 4;
    device.onSynchronize = [&] { device.floats(lossOut)[0] = 3.25f; };
    CHECK(program.loss(params, tokens, targets) == 3.25f);
    REQUIRE(device.kernels == std::vector<std::string>{"loss_a", "loss_b"});
    // Kernel parameters: base, base, offset, size, stride of each view.
    CHECK(device.params[0][0] == 0x10000);
    CHECK(device.params[0][5] == constant);
    CHECK(device.params[1][0] == arena); // the scratch buffer, at offset 0
    CHECK(device.params[1][5] == lossOut);
    CHECK(device.floats(0x10000)[7] == 8.0f);
    CHECK(std::memcmp(device.memory.at(0x20000).data(), tokens, 16) == 0);

    // train_step: buffers in, one launch, (loss, norm) out; the training
    // buffers stay on the device.
    float grads[8] = {}, m[8] = {}, v[8] = {};
    drc::TrainingBuffers buffers{params, grads, m, v};
    uint64_t stepOut = 0x10000 * 13;
    device.onSynchronize = [&] {
      CHECK(device.floats(0x10000 * 11)[0] == 0.5f); // lr
      CHECK(device.floats(0x10000 * 12)[0] == 3.0f); // step
      device.floats(0x10000)[0] -= 1;                // the update
      device.floats(0x10000 * 6)[2] = 4;             // a gradient
      device.floats(stepOut)[0] = 2.5f;
      device.floats(stepOut)[1] = 0.75f;
    };
    drc::StepResult r = program.trainStep(buffers, tokens, targets, 0.5f, 3);
    CHECK(r.loss == 2.5f);
    CHECK(r.gradNorm == 0.75f);
    CHECK(device.kernels.back() == "step");
    CHECK(params[0] == 1.0f);
    // Another step with the same buffers copies none of them in.
    params[0] = 100;
    r = program.trainStep(buffers, tokens, targets, 0.5f, 3);
    CHECK(params[0] == 100.0f);
    program.syncTrainingBuffers(buffers);
    CHECK(params[0] == -1.0f);
    CHECK(grads[2] == 4.0f);

    // loss shares train_step's parameters: the trained ones are not copied.
    float before = device.floats(0x10000)[0];
    params[0] = 50;
    device.onSynchronize = [&] {
      CHECK(device.floats(0x10000)[0] == before);
      device.floats(lossOut)[0] = 1.0f;
    };
    CHECK(program.loss(params, tokens, targets) == 1.0f);
    // Other parameters are copied in, after the trained ones came back.
    float other[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    device.onSynchronize = [&] {
      CHECK(device.floats(0x10000)[0] == 9.0f);
      device.floats(lossOut)[0] = 0.5f;
    };
    CHECK(program.loss(other, tokens, targets) == 0.5f);
    CHECK(params[0] == before);
    // The next step copies the training buffers in again.
    device.onSynchronize = [&] { CHECK(device.floats(0x10000)[0] == before); };
    program.trainStep(buffers, tokens, targets, 0.5f, 4);
  }
  CHECK(device.freed == 14); // the parameters are shared, freed once
}

TEST_CASE("a GPU program runs its products in the device's BLAS", "[cuda]") {
  // loss: out [2, 2] += params [2, 2] · a constant [2, 2], as a gemm.
  std::string m = manifest();
  size_t begin = m.find(R"j("buffers": [{"buffer": 4)j");
  size_t end = m.find(R"j("train_step")j");
  m.replace(begin, end - begin,
            R"j("buffers": [{"buffer": 4, "bytes": 16, "f32": [1, 2, 3, 4]}],
    "launches": [{"gemm": {
      "a": {"buffer": 0, "dtype": "f32", "offset": 0, "sizes": [1, 2, 2], "strides": [0, 2, 1]},
      "b": {"buffer": 4, "dtype": "f32", "offset": 0, "sizes": [1, 2, 2], "strides": [0, 2, 1]},
      "c": {"buffer": 3, "dtype": "f32", "offset": 0, "sizes": [1, 2, 2], "strides": [0, 2, 1]}}}]},
  )j");
  auto replace = [&](const std::string &from, const std::string &to) {
    m.replace(m.find(from), from.size(), to);
  };
  replace(R"j({"shape": [1], "dtype": "f32"}],)j",
          R"j({"shape": [4], "dtype": "f32"}],)j");
  replace(R"j("arena_bytes": 16)j", R"j("arena_bytes": 0)j");
  drc::test::ScratchDirectory dir;
  drc::writeFileAtomically((dir / "manifest.json").string(), m);
  drc::writeFileAtomically((dir / "kernels.ptx").string(), "// ptx\n");
  RecordingDevice device;
  drc::CudaProgram program(device, dir.path());
  // Readied when the program loads: Cᵀ = Bᵀ·Aᵀ, 2 x 2 x 2.
  REQUIRE(device.prepared.size() == 1);
  CHECK(device.prepared[0].m == 2);
  CHECK(device.prepared[0].k == 2);
  float params[8] = {1, 2, 3, 4, 0, 0, 0, 0};
  int32_t tokens[4] = {}, targets[4] = {};
  float nextTwo = 0;
  // [[1, 2], [3, 4]]² = [[7, 10], [15, 22]]: out[0] is the loss, out[1]
  // the next-two loss.
  CHECK(program.losses(params, tokens, targets, nextTwo) == 7.0f);
  CHECK(nextTwo == 10.0f);
  CHECK(device.gemms.size() == 1);
  CHECK(device.kernels.empty());
  // Again: the product adds to what the last call left in out.
  CHECK(program.losses(params, tokens, targets, nextTwo) == 14.0f);

  // A product that overwrites C ("accumulate": false: a zero fill folded
  // into it) ignores what C held.
  size_t at = m.find(R"j("strides": [0, 2, 1]}}}])j");
  REQUIRE(at != std::string::npos);
  m.insert(at + std::string(R"j("strides": [0, 2, 1]})j").size(),
           R"j(, "accumulate": false)j");
  drc::writeFileAtomically((dir / "manifest.json").string(), m);
  drc::CudaProgram overwriting(device, dir.path());
  CHECK(overwriting.losses(params, tokens, targets, nextTwo) == 7.0f);
  CHECK(overwriting.losses(params, tokens, targets, nextTwo) == 7.0f);

  // Replayed from a graph, a product reads the memory of the replay: new
  // parameters give a new product.
  drc::CudaProgram graphed(device, dir.path());
  graphed.setGraphs(true);
  CHECK(graphed.losses(params, tokens, targets, nextTwo) == 7.0f);
  params[0] = 2; // [[2, 2], [3, 4]] · [[1, 2], [3, 4]]: 2 + 6
  CHECK(graphed.losses(params, tokens, targets, nextTwo) == 8.0f);
  CHECK(device.captures == 1);
  CHECK(device.graphLaunches == 2);
}

TEST_CASE("a profiled GPU program times every launch", "[cuda]") {
  drc::test::ScratchDirectory dir;
  writeArtifacts(dir);
  RecordingDevice device;
  drc::CudaProgram program(device, dir.path());
  drc::KernelProfile profile;
  program.setProfile(&profile);
  program.setGraphs(true); // a profile times launches: no graph
  int synchronized = 0;
  device.onSynchronize = [&] { ++synchronized; };
  float params[8] = {};
  int32_t tokens[4] = {}, targets[4] = {};
  program.loss(params, tokens, targets);
  CHECK(device.captures == 0);
  CHECK(synchronized == 3); // after each of the two launches, and at the end
  std::string report = profile.report(10);
  CHECK_THAT(report, Catch::Matchers::Contains("loss_a "));
  CHECK_THAT(report, Catch::Matchers::Contains("loss_b "));
  CHECK_THAT(report, Catch::Matchers::Contains("(2 kernels)"));
}

TEST_CASE("a GPU program with graphs captures each entry point once",
          "[cuda]") {
  drc::test::ScratchDirectory dir;
  writeArtifacts(dir);
  RecordingDevice device;
  {
    drc::CudaProgram program(device, dir.path());
    program.setGraphs(true);
    float params[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t tokens[4] = {1, 2, 3, 4}, targets[4] = {5, 6, 7, 8};
    uint64_t lossOut = 0x10000 * 4;
    float loss = 3.25f;
    device.onSynchronize = [&] { device.floats(lossOut)[0] = loss; };
    CHECK(program.loss(params, tokens, targets) == 3.25f);
    loss = 1.5f;
    CHECK(program.loss(params, tokens, targets) == 1.5f);
    // Captured by the first call, replayed by both, with the launches'
    // parameters as recorded.
    CHECK(device.captures == 1);
    CHECK(device.graphLaunches == 2);
    REQUIRE(device.kernels ==
            std::vector<std::string>{"loss_a", "loss_b", "loss_a", "loss_b"});
    CHECK(device.params[2] == device.params[0]);
    CHECK(device.params[3][5] == lossOut);

    // Each call's inputs are on the device before its graph runs.
    float grads[8] = {}, m[8] = {}, v[8] = {};
    drc::TrainingBuffers buffers{params, grads, m, v};
    float lr = 0.5f;
    device.onSynchronize = [&] {
      CHECK(device.floats(0x10000 * 11)[0] == lr);
      device.floats(0x10000 * 13)[0] = 2.5f;
    };
    CHECK(program.trainStep(buffers, tokens, targets, lr, 1).loss == 2.5f);
    lr = 0.25f;
    program.trainStep(buffers, tokens, targets, lr, 2);
    CHECK(device.captures == 2);
    CHECK(device.graphLaunches == 4);
    CHECK(device.kernels.size() == 6);
    CHECK(device.kernels.back() == "step");
  }
  CHECK(device.graphsDestroyed == 2);
}

TEST_CASE("a GPU program launches one by one where the driver refuses a "
          "graph",
          "[cuda]") {
  drc::test::ScratchDirectory dir;
  writeArtifacts(dir);
  for (const char *refused : {"launch", "instantiate"}) {
    INFO("the capture fails at: " << refused);
    RecordingDevice device;
    device.refuse = refused;
    drc::CudaProgram program(device, dir.path());
    program.setGraphs(true);
    uint64_t lossOut = 0x10000 * 4;
    device.onSynchronize = [&] { device.floats(lossOut)[0] = 0.5f; };
    float params[8] = {};
    int32_t tokens[4] = {}, targets[4] = {};
    CHECK(program.loss(params, tokens, targets) == 0.5f);
    CHECK(program.loss(params, tokens, targets) == 0.5f);
    // One try; both calls launched their kernels themselves.
    CHECK(device.captures == 1);
    CHECK(device.graphLaunches == 0);
    CHECK(device.kernels ==
          std::vector<std::string>{"loss_a", "loss_b", "loss_a", "loss_b"});
  }
}

TEST_CASE("a GPU program loads the cubin beside its PTX when it can",
          "[cuda]") {
  drc::test::ScratchDirectory dir;
  writeArtifacts(dir);
  drc::writeFileAtomically((dir / "kernels.cubin").string(), "ELF cubin");
  {
    RecordingDevice device;
    drc::CudaProgram program(device, dir.path());
    CHECK(device.ptx == "ELF cubin");
  }
  // One the driver rejects: the PTX instead.
  drc::writeFileAtomically((dir / "kernels.cubin").string(), "bad cubin");
  {
    RecordingDevice device;
    drc::CudaProgram program(device, dir.path());
    CHECK(device.ptx == "// ptx\n");
  }
  // One older than the PTX is stale: the PTX.
  drc::writeFileAtomically((dir / "kernels.cubin").string(), "ELF cubin");
  std::filesystem::last_write_time(
      dir / "kernels.cubin",
      std::filesystem::last_write_time(dir / "kernels.ptx") -
          std::chrono::hours(1));
  {
    RecordingDevice device;
    drc::CudaProgram program(device, dir.path());
    CHECK(device.ptx == "// ptx\n");
  }
}

TEST_CASE("a GPU program needs both entry points", "[cuda]") {
  drc::test::ScratchDirectory dir;
  std::string text = manifest();
  text.replace(text.find("\"train_step\""), 12, "\"train\"");
  drc::writeFileAtomically((dir / "manifest.json").string(), text);
  RecordingDevice device;
  CHECK_THAT(drc::test::inputErrorText(
                 [&] { drc::CudaProgram program(device, dir.path()); }),
             Catch::Matchers::Contains("has no train_step function"));
}
