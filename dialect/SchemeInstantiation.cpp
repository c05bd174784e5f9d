//===- SchemeInstantiation.cpp - Residual scheme templates ---------------===//
#include "dialect/SchemeInstantiation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

/// The dictionary attribute `name` of a scheme's module (empty where it is
/// absent); anything else is an error saying what it should be.
FailureOr<DictionaryAttr> moduleDictionary(ModuleOp module, StringRef name,
                                           StringRef expected) {
  Attribute attr = module->getAttr(name);
  if (!attr)
    return DictionaryAttr::get(module.getContext());
  if (auto dictionary = dyn_cast<DictionaryAttr>(attr))
    return dictionary;
  return module->emitError() << name << " must be a dictionary of " << expected;
}

/// `value` as an integer option's value: an integer, not a boolean (which
/// is an IntegerAttr too).
IntegerAttr integerOption(Attribute value) {
  return isa_and_present<BoolAttr>(value)
             ? IntegerAttr()
             : dyn_cast_if_present<IntegerAttr>(value);
}

} // namespace

FailureOr<Scheme> Scheme::load(MLIRContext &context, StringRef path,
                               StringRef name) {
  // Templates have dynamic shapes that the op verifiers (written for
  // instantiated, static IR) would reject: each op is verified once it is
  // instantiated instead.
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, config);
  if (!module)
    return failure();
  Scheme scheme;
  FailureOr<DictionaryAttr> options =
      moduleDictionary(*module, "drc.options",
                       "option defaults, e.g. {streams = 4, dynamic = true}");
  if (failed(options))
    return failure();
  scheme.options = *options;
  for (NamedAttribute option : scheme.options)
    if (!isa<IntegerAttr, FloatAttr, BoolAttr>(option.getValue()))
      return (*module)->emitError()
             << "option '" << option.getName().getValue()
             << "' must default to an integer, a float or a boolean";
  FailureOr<DictionaryAttr> least =
      moduleDictionary(*module, "drc.option_min",
                       "integer options' least values, e.g. {streams = 1}");
  if (failed(least))
    return failure();
  scheme.optionMin = *least;
  for (NamedAttribute bound : scheme.optionMin) {
    IntegerAttr value = integerOption(bound.getValue()),
                option = integerOption(scheme.options.get(bound.getName()));
    if (!value || !option)
      return (*module)->emitError()
             << "drc.option_min gives '" << bound.getName().getValue()
             << "' a least value, but only an integer option of drc.options "
                "(with an integer default) may have one";
    if (option.getInt() < value.getInt())
      return (*module)->emitError()
             << "option '" << bound.getName().getValue() << "' defaults to "
             << option.getInt() << ", below its least value " << value.getInt()
             << " (drc.option_min)";
  }
  for (StringRef required : {"read", "write"})
    if (!module->lookupSymbol<func::FuncOp>(required))
      return (*module)->emitError()
             << "scheme " << name << " has no function @" << required
             << "; a scheme needs @read(state) -> (u, carried...) and "
                "@write(carried..., f) -> state (docs/schemes.md)";
  scheme.module = std::move(module);
  scheme.name = name.str();
  return scheme;
}

