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
  return compileModule(**module, spec);
}

FailureOr<std::unique_ptr<CpuProbeModel>>
CpuProbeModel::compileModule(ModuleOp module, const ::drc::ModelSpec &spec) {
  // The sizes from @probe's results: states [N, L+1, Z], lens [N, L+1, V],
  // maps [N, 2L, n*n] when the scheme marks a transport, the loss, then the
  // state values entering each block, from which the skip chains start.
  auto probe = module.lookupSymbol<func::FuncOp>("probe");
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
  // Each function once, however many chains call it.
  std::vector<ChainStep> steps;
  llvm::StringMap<size_t> stepOf;
  std::vector<std::vector<size_t>> chains;
  for (Attribute chain : module->getAttrOfType<ArrayAttr>(kSkipChainsAttr)) {
    chains.emplace_back();
    for (Attribute name : cast<ArrayAttr>(chain)) {
      StringRef function = cast<StringAttr>(name).getValue();
      auto [found, inserted] = stepOf.try_emplace(function, steps.size());
      if (inserted) {
        // Tensor results are buffers of their own, in order; the scalars
        // (the loss) share one buffer after them.
        ChainStep step{function.str(), {}};
        int64_t scalars = 0;
        auto callee = module.lookupSymbol<func::FuncOp>(function);
        for (Type t : callee.getFunctionType().getResults()) {
          auto tensor = cast<RankedTensorType>(t);
          if (tensor.getRank() == 0)
            ++scalars;
          else
            step.results.push_back(tensor.getNumElements());
        }
        step.results.push_back(scalars);
        steps.push_back(std::move(step));
      }
      chains.back().push_back(found->second);
    }
  }
  TrainPipelineOptions train = trainPipelineOptions(spec);
  train.differentiate = false;
  FailureOr<HostProgram> program = compileForHost(module, train);
  if (failed(program))
    return failure();
  return std::unique_ptr<CpuProbeModel>(
      new CpuProbeModel(std::move(*program), sizes, std::move(entering),
                        std::move(steps), std::move(chains)));
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
  int64_t depths = sizes.blocks + 1, depth = block + 1,
          arity = int64_t(entering.size()) / sizes.blocks, Z = sizes.width;
  // z_0 ... z_block as probe() computed them.
  for (int64_t t = 0; t < sizes.tokens; ++t)
    std::copy_n(lastStates.data() + t * depths * Z, (block + 1) * Z,
                states + t * depths * Z);
  // Then the chain from the state entering `block`: each call returns z
  // of the block it runs, the state it passes on, and its scalars (the
  // last call: no state, the loss).
  SmallVector<void *> state;
  for (int64_t i = 0; i < arity; ++i)
    state.push_back(entering[block * arity + i].data());
  const std::vector<float> *scalars = nullptr;
  for (auto [i, index] : llvm::enumerate(chains[block])) {
    const ChainStep &step = steps[index];
    // Calls alternate between two sets of buffers: each reads the set the
    // call before it wrote, and sizes that fit already are kept.
    std::vector<std::vector<float>> &results = scratch[i % 2];
    results.resize(step.results.size());
    for (auto [result, elements] : llvm::zip(results, step.results))
      result.resize(elements);
    SmallVector<void *> args{const_cast<float *>(params),
                             const_cast<int32_t *>(inputs),
                             const_cast<int32_t *>(targets)};
    args.append(state);
    for (std::vector<float> &result : results)
      args.push_back(result.data());
    if (failed(program.jit->call(step.function, args)))
      llvm::report_fatal_error(
          ("drc: " + step.function + " is missing from the program").c_str());
    for (int64_t t = 0; t < sizes.tokens; ++t)
      std::copy_n(results.front().data() + t * Z, Z,
                  states + (t * depths + depth) * Z);
    ++depth;
    state.clear();
    for (size_t r = 1; r + 1 < results.size(); ++r)
      state.push_back(results[r].data());
    scalars = &results.back();
  }
  return scalars->front(); // the end's scalars: the loss
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
