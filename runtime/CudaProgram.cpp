//===- CudaProgram.cpp - A compiled model run on an NVIDIA GPU -----------===//
#include "runtime/CudaProgram.h"

#include "runtime/Error.h"
#include "runtime/TomlFields.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace drc {

/// The kernels of `ptx`: from the cubin beside it (ptxas's output, no JIT
/// on the device) when there is one no older than the PTX and the driver
/// takes it, else from the PTX.
static void *loadKernels(CudaDevice &device, const std::filesystem::path &ptx) {
  std::filesystem::path cubin = ptx;
  cubin.replace_extension(".cubin");
  std::error_code ec;
  if (std::filesystem::exists(cubin, ec) &&
      std::filesystem::last_write_time(cubin, ec) >=
          std::filesystem::last_write_time(ptx, ec) &&
      !ec) {
    try {
      return device.loadModule(readInputFile(cubin.string(), "cubin"));
    } catch (const Error &e) {
      std::fprintf(stderr, "drc: %s: %s; compiling the PTX instead\n",
                   cubin.c_str(), e.what());
    }
  }
  return device.loadModule(readInputFile(ptx.string(), "PTX module"));
}

/// A product's name in a profile: "gemm 2048x1024x4096" (m x n x k in
/// cuBLAS's terms), with " x8" for a batch of 8.
static std::string gemmName(const ColumnMajorGemm &g) {
  return "gemm " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
         std::to_string(g.k) +
         (g.batch > 1 ? " x" + std::to_string(g.batch) : std::string());
}

CudaProgram::CudaProgram(CudaDevice &device,
                         const std::filesystem::path &artifacts)
    : device(device), manifest(loadCudaManifest(artifacts)) {
  for (const char *name : {"loss", "train_step"})
    if (!manifest.functions.count(name))
      throw InputError((artifacts / "manifest.json").string() + " has no " +
                       name +
                       " function; compile the model with drc-compile "
                       "--target=cuda");
  const CudaFunction &loss = manifest.functions.at("loss");
  const CudaFunction &step = manifest.functions.at("train_step");
  if (loss.arguments.size() != 4 || step.arguments.size() != 9)
    throw InputError((artifacts / "manifest.json").string() +
                     ": loss must take 4 arguments and train_step 9");
  tokens = loss.arguments[1].first;
  lossOutputs = loss.arguments[3].first;

  if (loss.arguments[0] != step.arguments[0])
    throw InputError((artifacts / "manifest.json").string() +
                     ": loss and train_step must take the same parameters");

  void *module = loadKernels(device, manifest.ptx);
  auto allocate = [&](size_t bytes) {
    allocations.push_back(device.allocate(bytes));
    return allocations.back();
  };
  // Arguments and constants; one parameter buffer for both functions
  // (argument 0 of each).
  uint64_t params = 0;
  int64_t arenaBytes = 0;
  for (const auto &[name, function] : manifest.functions) {
    Entry &entry = entries[name];
    for (const auto &[elements, type] : function.arguments) {
      size_t bytes = size_t(elements * cudaTypeBytes(type));
      bool shared = entry.buffers.empty() && params != 0;
      entry.argumentBytes.push_back(bytes);
      entry.buffers.push_back(shared ? params : allocate(bytes));
      if (params == 0)
        params = entry.buffers.back();
    }
    for (const CudaBuffer &buffer : function.buffers) {
      entry.buffers.push_back(0);
      if (buffer.values.empty())
        continue;
      entry.buffers.back() = allocate(size_t(buffer.bytes));
      device.copyToDevice(entry.buffers.back(), buffer.values.data(),
                          size_t(buffer.bytes));
    }
    arenaBytes = std::max(arenaBytes, function.arenaBytes);
  }
  // One arena for every function's scratch: they never run at once.
  uint64_t arena = arenaBytes > 0 ? allocate(size_t(arenaBytes)) : 0;
  for (const auto &[name, function] : manifest.functions) {
    Entry &entry = entries[name];
    size_t first = function.arguments.size();
    for (size_t i = 0; i < function.buffers.size(); ++i)
      if (function.buffers[i].values.empty())
        entry.buffers[first + i] = arena + uint64_t(function.buffers[i].offset);
    for (const CudaLaunch &launch : function.launches) {
      entry.arguments.emplace_back(launch, entry.buffers);
      if (launch.gemm) {
        entry.kernels.push_back(nullptr);
        entry.gemms.push_back(*columnMajor(*launch.gemm));
        device.prepareGemm(*entry.gemms.back());
        continue;
      }
      entry.kernels.push_back(device.function(module, launch.kernel));
      entry.gemms.emplace_back();
    }
  }
}

CudaProgram::~CudaProgram() {
  for (auto &[name, entry] : entries)
    if (entry.graph) {
      try {
        device.destroyGraph(entry.graph);
      } catch (const Error &) { // the process is ending a GPU run anyway
      }
    }
  for (uint64_t address : allocations)
    device.free(address);
}