namespace {

std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (v && matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

Attribute constantOf(Value v) {
  Attribute attr;
  if (v && matchPattern(v, m_Constant(&attr)))
    return attr;
  return {};
}

/// `message` with each `{name}` of a compile-time value replaced by that
/// value (names it does not know stay as they are).
std::string fillInStatics(StringRef message, const StaticValues &statics) {
  std::string out;
  llvm::raw_string_ostream os(out);
  while (!message.empty()) {
    size_t open = message.find('{');
    size_t close = message.find('}', open);
    if (open == StringRef::npos || close == StringRef::npos) {
      os << message;
      break;
    }
    os << message.take_front(open);
    StringRef name = message.slice(open + 1, close);
    Attribute value;
    for (auto &[known, v] : statics)
      if (known.getValue() == name)
        value = v;
    if (auto flag = dyn_cast_if_present<BoolAttr>(value))
      os << (flag.getValue() ? "true" : "false");
    else if (auto integer = dyn_cast_if_present<IntegerAttr>(value))
      os << integer.getInt();
    else if (auto number = dyn_cast_if_present<FloatAttr>(value))
      os << number.getValueAsDouble();
    else
      os << message.slice(open, close + 1);
    message = message.drop_front(close + 1);
  }
  return out;
}

/// Whether `op` is scalar compile-time arithmetic the instantiator folds.
bool isCompileTimeArithmetic(Operation &op) {
  return isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) &&
         llvm::none_of(op.getResultTypes(), llvm::IsaPred<ShapedType>);
}

std::string describe(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

RankedTensorType withShape(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

/// Gives a cloned op its static result type from its (static) operands, or
/// from the static sizes its template result type already states.
LogicalResult refineResultType(Operation *op, Type element) {
  if (op->getNumResults() != 1)
    return success(llvm::all_of(op->getResultTypes(), [](Type t) {
      auto shaped = dyn_cast<ShapedType>(t);
      return !shaped || shaped.hasStaticShape();
    }));
  auto declared = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!declared)
    return success();
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  auto sameAsInput = [&]() -> FailureOr<SmallVector<int64_t>> {
    return SmallVector<int64_t>(shapeOf(op->getOperand(0)));
  };
  FailureOr<SmallVector<int64_t>> shape =
      llvm::TypeSwitch<Operation *, FailureOr<SmallVector<int64_t>>>(op)
          .Case<RMSNormOp, CenterOp, AddOp, SquashOp, ScaleOp, ShiftOp,
                SoftmaxOp, NormalizeOp>(
              [&](Operation *) { return sameAsInput(); })
          .Case([&](MixOp mix) -> FailureOr<SmallVector<int64_t>> {
            auto in = shapeOf(mix.getInput()), coef = shapeOf(mix.getCoef());
            if (in.size() != 3 || coef.size() < 2)
              return failure();
            int64_t out =
                mix.getTransposeCoef() ? coef[coef.size() - 2] : coef.back();
            return SmallVector<int64_t>{in[0], out, in[2]};
          })
          .Case([&](AppendOp append) -> FailureOr<SmallVector<int64_t>> {
            SmallVector<int64_t> out(shapeOf(append.getInputs().front()));
            if (out.size() != 3)
              return failure();
            out[1] = 0;
            for (Value in : append.getInputs())
              out[1] += shapeOf(in)[1];
            return out;
          })
          .Case([&](RowsOp rows) -> FailureOr<SmallVector<int64_t>> {
            SmallVector<int64_t> out(shapeOf(rows.getInput()));
            if (out.size() != 3 || declared.getRank() != 3 ||
                declared.isDynamicDim(1))
              return failure();
            out[1] = declared.getDimSize(1);
            return out;
          })
          .Case([&](EmbedOp embed) -> FailureOr<SmallVector<int64_t>> {
            return SmallVector<int64_t>{shapeOf(embed.getTokens())[0],
                                        shapeOf(embed.getTable())[1]};
          })
          .Case([&](LinearOp linear) -> FailureOr<SmallVector<int64_t>> {
            SmallVector<int64_t> out(shapeOf(linear.getInput()));
            out.back() = shapeOf(linear.getWeight())[0];
            return out;
          })
          .Case([&](ViewOp view) -> FailureOr<SmallVector<int64_t>> {
            // The token dimension is kept; the dynamic ones after it come
            // from the sizes in order, and one may be left to the element
            // count.
            auto in = shapeOf(view.getInput());
            SmallVector<int64_t> out(declared.getShape());
            out[0] = in[0];
            auto size = view.getSizes().begin();
            for (size_t i = 1; i < out.size(); ++i)
              if (ShapedType::isDynamic(out[i]) &&
                  size != view.getSizes().end()) {
                std::optional<int64_t> v = constantInt(*size++);
                if (!v)
                  return failure();
                out[i] = *v;
              }
            if (size != view.getSizes().end())
              return failure();
            int64_t known = 1, perToken = 1, unknown = -1;
            for (int64_t d : in.drop_front())
              perToken *= d;
            for (size_t i = 1; i < out.size(); ++i) {
              if (ShapedType::isDynamic(out[i])) {
                if (unknown >= 0)
                  return failure();
                unknown = i;
              } else {
                known *= out[i];
              }
            }
            if (unknown >= 0)
              out[unknown] = known > 0 ? perToken / known : 0;
            return out;
          })
          .Default([&](Operation *) -> FailureOr<SmallVector<int64_t>> {
            if (!declared.hasStaticShape())
              return failure();
            return SmallVector<int64_t>(declared.getShape());
          });
  if (failed(shape))
    return op->emitError()
           << "cannot infer the static type of this '" << op->getName()
           << "' in a scheme from its operands; state the result's sizes "
              "(all but one dynamic dimension for drc.view, the row count "
              "for drc.rows)";
  op->getResult(0).setType(withShape(*shape, element));
  return success();
}

/// Folds an op the instantiator created with the op's own folder, to a
/// fixpoint (drc.scale takes a constant scale into its factor and then drops
/// a factor of 1; drc.append drops empty sets). Returns the value that
/// replaces the op's single result, or null when the op stays.
Value foldCreated(Operation *op) {
  for (int round = 0; round < 8 && op->getNumResults() == 1; ++round) {
    SmallVector<Attribute> operands;
    for (Value v : op->getOperands())
      operands.push_back(constantOf(v));
    SmallVector<OpFoldResult> folded;
    if (failed(op->fold(operands, folded)))
      return {};
    if (folded.empty())
      continue; // folded in place; it may fold further
    auto value = dyn_cast<Value>(folded.front());
    if (!value)
      return {};
    op->erase();
    return value;
  }
  return {};
}

} // namespace

struct SchemeInstantiator::Frame {
  OpBuilder &b;
  const StaticValues &statics;
  std::string prefix;
  int depth = 0;
};

SchemeInstantiator::SchemeInstantiator(const Scheme &scheme, Type element,
                                       InitAttr matrix, FloatAttr normEps,
                                       DeclareParam declare)
    : scheme(scheme), element(element), matrix(matrix), normEps(normEps),
      declare(std::move(declare)) {}

bool SchemeInstantiator::has(StringRef function) const {
  return static_cast<bool>(
      scheme.module.get().lookupSymbol<func::FuncOp>(function));
}

FailureOr<SmallVector<Value>>
SchemeInstantiator::call(OpBuilder &b, StringRef function, ValueRange args,
                         const StaticValues &statics, StringRef prefix,
                         StringRef context) {
  MLIRContext *ctx = element.getContext();
  std::string note = "while instantiating @" + function.str() + " of scheme " +
                     scheme.name + " for " + context.str();
  ScopedDiagnosticHandler attachContext(ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      diag.attachNote() << note;
    return failure(); // let the outer handler report it
  });
  Frame frame{b, statics, prefix.str()};
  return inlineFunction(frame, nullptr, function, args);
}

