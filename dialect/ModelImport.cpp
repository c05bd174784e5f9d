//===- ModelImport.cpp - Model spec -> drc IR ----------------------------===//
#include "dialect/ModelImport.h"

#include "dialect/DrcDialect.h"

#include "dialect/SchemeInstantiation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

/// Declares parameters at the top of the module and reads them in `@loss`.
class ModelBuilder {
public:
  ModelBuilder(ModuleOp module, const ::drc::ModelSpec &spec, Type element)
      : module(module), spec(spec), element(element),
        declare(module.getContext()), body(module.getContext()),
        loc(UnknownLoc::get(module.getContext())) {}

  /// Parameter declarations go before `fn`, in the order they are made.
  void declareBefore(Operation *fn) { declare.setInsertionPoint(fn); }

  OpBuilder &bodyBuilder() { return body; }

  /// The spec's dense-matrix init: TruncNormal(std, clip 3 std).
  InitAttr matrixInit(double scale = 1.0) {
    double std = spec.train.initStd * scale;
    return InitAttr::truncNormal(declare.getContext(), std, 3 * std);
  }

  /// A dense matrix with weight decay.
  Value matrix(StringRef name, ArrayRef<int64_t> shape, double scale = 1.0) {
    return *param(loc, name, tensor(shape), matrixInit(scale), /*decay=*/true);
  }

  /// A norm gain: ones, no weight decay.
  Value gain(StringRef name) {
    return *param(loc, name, tensor({spec.model.dModel}),
                  InitAttr::constant(declare.getContext(), 1.0),
                  /*decay=*/false);
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  }

  /// Declares `name`, or reads the parameter already declared under it if
  /// its type, init and group agree.
  FailureOr<Value> param(Location at, StringRef name, RankedTensorType type,
                         InitAttr init, bool decay) {
    if (auto existing = module.lookupSymbol<ParamOp>(name)) {
      if (existing.getType() != type || existing.getInit() != init ||
          existing.getDecay() != decay)
        return emitError(at)
               << "parameter '" << name
               << "' is declared again with a different type, "
                  "init or weight-decay group (first: "
               << existing.getType() << " init " << existing.getInit() << ")";
    } else {
      ParamOp::create(declare, at, name, type, init, decay);
    }
    return ParamRefOp::create(body, at, type, name).getResult();
  }

private:
  ModuleOp module;
  const ::drc::ModelSpec &spec;
  Type element;
  OpBuilder declare, body;
  Location loc;
};

/// "path:line:col" (as ModelSpec records where a key was set) as a location.
Location specLocation(MLIRContext &context, const std::string &where) {
  size_t col = where.rfind(':');
  size_t line = col == std::string::npos ? col : where.rfind(':', col - 1);
  if (line == std::string::npos)
    return FileLineColLoc::get(&context, where, 1, 1);
  return FileLineColLoc::get(&context, where.substr(0, line),
                             std::stoul(where.substr(line + 1, col - line - 1)),
                             std::stoul(where.substr(col + 1)));
}

/// The backbone's own parameters (ARCHITECTURES.md §1.2): the embedding,
/// every sublayer's norm gain γ_k and projections, the final norm and the LM
/// head. A scheme may read them (MoDA caches W_k u and W_v u); every other
/// parameter it declares belongs to the residual scheme.
bool isBackboneParameter(StringRef name) {
  static constexpr StringLiteral model[] = {"embed.weight", "final_norm.gain",
                                            "unembed.weight"};
  static constexpr StringLiteral sublayer[] = {
      "attn.norm.gain", "attn.wq", "attn.wk", "attn.wv", "attn.wo",
      "ffn.norm.gain",  "ffn.w1",  "ffn.w2",  "ffn.w3"};
  if (llvm::is_contained(model, name))
    return true;
  if (!name.consume_front("blocks."))
    return false;
  auto [block, rest] = name.split('.');
  return !block.empty() && llvm::all_of(block, llvm::isDigit) &&
         llvm::is_contained(sublayer, rest);
}

