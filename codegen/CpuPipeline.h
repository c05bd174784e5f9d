//===- CpuPipeline.h - linalg on tensors -> LLVM for the host --*- C++ -*-===//
#ifndef DRC_CODEGEN_CPUPIPELINE_H
#define DRC_CODEGEN_CPUPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::drc {

/// Bufferizes drc-bind-buffers' output and lowers it to the LLVM dialect.
/// With `gpuLoops`, through the GPU kernels' loop form instead of the CPU's
/// tiled and vectorised kernels (buildGpuLoopsPipeline): slow, for testing
/// what the GPU runs.
void buildCpuCodegenPipeline(OpPassManager &pm, bool gpuLoops = false);

/// Registers it as `drc-cpu-codegen` for drc-opt.
void registerCpuCodegenPipeline();

} // namespace mlir::drc

#endif // DRC_CODEGEN_CPUPIPELINE_H