FailureOr<SmallVector<Value>>
SchemeInstantiator::inlineFunction(Frame &frame, Operation *caller,
                                   StringRef name, ValueRange args) {
  auto fn = scheme.module.get().lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    InFlightDiagnostic diag =
        caller ? caller->emitError() : scheme.module.get().emitError();
    return diag << "scheme " << scheme.name << " has no function @" << name;
  }
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return fn.emitError() << "@" << name
                          << " must have a body of one block of "
                             "straight-line code (use scf.if for choices)";
  if (fn.getNumArguments() != args.size())
    return fn.emitError() << "@" << name << " takes " << fn.getNumArguments()
                          << " arguments but is called with " << args.size();
  if (++frame.depth > 32)
    return fn.emitError() << "calls nest more than 32 deep; is @" << name
                          << " recursive?";
  IRMapping map;
  for (auto [arg, value] : llvm::zip(fn.getArguments(), args)) {
    auto want = dyn_cast<RankedTensorType>(arg.getType());
    auto have = dyn_cast<RankedTensorType>(value.getType());
    if (want && have &&
        (want.getRank() != have.getRank() ||
         llvm::any_of(llvm::zip(want.getShape(), have.getShape()),
                      [](auto dims) {
                        auto [w, h] = dims;
                        return !ShapedType::isDynamic(w) && w != h;
                      })))
      return fn.emitError() << "@" << name << " argument " << arg.getArgNumber()
                            << " is declared " << arg.getType()
                            << " but receives " << value.getType();
    map.map(arg, value);
  }
  SmallVector<Value> results;
  if (failed(cloneBlock(frame, fn.getBody().front(), map, results)))
    return failure();
  --frame.depth;
  return results;
}

