//===- drc-compile.cpp - Compile a model spec to a chosen stage ----------===//
#include "dialect/ModelImport.h"
#include "passes/TokenLocalRegions.h"
#include "runtime/CommandLine.h"
#include "runtime/ShapeSolver.h"
#include "tools/common/HostCompiler.h"
#include "tools/common/ToolOutput.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace {

const char *const kHelp =
    R"(usage: drc-compile SPEC [--emit=STAGE] [--no-fuse] [--probes] [-o OUT]
       drc-compile SPEC --target=cuda [--no-fuse] -o DIR
       drc-compile SPEC --print-params
       drc-compile SPEC --report
       drc-compile SPEC --solve-width=N [--iso-backbone]

Compiles the model spec SPEC (docs/spec.md) and writes the program after
STAGE to OUT (default: standard output):
  drc         the imported model: parameters and the loss function
  train-step  loss and train_step (forward, backward, AdamW) in drc ops
  fused       the same, token-local residual work grouped into drc.fused
              regions (drc-fuse-token-local) and depth banks grown in
              place (drc-store-banks)
  linalg      linalg on tensors, bound to the runtime's flat buffers
  llvm        LLVM IR for this CPU
--target=cuda compiles the loss and train step for NVIDIA GPUs (sm_90)
instead and writes DIR/kernels.ptx (one PTX module, made by LLVM's NVPTX
backend, CUDA's libdevice linked for the math) and DIR/manifest.json (the
parameters, and each function's arguments, buffers, and kernel launches and
matrix products for cuBLASLt in order; docs/cuda.md). --target=cpu is the
default.
--no-fuse leaves every token-local op its own kernel (no drc.fused regions
before linalg): the reference the fused program is tested against.
--probes compiles the forward functions drc-probe runs instead of the train
step: @loss, @probe (the depth states, their logit lens, HC-style stream
maps and the state entering each block), @chain_<b>_<i> (block b from a
state, returning its depth state and the state after it) and @end_<i> (the
final depth state and the loss), which run the model without a block from
the state entering it (docs/probes.md); train-step then
means these functions in kernel-level drc ops.
--report prints the residual part's memory traffic in bytes per token: per
boundary between sublayers in the forward pass and in total for the train
step, with every op its own kernel (unfused), with each drc.fused region one
kernel (fused), and the minimum (the state read and written once, plus the
sublayer output read and its next input written). The sums over tokens that
make the residual parameters' gradients count too.
--print-params lists the parameters by optimizer group with their shapes and
initialisers instead, then totals: all, the backbone's, and what the residual
scheme adds.

--solve-width=N picks the d_model whose Pre-LN model, at the spec's n_layer,
n_head and vocab, has the parameter count closest to N (ARCHITECTURES.md
§1.2: a multiple of 2 n_head; flagged when not within 3%), and prints it;
with --iso-backbone N counts the blocks only (N_b).

exit status: 0 success, 1 compile failure after the model is built (a
             compiler bug), 2 bad usage or bad input (the spec and its scheme).
)";

/// Parameters by optimizer group, then totals: all, the backbone's
/// (ARCHITECTURES.md §1.2's N), and what the residual scheme adds.
std::string printParams(mlir::ModuleOp module) {
  drc::ParameterTable table = mlir::drc::parameterTable(module);
  int64_t added = 0;
  for (auto param : module.getOps<mlir::drc::ParamOp>())
    if (param->hasAttr(mlir::drc::kResidualAttr))
      added += param.getTensorType().getNumElements();
  std::string out;
  char line[256];
  int64_t totals[2] = {0, 0};
  for (bool decay : {true, false}) {
    out += decay ? "weight decay group:\n" : "no-decay group:\n";
    for (const drc::ParameterInfo &p : table.parameters()) {
      if (p.decay != decay)
        continue;
      std::snprintf(line, sizeof line, "  %-32s %-12s %10lld  %s\n",
                    p.name.c_str(), drc::formatShapeText(p.shape).c_str(),
                    static_cast<long long>(p.numElements()),
                    drc::toString(p.init).c_str());
      out += line;
      totals[decay ? 0 : 1] += p.numElements();
    }
  }
  long long all = totals[0] + totals[1];
  std::snprintf(
      line, sizeof line,
      "total: %lld parameters (%lld decay, %lld no-decay): backbone "
      "%lld, residual scheme %lld\n",
      all, static_cast<long long>(totals[0]), static_cast<long long>(totals[1]),
      all - static_cast<long long>(added), static_cast<long long>(added));
  return out + line;
}