/// Which results of @read a MoDA-style scheme marks as the depth keys and
/// values the attention sublayer also attends over (`{drc.depth_keys}`,
/// `{drc.depth_values}`); none when the scheme marks neither.
FailureOr<std::optional<std::pair<unsigned, unsigned>>>
depthCacheResults(func::FuncOp read) {
  std::optional<unsigned> keys, values;
  for (unsigned i = 0; i < read.getNumResults(); ++i) {
    if (read.getResultAttr(i, "drc.depth_keys"))
      keys = i;
    if (read.getResultAttr(i, "drc.depth_values"))
      values = i;
  }
  if (!keys && !values)
    return std::optional<std::pair<unsigned, unsigned>>();
  if (!keys || !values || *keys == 0 || *values == 0 || *keys == *values)
    return read.emitError()
           << "@read must mark two distinct results after u, one "
              "{drc.depth_keys} and one {drc.depth_values}, or neither";
  return std::optional<std::pair<unsigned, unsigned>>({*keys, *values});
}

/// Which result of @read a scheme marks as the coefficient that maps the
/// streams of the state from one sublayer to the next (`{drc.transport =
/// "coef"}`: the state is mixed by it, new = C^T old; `"transposed_coef"`:
/// mixed with transpose_coef, new = C old), and whether it is transposed.
FailureOr<std::optional<std::pair<unsigned, bool>>>
transportResult(func::FuncOp read) {
  std::optional<std::pair<unsigned, bool>> found;
  for (unsigned i = 0; i < read.getNumResults(); ++i) {
    Attribute mark = read.getResultAttr(i, kTransportAttr);
    if (!mark)
      continue;
    auto how = dyn_cast<StringAttr>(mark);
    if (found || i == 0 || !how ||
        (how.getValue() != "coef" && how.getValue() != "transposed_coef"))
      return read.emitError()
             << "@read may mark one result after u {" << kTransportAttr
             << " = \"coef\"} (the state is mixed by it) or {" << kTransportAttr
             << " = \"transposed_coef\"} (mixed with transpose_coef)";
    found = {i, how.getValue() == "transposed_coef"};
  }
  return found;
}

