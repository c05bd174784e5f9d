//===- Passes.h - drc passes and pipelines ----------------------*- C++ -*-===//
#ifndef DRC_PASSES_PASSES_H
#define DRC_PASSES_PASSES_H

#include "dialect/DrcDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::drc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// On a linalg.batch_matmul of causal attention (drc-lower-to-linalg), which
/// terms are exact zeros or which results go unread, so drc-cpu-tile skips
/// them: "output" (only C[g, i, j] with j <= i is read), "prefix" (A[g, i, k]
/// is 0 for k > i), "suffix" (A[g, i, k] is 0 for k < i).
inline constexpr llvm::StringLiteral kCausalAttr = "drc.causal";

/// On the tensor.empty of a depth bank's store (drc-store-banks), which
/// drc-bank-stores-to-buffers makes a buffer before bufferization.
inline constexpr llvm::StringLiteral kBankStoreAttr = "drc.bank_store";

/// Options of the model pipeline shared by drc-opt and the C++ driver.
struct TrainPipelineOptions {
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1,
         maxGradNorm = 1.0;
  /// Group token-local residual work into fused regions (off: every op is
  /// its own kernel, the reference the fused program is tested against).
  bool fuseTokenLocal = true;
  /// Tokens per fused tile (0: drc-fuse-token-local picks).
  int64_t fuseTileTokens = 0;
  /// drc-lower-to-linalg's dense-embedding-grad (the GPU's choice).
  bool denseEmbeddingGrad = false;
  /// drc-lower-to-linalg's head-blocks (the CPU's choice).
  bool headBlocks = true;
  /// Build train_step from @loss (off: a forward-only module, the probes').
  bool differentiate = true;
  /// CPU code through the GPU kernels' loop form instead of the CPU's
  /// kernels (codegen/CudaTarget.h); for testing what the GPU runs.
  bool gpuLoops = false;
};

/// Topology IR -> train_step and loss on tensors of kernel-level drc ops
/// (the forward functions alone when options.differentiate is off).
void buildTrainStepPipeline(OpPassManager &pm,
                            const TrainPipelineOptions &options);

/// Kernel-level drc IR -> linalg on tensors bound to the runtime's buffers,
/// token-local work fused into regions and depth banks grown in place first
/// unless options.fuseTokenLocal is off.
void buildLowerToLinalgPipeline(OpPassManager &pm,
                                const TrainPipelineOptions &options = {});

/// Registers the pipelines above as `drc-train-step` and `drc-to-linalg`.
void registerPipelines();

} // namespace mlir::drc

#endif // DRC_PASSES_PASSES_H