LogicalResult SchemeInstantiator::cloneBlock(Frame &frame, Block &block,
                                             IRMapping &map,
                                             SmallVectorImpl<Value> &yielded) {
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      for (Value v : op.getOperands())
        yielded.push_back(map.lookup(v));
      return success();
    }
    if (failed(visit(frame, op, map)))
      return failure();
  }
  return success();
}

LogicalResult SchemeInstantiator::visit(Frame &frame, Operation &op,
                                        IRMapping &map) {
  OpBuilder &b = frame.b;
  if (auto stat = dyn_cast<StaticOp>(op)) {
    StringAttr name = stat.getNameAttr();
    Attribute value = frame.statics.lookup(name);
    if (!value) {
      std::string known;
      for (auto &[n, v] : frame.statics)
        known += (known.empty() ? "" : ", ") + n.getValue().str();
      return op.emitError()
             << "no compile-time value named '" << name.getValue()
             << "' here (known: " << known << ")";
    }
    Type type = stat.getType();
    TypedAttr typed;
    if (IntegerAttr count = integerOption(value); count && type.isIndex()) {
      // Index arithmetic is unsigned (arith.divui, arith.remui): a negative
      // count or size would wrap around.
      if (count.getInt() < 0)
        return op.emitError()
               << "'" << name.getValue() << "' is " << count.getInt()
               << ", which cannot be read as an index (a "
                  "count or size, never negative)";
      typed = b.getIndexAttr(count.getInt());
    } else if (type.isF64() && isa<FloatAttr>(value))
      typed = b.getF64FloatAttr(cast<FloatAttr>(value).getValueAsDouble());
    else if (IntegerAttr number = integerOption(value); number && type.isF64())
      typed = b.getF64FloatAttr(double(number.getInt()));
    else if (type.isInteger(1) && isa<BoolAttr>(value))
      typed = b.getBoolAttr(cast<BoolAttr>(value).getValue());
    else
      return op.emitError() << "'" << name.getValue() << "' is " << value
                            << ", which cannot be read as " << type;
    map.map(stat.getResult(),
            arith::ConstantOp::create(b, op.getLoc(), typed).getResult());
    return success();
  }
  if (auto require = dyn_cast<RequireOp>(op)) {
    auto holds = dyn_cast_if_present<BoolAttr>(
        constantOf(map.lookup(require.getCondition())));
    if (!holds)
      return op.emitError() << "'drc.require' needs a compile-time condition";
    if (!holds.getValue())
      return op.emitError()
             << fillInStatics(require.getMessage(), frame.statics);
    return success();
  }
  if (auto weight = dyn_cast<WeightOp>(op))
    return declareWeight(frame, weight, map);
  if (auto call = dyn_cast<func::CallOp>(op)) {
    SmallVector<Value> args;
    for (Value v : call.getOperands())
      args.push_back(map.lookup(v));
    FailureOr<SmallVector<Value>> results =
        inlineFunction(frame, call, call.getCallee(), args);
    if (failed(results))
      return failure();
    if (results->size() != call.getNumResults())
      return call.emitError()
             << "@" << call.getCallee() << " returns " << results->size()
             << " values, not " << call.getNumResults();
    map.map(call.getResults(), *results);
    return success();
  }
  if (auto cast = dyn_cast<tensor::CastOp>(op)) { // types are refined anyway
    map.map(cast.getResult(), map.lookup(cast.getSource()));
    return success();
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) { // sizes are static by now
    auto type = cast<RankedTensorType>(map.lookup(dim.getSource()).getType());
    std::optional<int64_t> index = constantInt(map.lookup(dim.getIndex()));
    if (!index || *index < 0 || *index >= type.getRank() ||
        type.isDynamicDim(*index))
      return op.emitError() << "tensor.dim must name a dimension of " << type
                            << " by a compile-time index";
    map.map(dim.getResult(), arith::ConstantOp::create(
                                 frame.b, op.getLoc(),
                                 frame.b.getIndexAttr(type.getDimSize(*index)))
                                 .getResult());
    return success();
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    std::optional<int64_t> cond = constantInt(map.lookup(ifOp.getCondition()));
    if (!cond)
      return op.emitError() << "the condition of scf.if in a scheme must be a "
                               "compile-time value (drc.static and arithmetic "
                               "on it)";
    Region &taken = *cond ? ifOp.getThenRegion() : ifOp.getElseRegion();
    SmallVector<Value> yielded;
    if (!taken.empty() &&
        failed(cloneBlock(frame, taken.front(), map, yielded)))
      return failure();
    if (yielded.size() != ifOp.getNumResults())
      return op.emitError()
             << "the taken branch yields " << yielded.size() << " values for "
             << ifOp.getNumResults() << " results";
    map.map(ifOp.getResults(), yielded);
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) { // unrolled
    std::optional<int64_t> lb = constantInt(map.lookup(loop.getLowerBound())),
                           ub = constantInt(map.lookup(loop.getUpperBound())),
                           step = constantInt(map.lookup(loop.getStep()));
    if (!lb || !ub || !step || *step < 1)
      return op.emitError() << "scf.for in a scheme is unrolled: its bounds "
                               "and a positive step must be compile-time "
                               "values";
    if ((*ub - *lb) / *step > 100000)
      return op.emitError() << "scf.for would unroll to more than 100000 "
                               "iterations";
    SmallVector<Value> carried;
    for (Value init : loop.getInitArgs())
      carried.push_back(map.lookup(init));
    for (int64_t i = *lb; i < *ub; i += *step) {
      map.map(loop.getInductionVar(),
              arith::ConstantOp::create(b, op.getLoc(), b.getIndexAttr(i))
                  .getResult());
      map.map(loop.getRegionIterArgs(), carried);
      SmallVector<Value> yielded;
      if (failed(cloneBlock(frame, *loop.getBody(), map, yielded)))
        return failure();
      carried = std::move(yielded);
    }
    map.map(loop.getResults(), carried);
    return success();
  }
  if (isa<tensor::GenerateOp, tensor::FromElementsOp, tensor::SplatOp, EyeOp>(
          op))
    return generate(frame, op, map);
  if (isCompileTimeArithmetic(op))
    return evaluate(frame, op, map);

  if (op.getNumRegions() != 0)
    return op.emitError() << "'" << op.getName()
                          << "' has regions; in a scheme only scf.if, "
                             "scf.for and tensor.generate may";
  Operation *clone = b.clone(op, map);
  if (auto norm = dyn_cast<RMSNormOp>(clone))
    norm.setEpsAttr(normEps);
  if (failed(refineResultType(clone, element)))
    return failure();
  if (auto view = dyn_cast<ViewOp>(clone))
    view.getSizesMutable().clear();
  if (failed(verify(clone)))
    return failure();
  if (Value folded = foldCreated(clone))
    map.map(op.getResult(0), folded);
  return success();
}