/// Built-in sizes plus the scheme's options, with the spec's values.
FailureOr<StaticValues> modelStatics(MLIRContext &context, const Scheme &scheme,
                                     const ::drc::ModelSpec &spec) {
  Builder b(&context);
  const ::drc::ModelShape &m = spec.model;
  StaticValues statics;
  for (auto [name, value] : {std::pair<StringRef, int64_t>{"d", m.dModel},
                             {"L", m.nLayer},
                             {"n_head", m.nHead},
                             {"d_ff", m.dFF},
                             {"vocab", m.vocab}})
    statics[b.getStringAttr(name)] = b.getIndexAttr(value);
  for (NamedAttribute option : scheme.options)
    statics[option.getName()] = option.getValue();
  for (const ::drc::SchemeOption &o : spec.residual.options) {
    StringAttr name = b.getStringAttr(o.name);
    Attribute current = statics.lookup(name);
    Location at = specLocation(context, o.where);
    if (!current || !scheme.options.contains(name)) {
      std::string known;
      for (NamedAttribute option : scheme.options)
        known += (known.empty() ? "" : ", ") + option.getName().str();
      return emitError(at) << "[residual] " << o.name
                           << " is not an option of scheme " << scheme.name
                           << " (its options: "
                           << (known.empty() ? "none" : known) << ")";
    }
    using Kind = ::drc::SchemeOption::Kind;
    if (isa<BoolAttr>(current) && o.kind == Kind::Boolean)
      statics[name] = b.getBoolAttr(o.integer != 0);
    else if (isa<BoolAttr>(current) || o.kind == Kind::Boolean)
      return emitError(at) << "[residual] " << o.name << " must be a "
                           << (isa<BoolAttr>(current) ? "boolean" : "number");
    else if (isa<IntegerAttr>(current) && o.kind == Kind::Integer) {
      auto least = dyn_cast_if_present<IntegerAttr>(scheme.optionMin.get(name));
      if (least && o.integer < least.getInt())
        return emitError(at) << "[residual] " << o.name << " = " << o.integer
                             << " is below the least value scheme "
                             << scheme.name << " allows, " << least.getInt();
      statics[name] = b.getIndexAttr(o.integer);
    } else if (isa<FloatAttr>(current))
      statics[name] = b.getF64FloatAttr(
          o.kind == Kind::Number ? o.number : double(o.integer));
    else
      return emitError(at) << "[residual] " << o.name
                           << " must be an integer, found a number";
  }
  return statics;
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
mlir::drc::importModelSpec(MLIRContext &context, const ::drc::ModelSpec &spec,
                           const ImportOptions &options) {
  context.loadDialect<DrcDialect, func::FuncDialect, arith::ArithDialect>();
  const ::drc::ResidualSpec &r = spec.residual;
  FailureOr<Scheme> scheme = Scheme::load(
      context, r.schemeFile, r.scheme.empty() ? r.schemeFile : r.scheme);
  if (failed(scheme))
    return failure();
  FailureOr<StaticValues> statics = modelStatics(context, *scheme, spec);
  if (failed(statics))
    return failure();

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

  SchemeInstantiator residual(
      *scheme, element, mb.matrixInit(), b.getF64FloatAttr(m.normEps),
      [&](Location at, StringRef name, RankedTensorType type, InitAttr init,
          bool decay) -> FailureOr<Value> {
        FailureOr<Value> ref = mb.param(at, name, type, init, decay);
        if (succeeded(ref) && !isBackboneParameter(name))
          module->lookupSymbol<ParamOp>(name)->setAttr(kResidualAttr,
                                                       b.getUnitAttr());
        return ref;
      });
  RankedTensorType hidden = mb.tensor({n, d});
  auto expectHidden = [&](Value v, StringRef function) -> LogicalResult {
    if (v.getType() == hidden)
      return success();
    return scheme->module->lookupSymbol(function)->emitError()
           << "@" << function << " must give a hidden state of type " << hidden
           << " (tokens x d_model), not " << v.getType();
  };

  // A scheme's compile-time scalar @name() -> f64, if it defines one.
  auto schemeScalar = [&](StringRef name,
                          StringRef why) -> FailureOr<std::optional<double>> {
    if (!residual.has(name))
      return std::optional<double>();
    FailureOr<SmallVector<Value>> value =
        residual.call(b, name, {}, *statics, "", why);
    FloatAttr attr;
    if (succeeded(value) && value->size() == 1 &&
        matchPattern(value->front(), m_Constant(&attr)) &&
        attr.getValueAsDouble() >= 0)
      return std::optional<double>(attr.getValueAsDouble());
    return scheme->module->lookupSymbol(name)->emitError()
           << "@" << name << " must return one non-negative f64";
  };

  // DeepNorm-style schemes scale the init of the value and output
  // projections (W_V, W_O, W_1, W_2, W_3) by @value_init_scale().
  FailureOr<std::optional<double>> valueScale =
      schemeScalar("value_init_scale", "the backbone init");
  if (failed(valueScale))
    return failure();
  if (*valueScale && **valueScale == 0)
    return scheme->module->lookupSymbol("value_init_scale")->emitError()
           << "@value_init_scale must be positive";
  double valueInit = valueScale->value_or(1.0);

  auto depthCache =
      depthCacheResults(scheme->module->lookupSymbol<func::FuncOp>("read"));
  if (failed(depthCache))
    return failure();

  // The scheme's state for the tokens `ids`: @embed of the backbone's
  // embedding E[ids], or, when @embed takes the token ids itself (VWN's
  // direct wide E'), @embed(ids). Its weights are named "embed.*".
  auto embedFn = scheme->module->lookupSymbol<func::FuncOp>("embed");
  bool embedsIds =
      embedFn && embedFn.getNumArguments() == 1 &&
      isa<IntegerType>(getElementTypeOrSelf(embedFn.getArgumentTypes()[0]));
  Value table;
  auto embed = [&](Value ids) -> FailureOr<SmallVector<Value>> {
    if (embedsIds)
      return residual.call(b, "embed", ids, *statics, "embed.",
                           "the embedding");
    if (!table)
      table = mb.matrix("embed.weight", {m.vocab, d});
    SmallVector<Value> h0{EmbedOp::create(b, loc, hidden, table, ids)};
    if (!residual.has("embed"))
      return h0;
    return residual.call(b, "embed", h0, *statics, "embed.", "the embedding");
  };

  auto transport =
      transportResult(scheme->module->lookupSymbol<func::FuncOp>("read"));
  if (failed(transport))
    return failure();

  // The compile-time values of sublayer k: its index k, its block b = k/2
  // and j = 0 (attention) or 1 (FFN), besides the model's.
  auto sublayerStatics = [&](int64_t k) {
    StaticValues here = *statics;
    here[b.getStringAttr("k")] = b.getIndexAttr(k);
    here[b.getStringAttr("b")] = b.getIndexAttr(k / 2);
    here[b.getStringAttr("j")] = b.getIndexAttr(k % 2);
    return here;
  };

  // Sublayer k (block `block`) reads the state, runs, and writes it back; its
  // parameters are named `prefix` + attn. or ffn. + name. With `transports`,
  // the coefficient @read marks {drc.transport} is appended to it.
  auto sublayer = [&](SmallVector<Value> &state, int64_t k, int64_t block,
                      const std::string &prefix,
                      SmallVector<Value> *transports =
                          nullptr) -> LogicalResult {
    bool attention = k % 2 == 0;
    std::string at = prefix + (attention ? "attn." : "ffn.");
    std::string context = "sublayer " + std::to_string(k) + " (block " +
                          std::to_string(block) +
                          (attention ? ", attention)" : ", FFN)");
    StaticValues here = sublayerStatics(k);
    FailureOr<SmallVector<Value>> read =
        residual.call(b, "read", state, here, at, context);
    if (failed(read))
      return failure();
    if (read->empty() || failed(expectHidden(read->front(), "read")))
      return failure();
    Value u = read->front(), f;
    if (attention) {
      Value wq = mb.matrix(at + "wq", {d, d});
      Value wk = mb.matrix(at + "wk", {d, d});
      Value wv = mb.matrix(at + "wv", {d, d}, valueInit);
      Value wo = mb.matrix(at + "wo", {d, d}, valueInit);
      Value keys, values;
      if (*depthCache) {
        keys = (*read)[(*depthCache)->first];
        values = (*read)[(*depthCache)->second];
        // Block 0's cache is still empty: plain attention.
        if (auto t = dyn_cast<RankedTensorType>(keys.getType());
            t && t.getRank() == 3 && t.getDimSize(1) == 0)
          keys = values = Value();
      }
      f = AttentionOp::create(b, loc, hidden, u, wq, wk, wv, wo, keys, values,
                              b.getI64IntegerAttr(m.nHead),
                              b.getI64IntegerAttr(m.seqLen),
                              b.getF64FloatAttr(m.ropeTheta));
    } else {
      Value w1 = mb.matrix(at + "w1", {m.dFF, d}, valueInit);
      Value w3 = mb.matrix(at + "w3", {m.dFF, d}, valueInit);
      Value w2 = mb.matrix(at + "w2", {d, m.dFF}, valueInit);
      f = SwiGLUOp::create(b, loc, hidden, u, w1, w3, w2);
    }
    if (transports && *transport)
      transports->push_back((*read)[(*transport)->first]);
    SmallVector<Value> carried(llvm::drop_begin(*read));
    carried.push_back(f);
    FailureOr<SmallVector<Value>> written =
        residual.call(b, "write", carried, here, at, context);
    if (failed(written))
      return failure();
    state = std::move(*written);
    return success();
  };

  // The hidden state the final norm reads: @readout of `state` (weights
  // `readout` + name), or the state itself.
  auto readoutOf = [&](ArrayRef<Value> state,
                       StringRef readout) -> FailureOr<Value> {
    Value h = state.front();
    if (residual.has("readout")) {
      FailureOr<SmallVector<Value>> out =
          residual.call(b, "readout", state, *statics, readout, "the readout");
      if (failed(out) || out->size() != 1)
        return failure();
      h = out->front();
    } else if (state.size() != 1) {
      return scheme->module->emitError()
             << "a scheme whose state has " << state.size()
             << " values needs a @readout";
    }
    if (failed(expectHidden(h, residual.has("readout") ? "readout" : "write")))
      return failure();
    return h;
  };

  // The LM head: final norm `norm`, then the shared W_U.
  Value unembed;
  auto logitsOf = [&](Value h, StringRef norm) -> Value {
    Value gain = mb.gain(norm);
    if (!unembed)
      unembed = mb.matrix("unembed.weight", {m.vocab, d});
    Value x = RMSNormOp::create(b, loc, hidden, h, gain,
                                b.getF64FloatAttr(m.normEps));
    return LinearOp::create(b, loc, mb.tensor({n, m.vocab}), x, unembed);
  };

  // The LM loss of a final state against `labels`.
  auto lmLoss = [&](ArrayRef<Value> state, StringRef readout, StringRef norm,
                    Value labels) -> FailureOr<Value> {
    FailureOr<Value> h = readoutOf(state, readout);
    if (failed(h))
      return failure();
    return CrossEntropyOp::create(b, loc, lossType, logitsOf(*h, norm), labels)
        .getResult();
  };

  FailureOr<SmallVector<Value>> state = embed(tokens);
  if (failed(state))
    return failure();
  for (int64_t k = 0; k < 2 * m.nLayer; ++k)
    if (failed(sublayer(*state, k, k / 2,
                        "blocks." + std::to_string(k / 2) + ".")))
      return failure();
  FailureOr<Value> loss = lmLoss(*state, "final.", "final_norm.gain", targets);
  if (failed(loss))
    return failure();
  SmallVector<Value> losses{*loss};

  // A next-2-token head (VWN's MTP, ARCHITECTURES.md §2.12): @mtp combines
  // the final state with the state of the next token's embedding, one more
  // layer ("block L", parameters mtp.*) runs on it, and its own readout and
  // final norm feed the shared W_U to predict x_{t+2}. Its loss joins the
  // training objective with weight @mtp_weight() (0: no head).
  FailureOr<std::optional<double>> mtpWeight =
      schemeScalar("mtp_weight", "the MTP head");
  if (failed(mtpWeight))
    return failure();
  if (residual.has("mtp") != mtpWeight->has_value())
    return scheme->module
               ->lookupSymbol(residual.has("mtp") ? "mtp" : "mtp_weight")
               ->emitError()
           << "a scheme with an MTP head defines both @mtp(final state..., "
              "next-token state...) -> state and @mtp_weight() -> f64";
  if (*mtpWeight && **mtpWeight > 0) {
    FailureOr<SmallVector<Value>> next = embed(targets);
    if (failed(next))
      return failure();
    SmallVector<Value> both(*state);
    both.append(*next);
    FailureOr<SmallVector<Value>> head =
        residual.call(b, "mtp", both, *statics, "mtp.", "the MTP head");
    if (failed(head))
      return failure();
    for (int64_t j = 0; j < 2; ++j)
      if (failed(sublayer(*head, 2 * m.nLayer + j, m.nLayer, "mtp.")))
        return failure();
    Value afterNext = LookaheadOp::create(b, loc, targets.getType(), targets,
                                          b.getI64IntegerAttr(m.seqLen));
    FailureOr<Value> mtpLoss =
        lmLoss(*head, "mtp.final.", "mtp.final_norm.gain", afterNext);
    if (failed(mtpLoss))
      return failure();
    losses.push_back(*mtpLoss);
    // The head is the scheme's, like the parameters its functions declare.
    for (ParamOp param : module->getOps<ParamOp>())
      if (param.getSymName().starts_with("mtp."))
        param->setAttr(kResidualAttr, b.getUnitAttr());
  }
  fn.setType(b.getFunctionType(fn.getArgumentTypes(),
                               SmallVector<Type>(losses.size(), lossType)));
  if (losses.size() > 1)
    fn.setResultAttr(1, kObjectiveWeightAttr, b.getF64FloatAttr(**mtpWeight));
  func::ReturnOp::create(b, loc, losses);

  SmallVector<func::FuncOp> functions{fn};
  if (options.probes) {
    int64_t L = m.nLayer;
    bool ownDepthState = residual.has("depth_state");
    // z_b of `state` entering block b (b = L: the final state).
    auto depthState = [&](ArrayRef<Value> state,
                          int64_t block) -> FailureOr<Value> {
      // The final mix of an AttnRes-style scheme is its readout.
      if (ownDepthState && block == L)
        return readoutOf(state, "final.");
      if (!ownDepthState) {
        auto type = cast<RankedTensorType>(state.front().getType());
        int64_t width = 1;
        for (int64_t size : type.getShape().drop_front())
          width *= size;
        return ViewOp::create(b, loc, mb.tensor({n, width}), state.front(),
                              ValueRange{})
            .getResult();
      }
      StaticValues here = sublayerStatics(2 * block); // its attention
      std::string prefix = "blocks." + std::to_string(block) + ".attn.";
      std::string context =
          "the depth state entering block " + std::to_string(block);
      FailureOr<SmallVector<Value>> z =
          residual.call(b, "depth_state", state, here, prefix, context);
      if (failed(z))
        return failure();
      if (z->size() != 1 || z->front().getType() != hidden)
        return scheme->module->lookupSymbol("depth_state")->emitError()
               << "@depth_state must return one hidden state of type " << hidden
               << " (tokens x d_model)";
      return z->front();
    };
    // Rows [N, w] of one width as tensor<N x rows x w>.
    auto stack = [&](ArrayRef<Value> rows, StringRef what) -> FailureOr<Value> {
      int64_t width =
          cast<RankedTensorType>(rows.front().getType()).getDimSize(1);
      SmallVector<Value> views;
      for (Value row : rows) {
        if (cast<RankedTensorType>(row.getType()).getDimSize(1) != width)
          return scheme->module->emitError()
                 << "the " << what << " of scheme " << scheme->name
                 << " change width from block to block (" << width << ", then "
                 << row.getType()
                 << "); define @depth_state(state...) -> tensor<N x d> for "
                    "the layer probes (docs/schemes.md)";
        views.push_back(ViewOp::create(b, loc, mb.tensor({n, 1, width}), row,
                                       ValueRange{}));
      }
      return AppendOp::create(
                 b, loc, mb.tensor({n, int64_t(rows.size()), width}), views)
          .getResult();
    };
    // A function (tokens, targets, extra...) -> (...) of the probe module;
    // `body` builds its results from its arguments.
    auto define =
        [&](StringRef name, TypeRange extra,
            function_ref<FailureOr<SmallVector<Value>>(Block::BlockArgListType)>
                body) -> LogicalResult {
      SmallVector<Type> arguments{tokenType, tokenType};
      arguments.append(extra.begin(), extra.end());
      auto f =
          func::FuncOp::create(loc, name, b.getFunctionType(arguments, {}));
      module->push_back(f);
      Block *block = f.addEntryBlock();
      b.setInsertionPointToStart(block);
      table = unembed = Value();
      FailureOr<SmallVector<Value>> results = body(block->getArguments());
      if (failed(results))
        return failure();
      f.setType(b.getFunctionType(f.getArgumentTypes(),
                                  ValueRange(*results).getTypes()));
      func::ReturnOp::create(b, loc, *results);
      functions.push_back(f);
      return success();
    };
    // Block `block`'s two sublayers on `state`.
    auto runBlock = [&](SmallVector<Value> &state, int64_t block,
                        SmallVector<Value> *transports) -> LogicalResult {
      std::string prefix = "blocks." + std::to_string(block) + ".";
      for (int64_t k : {2 * block, 2 * block + 1})
        if (failed(sublayer(state, k, block, prefix, transports)))
          return failure();
      return success();
    };
    // The model from the embedding to the end; `atBlock(b, S)` sees the
    // state entering each block b, and the final one (b = L).
    auto forward =
        [&](SmallVector<Value> state, SmallVector<Value> *transports,
            function_ref<LogicalResult(int64_t, ArrayRef<Value>)> atBlock)
        -> FailureOr<SmallVector<Value>> {
      for (int64_t block = 0; block <= L; ++block) {
        if (failed(atBlock(block, state)))
          return failure();
        if (block < L && failed(runBlock(state, block, transports)))
          return failure();
      }
      return state;
    };

    // @probe also returns the state entering each block, from which the
    // skip chains (kSkipChainsAttr) run the blocks after a skipped one.
    SmallVector<SmallVector<Type>> entering;
    LogicalResult built = define(
        "probe", {},
        [&](Block::BlockArgListType args) -> FailureOr<SmallVector<Value>> {
          SmallVector<Value> zs, lens, transports, states;
          FailureOr<SmallVector<Value>> embedded = embed(args[0]);
          if (failed(embedded))
            return failure();
          FailureOr<SmallVector<Value>> final = forward(
              *embedded, &transports,
              [&](int64_t block, ArrayRef<Value> state) -> LogicalResult {
                if (block < L) {
                  states.append(state.begin(), state.end());
                  entering.emplace_back(ValueRange(state).getTypes());
                }
                FailureOr<Value> z = depthState(state, block);
                if (failed(z))
                  return failure();
                zs.push_back(*z);
                FailureOr<Value> h =
                    ownDepthState ? *z : readoutOf(state, "final.");
                if (failed(h))
                  return failure();
                lens.push_back(logitsOf(*h, "final_norm.gain"));
                return success();
              });
          if (failed(final))
            return failure();
          FailureOr<Value> depths = stack(zs, "depth states");
          FailureOr<Value> lensLogits = stack(lens, "logit lens");
          FailureOr<Value> loss =
              lmLoss(*final, "final.", "final_norm.gain", args[1]);
          if (failed(depths) || failed(lensLogits) || failed(loss))
            return failure();
          SmallVector<Value> results{*depths, *lensLogits};
          if (!transports.empty()) {
            // T_k = C_k^T for a state mixed by drc.mix (C_k read transposed:
            // C_k itself), formed per token by mixing the identity: I_n shifted
            // onto zeros with a token dimension (0 z_0 through a zero
            // projection).
            int64_t streams =
                cast<RankedTensorType>(transports.front().getType())
                    .getShape()
                    .back();
            auto constant = [&](ArrayRef<int64_t> shape, auto value) -> Value {
              auto type = mb.tensor(shape);
              SmallVector<Attribute> values;
              for (int64_t i = 0; i < type.getNumElements(); ++i)
                values.push_back(FloatAttr::get(element, value(i)));
              return arith::ConstantOp::create(
                  b, loc, type, DenseElementsAttr::get(type, values));
            };
            int64_t width =
                cast<RankedTensorType>(zs.front().getType()).getDimSize(1);
            Value zero = LinearOp::create(
                b, loc, mb.tensor({n, streams * streams}), zs.front(),
                constant({streams * streams, width},
                         [](int64_t) { return 0.0; }));
            auto eyeType = mb.tensor({n, streams, streams});
            Value identity = ShiftOp::create(
                b, loc, eyeType,
                ViewOp::create(b, loc, eyeType, zero, ValueRange{}),
                constant({streams, streams}, [&](int64_t i) {
                  return i / streams == i % streams ? 1.0 : 0.0;
                }));
            SmallVector<Value> maps;
            for (Value coef : transports) {
              auto map = MixOp::create(b, loc, eyeType, identity, coef,
                                       (*transport)->second);
              maps.push_back(ViewOp::create(b, loc,
                                            mb.tensor({n, streams * streams}),
                                            map, ValueRange{}));
            }
            FailureOr<Value> stacked = stack(maps, "stream maps");
            if (failed(stacked))
              return failure();
            results.push_back(*stacked);
          }
          results.push_back(*loss);
          results.append(states);
          return results;
        });
    // Skipping block s passes S_s to block s + 1. Each later block, and
    // the end (final depth state and loss), is a function of the state
    // types it receives, defined once per block and distinct types (one
    // per block when the state keeps its types from block to block, as
    // HC's streams do; an AttnRes bank is two rows short after a skip), so
    // the probe module grows with L, not with the L²/2 blocks the skips
    // run. @chain_<b>_<i>: S -> (z_b, S after block b); @end_<i>: S -> (z_L,
    // loss).
    struct Step {
      int64_t block;
      SmallVector<Type> types, after; // received, passed on
      std::string name;
    };
    SmallVector<Step> defined;
    DenseMap<int64_t, int64_t> variants;
    SmallVector<Attribute> chains;
    for (int64_t skip = 0; succeeded(built) && skip < L; ++skip) {
      SmallVector<Type> types = entering[skip];
      SmallVector<Attribute> chain;
      for (int64_t block = skip + 1; succeeded(built) && block <= L; ++block) {
        auto *found = llvm::find_if(defined, [&](const Step &step) {
          return step.block == block && step.types == types;
        });
        if (found == defined.end()) {
          Step step{block, types, {}, std::string()};
          step.name = (block < L ? "chain_" + std::to_string(block) + "_"
                                 : std::string("end_")) +
                      std::to_string(variants[block]++);
          built = define(
              step.name, types,
              [&](Block::BlockArgListType args)
                  -> FailureOr<SmallVector<Value>> {
                SmallVector<Value> state(args.drop_front(2));
                FailureOr<Value> z = depthState(state, block);
                if (failed(z))
                  return failure();
                if (block == L) {
                  FailureOr<Value> loss =
                      lmLoss(state, "final.", "final_norm.gain", args[1]);
                  if (failed(loss))
                    return failure();
                  return SmallVector<Value>{*z, *loss};
                }
                if (failed(runBlock(state, block, nullptr)))
                  return failure();
                llvm::append_range(step.after, ValueRange(state).getTypes());
                SmallVector<Value> results{*z};
                results.append(state);
                return results;
              });
          defined.push_back(std::move(step));
          found = &defined.back();
        }
        chain.push_back(b.getStringAttr(found->name));
        types = found->after;
      }
      chains.push_back(b.getArrayAttr(chain));
    }
    if (failed(built))
      return failure();
    (*module)->setAttr(kSkipChainsAttr, b.getArrayAttr(chains));
  }

  // Compile-time scalars and unused template results are dead now.
  SmallVector<Operation *> ops;
  for (func::FuncOp f : functions)
    f.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  if (failed(verify(*module)))
    return failure();
  return module;
}
