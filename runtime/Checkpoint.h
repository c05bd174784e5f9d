//===- Checkpoint.h - Save and resume training state ------------*- C++ -*-===//
//
// A checkpoint is one safetensors file (docs/checkpoint.md): every parameter
// under its own name, the AdamW moments under `optim.m.<name>` and
// `optim.v.<name>`, and the training state in the metadata. Loading checks the
// file against the compiled model's parameter table and spec fingerprint, so
// a run never silently resumes from another model's weights.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CHECKPOINT_H
#define DRC_RUNTIME_CHECKPOINT_H

#include "runtime/ParameterTable.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace drc {

/// Written as metadata "format_version"; bumped when the layout changes.
inline constexpr int kCheckpointFormatVersion = 1;

/// Where training stands when a checkpoint is taken.
struct TrainState {
  /// Optimizer steps completed; a resumed run executes step `step` next.
  int64_t step = 0;
  /// The run's seed; parameter init and data order derive from it.
  uint64_t seed = 0;
  /// Identifies the model spec the parameters belong to (set by the
  /// compiler); a checkpoint loads only into a model with the same one.
  std::string specFingerprint;
  /// Further string metadata the trainer needs to resume exactly (data
  /// position, run name, ...). Keys must not collide with the reserved ones:
  /// format, format_version, step, seed, spec_fingerprint.
  std::map<std::string, std::string> extra;
};

/// Writes parameters, AdamW moments and `state` to `path` atomically (a crash
/// leaves the previous checkpoint intact). `params`, `m` and `v` each hold
/// table.numElements() floats in the table's layout. Throws InputError for an
/// unusable path, drc::Error for other I/O failures or a reserved extra key.
void saveCheckpoint(const std::string &path, const ParameterTable &table,
                    const float *params, const float *m, const float *v,
                    const TrainState &state);

/// Reads a checkpoint written by saveCheckpoint into `params`, `m` and `v`
/// (table.numElements() floats each; padding is left untouched) and returns
/// its state. Throws InputError naming the file when it is not a drc
/// checkpoint, when a tensor is missing, has another shape or dtype, when it
/// holds tensors the table lacks, or when its spec fingerprint differs from
/// `expectedFingerprint`.
TrainState loadCheckpoint(const std::string &path, const ParameterTable &table,
                          std::string_view expectedFingerprint, float *params,
                          float *m, float *v);

/// As loadCheckpoint, for evaluation: reads only the parameters. The AdamW
/// moments may be present (a training checkpoint) or absent.
TrainState loadCheckpointWeights(const std::string &path,
                                 const ParameterTable &table,
                                 std::string_view expectedFingerprint,
                                 float *params);

} // namespace drc

#endif // DRC_RUNTIME_CHECKPOINT_H
