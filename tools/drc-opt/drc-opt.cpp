//===- drc-opt.cpp - The drc optimizer driver ----------------------------===//
//
// mlir-opt with drc's dialect and passes: every upstream dialect, extension
// and translation is registered too, so any pipeline drc uses can be replayed
// on a file.
//
//===----------------------------------------------------------------------===//
#include "dialect/DrcDialect.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::drc::DrcDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "drc optimizer driver\n", registry));
}
