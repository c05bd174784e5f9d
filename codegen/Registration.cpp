//===- Registration.cpp - Everything a drc compile needs loaded ----------===//
#include "codegen/Registration.h"

#include "codegen/CpuPipeline.h"
#include "dialect/DrcDialect.h"
#include "passes/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::drc::registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<DrcDialect>();
}

void mlir::drc::registerCompilerPasses() {
  registerAllPasses();
  registerDrcPasses();
  registerPipelines();
  registerCpuCodegenPipeline();
}
