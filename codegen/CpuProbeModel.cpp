//===- CpuProbeModel.cpp - A spec's probe functions for the host ---------===//
#include "codegen/CpuProbeModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::drc;

FailureOr<std::unique_ptr<CpuProbeModel>>
CpuProbeModel::compile(MLIRContext &context, const ::drc::ModelSpec &spec,
                       int64_t tokens) {
  ImportOptions options;
  options.tokens = tokens;
  options.probes = true;
  FailureOr<OwningOpRef<ModuleOp>> module =
      importModelSpec(context, spec, options);
  if (failed(module))
    return failure();
  // The sizes from @probe's results: states [N, L+1, Z], lens [N, L+1, V],
  // maps [N, 2L, n*n] when the scheme marks a transport, then the loss.
  auto probe = (*module)->lookupSymbol<func::FuncOp>("probe");
  auto results = probe.getFunctionType().getResults();
  auto states = cast<RankedTensorType>(results[0]);
  ::drc::ProbeShape sizes;
  sizes.tokens = states.getDimSize(0);
  sizes.blocks = states.getDimSize(1) - 1;
  sizes.width = states.getDimSize(2);
  sizes.vocab = cast<RankedTensorType>(results[1]).getDimSize(2);
  if (results.size() == 4)
    sizes.streams = std::lround(
        std::sqrt(double(cast<RankedTensorType>(results[2]).getDimSize(2))));
  TrainPipelineOptions train = trainPipelineOptions(spec);
  train.differentiate = false;
  FailureOr<HostProgram> program = compileForHost(**module, train);
  if (failed(program))
    return failure();
  return std::unique_ptr<CpuProbeModel>(
      new CpuProbeModel(std::move(*program), sizes));
}

float CpuProbeModel::probe(const float *params, const int32_t *inputs,
                           const int32_t *targets, float *states, float *lens,
                           float *maps) {
  flushDenormals();
  float out = 0;
  SmallVector<void *> args{const_cast<float *>(params),
                           const_cast<int32_t *>(inputs),
                           const_cast<int32_t *>(targets), states, lens};
  if (sizes.streams)
    args.push_back(maps);
  args.push_back(&out);
  if (failed(program.jit->call("probe", args)))
    llvm::report_fatal_error("drc: probe is missing from the program");
  return out;
}

float CpuProbeModel::skip(int64_t block, const float *params,
                          const int32_t *inputs, const int32_t *targets,
                          float *states) {
  flushDenormals();
  float out = 0;
  std::string name = "skip_" + std::to_string(block);
  if (failed(program.jit->call(
          name, {const_cast<float *>(params), const_cast<int32_t *>(inputs),
                 const_cast<int32_t *>(targets), states, &out})))
    llvm::report_fatal_error(
        ("drc: " + name + " is missing from the program").c_str());
  return out;
}

float CpuProbeModel::loss(const float *params, const int32_t *inputs,
                          const int32_t *targets) {
  flushDenormals();
  float out = 0;
  if (failed(program.jit->call("loss", {const_cast<float *>(params),
                                        const_cast<int32_t *>(inputs),
                                        const_cast<int32_t *>(targets), &out})))
    llvm::report_fatal_error("drc: loss is missing from the program");
  return out;
}
