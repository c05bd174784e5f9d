//===- ModelImport.cpp - Model spec -> drc IR ----------------------------===//
#include "dialect/ModelImport.h"

#include "dialect/DrcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

/// Declares parameters at the top of the module and reads them in `@loss`.
class ModelBuilder {
public:
  ModelBuilder(ModuleOp module, const ::drc::ModelSpec &spec, Type element)
      : spec(spec), element(element), declare(module.getContext()),
        body(module.getContext()), loc(UnknownLoc::get(module.getContext())) {}

  /// Parameter declarations go before `fn`, in the order they are made.
  void declareBefore(Operation *fn) { declare.setInsertionPoint(fn); }

  OpBuilder &bodyBuilder() { return body; }

  /// A dense matrix: TruncNormal(init_std, clip 3 std), weight decay.
  Value matrix(StringRef name, ArrayRef<int64_t> shape) {
    double std = spec.train.initStd;
    return param(name, shape,
                 InitAttr::truncNormal(declare.getContext(), std, 3 * std),
                 /*decay=*/true);
  }

  /// A norm gain: ones, no weight decay.
  Value gain(StringRef name) {
    return param(name, {spec.model.dModel},
                 InitAttr::constant(declare.getContext(), 1.0),
                 /*decay=*/false);
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  }

private:
  Value param(StringRef name, ArrayRef<int64_t> shape, InitAttr init,
              bool decay) {
    RankedTensorType type = tensor(shape);
    ParamOp::create(declare, loc, name, type, init, decay);
    return ParamRefOp::create(body, loc, type, name);
  }

  const ::drc::ModelSpec &spec;
  Type element;
  OpBuilder declare, body;
  Location loc;
};

} // namespace

OwningOpRef<ModuleOp> mlir::drc::importModelSpec(MLIRContext &context,
                                                 const ::drc::ModelSpec &spec,
                                                 const ImportOptions &options) {
  context.loadDialect<DrcDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(&context, spec.path, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  const ::drc::ModelShape &m = spec.model;
  Type element = options.useF64 ? Type(Float64Type::get(&context))
                                : Type(Float32Type::get(&context));
  int64_t n = options.tokens ? options.tokens : spec.tokensPerStep();
  int64_t d = m.dModel;

  ModelBuilder mb(*module, spec, element);
  OpBuilder &b = mb.bodyBuilder();
  auto tokenType = RankedTensorType::get({n}, b.getI32Type());
  auto lossType = RankedTensorType::get({}, element);
  auto fn = func::FuncOp::create(
      loc, "loss", b.getFunctionType({tokenType, tokenType}, {lossType}));
  module->push_back(fn);
  mb.declareBefore(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), targets = entry->getArgument(1);

  FloatAttr eps = b.getF64FloatAttr(m.normEps);
  RankedTensorType hidden = mb.tensor({n, d});
  Value table = mb.matrix("embed.weight", {m.vocab, d});
  Value h = EmbedOp::create(b, loc, hidden, table, tokens);
  for (int64_t block = 0; block < m.nLayer; ++block) {
    std::string prefix = "blocks." + std::to_string(block) + ".";
    // Pre-LN: h <- h + F(RMSNorm_gamma(h)) for attention, then FFN.
    Value attnGain = mb.gain(prefix + "attn.norm.gain");
    Value wq = mb.matrix(prefix + "attn.wq", {d, d});
    Value wk = mb.matrix(prefix + "attn.wk", {d, d});
    Value wv = mb.matrix(prefix + "attn.wv", {d, d});
    Value wo = mb.matrix(prefix + "attn.wo", {d, d});
    Value u = RMSNormOp::create(b, loc, hidden, h, attnGain, eps);
    Value f = AttentionOp::create(
        b, loc, hidden, u, wq, wk, wv, wo, b.getI64IntegerAttr(m.nHead),
        b.getI64IntegerAttr(m.seqLen), b.getF64FloatAttr(m.ropeTheta));
    h = AddOp::create(b, loc, h, f);

    Value ffnGain = mb.gain(prefix + "ffn.norm.gain");
    Value w1 = mb.matrix(prefix + "ffn.w1", {m.dFF, d});
    Value w3 = mb.matrix(prefix + "ffn.w3", {m.dFF, d});
    Value w2 = mb.matrix(prefix + "ffn.w2", {d, m.dFF});
    u = RMSNormOp::create(b, loc, hidden, h, ffnGain, eps);
    f = SwiGLUOp::create(b, loc, hidden, u, w1, w3, w2);
    h = AddOp::create(b, loc, h, f);
  }
  Value finalGain = mb.gain("final_norm.gain");
  Value unembed = mb.matrix("unembed.weight", {m.vocab, d});
  Value x = RMSNormOp::create(b, loc, hidden, h, finalGain, eps);
  Value logits = LinearOp::create(b, loc, mb.tensor({n, m.vocab}), x, unembed);
  Value loss = CrossEntropyOp::create(b, loc, lossType, logits, targets);
  func::ReturnOp::create(b, loc, loss);
  return module;
}
