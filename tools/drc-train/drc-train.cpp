//===- drc-train.cpp - Train a model spec on a corpus --------------------===//
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/CudaDriver.h"
#include "runtime/CudaProgram.h"
#include "runtime/Error.h"
#include "runtime/Trainer.h"
#ifdef DRC_WITH_COMPILER
#include "tools/common/HostCompiler.h"
#endif

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

namespace {

const char *const kHelp =
    R"(usage: drc-train SPEC --data DIR --out RUNDIR [options]

Compiles the model spec SPEC (docs/spec.md) for this CPU, or for an NVIDIA
GPU with --device cuda, and trains it on the corpus DIR (docs/data.md),
writing RUNDIR/metrics.jsonl (one JSON object per evaluation) and
RUNDIR/checkpoint.safetensors (docs/checkpoint.md) every [train] eval_every
steps, after --checkpoint-seconds of training without one and at the end,
and RUNDIR/spec.toml when the run starts: SPEC with the run's steps and
seed and an absolute scheme_file, the spec drc-probe finds beside the
checkpoint. Progress goes to stderr. At the end it prints the
final validation loss, the mean tokens/s of this process's steps after the
first, and the median and fastest step times (steadier than the mean on a
shared machine).

options:
  --data DIR      corpus directory with one subdirectory per domain
  --out RUNDIR    run directory (created if missing)
  --steps N       total optimizer steps (default: [train] steps of SPEC)
  --seed S        seed of parameter init and batch order (default: [train] seed)
  --resume        continue the run in RUNDIR from its checkpoint; the
                  resumed run's metrics equal an uninterrupted run's
  --checkpoint-seconds S
                  also checkpoint between evaluations once S seconds of
                  training have passed since the last checkpoint (default
                  600), so a crash loses at most that; 0: every step
  --no-fuse       compile every token-local op as its own kernel (no
                  drc.fused regions): the same numbers, for speed comparisons
  --device D      cpu (default) or cuda: GPU 0 through the CUDA driver,
                  loaded at run time (docs/cuda.md); the PTX and manifest
                  are written to RUNDIR/cuda
  --artifacts DIR with --device cuda: run the PTX and manifest that
                  drc-compile SPEC --target=cuda -o DIR wrote, compiling
                  nothing (a drc built without the compiler needs this)
  --profile       with --device cuda: time every kernel launch (waiting
                  for each, so steps are slower) and print the 20 kernels
                  that took longest, with their share of all kernel time
  --cuda-graph    with --device cuda: capture each entry point's launches
                  (training step, loss) as a CUDA graph the first time it
                  runs and replay the graph after, one launch per call
                  instead of thousands; where the driver refuses, it says
                  so and launches the kernels one by one
  --help          this text

Ctrl-C (SIGINT) or SIGTERM while it trains stops the run after its current
step, with a checkpoint of that step that --resume continues exactly (a
signal while it compiles ends it at once, losing no training); a second one
ends it at once.

exit status: 0 success, 1 failure while training (e.g. divergence),
             2 bad usage or bad input (spec and its scheme, data, run
               directory), 130 stopped by SIGINT or SIGTERM.
)";

/// The compiled program to train, on the device the command line names.
struct Program {
  std::unique_ptr<drc::CudaDriver> driver;     ///< --device cuda only
  std::unique_ptr<drc::KernelProfile> profile; ///< --profile only
  std::unique_ptr<drc::ModelProgram> model;
  std::string target;
};

double secondsSince(std::chrono::steady_clock::time_point began) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
      .count();
}

/// Refuses artifacts compiled from a spec other than `spec`.
void checkCompiledFrom(const std::filesystem::path &dir,
                       const drc::ModelSpec &spec) {
  std::string compiled = drc::loadCudaManifest(dir).spec;
  if (compiled != drc::programFingerprint(spec))
    throw drc::InputError(
        (dir / "manifest.json").string() + " was compiled from a spec with " +
        compiled + ", but " + spec.path + " gives " +
        drc::programFingerprint(spec) + "; compile it again with drc-compile " +
        spec.path + " --target=cuda -o " + dir.string());
}

