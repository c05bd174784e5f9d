//===- ProbeProgram.h - A compiled model's probe entry points ---*- C++ -*-===//
//
// What the layer probes (runtime/Probes.h) call: the forward functions of a
// probe module (dialect/ModelImport.h), compiled for one batch shape. The
// compiler implements it for the CPU JIT. Nothing here depends on MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PROBEPROGRAM_H
#define DRC_RUNTIME_PROBEPROGRAM_H

#include "runtime/ParameterTable.h"

#include <cstdint>

namespace drc {

/// The sizes of a probe program's outputs.
struct ProbeShape {
  int64_t tokens = 0; ///< per call (batch x seq_len)
  int64_t blocks = 0; ///< L: depth states z_0 ... z_L
  int64_t width = 0;  ///< of one depth state z_b
  int64_t vocab = 0;
  /// n for HC-style schemes (each sublayer's n x n stream map), else 0.
  int64_t streams = 0;
};

class ProbeProgram {
public:
  virtual ~ProbeProgram() = default;

  virtual const ParameterTable &parameters() const = 0;
  virtual const ProbeShape &shape() const = 0;

  /// The model on one batch: `states` [tokens x (L+1) x width] receives
  /// z_0 ... z_L, `lens` [tokens x (L+1) x vocab] the logit lens of each,
  /// and `maps` [tokens x 2L x n x n] (when streams > 0; else unused) each
  /// sublayer's stream map. Returns the mean cross-entropy.
  virtual float probe(const float *params, const int32_t *inputs,
                      const int32_t *targets, float *states, float *lens,
                      float *maps) = 0;

  /// The model without block `block`: its depth states and mean loss, on
  /// the batch of the last probe() call (whose results it starts from).
  virtual float skip(int64_t block, const float *params, const int32_t *inputs,
                     const int32_t *targets, float *states) = 0;

  /// The mean cross-entropy of the model as it is.
  virtual float loss(const float *params, const int32_t *inputs,
                     const int32_t *targets) = 0;
};

} // namespace drc

#endif // DRC_RUNTIME_PROBEPROGRAM_H
