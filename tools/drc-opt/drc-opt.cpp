//===- drc-opt.cpp - The drc optimizer driver ----------------------------===//
//
// mlir-opt with drc's dialect, passes and pipelines: every upstream dialect,
// extension and translation is registered too, so any pipeline drc uses can
// be replayed on a file.
//
//===----------------------------------------------------------------------===//
#include "codegen/Registration.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::drc::registerCompilerPasses();
  mlir::DialectRegistry registry;
  mlir::drc::registerCompilerDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "drc optimizer driver\n", registry));
}