/// Folds scalar arithmetic on compile-time values to a constant.
LogicalResult SchemeInstantiator::evaluate(Frame &frame, Operation &op,
                                           IRMapping &map) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    map.map(constant.getResult(), frame.b.clone(op)->getResult(0));
    return success();
  }
  SmallVector<Attribute> operands;
  for (Value v : op.getOperands()) {
    operands.push_back(constantOf(map.lookup(v)));
    if (!operands.back())
      return op.emitError() << "'" << op.getName()
                            << "' in a scheme must compute a compile-time "
                               "value; operand "
                            << operands.size() - 1 << " is not one";
  }
  SmallVector<OpFoldResult> folded;
  if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
    // arith folds only exact truncations; a scheme's f32 constants round.
    auto type = cast<FloatType>(trunc.getType());
    folded.push_back(
        FloatAttr::get(type, cast<FloatAttr>(operands[0]).getValueAsDouble()));
  } else if (failed(op.fold(operands, folded)) ||
             folded.size() != op.getNumResults())
    return op.emitError() << "cannot evaluate '" << op.getName()
                          << "' at compile time";
  for (auto [result, value] : llvm::zip(op.getResults(), folded)) {
    if (auto v = dyn_cast<Value>(value)) {
      map.map(result, map.lookupOrDefault(v));
      continue;
    }
    auto typed = dyn_cast<TypedAttr>(cast<Attribute>(value));
    if (!typed)
      return op.emitError() << "folded to a non-scalar value";
    map.map(result,
            arith::ConstantOp::create(frame.b, op.getLoc(), typed).getResult());
  }
  return success();
}

