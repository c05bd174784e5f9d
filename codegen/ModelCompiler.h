//===- ModelCompiler.h - Spec -> runnable program for the host -*- C++ -*-===//
//
// The compiler driver shared by drc-compile, drc-train and the tests: imports
// a spec, runs the pipelines to a chosen stage, and JIT-compiles the result
// into a drc::ModelProgram.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_MODELCOMPILER_H
#define DRC_CODEGEN_MODELCOMPILER_H

#include "codegen/CpuJit.h"
#include "dialect/ModelImport.h"
#include "passes/Passes.h"
#include "runtime/ModelProgram.h"

namespace mlir::drc {

/// Stages a compile can stop after (drc-compile --emit=).
enum class CompileStage {
  Drc,       ///< the imported topology-level module
  TrainStep, ///< loss + train_step in kernel-level drc ops
  Fused,     ///< the same with token-local work in drc.fused regions
  Linalg,    ///< linalg on tensors bound to the runtime buffers
  LLVM,      ///< the LLVM dialect
};

/// Parses "drc", "train-step", "fused", "linalg" or "llvm".
std::optional<CompileStage> parseCompileStage(StringRef name);

/// The runtime's parameter table of a module that still declares its
/// drc.param ops (any stage before drc-bind-buffers).
::drc::ParameterTable parameterTable(ModuleOp module);

/// The optimizer settings of a spec.
TrainPipelineOptions trainPipelineOptions(const ::drc::ModelSpec &spec);

/// Lowers `module`, `spec` as importModelSpec made it with `options`,
/// through `stage`, token-local work fused unless `fuseTokenLocal` is off.
/// Diagnostics go to the context's handler.
LogicalResult lowerToStage(ModuleOp module, const ::drc::ModelSpec &spec,
                           CompileStage stage, const ImportOptions &options,
                           bool fuseTokenLocal = true);

/// A module compiled and JIT-linked for the host CPU.
struct HostProgram {
  ::drc::ParameterTable table;
  std::unique_ptr<CpuJit> jit;
};

/// Runs a topology-level module (its drc.param declarations and forward
/// functions) through the pipelines and the JIT.
FailureOr<HostProgram> compileForHost(ModuleOp module,
                                      const TrainPipelineOptions &train);

/// Flush-to-zero and denormals-are-zero for the calling thread, as GPUs do
/// for training: underflowing softmax tails and moments would otherwise hit
/// the slow denormal path. Results stay deterministic.
void flushDenormals();

/// A model compiled and JIT-linked for the host CPU.
class CpuModel : public ::drc::ModelProgram {
public:
  static FailureOr<std::unique_ptr<CpuModel>>
  compile(MLIRContext &context, const ::drc::ModelSpec &spec,
          const ImportOptions &options = {}, bool fuseTokenLocal = true);

  /// Compiles a topology-level module (a `loss(tokens, targets)` function
  /// and its drc.param declarations) whose calls take `tokens` tokens.
  static FailureOr<std::unique_ptr<CpuModel>>
  compileModule(ModuleOp module, int64_t tokens,
                const TrainPipelineOptions &train);

  const ::drc::ParameterTable &parameters() const override { return table; }
  int64_t tokensPerCall() const override { return tokens; }
  ::drc::StepResult trainStep(const ::drc::TrainingBuffers &buffers,
                              const int32_t *inputs, const int32_t *targets,
                              float lr, int64_t step) override;
  float loss(const float *params, const int32_t *inputs,
             const int32_t *targets) override;
  bool hasNextTwoHead() const override { return weights.size() > 1; }
  float losses(const float *params, const int32_t *inputs,
               const int32_t *targets, float &nextTwo) override;

  /// The losses `loss` returns and their weights in the training objective:
  /// {1} for next-token prediction alone, {1, λ} with a next-2-token head.
  ArrayRef<double> objectiveWeights() const { return weights; }

  /// The JIT, for callers working in another element type (f64 checks):
  /// loss(params, tokens, targets, out[objectiveWeights().size()]) and
  /// train_step(params, grads, m, v, tokens, targets, lr[], step[], out[2]).
  CpuJit &jit() { return *engine; }

private:
  CpuModel(::drc::ParameterTable table, int64_t tokens,
           std::vector<double> weights, std::unique_ptr<CpuJit> engine)
      : table(std::move(table)), tokens(tokens), weights(std::move(weights)),
        engine(std::move(engine)) {}
  ::drc::ParameterTable table;
  int64_t tokens;
  std::vector<double> weights;
  std::unique_ptr<CpuJit> engine;
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_MODELCOMPILER_H
