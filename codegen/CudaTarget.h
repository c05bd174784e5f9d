//===- CudaTarget.h - Programs as PTX and a launch manifest -----*- C++ -*-===//
//
// The GPU half of codegen: a module at the linalg stage (drc-bind-buffers'
// output) becomes one PTX module for sm_90, made by LLVM's NVPTX backend
// through the gpu and NVVM dialects, and a manifest the runtime follows
// without MLIR: for each entry point (loss, train_step, ...) its arguments,
// the scratch and constant buffers it needs, and its kernel launches in
// order, each with its grid, block and operands. A memref operand is a view
// of a buffer at a static offset, sizes and strides; it is passed as MLIR's
// memref descriptor (allocated and aligned pointer, offset, sizes, strides,
// each i64). docs/cuda.md describes the manifest.
//
// Route: every linalg op becomes parallel loops mapped to blocks and
// threads; serial work the CPU host would do becomes one-thread kernels
// (drc-gpu-scalar-operands, drc-gpu-wrap-serial); transcendental math is
// linked from CUDA's libdevice, so no `.extern .func` is left in the PTX.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_CUDATARGET_H
#define DRC_CODEGEN_CUDATARGET_H

#include "passes/Passes.h"
#include "runtime/Json.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::drc {

struct CudaOptions {
  std::string chip = "sm_90";
  /// CUDA's libdevice bitcode; empty: $CUDA_HOME's, else /usr/local/cuda's.
  std::string libdevice;
  /// What the manifest records as the compiled spec (its "spec" field,
  /// ::drc::programFingerprint); the runtime checks it before running.
  std::string spec;
};

struct CudaArtifacts {
  std::string ptx;
  ::drc::JsonValue manifest; ///< with "ptx": the file name to give the PTX
};

/// `train` with the GPU's choices: one token per fused tile (each thread
/// block runs one token's residual work, drc-gpu-block-regions),
/// the dense embedding gradient (no serial scatter) and attention's
/// products batched over all heads (a loop over head blocks would give the
/// GPU 32 threads' work at the benchmark shape).
TrainPipelineOptions gpuTrainOptions(TrainPipelineOptions train);

/// The first half of the GPU pipeline: bufferization, then every linalg op
/// as parallel loops and the host's serial work as one-iteration parallel
/// loops, each top-level nest a future kernel. The CPU pipeline can finish
/// it too (buildCpuCodegenPipeline's gpuLoops), which is how the GPU
/// kernels' loops are tested against the CPU program here.
void buildGpuLoopsPipeline(OpPassManager &pm);

/// The libdevice CudaOptions::libdevice names, or the toolkit's; empty when
/// there is none.
std::string findLibdevice(const CudaOptions &options);

/// Compiles a topology-level module (consumed: its drc.param declarations
/// and forward functions, as compileForHost takes it) for the GPU; the
/// manifest's "parameters" is the table in ParameterTable::toText's form.
/// Diagnostics go to the context's handler; failure when a pass fails, a
/// host-side op cannot be replayed from the manifest, or the PTX calls an
/// unresolved function.
FailureOr<CudaArtifacts> compileForCuda(ModuleOp module,
                                        const TrainPipelineOptions &train,
                                        const CudaOptions &options = {});

} // namespace mlir::drc

#endif // DRC_CODEGEN_CUDATARGET_H
