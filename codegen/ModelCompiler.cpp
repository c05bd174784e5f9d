//===- ModelCompiler.cpp - Spec -> runnable program for the host ---------===//
#include "codegen/ModelCompiler.h"

#include "codegen/CpuPipeline.h"
#include "codegen/CudaTarget.h"
#include "passes/ParameterLayout.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <xmmintrin.h>

using namespace mlir;
using namespace mlir::drc;

std::optional<CompileStage> mlir::drc::parseCompileStage(StringRef name) {
  return llvm::StringSwitch<std::optional<CompileStage>>(name)
      .Case("drc", CompileStage::Drc)
      .Case("train-step", CompileStage::TrainStep)
      .Case("fused", CompileStage::Fused)
      .Case("linalg", CompileStage::Linalg)
      .Case("llvm", CompileStage::LLVM)
      .Default(std::nullopt);
}

static ::drc::Init runtimeInitOf(InitAttr init) {
  switch (init.getKind()) {
  case InitKind::TruncNormal:
    return ::drc::Init::truncNormal(init.getFirstValue(),
                                    init.getSecondValue());
  case InitKind::Constant:
    return ::drc::Init::constant(init.getFirstValue());
  case InitKind::Values: {
    std::vector<float> values;
    for (const APFloat &v : init.getValues().getValues<APFloat>()) {
      bool lost;
      APFloat single = v;
      single.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                     &lost);
      values.push_back(single.convertToFloat());
    }
    return ::drc::Init::fromValues(std::move(values));
  }
  case InitKind::Matrix:
    break; // the ParamOp verifier rejects it
  }
  llvm::report_fatal_error("drc: a parameter kept a template-only init");
}

::drc::ParameterTable mlir::drc::parameterTable(ModuleOp module) {
  ::drc::ParameterTable table;
  ParameterLayout layout = computeParameterLayout(module);
  for (const ParameterSlot &slot : layout.slots) {
    ParamOp param = slot.param;
    ::drc::Init runtimeInit = runtimeInitOf(param.getInit());
    auto shape = param.getTensorType().getShape();
    const ::drc::ParameterInfo &info =
        table.add(param.getSymName().str(), {shape.begin(), shape.end()},
                  runtimeInit, param.getDecay());
    if (info.offset != slot.offset)
      llvm::report_fatal_error("drc: compiler and runtime disagree on the "
                               "parameter layout");
  }
  return table;
}

TrainPipelineOptions
mlir::drc::trainPipelineOptions(const ::drc::ModelSpec &spec) {
  TrainPipelineOptions train;
  train.beta1 = spec.train.beta1;
  train.beta2 = spec.train.beta2;
  train.epsilon = spec.train.adamEps;
  train.weightDecay = spec.train.weightDecay;
  train.maxGradNorm = spec.train.gradClip;
  return train;
}

LogicalResult mlir::drc::lowerToStage(ModuleOp module,
                                      const ::drc::ModelSpec &spec,
                                      CompileStage stage,
                                      const ImportOptions &options,
                                      bool fuseTokenLocal) {
  if (stage == CompileStage::Drc)
    return success();
  PassManager pm(module.getContext());
  TrainPipelineOptions train = trainPipelineOptions(spec);
  train.fuseTokenLocal = fuseTokenLocal;
  train.differentiate = !options.probes;
  buildTrainStepPipeline(pm, train);
  if (stage == CompileStage::Fused && fuseTokenLocal) {
    pm.addPass(createFuseTokenLocal());
    pm.addPass(createStoreBanks());
  }
  if (stage >= CompileStage::Linalg)
    buildLowerToLinalgPipeline(pm, train);
  if (stage >= CompileStage::LLVM)
    buildCpuCodegenPipeline(pm);
  return pm.run(module);
}

