//===- CpuPipeline.cpp - linalg on tensors -> LLVM for the host ----------===//
#include "codegen/CpuPipeline.h"

#include "codegen/CudaTarget.h"
#include "passes/Passes.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

using namespace mlir;

/// After drc-cpu-tile, this textual pipeline (MLIR 22 pass names). No CSE
/// before bufferization: merged zero fills of two accumulators would be
/// copied. Temporaries up to 4 KiB (a fused region's per-tile coefficients
/// and Sinkhorn matrices) live on the stack: each allocation is otherwise a
/// locked trip to the scratch pool, per tile and per op (mHC trained 60%
/// faster at d_model 128 with them on the stack). The scope that frees them
/// is the function or a parallel loop's iteration, never an scf.for. The
/// other temporaries are freed where their block ends (drc-free-buffers).
/// Depth banks' stores become buffers first (drc-bank-stores-to-buffers:
/// the analysis of a store's appends and reads was cubic in depth), then
/// one-shot bufferization with the empty-tensor elimination that lets
/// results land in their destination, then vector contractions lowered to
/// outer products (no canonicalization after that: it would scalarise the
/// accumulator) and everything to the LLVM dialect. drc-outline-kernels runs
/// between the two halves. Thread-parallel loops (scf.forall) become OpenMP
/// worksharing loops with a static schedule, but a large fused region's
/// tiles go to whichever thread is free (drc-balance-fused-tiles); either
/// way each iteration writes its own results, so they do not depend on the
/// thread count. Memref lowering precedes scf-to-cf because the OpenMP
/// conversion wraps loop bodies in memref.alloca_scope, which must still be
/// a single block when it is lowered. Allocations go through the generic
/// functions, which the JIT binds to ScratchPool. Up to the outlining,
/// every pass but one-shot bufferization and drc-copies-to-linalg runs per
/// function, so the pass
/// manager's threads take the entry points (the loss and the train step;
/// the probe program's L + 2) side by side: the same IR, sooner.
static constexpr const char *kBufferize =
    "func.func(canonicalize,drc-bank-stores-to-buffers),"
    "func.func(eliminate-empty-tensors),"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "func.func(canonicalize),"
    "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=4096 "
    "max-rank-of-allocated-memref=4}),"
    "func.func(drc-free-buffers,cse,canonicalize)";
static constexpr const char *kToOpenMP =
    "scf-forall-to-parallel,convert-scf-to-openmp";
static constexpr const char *kToLLVM =
    "func.func(convert-linalg-to-loops),"
    "func.func(convert-vector-to-scf{full-unroll=true}),"
    "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
    "expand-strided-metadata,lower-affine,finalize-memref-to-llvm{use-generic-"
    "functions=true},"
    "convert-scf-to-cf,convert-arith-to-llvm,convert-math-to-llvm,"
    "convert-ub-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
    "convert-openmp-to-llvm,"
    "reconcile-unrealized-casts,drc-noalias-to-llvm";

void mlir::drc::buildCpuCodegenPipeline(OpPassManager &pm, bool gpuLoops) {
  // The textual pipeline needs the passes registered; registering them
  // again (drc-opt already has) is harmless.
  static std::once_flag registered;
  std::call_once(registered, [] {
    registerAllPasses();
    mlir::drc::registerDrcPasses();
  });
  // The register tile must fit the vector register file: 16 AVX2 registers
  // hold a 4x16 f32 tile plus operands, 32 AVX-512 ones an 8x32 tile.
  CpuTileAndVectorizeOptions tiling;
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f")) {
    tiling.registerRows = 8;
    tiling.registerColumns = 32;
  }
  if (gpuLoops) {
    buildGpuLoopsPipeline(pm);
    pm.addPass(createOutlineKernels());
    if (failed(parsePassPipeline(kToOpenMP, pm)) ||
        failed(parsePassPipeline(kToLLVM, pm)))
      llvm::report_fatal_error("drc: the built-in CPU pipeline does not parse");
    return;
  }
  pm.addNestedPass<func::FuncOp>(createCpuTileAndVectorize(tiling));
  pm.addNestedPass<func::FuncOp>(createApproximateMath());
  if (failed(parsePassPipeline(kBufferize, pm)))
    llvm::report_fatal_error("drc: the built-in CPU pipeline does not parse");
  pm.addPass(createCopiesToLinalg());
  pm.addPass(createOutlineKernels());
  pm.addPass(createMarkNoAlias());
  if (failed(parsePassPipeline(kToOpenMP, pm)))
    llvm::report_fatal_error("drc: the built-in CPU pipeline does not parse");
  pm.addPass(createBalanceFusedTiles());
  if (failed(parsePassPipeline(kToLLVM, pm)))
    llvm::report_fatal_error("drc: the built-in CPU pipeline does not parse");
}

void mlir::drc::registerCpuCodegenPipeline() {
  PassPipelineRegistration<>(
      "drc-cpu-codegen",
      "Bufferize and lower drc-bind-buffers output to the LLVM dialect",
      [](OpPassManager &pm) { buildCpuCodegenPipeline(pm); });
}
