//===- CpuPipeline.cpp - linalg on tensors -> LLVM for the host ----------===//
#include "codegen/CpuPipeline.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

#include <mutex>

using namespace mlir;

/// Textual pipeline (MLIR 22 pass names). One-shot bufferization with the
/// empty-tensor elimination that lets results land in their destination.
static constexpr const char *kCpuCodegen =
    "eliminate-empty-tensors,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,"
    "buffer-deallocation-pipeline,"
    "func.func(convert-linalg-to-loops),"
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-math-to-llvm,"
    "convert-ub-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

void mlir::drc::buildCpuCodegenPipeline(OpPassManager &pm) {
  // The textual pipeline needs the upstream passes registered; registering
  // them again (drc-opt already has) is harmless.
  static std::once_flag registered;
  std::call_once(registered, [] { registerAllPasses(); });
  if (failed(parsePassPipeline(kCpuCodegen, pm)))
    llvm::report_fatal_error("drc: the built-in CPU pipeline does not parse");
}

void mlir::drc::registerCpuCodegenPipeline() {
  PassPipelineRegistration<>(
      "drc-cpu-codegen",
      "Bufferize and lower drc-bind-buffers output to the LLVM dialect",
      buildCpuCodegenPipeline);
}
