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
  // maps [N, 2L, n*n] when the scheme marks a transport, the loss, then the
  // state values entering each block, which @skip_<s> takes.
  auto probe = (*module)->lookupSymbol<func::FuncOp>("probe");
  auto results = probe.getFunctionType().getResults();
  auto states = cast<RankedTensorType>(results[0]);
  ::drc::ProbeShape sizes;
  sizes.tokens = states.getDimSize(0);
  sizes.blocks = states.getDimSize(1) - 1;
  sizes.width = states.getDimSize(2);
  sizes.vocab = cast<RankedTensorType>(results[1]).getDimSize(2);
  size_t loss = 2;
  if (cast<RankedTensorType>(results[2]).getRank() != 0) {
    sizes.streams = std::lround(
        std::sqrt(double(cast<RankedTensorType>(results[2]).getDimSize(2))));
    loss = 3;
  }
  std::vector<std::vector<float>> entering;
  for (Type t : results.drop_front(loss + 1))
    entering.emplace_back(cast<RankedTensorType>(t).getNumElements());
  TrainPipelineOptions train = trainPipelineOptions(spec);
  train.differentiate = false;
  FailureOr<HostProgram> program = compileForHost(**module, train);
  if (failed(program))
    return failure();
  return std::unique_ptr<CpuProbeModel>(
      new CpuProbeModel(std::move(*program), sizes, std::move(entering)));
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
  for (std::vector<float> &values : entering)
    args.push_back(values.data());
  args.push_back(&out);
  if (failed(program.jit->call("probe", args)))
    llvm::report_fatal_error("drc: probe is missing from the program");
  lastStates.assign(states,
                    states + sizes.tokens * (sizes.blocks + 1) * sizes.width);
  return out;
}

float CpuProbeModel::skip(int64_t block, const float *params,
                          const int32_t *inputs, const int32_t *targets,
                          float *states) {
  if (lastStates.empty())
    llvm::report_fatal_error("drc: skip before probe on the batch");
  flushDenormals();
  // @skip_<block> continues from the state values entering `block`.
  int64_t depths = sizes.blocks + 1, later = sizes.blocks - block,
          arity = int64_t(entering.size()) / sizes.blocks, Z = sizes.width;
  std::vector<float> tail(sizes.tokens * later * Z);
  float out = 0;
  SmallVector<void *> args{const_cast<float *>(params),
                           const_cast<int32_t *>(inputs),
                           const_cast<int32_t *>(targets)};
  for (int64_t i = 0; i < arity; ++i)
    args.push_back(entering[block * arity + i].data());
  args.push_back(tail.data());
  args.push_back(&out);
  std::string name = "skip_" + std::to_string(block);
  if (failed(program.jit->call(name, args)))
    llvm::report_fatal_error(
        ("drc: " + name + " is missing from the program").c_str());
  // z_0 ... z_block as probe() computed them, then the program's.
  for (int64_t t = 0; t < sizes.tokens; ++t) {
    std::copy_n(lastStates.data() + t * depths * Z, (block + 1) * Z,
                states + t * depths * Z);
    std::copy_n(tail.data() + t * later * Z, later * Z,
                states + (t * depths + block + 1) * Z);
  }
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