/// Evaluates a compile-time tensor (tensor.generate, from_elements, splat)
/// to a dense constant of the model's float type.
LogicalResult SchemeInstantiator::generate(Frame &frame, Operation &op,
                                           IRMapping &map) {
  auto declared = cast<RankedTensorType>(op.getResult(0).getType());
  SmallVector<int64_t> shape(declared.getShape());
  auto scalar = [&](Attribute attr) -> std::optional<double> {
    if (auto f = dyn_cast_if_present<FloatAttr>(attr))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_if_present<IntegerAttr>(attr))
      return double(i.getValue().getSExtValue());
    return std::nullopt;
  };
  auto notConstant = [&](StringRef what) {
    return op.emitError() << what
                          << " of a tensor in a scheme must be a compile-time "
                             "value";
  };
  SmallVector<double> values;
  auto staticSizes = [&](ValueRange sizes) -> LogicalResult {
    auto size = sizes.begin();
    for (int64_t &d : shape)
      if (ShapedType::isDynamic(d)) {
        std::optional<int64_t> e = size == sizes.end()
                                       ? std::nullopt
                                       : constantInt(map.lookup(*size++));
        if (!e || *e < 0)
          return notConstant("each dynamic size");
        d = *e;
      }
    return success();
  };
  if (auto eye = dyn_cast<EyeOp>(op)) {
    if (failed(staticSizes(eye.getSizes())))
      return failure();
    std::optional<int64_t> offset =
        eye.getOffset() ? constantInt(map.lookup(eye.getOffset())) : 0;
    if (!offset)
      return notConstant("the offset");
    if (shape.empty() || shape.size() > 2)
      return op.emitError() << "drc.eye makes a vector or a matrix";
    int64_t rows = shape[0], cols = shape.size() == 2 ? shape[1] : 1;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t shifted = i - *offset;
        if (eye.getCyclic())
          shifted = ((shifted % cols) + cols) % cols;
        bool hit = shape.size() == 1 ? i == *offset : shifted == j;
        values.push_back((hit ? eye.getOn() : eye.getOff()).convertToDouble());
      }
  } else if (auto gen = dyn_cast<tensor::GenerateOp>(op)) {
    if (failed(staticSizes(gen.getDynamicExtents())))
      return failure();
    Block &body = gen.getBody().front();
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    for (int64_t flat = 0; flat < count; ++flat) {
      DenseMap<Value, Attribute> env;
      for (int64_t dim = shape.size() - 1, rest = flat; dim >= 0; --dim) {
        env[body.getArgument(dim)] = frame.b.getIndexAttr(rest % shape[dim]);
        rest /= shape[dim];
      }
      auto lookup = [&](Value v) {
        Attribute a = env.lookup(v);
        return a ? a : constantOf(map.lookupOrNull(v));
      };
      for (Operation &inner : body) {
        if (auto yield = dyn_cast<tensor::YieldOp>(inner)) {
          std::optional<double> v = scalar(lookup(yield.getValue()));
          if (!v)
            return notConstant("the yielded element");
          values.push_back(*v);
          break;
        }
        SmallVector<Attribute> operands;
        for (Value v : inner.getOperands())
          operands.push_back(lookup(v));
        SmallVector<OpFoldResult> folded;
        if (isa<arith::ConstantOp>(inner)) {
          env[inner.getResult(0)] =
              cast<arith::ConstantOp>(inner).getValueAttr();
          continue;
        }
        if (llvm::is_contained(operands, Attribute()) ||
            failed(inner.fold(operands, folded)) ||
            folded.size() != inner.getNumResults())
          return inner.emitError()
                 << "cannot evaluate '" << inner.getName()
                 << "' at compile time in the body of tensor.generate";
        for (auto [r, f] : llvm::zip(inner.getResults(), folded))
          env[r] = isa<Value>(f) ? lookup(cast<Value>(f)) : cast<Attribute>(f);
      }
    }
  } else if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
    std::optional<double> v = scalar(constantOf(map.lookup(splat.getInput())));
    if (!v)
      return notConstant("the value");
    if (failed(staticSizes(splat.getDynamicSizes())))
      return failure();
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    values.assign(count, *v);
  } else {
    for (Value v : op.getOperands()) {
      std::optional<double> s = scalar(constantOf(map.lookup(v)));
      if (!s)
        return notConstant("each element");
      values.push_back(*s);
    }
  }
  auto type = withShape(shape, element);
  SmallVector<Attribute> elements;
  for (double v : values)
    elements.push_back(FloatAttr::get(element, v));
  map.map(op.getResult(0),
          arith::ConstantOp::create(frame.b, op.getLoc(), type,
                                    DenseElementsAttr::get(type, elements))
              .getResult());
  return success();
}

