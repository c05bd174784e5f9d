//===- drc-time.cpp - Step-time ratios of specs, interleaved -------------===//
#include "runtime/AtomicFile.h"
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/Error.h"
#include "runtime/InterleavedSteps.h"
#include "runtime/ParameterBuffer.h"
#include "runtime/ParameterInit.h"
#include "runtime/Progress.h"
#include "runtime/Schedule.h"
#include "tools/common/HostCompiler.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

const char *const kHelp =
    R"(usage: drc-time REF SPEC... --data DIR [options]

Compiles the model specs REF and SPEC... (docs/spec.md) for this CPU and
times their training steps interleaved in one process: after the warm-up
rounds, every round steps REF, then for each SPEC in turn: SPEC (untimed),
REF, SPEC, REF. A SPEC's ratio in a round is its timed step over the mean of
the two REF steps beside it, a second or so apart, so the drift of a shared
machine's speed over minutes cancels; its untimed step before them means it
last ran two steps before, as REF did, so neither finds more of its buffers
still in cache. Prints, per SPEC, the median step time, tokens/s, and the
median ratio with its range over rounds; give REF again as a SPEC to see the
noise that is left (its ratio should read 1.00x). Every model trains from
its own initialisation on the same batches (one per step, [train] seed)
with its [train] lr schedule over the steps it takes here; progress goes to
stderr.

options:
  --data DIR     corpus directory with one subdirectory per domain
  --rounds N     timed rounds (default 20)
  --warmup N     untimed rounds first (default 2): the first steps pay for
                 page faults and starting threads
  --no-fuse      compile the SPECs with every token-local op as its own
                 kernel (REF stays fused): a SPEC given as REF too then
                 reads as the speed-up of fusion
  --tsv FILE     also write every timed step, one per line: round, spec,
                 role (reference or spec), seconds, a spec step's ratio
                 to the reference steps beside it, and when the step
                 began, in seconds of CLOCK_MONOTONIC (the clock of
                 `perf record -k 1`'s samples; bench/overhead-profile
                 attributes samples to steps by it) (written atomically)
  --help         this text

exit status: 0 success, 1 failure (e.g. a model diverged),
             2 bad usage or bad input (spec and its scheme, data).
)";

double secondsSince(std::chrono::steady_clock::time_point began) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
      .count();
}

/// One compiled model with its own training buffers and batch stream.
class TimedModel {
public:
  TimedModel(drc::HostCompiler &compiler, std::string path, bool fuse,
             const drc::Corpus &corpus, int64_t totalSteps)
      : path(std::move(path)), spec(drc::loadModelSpec(this->path)),
        sampler(corpus, spec.train.batch, spec.model.seqLen),
        schedule(spec.train.lr, totalSteps, spec.train.warmupFraction,
                 spec.train.finalLrFraction),
        inputs(spec.tokensPerStep()), targets(spec.tokensPerStep()) {
    if (static_cast<uint32_t>(spec.model.vocab) != corpus.vocabSize)
      throw drc::InputError(
          this->path + ": [model] vocab = " + std::to_string(spec.model.vocab) +
          ", but the corpus was loaded for the reference's " +
          std::to_string(corpus.vocabSize) +
          "; time specs of one vocabulary together");
    auto began = std::chrono::steady_clock::now();
    std::fprintf(stderr, "drc-time: compiling %s%s\n", this->path.c_str(),
                 fuse ? "" : " (--no-fuse)");
    model = compiler.compile(spec, fuse);
    std::fprintf(stderr, "drc-time: compiled %s in %.1f s%s\n",
                 this->path.c_str(), secondsSince(began),
                 model->jit().cached() ? " (object code from the cache)" : "");
    size_t size = model->parameters().numElements();
    for (drc::ParameterBuffer *buffer : {&params, &grads, &adamM, &adamV})
      buffer->assign(size, 0.0f);
    drc::initParameters(model->parameters(), spec.train.seed, params.data());
  }

