//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// llm.c's loop over a compiled ModelProgram: one flat allocation each for
// parameters, gradients and the two AdamW moments; batches that are a pure
// function of (seed, step); validation and an atomic checkpoint every
// eval_every steps and at the end; metrics as JSON lines. A run killed at any
// point and resumed from its checkpoint produces the same metrics as one that
// was never interrupted.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TRAINER_H
#define DRC_RUNTIME_TRAINER_H

#include "runtime/Corpus.h"
#include "runtime/Evaluation.h"
#include "runtime/ModelProgram.h"
#include "runtime/ModelSpec.h"

#include <cstdio>
#include <filesystem>
#include <optional>

namespace drc {

struct TrainOptions {
  std::filesystem::path runDir; ///< metrics.jsonl, checkpoint.safetensors
  int64_t steps = 0;            ///< total optimizer steps of the run
  uint64_t seed = 1;
  bool resume = false; ///< continue from runDir's checkpoint
  /// The run's spec (runSpecText), written to runDir/spec.toml when the run
  /// starts or, resumed, where that file is missing; empty: none.
  std::string specText;
  /// Seconds of training after which a checkpoint is written even between
  /// two evaluations, so a crash loses no more (0: after every step).
  double checkpointSeconds = 600;
  std::FILE *progress = stderr;
  /// What the progress line starts with, before "<step>/<steps>" (a sweep
  /// puts its own progress there).
  std::string progressLabel = "step";
};

struct TrainSummary {
  int64_t steps = 0;
  EvalResult final;
  double wallSeconds = 0;     ///< this process only
  double tokensPerSecond = 0; ///< this process's training steps
  /// The median and the fastest of the steps tokensPerSecond counts (0 if
  /// none): less noisy than the mean on a shared machine.
  double medianStepSeconds = 0, fastestStepSeconds = 0;
};

/// The checkpoint, metrics and spec files of a run directory.
std::filesystem::path checkpointPath(const std::filesystem::path &runDir);
std::filesystem::path metricsPath(const std::filesystem::path &runDir);
std::filesystem::path specPath(const std::filesystem::path &runDir);

/// Refuses, as train() does before it writes anything, a corpus with a
/// domain whose validation windows do not fill one batch of `spec`, a run
/// directory that holds a run (a checkpoint) unless `options.resume`, and a
/// resume whose spec (options.specText) sets a key otherwise than the run's
/// spec.toml. A tool calls it before compiling.
void checkTrainingInputs(const ModelSpec &spec, const Corpus &corpus,
                         const TrainOptions &options);

/// The model spec of `checkpoint`: `given` where set, else the spec.toml
/// beside it (the run's, as drc-train writes it); an InputError when there
/// is none, saying that `how` names one.
std::string checkpointSpec(const std::string &checkpoint,
                           const std::optional<std::string> &given,
                           const std::string &how);

/// Trains `program` on `corpus` as `spec` says. Throws InputError for a bad
/// run directory (an existing run without --resume, a checkpoint of another
/// model or schedule) and Error on divergence; the last checkpoint stays.
/// SIGINT or SIGTERM while it trains stops it after the current step (and
/// its evaluation), which it checkpoints first: it throws Interrupted.
TrainSummary train(ModelProgram &program, const ModelSpec &spec,
                   const Corpus &corpus, const TrainOptions &options);

} // namespace drc

#endif // DRC_RUNTIME_TRAINER_H
