//===- drc-eval.cpp - Validation loss of a checkpoint --------------------===//
#include "runtime/Checkpoint.h"
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/Evaluation.h"
#include "runtime/Json.h"
#include "runtime/ParameterBuffer.h"
#include "runtime/Trainer.h"
#include "tools/common/HostCompiler.h"

#include <cstdio>

namespace {

const char *const kHelp = R"(usage: drc-eval [SPEC] --checkpoint FILE --data DIR

Compiles SPEC for this CPU, loads the weights of FILE (a checkpoint written
by drc-train for the same spec) and prints one JSON object: the validation
loss over all domains of the corpus DIR and per domain, with each domain's
byte-unigram entropy for scale. SPEC is by default spec.toml beside FILE
(drc-train writes it in its run directory).

exit status: 0 success, 1 failure, 2 bad usage or bad input (a checkpoint
of another spec names the first tensor that does not match).
)";

int evalMain(int argc, char **argv) {
  drc::CommandLine cl(argc, argv, {"checkpoint", "data"}, {"help"});
  if (cl.printedHelp(kHelp))
    return 0;
  std::string checkpoint = cl.required("checkpoint");
  if (cl.positional().size() > 1)
    throw drc::UsageError("expected at most one SPEC, got " +
                          std::to_string(cl.positional().size()));
  std::optional<std::string> given;
  if (!cl.positional().empty())
    given = cl.positional().front();
  drc::ModelSpec spec = drc::loadModelSpec(
      drc::checkpointSpec(checkpoint, given, "SPEC, the first argument"));
  drc::Corpus corpus = drc::loadCorpus(cl.required("data"),
                                       static_cast<uint32_t>(spec.model.vocab));
  drc::HostCompiler compiler;
  auto model = compiler.compile(spec);
  drc::ParameterBuffer params(model->parameters().numElements(), 0.0f);
  drc::TrainState state =
      drc::loadCheckpointWeights(checkpoint, model->parameters(),
                                 drc::modelFingerprint(spec), params.data());
  drc::BatchSampler sampler(corpus, spec.train.batch, spec.model.seqLen,
                            spec.train.evalTokens);
  drc::EvalResult result =
      drc::evaluate(*model, params.data(), corpus, sampler);
  drc::JsonValue out = result.toJson();
  out.set("step", state.step);
  out.set("checkpoint", checkpoint);
  std::printf("%s\n", drc::toJson(out).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-eval", evalMain, argc, argv);
}
