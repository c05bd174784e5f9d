//===- CpuProbeModel.h - A spec's probe functions for the host --*- C++ -*-===//
//
// The probe module of a spec (ImportOptions::probes: @loss, @probe and the
// functions of the skip chains), compiled forward-only and JIT-linked for
// the host CPU as a drc::ProbeProgram.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_CPUPROBEMODEL_H
#define DRC_CODEGEN_CPUPROBEMODEL_H

#include "codegen/ModelCompiler.h"
#include "runtime/ProbeProgram.h"

#include <array>

namespace mlir::drc {

class CpuProbeModel : public ::drc::ProbeProgram {
public:
  /// Compiles the probe functions of `spec` for batches of `tokens` tokens
  /// (0: the spec's batch x seq_len). Diagnostics go to the context.
  static FailureOr<std::unique_ptr<CpuProbeModel>>
  compile(MLIRContext &context, const ::drc::ModelSpec &spec,
          int64_t tokens = 0);

  /// Compiles `module`, the probe module of `spec` as importModelSpec
  /// makes it (ImportOptions::probes).
  static FailureOr<std::unique_ptr<CpuProbeModel>>
  compileModule(ModuleOp module, const ::drc::ModelSpec &spec);

  const ::drc::ParameterTable &parameters() const override {
    return program.table;
  }
  const ::drc::ProbeShape &shape() const override { return sizes; }
  float probe(const float *params, const int32_t *inputs,
              const int32_t *targets, float *states, float *lens,
              float *maps) override;
  float skip(int64_t block, const float *params, const int32_t *inputs,
             const int32_t *targets, float *states) override;
  float loss(const float *params, const int32_t *inputs,
             const int32_t *targets) override;

private:
  /// One call of a skip chain: the function, and the element counts of its
  /// result buffers: z_b, the state it passes on (none after the last
  /// block), then its scalar results (the loss, at the end).
  struct ChainStep {
    std::string function;
    std::vector<int64_t> results;
  };
  CpuProbeModel(HostProgram program, ::drc::ProbeShape sizes,
                std::vector<std::vector<float>> entering,
                std::vector<ChainStep> steps,
                std::vector<std::vector<size_t>> chains)
      : program(std::move(program)), sizes(sizes),
        entering(std::move(entering)), steps(std::move(steps)),
        chains(std::move(chains)) {}
  HostProgram program;
  ::drc::ProbeShape sizes;
  /// The state values entering each block (block-major), from the last
  /// probe(), and its depth states.
  std::vector<std::vector<float>> entering;
  /// The functions the skip chains call, each once.
  std::vector<ChainStep> steps;
  /// Per skipped block s, the calls that run the blocks after it
  /// (kSkipChainsAttr), as indices into `steps`.
  std::vector<std::vector<size_t>> chains;
  /// The result buffers of a skip chain's calls, alternately (skip()).
  std::array<std::vector<std::vector<float>>, 2> scratch;
  std::vector<float> lastStates;
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_CPUPROBEMODEL_H