  /// Seconds of one training step (the batch is drawn before the clock
  /// starts); lastStart() is when it began.
  double step() {
    sampler.trainBatch(spec.train.seed, steps, inputs.data(), targets.data());
    drc::TrainingBuffers buffers{params.data(), grads.data(), adamM.data(),
                                 adamV.data()};
    float lr = static_cast<float>(schedule.at(steps));
    auto began = std::chrono::steady_clock::now();
    start = std::chrono::duration<double>(began.time_since_epoch()).count();
    drc::StepResult r =
        model->trainStep(buffers, inputs.data(), targets.data(), lr, steps + 1);
    double seconds = secondsSince(began);
    ++steps;
    if (!std::isfinite(r.loss))
      throw drc::Error(path + " diverged at step " + std::to_string(steps) +
                       " (loss " + std::to_string(r.loss) + ")");
    return seconds;
  }

  int64_t tokensPerStep() const { return spec.tokensPerStep(); }

  /// When the last step began, in seconds of std::chrono::steady_clock
  /// (CLOCK_MONOTONIC on Linux).
  double lastStart() const { return start; }

  const std::string path;

private:
  drc::ModelSpec spec;
  drc::BatchSampler sampler;
  drc::LearningRateSchedule schedule;
  std::unique_ptr<mlir::drc::CpuModel> model;
  drc::ParameterBuffer params, grads, adamM, adamV;
  std::vector<int32_t> inputs, targets;
  int64_t steps = 0;
  double start = 0;
};

/// Every step of a round, in the order it ran: REF, then for each SPEC
/// (untimed), REF, SPEC, REF. specs[i] holds SPEC i's timed step between
/// its two reference steps.
struct Round {
  std::vector<double> reference, referenceStarts;
  std::vector<drc::InterleavedRound> specs;
};

/// One round. Without the untimed steps, rounds of REF, SPEC 1, REF,
/// SPEC 2, ..., REF read every SPEC about 2% slow, its previous step 2k
/// steps before its own and REF's 2: Pre-LN against four copies of itself
/// gave 12 ratios from 1.005x to 1.043x, mean 1.019x, in 3 runs of 30 to 60
/// rounds (against one copy: 0.997x). With them: 8 ratios from 0.956x to
/// 1.026x, mean 1.000x, in runs of 30 and 60 rounds.
Round runRound(TimedModel &reference,
               std::vector<std::unique_ptr<TimedModel>> &specs) {
  Round round;
  auto stepReference = [&] {
    round.reference.push_back(reference.step());
    round.referenceStarts.push_back(reference.lastStart());
  };
  stepReference();
  for (auto &spec : specs) {
    spec->step();
    stepReference();
    drc::InterleavedRound timed;
    timed.programs = {spec->step()};
    timed.programStarts = {spec->lastStart()};
    stepReference();
    size_t last = round.reference.size() - 1;
    timed.reference = {round.reference[last - 1], round.reference[last]};
    round.specs.push_back(std::move(timed));
  }
  return round;
}

/// Every timed step, in the order it ran.
void writeTsv(const std::string &path, const std::vector<Round> &rounds,
              const TimedModel &reference,
              const std::vector<std::unique_ptr<TimedModel>> &specs) {
  std::string text = "round\tspec\trole\tseconds\tratio\tstart\n";
  char number[32];
  auto line = [&](size_t round, const std::string &spec, const char *role,
                  double seconds, double ratio, double start) {
    text += std::to_string(round + 1) + "\t" + spec + "\t" + role;
    std::snprintf(number, sizeof number, "\t%.6f", seconds);
    text += number;
    std::snprintf(number, sizeof number, "\t%.4f", ratio);
    text += ratio > 0 ? number : "\t-";
    std::snprintf(number, sizeof number, "\t%.6f", start);
    text += number;
    text += "\n";
  };
  for (size_t r = 0; r < rounds.size(); ++r) {
    const Round &round = rounds[r];
    auto referenceLine = [&](size_t i) {
      line(r, reference.path, "reference", round.reference[i], 0,
           round.referenceStarts[i]);
    };
    referenceLine(0);
    for (size_t i = 0; i < specs.size(); ++i) {
      const drc::InterleavedRound &timed = round.specs[i];
      referenceLine(2 * i + 1);
      line(r, specs[i]->path, "spec", timed.programs[0],
           drc::neighbourRatio(timed, 0), timed.programStarts[0]);
      referenceLine(2 * i + 2);
    }
  }
  drc::AtomicFileWriter file(path);
  file.write(text.data(), text.size());
  file.commit();
}