void CudaProgram::enqueue(Entry &entry, const CudaFunction &function) {
  for (size_t l = 0; l < function.launches.size(); ++l) {
    auto began = std::chrono::steady_clock::now();
    if (const std::optional<ColumnMajorGemm> &g = entry.gemms[l]) {
      auto at = [&](int64_t buffer, int64_t offset) {
        return entry.buffers[size_t(buffer)] + uint64_t(offset) * 4;
      };
      device.gemm(*g, at(g->bufferX, g->offsetX), at(g->bufferY, g->offsetY),
                  at(g->bufferD, g->offsetD));
    } else {
      device.launch(entry.kernels[l], function.launches[l].grid.data(),
                    function.launches[l].block.data(),
                    entry.arguments[l].pointers());
    }
    if (profile) {
      device.synchronize();
      const CudaLaunch &launch = function.launches[l];
      profile->record(launch.gemm ? gemmName(*entry.gemms[l]) : launch.kernel,
                      std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - began)
                          .count());
    }
  }
}

void *CudaProgram::capture(const std::string &name, Entry &entry,
                           const CudaFunction &function) {
  try {
    device.beginCapture();
    try {
      enqueue(entry, function);
    } catch (const Error &) {
      // Leave capture mode; what was recorded is of no use.
      try {
        device.destroyGraph(device.endCapture());
      } catch (const Error &) {
      }
      throw;
    }
    return device.endCapture();
  } catch (const Error &e) {
    entry.graphRefused = true;
    std::fprintf(stderr,
                 "drc: %s: not replayed as a CUDA graph (%s); launching its "
                 "kernels one by one\n",
                 name.c_str(), e.what());
    return nullptr;
  }
}

void CudaProgram::run(const std::string &name,
                      const std::vector<const void *> &inputs,
                      const std::vector<std::pair<size_t, void *>> &outputs) {
  Entry &entry = entries.at(name);
  const CudaFunction &function = manifest.functions.at(name);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i])
      device.copyToDevice(entry.buffers[i], inputs[i], entry.argumentBytes[i]);
  // The kernels read every input from device buffers allocated once, so
  // the launches recorded by the first call serve every later one.
  if (graphs && !profile && !entry.graph && !entry.graphRefused)
    entry.graph = capture(name, entry, function);
  if (entry.graph && !profile)
    device.launchGraph(entry.graph);
  else
    enqueue(entry, function);
  device.synchronize();
  for (auto [argument, host] : outputs)
    device.copyToHost(host, entry.buffers[argument],
                      entry.argumentBytes[argument]);
}

static bool sameBuffers(const TrainingBuffers &a, const TrainingBuffers &b) {
  return a.params == b.params && a.grads == b.grads && a.adamM == b.adamM &&
         a.adamV == b.adamV;
}

StepResult CudaProgram::trainStep(const TrainingBuffers &b,
                                  const int32_t *inputs, const int32_t *targets,
                                  float lr, int64_t step) {
  float stepValue = float(step), out[2] = {0, 0};
  // The device holds b's contents after a step with b; otherwise copy them.
  bool onDevice = sameBuffers(b, resident);
  if (!onDevice && resident.params)
    syncTrainingBuffers(resident);
  resident = {}; // until this step has finished
  auto in = [&](const float *host) { return onDevice ? nullptr : host; };
  run("train_step",
      {in(b.params), in(b.grads), in(b.adamM), in(b.adamV), inputs, targets,
       &lr, &stepValue, nullptr},
      {{8, out}});
  resident = b;
  return {out[0], out[1]};
}

void CudaProgram::syncTrainingBuffers(const TrainingBuffers &b) {
  if (!resident.params || !sameBuffers(b, resident))
    return;
  Entry &entry = entries.at("train_step");
  float *host[4] = {b.params, b.grads, b.adamM, b.adamV};
  for (size_t i = 0; i < 4; ++i)
    device.copyToHost(host[i], entry.buffers[i], entry.argumentBytes[i]);
}

float CudaProgram::loss(const float *params, const int32_t *inputs,
                        const int32_t *targets) {
  float nextTwo = 0;
  return losses(params, inputs, targets, nextTwo);
}

float CudaProgram::losses(const float *params, const int32_t *inputs,
                          const int32_t *targets, float &nextTwo) {
  // The parameters being trained are already on the device (shared with
  // train_step); other ones replace them there, so the training buffers
  // go back to the host first.
  bool onDevice = resident.params && params == resident.params;
  if (!onDevice && resident.params) {
    syncTrainingBuffers(resident);
    resident = {};
  }
  std::vector<float> out(size_t(lossOutputs), 0.0f);
  run("loss", {onDevice ? nullptr : params, inputs, targets, nullptr},
      {{3, out.data()}});
  nextTwo = lossOutputs > 1 ? out[1] : 0.0f;
  return out[0];
}

} // namespace drc
