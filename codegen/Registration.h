//===- Registration.h - Everything a drc compile needs loaded --*- C++ -*-===//
#ifndef DRC_CODEGEN_REGISTRATION_H
#define DRC_CODEGEN_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::drc {

/// Registers every upstream dialect, extension (bufferization and
/// to-LLVM interfaces) and LLVM IR translation, plus the drc dialect, so that
/// any pipeline drc builds can run in a context made from `registry`.
void registerCompilerDialects(DialectRegistry &registry);

/// Registers drc's passes and pipelines, and every upstream pass, for
/// textual pipelines (drc-opt).
void registerCompilerPasses();

} // namespace mlir::drc

#endif // DRC_CODEGEN_REGISTRATION_H