LogicalResult SchemeInstantiator::declareWeight(Frame &frame, WeightOp op,
                                                IRMapping &map) {
  InitAttr init = op.getInitAttr();
  SmallVector<int64_t> shape;
  if (Value value = op.getValue()) {
    auto dense =
        dyn_cast_if_present<DenseElementsAttr>(constantOf(map.lookup(value)));
    if (!dense)
      return op.emitError() << "the initial value of a weight must be a "
                               "compile-time tensor (tensor.generate)";
    init = InitAttr::fromValues(dense);
    shape.assign(dense.getType().getShape().begin(),
                 dense.getType().getShape().end());
  } else {
    for (Value size : op.getSizes()) {
      std::optional<int64_t> d = constantInt(map.lookup(size));
      if (!d || *d < 1)
        return op.emitError() << "weight '" << op.getName()
                              << "': every size must be a positive "
                                 "compile-time value";
      shape.push_back(*d);
    }
    if (init.getKind() == InitKind::Matrix)
      init = matrix;
  }
  auto declared = op.getType();
  if (declared.getRank() != int64_t(shape.size()))
    return op.emitError() << "weight '" << op.getName() << "' has "
                          << shape.size() << " sizes but type "
                          << describe(declared);
  FailureOr<Value> ref =
      declare(op.getLoc(), frame.prefix + op.getName().str(),
              withShape(shape, element), init, op.getDecay());
  if (failed(ref))
    return failure();
  map.map(op.getResult(), *ref);
  return success();
}
