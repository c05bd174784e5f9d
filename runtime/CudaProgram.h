//===- CudaProgram.h - A compiled model run on an NVIDIA GPU ----*- C++ -*-===//
//
// The ModelProgram of a drc-compile --target=cuda directory: its PTX loaded
// onto a device and each entry point replayed from the manifest, launch by
// launch; its matrix products run in cuBLASLt. Every argument, scratch and
// constant buffer is allocated once and each launch's kernel parameters packed
// once, so a call copies its inputs in, launches, waits and copies its outputs
// back. With graphs on (setGraphs), each entry point's launches are captured
// as a CUDA graph the first time it runs and the graph replayed after: one
// launch per call instead of one per kernel.
//
// The training buffers live on the host (ModelProgram's contract), so a
// train step copies parameters, gradients and both moments in and out;
// keeping them on the device between steps is the next step for speed.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUDAPROGRAM_H
#define DRC_RUNTIME_CUDAPROGRAM_H

#include "runtime/CudaDriver.h"
#include "runtime/CudaManifest.h"
#include "runtime/KernelProfile.h"
#include "runtime/ModelProgram.h"

#include <map>
#include <string>
#include <vector>

namespace drc {

class CudaProgram : public ModelProgram {
public:
  /// Loads `artifacts` (manifest.json and its PTX) onto `device`, which must
  /// outlive the program. Throws InputError for a bad manifest or one
  /// without loss and train_step, Error for a device failure.
  CudaProgram(CudaDevice &device, const std::filesystem::path &artifacts);
  CudaProgram(const CudaProgram &) = delete;
  CudaProgram &operator=(const CudaProgram &) = delete;
  ~CudaProgram() override;

  const ParameterTable &parameters() const override {
    return manifest.parameters;
  }
  int64_t tokensPerCall() const override { return tokens; }
  StepResult trainStep(const TrainingBuffers &buffers, const int32_t *inputs,
                       const int32_t *targets, float lr, int64_t step) override;
  float loss(const float *params, const int32_t *inputs,
             const int32_t *targets) override;
  void syncTrainingBuffers(const TrainingBuffers &buffers) override;
  /// Times every launch into `profile` (null: none), waiting for each.
  /// Kernels then run one by one, graphs or not.
  void setProfile(KernelProfile *profile) { this->profile = profile; }
  /// Replays each entry point as a CUDA graph, captured the first time it
  /// runs. An entry point the driver does not capture or instantiate runs
  /// launch by launch, with a warning on stderr.
  void setGraphs(bool on) { graphs = on; }
  bool hasNextTwoHead() const override { return lossOutputs > 1; }
  float losses(const float *params, const int32_t *inputs,
               const int32_t *targets, float &nextTwo) override;

private:
  /// One entry point, ready to run.
  struct Entry {
    std::vector<uint64_t> buffers; ///< device addresses: arguments first
    std::vector<size_t> argumentBytes;
    std::vector<void *> kernels; ///< per launch (null for a product)
    std::vector<KernelArguments> arguments;
    std::vector<std::optional<ColumnMajorGemm>> gemms; ///< per launch
    void *graph = nullptr;     ///< captured launches (setGraphs)
    bool graphRefused = false; ///< the driver would not capture them
  };

  CudaDevice &device;
  CudaManifest manifest;
  std::vector<uint64_t> allocations; ///< freed with the program
  std::map<std::string, Entry> entries;
  int64_t tokens = 0, lossOutputs = 1;
  /// The host buffers whose contents the device holds (after a train step
  /// with them); all null when the device holds none.
  TrainingBuffers resident;
  KernelProfile *profile = nullptr;
  bool graphs = false;

  /// Copies `inputs` (one host pointer per argument, null: leave as is)
  /// in, runs every launch, waits, and copies the arguments named in
  /// `outputs` back to their host pointers.
  void run(const std::string &name, const std::vector<const void *> &inputs,
           const std::vector<std::pair<size_t, void *>> &outputs);
  /// Queues every launch of `function` (`entry`) on the device's stream.
  void enqueue(Entry &entry, const CudaFunction &function);
  /// `entry`'s launches captured as a graph; null, with `graphRefused` set
  /// and a warning, when the driver refuses.
  void *capture(const std::string &name, Entry &entry,
                const CudaFunction &function);
};

} // namespace drc

#endif // DRC_RUNTIME_CUDAPROGRAM_H