Program compileOrLoad(const drc::ModelSpec &spec, const drc::CommandLine &cl,
                      const std::filesystem::path &runDir) {
  Program p;
  std::string device = cl.value("device").value_or("cpu");
  if (device != "cpu" && device != "cuda")
    throw drc::UsageError("--device=" + device +
                          " is not a device; use cpu "
                          "or cuda");
  std::optional<std::string> artifacts = cl.value("artifacts");
  if (artifacts && device != "cuda")
    throw drc::UsageError("--artifacts is for --device cuda");
  if (cl.flag("profile") && device != "cuda")
    throw drc::UsageError("--profile times GPU kernels; use it with "
                          "--device cuda");
  if (cl.flag("cuda-graph") && device != "cuda")
    throw drc::UsageError("--cuda-graph replays GPU launches; use it with "
                          "--device cuda");
  if (cl.flag("cuda-graph") && cl.flag("profile"))
    throw drc::UsageError("--profile times each kernel launch, which a CUDA "
                          "graph replays as one; use one of --profile and "
                          "--cuda-graph");
  if (artifacts && cl.flag("no-fuse"))
    throw drc::UsageError("--no-fuse is a way to compile, and --artifacts "
                          "compiles nothing; compile with drc-compile "
                          "--no-fuse instead");
#ifndef DRC_WITH_COMPILER
  if (!artifacts)
    throw drc::UsageError(
        "this drc-train was built without the compiler (DRC_BUILD_COMPILER="
        "OFF), so it runs only compiled artifacts: on a machine with drc's "
        "compiler run drc-compile " +
        spec.path +
        " --target=cuda -o DIR, then pass --device cuda "
        "--artifacts DIR");
#endif
  auto began = std::chrono::steady_clock::now();
  if (device == "cuda") {
    std::filesystem::path dir =
        artifacts ? std::filesystem::path(*artifacts) : runDir / "cuda";
    if (artifacts)
      checkCompiledFrom(dir, spec);
    // The driver before compiling: no GPU is found after minutes of work.
    p.driver = std::make_unique<drc::CudaDriver>();
    p.target = p.driver->deviceDescription();
#ifdef DRC_WITH_COMPILER
    if (!artifacts) {
      std::fprintf(stderr, "drc-train: compiling %s for %s into %s\n",
                   spec.path.c_str(), p.target.c_str(), dir.c_str());
      drc::HostCompiler().compileForCuda(spec, dir.string(),
                                         !cl.flag("no-fuse"));
      std::fprintf(stderr, "drc-train: compiled %s in %.1f s\n",
                   spec.path.c_str(), secondsSince(began));
      began = std::chrono::steady_clock::now();
    }
#endif
    auto program = std::make_unique<drc::CudaProgram>(*p.driver, dir);
    if (cl.flag("profile")) {
      p.profile = std::make_unique<drc::KernelProfile>();
      program->setProfile(p.profile.get());
    }
    program->setGraphs(cl.flag("cuda-graph"));
    std::fprintf(stderr, "drc-train: loaded %s onto %s in %.1f s\n",
                 dir.c_str(), p.target.c_str(), secondsSince(began));
    p.model = std::move(program);
    return p;
  }
#ifdef DRC_WITH_COMPILER
  std::fprintf(stderr, "drc-train: compiling %s for this CPU\n",
               spec.path.c_str());
  drc::HostCompiler compiler;
  auto model = compiler.compile(spec, !cl.flag("no-fuse"));
  std::fprintf(stderr, "drc-train: compiled %s in %.1f s%s\n",
               spec.path.c_str(), secondsSince(began),
               model->jit().cached() ? " (object code from the cache)" : "");
  p.model = std::move(model);
  p.target = "this CPU";
#endif
  return p;
}

int trainMain(int argc, char **argv) {
  drc::CommandLine cl(argc, argv,
                      {"data", "out", "steps", "seed", "device", "artifacts",
                       "checkpoint-seconds"},
                      {"resume", "no-fuse", "profile", "cuda-graph", "help"});
  if (cl.printedHelp(kHelp))
    return 0;
  drc::ModelSpec spec = drc::loadModelSpec(cl.onlyPositional("SPEC"));
  drc::TrainOptions options;
  options.runDir = cl.required("out");
  std::string data = cl.required("data");
  options.steps = cl.integer("steps", spec.train.steps, 1, int64_t(1) << 40);
  options.seed = static_cast<uint64_t>(
      cl.integer("seed", static_cast<int64_t>(spec.train.seed), 0, INT64_MAX));
  options.resume = cl.flag("resume");
  options.checkpointSeconds = static_cast<double>(cl.integer(
      "checkpoint-seconds", static_cast<int64_t>(options.checkpointSeconds), 0,
      int64_t(1) << 40));
  options.specText = drc::runSpecText(spec, options.steps, options.seed);
  drc::Corpus corpus =
      drc::loadCorpus(data, static_cast<uint32_t>(spec.model.vocab));
  drc::checkTrainingInputs(spec, corpus, options); // before compiling

  Program program = compileOrLoad(spec, cl, options.runDir);
  drc::ModelProgram &model = *program.model;
  std::fprintf(stderr,
               "drc-train: %s on %s: %lld parameters, %zu domains, %lld "
               "steps of %lld tokens\n",
               spec.path.c_str(), program.target.c_str(),
               static_cast<long long>(model.parameters().numParameters()),
               corpus.domains.size(), static_cast<long long>(options.steps),
               static_cast<long long>(spec.tokensPerStep()));
  drc::TrainSummary summary;
  try {
    summary = drc::train(model, spec, corpus, options);
  } catch (const drc::Interrupted &e) {
    throw drc::Interrupted(
        std::string(e.what()) + "; continue with: drc-train " +
        drc::specPath(options.runDir).string() + " --data " + data + " --out " +
        options.runDir.string() + " --resume");
  }
  if (program.profile)
    std::fprintf(stderr,
                 "drc-train: kernel time, each launch waited for "
                 "(training and evaluation):\n%s",
                 program.profile->report(20).c_str());
  std::printf("final val_loss %.4f after %lld steps (%.0f tokens/s)\n",
              summary.final.loss, static_cast<long long>(summary.steps),
              summary.tokensPerSecond);
  for (const drc::DomainLoss &d : summary.final.domains)
    std::printf("  %-8s val_loss %.4f  unigram entropy %.4f  (%.1f%% below)\n",
                d.domain.c_str(), d.loss, d.unigramEntropy,
                100.0 * (1.0 - d.loss / d.unigramEntropy));
  if (summary.medianStepSeconds > 0)
    std::printf("step time: median %.1f ms (%.0f tokens/s), fastest %.1f ms\n",
                1e3 * summary.medianStepSeconds,
                spec.tokensPerStep() / summary.medianStepSeconds,
                1e3 * summary.fastestStepSeconds);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-train", trainMain, argc, argv);
}
