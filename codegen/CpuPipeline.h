//===- CpuPipeline.h - linalg on tensors -> LLVM for the host --*- C++ -*-===//
#ifndef DRC_CODEGEN_CPUPIPELINE_H
#define DRC_CODEGEN_CPUPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::drc {

/// Bufferizes drc-bind-buffers' output and lowers it to the LLVM dialect.
void buildCpuCodegenPipeline(OpPassManager &pm);

/// Registers it as `drc-cpu-codegen` for drc-opt.
void registerCpuCodegenPipeline();

} // namespace mlir::drc

#endif // DRC_CODEGEN_CPUPIPELINE_H
