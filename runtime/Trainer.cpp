//===- Trainer.cpp - The training loop -----------------------------------===//
#include "runtime/Trainer.h"
#include "runtime/Interrupt.h"

#include "runtime/AtomicFile.h"
#include "runtime/Checkpoint.h"
#include "runtime/Error.h"
#include "runtime/InterleavedSteps.h"
#include "runtime/Metrics.h"
#include "runtime/ParameterBuffer.h"
#include "runtime/ParameterInit.h"
#include "runtime/Progress.h"
#include "runtime/Schedule.h"
#include "runtime/TomlFields.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <memory>
#include <vector>

namespace drc {
namespace fs = std::filesystem;

fs::path checkpointPath(const fs::path &runDir) {
  return runDir / "checkpoint.safetensors";
}
fs::path metricsPath(const fs::path &runDir) {
  return runDir / "metrics.jsonl";
}
fs::path specPath(const fs::path &runDir) { return runDir / "spec.toml"; }

std::string checkpointSpec(const std::string &checkpoint,
                           const std::optional<std::string> &given,
                           const std::string &how) {
  if (given)
    return *given;
  fs::path beside = specPath(fs::path(checkpoint).parent_path());
  if (!fs::exists(beside))
    throw InputError("no spec.toml beside " + checkpoint +
                     "; name the checkpoint's model spec with " + how);
  return beside.string();
}

void checkTrainingInputs(const ModelSpec &spec, const Corpus &corpus,
                         const TrainOptions &options) {
  BatchSampler(corpus, spec.train.batch, spec.model.seqLen,
               spec.train.evalTokens)
      .requireValidationBatch();
  if (!fs::exists(checkpointPath(options.runDir)))
    return;
  if (!options.resume)
    throw InputError(options.runDir.string() +
                     " already holds a run (checkpoint.safetensors); pass "
                     "--resume to continue it or choose another --out");
  // A run resumes with the spec it started with (its spec.toml, where the
  // run wrote one): another learning rate, batch or schedule would not
  // continue the same run.
  fs::path stored = specPath(options.runDir);
  if (options.specText.empty() || !fs::exists(stored))
    return;
  std::string difference =
      specDifference(readInputFile(stored.string(), "run's spec"),
                     stored.string(), options.specText);
  if (!difference.empty())
    throw InputError(stored.string() + ": the run has " + difference +
                     "; a run resumes only with the spec, --steps and --seed "
                     "it started with, which this file holds: drc-train " +
                     stored.string() + " --data DIR --out " +
                     options.runDir.string() + " --resume");
}

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Fault injection for the resume tests: the step after which the process
/// raises a signal, from the environment variable `name` (-1: none).
/// DRC_FAULT_KILL_AFTER_STEP=N: SIGKILL right after optimizer step N, as a
/// crash or an OOM killer would, between two checkpoints;
/// DRC_FAULT_INTERRUPT_AFTER_STEP=N: SIGINT there, as Ctrl-C would.
int64_t faultStep(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::atoll(value) : -1;
}

/// DRC_STEP_TIMES=FILE: one line per optimizer step, its number, when it
/// began in seconds of CLOCK_MONOTONIC (std::chrono::steady_clock; the
/// clock of `perf record -k 1`) and how long it took, so that a profile can
/// tell the steps apart from the compile, the evaluations and the first
/// step's page faults (bench/cpu-profile). Written as the steps run.
std::unique_ptr<std::ofstream> openStepTimes() {
  const char *path = std::getenv("DRC_STEP_TIMES");
  if (!path || !*path)
    return nullptr;
  auto file = std::make_unique<std::ofstream>(path);
  if (!*file)
    throw InputError(std::string("DRC_STEP_TIMES: cannot write ") + path);
  *file << "step\tbegan_s\tseconds\n";
  return file;
}

/// The checkpoint's record of the schedule; a resume under another one
/// would not reproduce the uninterrupted run.
constexpr const char *kTotalStepsKey = "total_steps";

/// A checkpoint taken between two evaluations (an interrupted run's) holds
/// the sum and count of the training losses since the last one, so the
/// resumed run logs the same mean train_loss as an uninterrupted run. The
/// sum is written in hexadecimal floating point: exact.
constexpr const char *kLossSumKey = "train_loss_sum";
constexpr const char *kLossCountKey = "train_loss_count";

std::string interruptedMessage(int signal, int64_t done, int64_t steps,
                               const fs::path &checkpoint) {
  return std::string("interrupted by ") + signalName(signal) + " after step " +
         std::to_string(done) + " of " + std::to_string(steps) + ", which " +
         checkpoint.string() + " holds";
}

} // namespace