int compileMain(int argc, char **argv) {
  // -o is the one short option, as in every compiler.
  std::vector<char *> args = drc::withLongOutputOption(argc, argv);
  drc::CommandLine cl(
      static_cast<int>(args.size()), args.data(),
      {"emit", "output", "solve-width", "target"},
      {"print-params", "report", "iso-backbone", "no-fuse", "probes", "help"});
  if (cl.printedHelp(kHelp))
    return 0;
  drc::ModelSpec spec = drc::loadModelSpec(cl.onlyPositional("SPEC"));
  if (cl.value("solve-width")) {
    int64_t budget = cl.integer("solve-width", 0, 1, int64_t(1) << 50);
    drc::Budget mode =
        cl.flag("iso-backbone") ? drc::Budget::Backbone : drc::Budget::Total;
    const drc::ModelShape &m = spec.model;
    drc::SolvedShape s =
        drc::solveShape(budget, m.nLayer, m.nHead, m.vocab, mode);
    std::printf("n_layer = %lld\nd_model = %lld\nd_ff = %lld\n%s = %lld "
                "(%+.2f%% of %lld)%s\n",
                static_cast<long long>(m.nLayer),
                static_cast<long long>(s.dModel), static_cast<long long>(s.dFF),
                mode == drc::Budget::Total ? "params" : "backbone_params",
                static_cast<long long>(s.params), 100 * s.deviation,
                static_cast<long long>(budget),
                s.withinTolerance() ? "" : "  NOT within 3% of the budget");
    return s.withinTolerance() ? 0 : 1;
  }
  std::string target = cl.value("target").value_or("cpu");
  if (target != "cpu" && target != "cuda")
    throw drc::UsageError("--target=" + target +
                          " is not a target; use cpu "
                          "or cuda");
  if (target == "cuda") {
    if (!cl.value("output"))
      throw drc::UsageError("--target=cuda writes a directory: give it with "
                            "-o DIR");
    if (cl.value("emit") || cl.flag("probes") || cl.flag("report") ||
        cl.flag("print-params"))
      throw drc::UsageError("--target=cuda takes no --emit, --probes, "
                            "--report or --print-params");
    drc::HostCompiler().compileForCuda(spec, *cl.value("output"),
                                       !cl.flag("no-fuse"));
    return 0;
  }
  std::string stageName = cl.value("emit").value_or("train-step");
  std::optional<mlir::drc::CompileStage> stage =
      mlir::drc::parseCompileStage(stageName);
  if (!stage)
    throw drc::UsageError(
        "--emit=" + stageName +
        " is not a stage; use drc, train-step, fused, linalg or llvm");
  drc::HostCompiler compiler;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (cl.flag("print-params")) {
    auto module = compiler.lower(spec, mlir::drc::CompileStage::Drc);
    text = printParams(*module);
  } else if (cl.flag("report")) {
    // The train step once; the fused program is a copy of it, fused.
    auto module = compiler.lower(spec, mlir::drc::CompileStage::TrainStep);
    mlir::OwningOpRef<mlir::ModuleOp> fused = module->clone();
    mlir::PassManager pm(&compiler.context());
    pm.addPass(mlir::drc::createFuseTokenLocal());
    if (mlir::failed(pm.run(*fused)))
      throw drc::Error("fusing the train step of " + spec.path + " failed");
    text = mlir::drc::residualTrafficReport(*module, *fused);
  } else {
    mlir::drc::ImportOptions options;
    options.probes = cl.flag("probes");
    auto module = compiler.lower(spec, *stage, !cl.flag("no-fuse"), options);
    if (*stage == mlir::drc::CompileStage::LLVM) {
      llvm::LLVMContext llvmContext;
      auto llvmModule = mlir::translateModuleToLLVMIR(*module, llvmContext);
      if (!llvmModule)
        throw drc::Error("translating " + spec.path + " to LLVM IR failed");
      llvmModule->print(os, nullptr);
    } else {
      module->print(os);
      os << "\n";
    }
  }
  drc::writeOutput(cl.value("output"), text);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-compile", compileMain, argc, argv);
}