int timeMain(int argc, char **argv) {
  drc::CommandLine cl(argc, argv, {"data", "rounds", "warmup", "tsv"},
                      {"no-fuse", "help"});
  if (cl.printedHelp(kHelp))
    return 0;
  const std::vector<std::string> &paths = cl.positional();
  if (paths.size() < 2)
    throw drc::UsageError("need a reference spec and at least one spec to "
                          "time against it (REF SPEC...)");
  std::string data = cl.required("data");
  int64_t rounds = cl.integer("rounds", 20, 1, 1000000);
  int64_t warmup = cl.integer("warmup", 2, 0, 1000000);
  std::optional<std::string> tsv = cl.value("tsv");

  drc::ModelSpec first = drc::loadModelSpec(paths[0]);
  drc::Corpus corpus =
      drc::loadCorpus(data, static_cast<uint32_t>(first.model.vocab));
  drc::HostCompiler compiler;
  int64_t allRounds = warmup + rounds;
  int64_t specSteps = 2 * allRounds;
  int64_t referenceSteps =
      (2 * static_cast<int64_t>(paths.size() - 1) + 1) * allRounds;
  TimedModel reference(compiler, paths[0], true, corpus, referenceSteps);
  std::vector<std::unique_ptr<TimedModel>> specs;
  for (size_t i = 1; i < paths.size(); ++i)
    specs.push_back(std::make_unique<TimedModel>(
        compiler, paths[i], !cl.flag("no-fuse"), corpus, specSteps));

  for (int64_t r = 0; r < warmup; ++r)
    runRound(reference, specs);
  drc::ProgressLine::Options progressOptions;
  progressOptions.label = "round";
  progressOptions.rateUnit = "";
  drc::ProgressLine progress(stderr, rounds, progressOptions);
  std::vector<Round> timed;
  for (int64_t r = 0; r < rounds; ++r) {
    timed.push_back(runRound(reference, specs));
    progress.update(r + 1, 0, "");
  }
  progress.finish();
  if (tsv)
    writeTsv(*tsv, timed, reference, specs);

  std::vector<drc::StepRatio> ratios;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<drc::InterleavedRound> ofSpec;
    for (const Round &round : timed)
      ofSpec.push_back(round.specs[i]);
    ratios.push_back(drc::summarizeInterleaved(ofSpec).front());
  }
  std::vector<double> referenceSeconds;
  for (const Round &round : timed)
    referenceSeconds.insert(referenceSeconds.end(), round.reference.begin(),
                            round.reference.end());
  double refSeconds = drc::median(referenceSeconds);
  std::printf("%lld rounds; step time: median over rounds; ratio: the step "
              "over the mean of the %s steps beside it, median (range)\n",
              static_cast<long long>(rounds), reference.path.c_str());
  std::printf("%-40s %10s %10s %8s %s\n", "spec", "step ms", "tokens/s",
              "ratio", "range");
  std::printf("%-40s %10.1f %10.0f %8s\n", (reference.path + " (REF)").c_str(),
              1e3 * refSeconds, reference.tokensPerStep() / refSeconds, "-");
  for (size_t i = 0; i < specs.size(); ++i)
    std::printf("%-40s %10.1f %10.0f %7.3fx %.3f-%.3fx\n",
                specs[i]->path.c_str(), 1e3 * ratios[i].medianSeconds,
                specs[i]->tokensPerStep() / ratios[i].medianSeconds,
                ratios[i].medianRatio, ratios[i].minRatio, ratios[i].maxRatio);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-time", timeMain, argc, argv);
}
