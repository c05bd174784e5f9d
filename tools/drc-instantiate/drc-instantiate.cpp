//===- drc-instantiate.cpp - A residual scheme, instantiated -------------===//
//
// For scheme authors: a scheme file unrolled over every sublayer of a model,
// without writing a spec first (a 2-block toy model unless --spec names one).
//
//===----------------------------------------------------------------------===//
#include "runtime/CommandLine.h"
#include "tools/common/HostCompiler.h"
#include "tools/common/ToolOutput.h"

#include "llvm/Support/raw_ostream.h"

#include <filesystem>

namespace {

const char *const kHelp =
    R"(usage: drc-instantiate SCHEME.mlir [--spec SPEC] [-o OUT]

Instantiates the residual scheme SCHEME.mlir (docs/schemes.md) over every
sublayer of a model and writes the result, the model's parameters and its
loss function in drc ops, to OUT (default: standard output). The model is
SPEC's (docs/spec.md) with SCHEME.mlir as its scheme and the options of its
[residual] table, or without --spec a toy model small enough to read: 2
blocks of width 16, 2 heads, vocabulary 32, 8 tokens, the scheme's default
options. drc-compile SPEC --emit=drc is the same for a spec's own scheme.

exit status: 0 success, 1 the scheme does not instantiate, 2 bad usage or
bad input.
)";

const char *const kToyModel = R"([model]
vocab = 32
d_model = 16
n_layer = 2
n_head = 2
seq_len = 8
[train]
batch = 1
steps = 1
lr = 1e-3
)";

int instantiateMain(int argc, char **argv) {
  std::vector<char *> args = drc::withLongOutputOption(argc, argv);
  drc::CommandLine cl(static_cast<int>(args.size()), args.data(),
                      {"spec", "output"}, {"help"});
  if (cl.printedHelp(kHelp))
    return 0;
  std::string scheme = cl.onlyPositional("SCHEME.mlir");
  if (!std::filesystem::is_regular_file(scheme))
    throw drc::InputError(scheme + ": no such scheme file");
  std::optional<std::string> specPath = cl.value("spec");
  drc::ModelSpec spec = specPath ? drc::loadModelSpec(*specPath)
                                 : drc::parseModelSpec(kToyModel, "toy model");
  spec.residual.scheme.clear();
  spec.residual.schemeFile = std::filesystem::absolute(scheme).string();
  drc::HostCompiler compiler;
  auto module = compiler.lower(spec, mlir::drc::CompileStage::Drc);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  drc::writeOutput(cl.value("output"), text);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-instantiate", instantiateMain, argc, argv);
}