TrainSummary train(ModelProgram &program, const ModelSpec &spec,
                   const Corpus &corpus, const TrainOptions &options) {
  const ParameterTable &table = program.parameters();
  const std::string fingerprint = modelFingerprint(spec);
  const fs::path checkpoint = checkpointPath(options.runDir);
  checkTrainingInputs(spec, corpus, options); // before anything is written
  BatchSampler sampler(corpus, spec.train.batch, spec.model.seqLen,
                       spec.train.evalTokens);
  std::error_code ec;
  fs::create_directories(options.runDir, ec);
  if (ec)
    throw InputError("cannot create the run directory " +
                     options.runDir.string() + ": " + ec.message());

  int64_t size = table.numElements();
  ParameterBuffer params(size, 0.0f), grads(size, 0.0f), adamM(size, 0.0f),
      adamV(size, 0.0f);
  TrainingBuffers buffers{params.data(), grads.data(), adamM.data(),
                          adamV.data()};
  int64_t start = 0;
  double lossSum = 0;
  int64_t lossCount = 0;
  if (options.resume && fs::exists(checkpoint)) {
    TrainState state =
        loadCheckpoint(checkpoint.string(), table, fingerprint, params.data(),
                       adamM.data(), adamV.data());
    auto total = state.extra.find(kTotalStepsKey);
    if (state.seed != options.seed || total == state.extra.end() ||
        total->second != std::to_string(options.steps))
      throw InputError(checkpoint.string() +
                       " was written by a run with seed " +
                       std::to_string(state.seed) + " and " +
                       (total == state.extra.end() ? "?" : total->second) +
                       " steps; resume it with the same --seed and --steps");
    start = state.step;
    auto sum = state.extra.find(kLossSumKey);
    auto count = state.extra.find(kLossCountKey);
    if (sum != state.extra.end() && count != state.extra.end()) {
      lossSum = std::strtod(sum->second.c_str(), nullptr);
      lossCount = std::atoll(count->second.c_str());
    }
  } else {
    initParameters(table, options.seed, params.data());
  }
  if (!options.specText.empty() &&
      (start == 0 || !fs::exists(specPath(options.runDir))))
    writeFileAtomically(specPath(options.runDir).string(), options.specText);
  MetricsWriter metrics =
      start > 0 ? MetricsWriter::openForResume(
                      metricsPath(options.runDir).string(), start)
                : MetricsWriter::create(metricsPath(options.runDir).string());

  LearningRateSchedule schedule(spec.train.lr, options.steps,
                                spec.train.warmupFraction,
                                spec.train.finalLrFraction);
  int64_t tokensPerStep = spec.tokensPerStep();
  std::vector<int32_t> inputs(tokensPerStep), targets(tokensPerStep);

  ProgressLine::Options progressOptions;
  progressOptions.label = options.progressLabel;
  ProgressLine progress(options.progress, options.steps, progressOptions,
                        start);
  auto began = std::chrono::steady_clock::now(), lastSaved = began;
  // Throughput leaves out this process's first step, which also pays for
  // first-touch page faults and starting the thread pool.
  double trainSeconds = 0, lastGradNorm = 0;
  std::vector<double> stepSeconds;
  int64_t trained = 0;
  const int64_t killAt = faultStep("DRC_FAULT_KILL_AFTER_STEP"),
                interruptAt = faultStep("DRC_FAULT_INTERRUPT_AFTER_STEP");
  auto saveState = [&](int64_t done) {
    TrainState state;
    state.step = done;
    state.seed = options.seed;
    state.specFingerprint = fingerprint;
    state.extra[kTotalStepsKey] = std::to_string(options.steps);
    if (lossCount > 0) {
      char sum[64];
      std::snprintf(sum, sizeof sum, "%a", lossSum);
      state.extra[kLossSumKey] = sum;
      state.extra[kLossCountKey] = std::to_string(lossCount);
    }
    saveCheckpoint(checkpoint.string(), table, params.data(), adamM.data(),
                   adamV.data(), state);
  };
  // Ctrl-C or SIGTERM from here on stops the run after its current step (and
  // evaluation), with a checkpoint of that step.
  InterruptRequests interrupts;
  TrainSummary summary;
  std::unique_ptr<std::ofstream> stepTimes = openStepTimes();
  for (int64_t step = start; step < options.steps; ++step) {
    sampler.trainBatch(options.seed, step, inputs.data(), targets.data());
    double lr = schedule.at(step);
    auto stepBegan = std::chrono::steady_clock::now();
    StepResult r = program.trainStep(buffers, inputs.data(), targets.data(),
                                     static_cast<float>(lr), step + 1);
    double seconds = secondsSince(stepBegan);
    if (trained++ > 0 || options.steps - start == 1) {
      stepSeconds.push_back(seconds);
      trainSeconds += seconds;
    }
    if (stepTimes)
      *stepTimes
          << step + 1 << '\t' << std::fixed << std::setprecision(6)
          << std::chrono::duration<double>(stepBegan.time_since_epoch()).count()
          << '\t' << seconds << std::endl;
    if (!std::isfinite(r.loss))
      throw Error("training diverged at step " + std::to_string(step + 1) +
                  " (loss " + std::to_string(r.loss) + "); " +
                  (fs::exists(checkpoint) ? "the last checkpoint is kept"
                                          : "no checkpoint was written"));
    if (step + 1 == killAt)
      std::raise(SIGKILL);
    if (step + 1 == interruptAt)
      std::raise(SIGINT);
    lossSum += r.loss;
    ++lossCount;
    lastGradNorm = r.gradNorm;
    char detail[64];
    std::snprintf(detail, sizeof detail, "loss %.4f", r.loss);
    progress.update(step + 1, double(trained) * tokensPerStep, detail);

    int64_t done = step + 1;
    // A signal during the last step lets the run finish.
    const int stop = done < options.steps ? interrupts.requested() : 0;
    bool evaluates = done % spec.train.evalEvery == 0 || done == options.steps;
    bool due = secondsSince(lastSaved) >= options.checkpointSeconds;
    if (!evaluates && !stop && !due)
      continue;
    program.syncTrainingBuffers(buffers);
    if (evaluates) {
      EvalResult eval = evaluate(program, params.data(), corpus, sampler);
      JsonValue record = JsonValue::object();
      record.set("step", done);
      record.set("train_loss", lossSum / lossCount);
      record.set("val_loss", eval.loss);
      for (const DomainLoss &d : eval.domains)
        record.set("val_loss_" + d.domain, d.loss);
      if (eval.nextTwoLoss) {
        record.set("val_loss_next2", *eval.nextTwoLoss);
        for (const DomainLoss &d : eval.domains)
          record.set("val_loss_next2_" + d.domain, *d.nextTwoLoss);
      }
      record.set("lr", lr);
      record.set("grad_norm", lastGradNorm);
      record.set("tokens", done * tokensPerStep);
      record.set("tokens_per_s",
                 trainSeconds > 0
                     ? double(stepSeconds.size()) * tokensPerStep / trainSeconds
                     : 0.0);
      record.set("elapsed_s", secondsSince(began));
      metrics.write(record);
      lossSum = 0;
      lossCount = 0;
      summary.final = eval;
    }
    saveState(done);
    lastSaved = std::chrono::steady_clock::now();
    if (stop) {
      progress.finish();
      throw Interrupted(
          interruptedMessage(stop, done, options.steps, checkpoint));
    }
  }
  progress.finish();
  if (start >= options.steps)
    summary.final = evaluate(program, params.data(), corpus, sampler);
  summary.steps = options.steps;
  summary.wallSeconds = secondsSince(began);
  summary.tokensPerSecond = trainSeconds > 0 ? double(stepSeconds.size()) *
                                                   tokensPerStep / trainSeconds
                                             : 0;
  if (!stepSeconds.empty()) {
    summary.medianStepSeconds = median(stepSeconds);
    summary.fastestStepSeconds =
        *std::min_element(stepSeconds.begin(), stepSeconds.end());
  }
  return summary;
}

} // namespace drc
