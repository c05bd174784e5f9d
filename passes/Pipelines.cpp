//===- Pipelines.cpp - Pass pipelines shared by drc-opt and the driver ---===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::drc;

void mlir::drc::buildTrainStepPipeline(OpPassManager &pm,
                                       const TrainPipelineOptions &options) {
  pm.addPass(createDecomposeSublayers());
  // A scheme may repeat a sublayer's projection (MoDA caches W_k u and W_v
  // u): merged before autodiff, the backward computes it once too.
  pm.addPass(createCSEPass());
  if (!options.differentiate)
    return;
  AutodiffOptions autodiff;
  autodiff.beta1 = options.beta1;
  autodiff.beta2 = options.beta2;
  autodiff.epsilon = options.epsilon;
  autodiff.weightDecay = options.weightDecay;
  autodiff.maxGradNorm = options.maxGradNorm;
  pm.addPass(createAutodiff(autodiff));
  pm.addPass(createCSEPass());
}

void mlir::drc::buildLowerToLinalgPipeline(
    OpPassManager &pm, const TrainPipelineOptions &options) {
  if (options.fuseTokenLocal) {
    FuseTokenLocalOptions fuse;
    fuse.tileTokens = options.fuseTileTokens;
    pm.addPass(createFuseTokenLocal(fuse));
    pm.addPass(createStoreBanks());
  }
  LowerToLinalgOptions lower;
  lower.denseEmbeddingGrad = options.denseEmbeddingGrad;
  lower.headBlocks = options.headBlocks;
  pm.addPass(createLowerToLinalg(lower));
  pm.addPass(createBindBuffers());
  // No CSE here: merging the zero-filled accumulators of two reductions
  // would make bufferization copy one of them.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseTileElementwise());
}

void mlir::drc::registerPipelines() {
  PassPipelineRegistration<>(
      "drc-train-step",
      "Topology IR -> train_step and loss in kernel-level drc ops",
      [](OpPassManager &pm) { buildTrainStepPipeline(pm, {}); });
  PassPipelineRegistration<>(
      "drc-to-linalg",
      "Kernel-level drc ops -> fused regions -> linalg on tensors bound to "
      "the runtime buffers",
      [](OpPassManager &pm) { buildLowerToLinalgPipeline(pm); });
}
