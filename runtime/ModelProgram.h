//===- ModelProgram.h - A compiled model's entry points ---------*- C++ -*-===//
//
// What the runtime calls: a compiled model's parameter table and its two
// generated functions. The compiler (codegen/) implements this for the CPU
// JIT; a GPU backend implements it over PTX. Nothing here depends on MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_MODELPROGRAM_H
#define DRC_RUNTIME_MODELPROGRAM_H

#include "runtime/ParameterTable.h"

#include <cstdint>

namespace drc {

/// The flat fp32 buffers of a training run, each table.numElements() long.
/// Gradients' padding must be zero (the optimizer reads the whole buffer).
/// Allocate them as ParameterBuffer (64-byte aligned): any alignment works,
/// but then the kernels' vector accesses straddle cache lines.
struct TrainingBuffers {
  float *params = nullptr;
  float *grads = nullptr;
  float *adamM = nullptr;
  float *adamV = nullptr;
};

/// Results of one training step.
struct StepResult {
  float loss = 0;     ///< mean cross-entropy before the update
  float gradNorm = 0; ///< global gradient norm before clipping
};

class ModelProgram {
public:
  virtual ~ModelProgram() = default;

  /// Names, shapes, offsets, init and decay group of every parameter.
  virtual const ParameterTable &parameters() const = 0;

  /// Tokens per call (batch x seq_len); inputs and targets have this many.
  virtual int64_t tokensPerCall() const = 0;

  /// Forward, backward, global-norm clip and one AdamW update in place.
  /// `step` is 1-based (bias correction); `lr` comes from the schedule.
  virtual StepResult trainStep(const TrainingBuffers &buffers,
                               const int32_t *inputs, const int32_t *targets,
                               float lr, int64_t step) = 0;

  /// Makes the host copies of `buffers` current. A program may keep the
  /// training buffers where it computes (a GPU's memory) from one trainStep
  /// to the next, so between steps with the same buffers the caller reads
  /// them only after this call and never writes them. Nothing to do for a
  /// program that computes on the host.
  virtual void syncTrainingBuffers(const TrainingBuffers &buffers) {
    (void)buffers;
  }

  /// Mean cross-entropy of one batch; parameters are only read.
  virtual float loss(const float *params, const int32_t *inputs,
                     const int32_t *targets) = 0;

  /// Whether the model has a next-2-token head (VWN's MTP).
  virtual bool hasNextTwoHead() const { return false; }

  /// The next-token loss of one batch, and the next-2-token head's mean
  /// cross-entropy in `nextTwo`; only for a model with that head.
  virtual float losses(const float *params, const int32_t *inputs,
                       const int32_t *targets, float &nextTwo) {
    (void)params, (void)inputs, (void)targets, (void)nextTwo;
    return 0;
  }
};

} // namespace drc

#endif // DRC_RUNTIME_MODELPROGRAM_H
