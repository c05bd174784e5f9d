//===- drc-probe.cpp - Layer-level probes of a checkpoint ----------------===//
#include "runtime/AtomicFile.h"
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/Error.h"
#include "runtime/Json.h"
#include "runtime/Probes.h"
#include "runtime/Trainer.h"
#include "tools/common/HostCompiler.h"
#include "tools/common/ToolOutput.h"

#include <cstdio>
#include <filesystem>

namespace {

const char *const kHelp =
    R"(usage: drc-probe CHECKPOINT --data DIR [--spec SPEC] [--batches N] [-o OUT]

Runs the layer-level probes (docs/probes.md) on the weights of CHECKPOINT
over N validation batches of the corpus DIR (default 4, taken from the
domains in turn) and prints one JSON object, or writes it to OUT:
  angular_distance   between every two depth states z_i, z_j
  causal_score       how much skipping block s changes block b's update
  swap_score         the relative loss change when blocks i and j trade
                     their parameters
  pruning            the loss change when one block is skipped
  logit_lens         each z_b read out by the final norm and W_U: its loss,
                     KL from the model's distribution, top-5 overlap
  late_pairs         among blocks >= L/4, the fraction of pairs with a causal
                     score > 0.45 and with a swap score > 0.15
  stream_maps        for HC, mHC and VWN: effective rank and Amax gains of
                     the composed stream maps
  depth_tasks        for each task domain (a TASK file, e.g. drc-data perm):
                     accuracy by k of every z_b's logit lens, over at most
                     [train] eval_tokens of its validation problems
SPEC is the checkpoint's model spec, by default spec.toml beside it (as
drc-train writes it in its run directory). Progress goes to stderr.

exit status: 0 success, 1 failure, 2 bad usage or bad input.
)";

int probeMain(int argc, char **argv) {
  std::vector<char *> args = drc::withLongOutputOption(argc, argv);
  drc::CommandLine cl(static_cast<int>(args.size()), args.data(),
                      {"data", "spec", "batches", "output"}, {"help"});
  if (cl.printedHelp(kHelp))
    return 0;
  std::string checkpoint = cl.onlyPositional("CHECKPOINT");
  drc::ModelSpec spec = drc::loadModelSpec(
      drc::checkpointSpec(checkpoint, cl.value("spec"), "--spec"));
  int64_t batches = cl.integer("batches", 4, 1, 1 << 20);
  drc::Corpus corpus = drc::loadCorpus(cl.required("data"),
                                       static_cast<uint32_t>(spec.model.vocab));
  drc::checkProbeBatches(spec, corpus, batches);
  drc::taskDomains(corpus); // an unknown TASK is refused before compiling
  drc::HostCompiler compiler;
  std::fprintf(stderr, "drc-probe: compiling the probes of %s\n",
               spec.path.c_str());
  auto program = compiler.compileProbes(spec);
  drc::ProbeResult result = drc::probeCheckpoint(*program, spec, checkpoint,
                                                 corpus, batches, "probe");
  drc::JsonValue out = result.toJson();
  out.set("checkpoint", checkpoint);
  std::string text = drc::toJson(out) + "\n";
  if (std::optional<std::string> path = cl.value("output"))
    drc::writeFileAtomically(*path, text);
  else
    std::fputs(text.c_str(), stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-probe", probeMain, argc, argv);
}
