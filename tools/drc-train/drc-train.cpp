//===- drc-train.cpp - Train a model spec on a corpus --------------------===//
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/Trainer.h"
#include "tools/common/HostCompiler.h"

#include <chrono>
#include <cstdio>

namespace {

const char *const kHelp =
    R"(usage: drc-train SPEC --data DIR --out RUNDIR [options]

Compiles the model spec SPEC (docs/spec.md) for this CPU and trains it on the
corpus DIR (docs/data.md), writing RUNDIR/metrics.jsonl (one JSON object per
evaluation) and RUNDIR/checkpoint.safetensors (docs/checkpoint.md) every
[train] eval_every steps and at the end. Progress goes to stderr.

options:
  --data DIR      corpus directory with one subdirectory per domain
  --out RUNDIR    run directory (created if missing)
  --steps N       total optimizer steps (default: [train] steps of SPEC)
  --seed S        seed of parameter init and batch order (default: [train] seed)
  --resume        continue the run in RUNDIR from its checkpoint; the
                  resumed run's metrics equal an uninterrupted run's
  --no-fuse       compile every token-local op as its own kernel (no
                  drc.fused regions): the same numbers, for speed comparisons
  --help          this text

exit status: 0 success, 1 failure while training (e.g. divergence),
             2 bad usage or bad input (spec, data, run directory).
)";

int trainMain(int argc, char **argv) {
  drc::CommandLine cl(argc, argv, {"data", "out", "steps", "seed"},
                      {"resume", "no-fuse", "help"});
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
  drc::Corpus corpus =
      drc::loadCorpus(data, static_cast<uint32_t>(spec.model.vocab));

  drc::HostCompiler compiler;
  std::fprintf(stderr, "drc-train: compiling %s for this CPU\n",
               spec.path.c_str());
  auto compileBegan = std::chrono::steady_clock::now();
  auto model = compiler.compile(spec, !cl.flag("no-fuse"));
  std::fprintf(stderr, "drc-train: compiled %s in %.1f s%s\n",
               spec.path.c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             compileBegan)
                   .count(),
               model->jit().cached() ? " (object code from the cache)" : "");
  std::fprintf(stderr,
               "drc-train: %s: %lld parameters, %zu domains, %lld steps of "
               "%lld tokens\n",
               spec.path.c_str(),
               static_cast<long long>(model->parameters().numParameters()),
               corpus.domains.size(), static_cast<long long>(options.steps),
               static_cast<long long>(spec.tokensPerStep()));
  drc::TrainSummary summary = drc::train(*model, spec, corpus, options);
  std::printf("final val_loss %.4f after %lld steps (%.0f tokens/s)\n",
              summary.final.loss, static_cast<long long>(summary.steps),
              summary.tokensPerSecond);
  for (const drc::DomainLoss &d : summary.final.domains)
    std::printf("  %-8s val_loss %.4f  unigram entropy %.4f  (%.1f%% below)\n",
                d.domain.c_str(), d.loss, d.unigramEntropy,
                100.0 * (1.0 - d.loss / d.unigramEntropy));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-train", trainMain, argc, argv);
}