FailureOr<std::unique_ptr<CpuModel>>
CpuModel::compile(MLIRContext &context, const ::drc::ModelSpec &spec,
                  const ImportOptions &options, bool fuseTokenLocal) {
  FailureOr<OwningOpRef<ModuleOp>> module =
      importModelSpec(context, spec, options);
  if (failed(module))
    return failure();
  int64_t tokens = options.tokens ? options.tokens : spec.tokensPerStep();
  TrainPipelineOptions train = trainPipelineOptions(spec);
  train.fuseTokenLocal = fuseTokenLocal;
  return compileModule(**module, tokens, train);
}

FailureOr<std::unique_ptr<CpuModel>>
CpuModel::compileModule(ModuleOp module, int64_t tokens,
                        const TrainPipelineOptions &train) {
  std::vector<double> weights;
  if (auto loss = module.lookupSymbol<func::FuncOp>("loss"))
    for (unsigned i = 0; i < loss.getNumResults(); ++i) {
      auto w = loss.getResultAttrOfType<FloatAttr>(i, kObjectiveWeightAttr);
      weights.push_back(w ? w.getValueAsDouble() : 1.0);
    }
  FailureOr<HostProgram> program = compileForHost(module, train);
  if (failed(program))
    return failure();
  return std::unique_ptr<CpuModel>(new CpuModel(std::move(program->table),
                                                tokens, std::move(weights),
                                                std::move(program->jit)));
}

FailureOr<HostProgram>
mlir::drc::compileForHost(ModuleOp module,
                          const TrainPipelineOptions &options) {
  // Through the GPU's loop form, with the GPU's tiles (gpuLoops: a test).
  TrainPipelineOptions train =
      options.gpuLoops ? gpuTrainOptions(options) : options;
  MLIRContext *context = module.getContext();
  PassManager pm(context);
  buildTrainStepPipeline(pm, train);
  if (failed(pm.run(module)))
    return failure();
  ::drc::ParameterTable table = parameterTable(module);
  PassManager lower(context);
  buildLowerToLinalgPipeline(lower, train);
  if (failed(lower.run(module)))
    return failure();
  FailureOr<EntryShapes> shapes = recordEntryShapes(module);
  if (failed(shapes))
    return failure();
  auto jit = CpuJit::create(module, std::move(*shapes), train.gpuLoops);
  if (failed(jit))
    return failure();
  return HostProgram{std::move(table), std::move(*jit)};
}

void mlir::drc::flushDenormals() {
  constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero);
}

::drc::StepResult CpuModel::trainStep(const ::drc::TrainingBuffers &b,
                                      const int32_t *inputs,
                                      const int32_t *targets, float lr,
                                      int64_t step) {
  flushDenormals();
  float stepValue = static_cast<float>(step);
  float out[2] = {0, 0};
  if (failed(engine->call("train_step", {b.params, b.grads, b.adamM, b.adamV,
                                         const_cast<int32_t *>(inputs),
                                         const_cast<int32_t *>(targets), &lr,
                                         &stepValue, out})))
    llvm::report_fatal_error("drc: train_step is missing from the program");
  return {out[0], out[1]};
}

/// Every loss the program's `loss` returns: next-token first, then the
/// auxiliary ones.
static SmallVector<float, 2> allLosses(CpuJit &engine, size_t count,
                                       const float *params,
                                       const int32_t *inputs,
                                       const int32_t *targets) {
  flushDenormals();
  SmallVector<float, 2> out(count, 0.0f);
  if (failed(engine.call("loss", {const_cast<float *>(params),
                                  const_cast<int32_t *>(inputs),
                                  const_cast<int32_t *>(targets), out.data()})))
    llvm::report_fatal_error("drc: loss is missing from the program");
  return out;
}

float CpuModel::loss(const float *params, const int32_t *inputs,
                     const int32_t *targets) {
  return allLosses(*engine, weights.size(), params, inputs, targets)[0];
}

float CpuModel::losses(const float *params, const int32_t *inputs,
                       const int32_t *targets, float &nextTwo) {
  SmallVector<float, 2> out =
      allLosses(*engine, weights.size(), params, inputs, targets);
  if (out.size() < 2)
    llvm::report_fatal_error("drc: the model has no next-2-token head");
  nextTwo = out[1];
  return out[0];
}
