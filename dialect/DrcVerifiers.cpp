//===- DrcVerifiers.cpp - Shape and symbol checks of drc ops -------------===//
//
// Every message says which operand is wrong, what was found and what was
// expected, so a scheme author can fix the IR from the diagnostic alone.
//
//===----------------------------------------------------------------------===//
#include "dialect/DrcDialect.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

std::string shapeString(RankedTensorType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(type.getShape(), os, ", ");
  os << "]";
  return s;
}

/// Checks that `value` is a static tensor of `rank` with the given element
/// type (when non-null).
LogicalResult expectTensor(Operation *op, Value value, StringRef what,
                           int64_t rank, Type elementType = {}) {
  RankedTensorType type = ranked(value);
  if (!type.hasStaticShape())
    return op->emitOpError()
           << what << " must have a static shape, found " << value.getType();
  if (type.getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", found "
                             << value.getType();
  if (elementType && type.getElementType() != elementType)
    return op->emitOpError()
           << what << " has element type " << type.getElementType()
           << " but the op works in " << elementType;
  return success();
}

LogicalResult expectShape(Operation *op, Value value, StringRef what,
                          ArrayRef<int64_t> shape, StringRef why) {
  RankedTensorType type = ranked(value);
  if (type.getShape() != shape) {
    auto expected = RankedTensorType::get(shape, type.getElementType());
    return op->emitOpError()
           << what << " has shape " << shapeString(type) << " but " << why
           << " requires " << shapeString(expected);
  }
  return success();
}

/// The matrix an operand of rank >= 2 stands for in a matmul: its rows
/// [d0 * ... * d(r-2), d(r-1)] (a set [N, k, w] is N*k rows of width w).
std::pair<int64_t, int64_t> asMatrix(Value v) {
  ArrayRef<int64_t> shape = ranked(v).getShape();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  return {rows, shape.back()};
}

/// Checks a static tensor of rank >= 2 with the given element type.
LogicalResult expectRows(Operation *op, Value v, StringRef what, Type element) {
  RankedTensorType type = ranked(v);
  if (!type.hasStaticShape() || type.getRank() < 2)
    return op->emitOpError() << what
                             << " must be a static tensor of rank >= "
                                "2 (rows of the last dimension), found "
                             << v.getType();
  if (type.getElementType() != element)
    return op->emitOpError()
           << what << " has element type " << type.getElementType()
           << " but the op works in " << element;
  return success();
}

/// Checks the head split shared by attention, rope and causal_attention.
LogicalResult verifyHeads(Operation *op, int64_t tokens, int64_t width,
                          int64_t nHead, int64_t seqLen) {
  if (nHead <= 0 || width % nHead != 0)
    return op->emitOpError()
           << "n_head = " << nHead << " must be positive and divide the width "
           << width;
  if ((width / nHead) % 2 != 0)
    return op->emitOpError()
           << "head dimension " << width / nHead << " (width " << width
           << " / n_head " << nHead << ") must be even for RoPE";
  if (seqLen <= 0 || tokens % seqLen != 0)
    return op->emitOpError()
           << "seq_len = " << seqLen << " must be positive and divide the "
           << tokens << " tokens (tokens = batch x seq_len)";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape() || type.getNumElements() == 0)
    return emitOpError() << "parameter @" << getSymName()
                         << " needs a static, non-empty shape, found " << type;
  InitAttr init = getInit();
  if (init.getKind() == InitKind::Matrix)
    return emitOpError() << "parameter @" << getSymName()
                         << ": `matrix` is resolved by instantiation; a "
                            "declared parameter needs trunc_normal(std, clip)";
  if (init.getKind() == InitKind::Values &&
      init.getValues().getType().getShape() != type.getShape())
    return emitOpError() << "parameter @" << getSymName() << " of type " << type
                         << " has initial values of type "
                         << init.getValues().getType();
  return success();
}

/// Resolves `name` to a drc.param and checks that `type` matches its shape.
static LogicalResult verifyParamUse(Operation *op, SymbolTableCollection &table,
                                    FlatSymbolRefAttr name, Type type) {
  auto param = table.lookupNearestSymbolFrom<ParamOp>(op, name);
  if (!param)
    return op->emitOpError() << "refers to " << name
                             << ", which is not a drc.param of this module";
  if (param.getType() != type)
    return op->emitOpError() << "uses " << name << " as " << type
                             << " but it is declared " << param.getType();
  return success();
}

LogicalResult ParamRefOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyParamUse(*this, table, getParamAttr(), getType());
}

LogicalResult GradStoreOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyParamUse(*this, table, getParamAttr(), getGrad().getType());
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::verify() {
  if (failed(expectTensor(*this, getTable(), "table", 2)) ||
      failed(expectTensor(*this, getResult(), "result", 2,
                          ranked(getTable()).getElementType())))
    return failure();
  int64_t tokens = ranked(getTokens()).getDimSize(0);
  int64_t width = ranked(getTable()).getDimSize(1);
  return expectShape(*this, getResult(), "result", {tokens, width},
                     "one row of the table per token");
}

LogicalResult RMSNormOp::verify() {
  RankedTensorType type = ranked(getInput());
  if (getResult().getType() != type)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the input type " << type;
  if (getEps().convertToDouble() < 0)
    return emitOpError() << "eps must be non-negative";
  if (Value gain = getGain()) {
    if (failed(expectTensor(*this, gain, "gain", 1, type.getElementType())))
      return failure();
    return expectShape(*this, gain, "gain", {type.getShape().back()},
                       "normalising rows of width " +
                           std::to_string(type.getShape().back()));
  }
  return success();
}

/// A projection of every row of `input` by `weight` [out, in] into `result`;
/// `meaning` says what the result holds.
static LogicalResult verifyProjection(Operation *op, Value input, Value weight,
                                      Value result, StringRef meaning) {
  Type element = ranked(input).getElementType();
  if (failed(expectRows(op, input, "input", element)) ||
      failed(expectTensor(op, weight, "weight", 2, element)))
    return failure();
  ArrayRef<int64_t> x = ranked(input).getShape();
  ArrayRef<int64_t> w = ranked(weight).getShape();
  if (w[1] != x.back())
    return op->emitOpError()
           << "weight is [out, in] = [" << w[0] << ", " << w[1]
           << "] but the input rows have width " << x.back();
  SmallVector<int64_t> shape(x);
  shape.back() = w[0];
  return expectShape(op, result, "result", shape, meaning);
}

LogicalResult LinearOp::verify() {
  return verifyProjection(*this, getInput(), getWeight(), getResult(),
                          "x W^T with W = [out, in]");
}

LogicalResult AttentionOp::verify() {
  RankedTensorType type = ranked(getInput());
  if (failed(expectTensor(*this, getInput(), "input", 2)))
    return failure();
  int64_t tokens = type.getDimSize(0), width = type.getDimSize(1);
  for (auto [name, w] : {std::pair<StringRef, Value>{"wq", getWq()},
                         {"wk", getWk()},
                         {"wv", getWv()},
                         {"wo", getWo()}}) {
    if (failed(expectTensor(*this, w, name, 2, type.getElementType())) ||
        failed(expectShape(*this, w, name, {width, width},
                           "an input of width " + std::to_string(width))))
      return failure();
  }
  if (getResult().getType() != type)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the input type " << type;
  if (Value keys = getDepthKeys()) {
    if (failed(
            expectTensor(*this, keys, "depth keys", 3, type.getElementType())))
      return failure();
    int64_t rows = ranked(keys).getDimSize(1);
    std::string why = "a depth cache of " + std::to_string(rows) +
                      " rows for an input " + shapeString(type);
    if (failed(expectShape(*this, keys, "depth keys", {tokens, rows, width},
                           why)) ||
        failed(expectShape(*this, getDepthValues(), "depth values",
                           {tokens, rows, width}, why)))
      return failure();
  }
  return verifyHeads(*this, tokens, width, getNHead(), getSeqLen());
}

LogicalResult SwiGLUOp::verify() {
  RankedTensorType type = ranked(getInput());
  if (failed(expectTensor(*this, getInput(), "input", 2)) ||
      failed(expectTensor(*this, getW1(), "w1", 2, type.getElementType())))
    return failure();
  int64_t width = type.getDimSize(1);
  int64_t hidden = ranked(getW1()).getDimSize(0);
  std::string why = "an FFN of width " + std::to_string(width) +
                    " and hidden width " + std::to_string(hidden);
  if (failed(expectShape(*this, getW1(), "w1", {hidden, width}, why)) ||
      failed(expectShape(*this, getW3(), "w3", {hidden, width}, why)) ||
      failed(expectShape(*this, getW2(), "w2", {width, hidden}, why)))
    return failure();
  if (getResult().getType() != type)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the input type " << type;
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(expectTensor(*this, getLogits(), "logits", 2)))
    return failure();
  int64_t tokens = ranked(getLogits()).getDimSize(0);
  if (ranked(getTargets()).getDimSize(0) != tokens)
    return emitOpError() << "has " << ranked(getTargets()).getDimSize(0)
                         << " targets for " << tokens << " rows of logits";
  if (ranked(getResult()).getElementType() !=
      ranked(getLogits()).getElementType())
    return emitOpError() << "result element type must match the logits";
  return success();
}

LogicalResult LookaheadOp::verify() {
  int64_t tokens = ranked(getTargets()).getDimSize(0);
  if (getSeqLen() <= 0 || ShapedType::isDynamic(tokens) ||
      tokens % getSeqLen() != 0)
    return emitOpError() << tokens << " targets do not split into sequences of "
                         << getSeqLen();
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  Type element = ranked(getLhs()).getElementType();
  if (failed(expectRows(*this, getLhs(), "lhs", element)) ||
      failed(expectRows(*this, getRhs(), "rhs", element)) ||
      failed(expectRows(*this, getResult(), "result", element)))
    return failure();
  auto [a0, a1] = asMatrix(getLhs());
  auto [b0, b1] = asMatrix(getRhs());
  int64_t m = getTransposeLhs() ? a1 : a0, ka = getTransposeLhs() ? a0 : a1;
  int64_t kb = getTransposeRhs() ? b1 : b0, n = getTransposeRhs() ? b0 : b1;
  if (ka != kb)
    return emitOpError() << "contracts a dimension of " << ka
                         << " (lhs) with one of " << kb << " (rhs)";
  if (asMatrix(getResult()) != std::pair<int64_t, int64_t>{m, n})
    return emitOpError() << "result " << getResult().getType()
                         << " does not hold the " << m << " x " << n
                         << " matrix op(lhs) x op(rhs)";
  return success();
}

/// `shape` with its last extent 1: a row reduction's result.
static SmallVector<int64_t> rowsOf(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = 1;
  return shape;
}

/// An elementwise adjoint op's result and input adjoints have the shape of
/// `like` (its `role`: "input" or "result").
static LogicalResult verifyAdjointShapes(Operation *op, Value resultGrad,
                                         Value inputGrad, RankedTensorType like,
                                         StringRef role) {
  if (succeeded(verifyCompatibleShape(resultGrad.getType(), like)) &&
      succeeded(verifyCompatibleShape(inputGrad.getType(), like)))
    return success();
  return op->emitOpError() << "the result adjoint " << resultGrad.getType()
                           << " and the input adjoint " << inputGrad.getType()
                           << " must have the " << role << "'s shape " << like;
}

LogicalResult RMSNormGradOp::verify() {
  auto input = ranked(getInput());
  if (failed(verifyAdjointShapes(*this, getResultGrad(), getInputGrad(), input,
                                 "input")))
    return failure();
  if (Value dot = getDot(); dot && failed(verifyCompatibleShape(
                                       ranked(dot).getShape(), rowsOf(input))))
    return emitOpError() << "dot " << dot.getType()
                         << " must hold one sum per row of " << input
                         << " (its shape with the last axis 1)";
  return success();
}

LogicalResult RowDotOp::verify() {
  auto lhs = ranked(getLhs());
  if (failed(verifyCompatibleShape(getRhs().getType(), lhs)))
    return emitOpError() << "multiplies " << lhs << " by " << getRhs().getType()
                         << ": the operands must have one shape";
  if (failed(
          verifyCompatibleShape(ranked(getResult()).getShape(), rowsOf(lhs))))
    return emitOpError() << "result " << getResult().getType()
                         << " must hold one sum per row of " << lhs
                         << " (its shape with the last axis 1)";
  return success();
}

LogicalResult ScaleByInvRMSOp::verify() {
  auto grad = ranked(getResultGrad()), input = ranked(getInput());
  if (getResult().getType() != grad)
    return emitOpError() << "result " << getResult().getType()
                         << " must have the type of the scaled rows " << grad;
  if (grad.getRank() != input.getRank() ||
      grad.getShape().drop_back() != input.getShape().drop_back())
    return emitOpError() << "scales the rows of " << grad << " by those of "
                         << input << ": their leading shapes must agree";
  return success();
}

LogicalResult NormedLinearOp::verify() {
  if (getWeights().empty() || getWeights().size() != getResults().size())
    return emitOpError() << "needs one result per weight, and at least one "
                            "weight; found "
                         << getWeights().size() << " weights and "
                         << getResults().size() << " results";
  for (auto [w, y] : llvm::zip(getWeights(), getResults()))
    if (failed(verifyProjection(*this, getInput(), w, y,
                                "rms_norm(x) W^T with W = [out, in]")))
      return failure();
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType type = ranked(getInput());
  if (failed(expectTensor(*this, getInput(), "input", 2)))
    return failure();
  if (getResult().getType() != type)
    return emitOpError() << "result type must equal the input type";
  return verifyHeads(*this, type.getDimSize(0), type.getDimSize(1), getNHead(),
                     getSeqLen());
}

LogicalResult CausalAttentionOp::verify() {
  RankedTensorType type = ranked(getQ());
  if (failed(expectTensor(*this, getQ(), "q", 2)))
    return failure();
  if (getK().getType() != type || getV().getType() != type ||
      getResult().getType() != type)
    return emitOpError() << "q, k, v and the result must share one type, "
                            "found "
                         << type << ", " << getK().getType() << ", "
                         << getV().getType() << " -> " << getResult().getType();
  int64_t tokens = type.getDimSize(0);
  if (failed(verifyHeads(*this, tokens, type.getDimSize(1), getNHead(),
                         getSeqLen())))
    return failure();
  return expectShape(*this, getLse(), "lse",
                     {tokens, static_cast<int64_t>(getNHead())},
                     "one log-sum-exp per token and head");
}

LogicalResult DepthAttentionOp::verify() {
  RankedTensorType type = ranked(getQ());
  if (failed(expectTensor(*this, getQ(), "q", 2)) ||
      failed(expectTensor(*this, getKeys(), "keys", 3, type.getElementType())))
    return failure();
  int64_t tokens = type.getDimSize(0), width = type.getDimSize(1);
  int64_t rows = ranked(getKeys()).getDimSize(1);
  std::string why = "q of shape " + shapeString(type);
  if (failed(
          expectShape(*this, getKeys(), "keys", {tokens, rows, width}, why)) ||
      failed(expectShape(*this, getValues(), "values", {tokens, rows, width},
                         "keys of shape " + shapeString(ranked(getKeys())))))
    return failure();
  if (getOut().getType() != type || getResult().getType() != type)
    return emitOpError() << "q, the sequence attention's out and the result "
                            "must share one type, found "
                         << type << ", " << getOut().getType() << " -> "
                         << getResult().getType();
  if (getNHead() <= 0 || width % getNHead() != 0)
    return emitOpError() << "width " << width << " is not a multiple of n_head "
                         << getNHead();
  return expectShape(*this, getLse(), "lse",
                     {tokens, static_cast<int64_t>(getNHead())},
                     "one log-sum-exp per token and head");
}

LogicalResult MixOp::verify() {
  Type element = ranked(getInput()).getElementType();
  if (failed(expectTensor(*this, getInput(), "input set", 3, element)))
    return failure();
  RankedTensorType input = ranked(getInput()), coef = ranked(getCoef());
  int64_t tokens = input.getDimSize(0), kIn = input.getDimSize(1),
          width = input.getDimSize(2);
  if (!coef.hasStaticShape() || (coef.getRank() != 2 && coef.getRank() != 3))
    return emitOpError() << "coefficients must be static, [k_in, k_out] "
                            "shared by all tokens or [tokens, k_in, k_out] "
                            "per token, found "
                         << getCoef().getType();
  if (coef.getElementType() != element)
    return emitOpError() << "coefficients have element type "
                         << coef.getElementType() << " but the set holds "
                         << element;
  if (coef.getRank() == 3 && coef.getDimSize(0) != tokens)
    return emitOpError() << "per-token coefficients " << getCoef().getType()
                         << " are for " << coef.getDimSize(0)
                         << " tokens but the set has " << tokens;
  ArrayRef<int64_t> matrix = coef.getShape().take_back(2);
  int64_t rows = getTransposeCoef() ? matrix[1] : matrix[0];
  int64_t kOut = getTransposeCoef() ? matrix[0] : matrix[1];
  if (rows != kIn)
    return emitOpError() << "coefficients " << getCoef().getType() << " mix "
                         << rows << " rows but the input set has " << kIn
                         << (getTransposeCoef() ? " (transpose_coef reads "
                                                  "them as [k_out, k_in])"
                                                : "");
  return expectShape(*this, getResult(), "result", {tokens, kOut, width},
                     "mixing to " + std::to_string(kOut) + " rows");
}

LogicalResult ViewOp::verify() {
  RankedTensorType input = ranked(getInput()), result = ranked(getResult());
  if (!getSizes().empty())
    return emitOpError() << "sizes are for schemes (instantiation makes them "
                            "the static result type)";
  if (!input.hasStaticShape() || !result.hasStaticShape() ||
      input.getRank() < 2 || result.getRank() < 2)
    return emitOpError() << "views static tensors of rank >= 2 (tokens "
                            "first), found "
                         << getInput().getType() << " -> "
                         << getResult().getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "cannot change the element type";
  if (input.getDimSize(0) != result.getDimSize(0))
    return emitOpError() << "keeps the token dimension: input has "
                         << input.getDimSize(0) << " tokens, result "
                         << result.getDimSize(0);
  if (input.getNumElements() != result.getNumElements())
    return emitOpError() << "each token has "
                         << input.getNumElements() / input.getDimSize(0)
                         << " values in " << shapeString(input) << " but "
                         << result.getNumElements() / result.getDimSize(0)
                         << " in " << shapeString(result);
  return success();
}

LogicalResult AppendOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one set to join";
  RankedTensorType first = ranked(getInputs().front());
  if (failed(expectTensor(*this, getInputs().front(), "set 0", 3)))
    return failure();
  int64_t rows = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    std::string what = "set " + std::to_string(i);
    if (failed(expectTensor(*this, input, what, 3, first.getElementType())))
      return failure();
    RankedTensorType type = ranked(input);
    if (type.getDimSize(0) != first.getDimSize(0) ||
        type.getDimSize(2) != first.getDimSize(2))
      return emitOpError() << what << " is " << input.getType()
                           << " but set 0 has " << first.getDimSize(0)
                           << " tokens of width " << first.getDimSize(2)
                           << "; joined sets must agree on both";
    rows += type.getDimSize(1);
  }
  return expectShape(*this, getResult(), "result",
                     {first.getDimSize(0), rows, first.getDimSize(2)},
                     "joining " + std::to_string(rows) + " rows");
}

LogicalResult RowsOp::verify() {
  if (failed(expectTensor(*this, getInput(), "input set", 3)) ||
      failed(expectTensor(*this, getResult(), "result", 3,
                          ranked(getInput()).getElementType())))
    return failure();
  ArrayRef<int64_t> in = ranked(getInput()).getShape();
  ArrayRef<int64_t> out = ranked(getResult()).getShape();
  int64_t offset = getOffset(), count = out[1];
  if (offset < 0 || count < 1 || offset + count > in[1])
    return emitOpError() << "rows [" << offset << ", " << offset + count
                         << ") are not within the input's " << in[1] << " rows";
  return expectShape(*this, getResult(), "result", {in[0], count, in[2]},
                     "keeping " + std::to_string(count) + " rows");
}

LogicalResult SquashOp::verify() {
  if (getKind() != "tanh" && getKind() != "sigmoid" && getKind() != "exp")
    return emitOpError() << "unknown squash '" << getKind()
                         << "'; expected \"tanh\", \"sigmoid\" or \"exp\"";
  if (!(getTemperature().convertToDouble() > 0))
    return emitOpError() << "temperature must be positive, found "
                         << getTemperature().convertToDouble();
  return success();
}

/// Checks that `operand` (a broadcast operand) has a suffix of `of`'s shape.
static LogicalResult expectSuffix(Operation *op, Value operand, StringRef what,
                                  Value of) {
  RankedTensorType o = ranked(operand), x = ranked(of);
  if (o.getElementType() != x.getElementType())
    return op->emitOpError()
           << what << " has element type " << o.getElementType()
           << " but the input " << x.getElementType();
  if (!o.hasStaticShape() || o.getRank() > x.getRank() ||
      o.getShape() != x.getShape().take_back(o.getRank()))
    return op->emitOpError()
           << what << " " << operand.getType()
           << " must have the shape of a suffix of the input's "
           << shapeString(x)
           << " (it is broadcast over the leading "
              "dimensions)";
  return success();
}

LogicalResult ScaleOp::verify() {
  if (Value s = getScale())
    return expectSuffix(*this, s, "scale", getInput());
  return success();
}

LogicalResult ShiftOp::verify() {
  return expectSuffix(*this, getShift(), "shift", getInput());
}

LogicalResult SumLeadingOp::verify() {
  return expectSuffix(*this, getResult(), "result", getInput());
}

/// A reduction along `axis` of a static tensor (softmax, normalize).
static LogicalResult verifyAxis(Operation *op, Value input, int64_t axis) {
  RankedTensorType type = ranked(input);
  if (!type.hasStaticShape())
    return op->emitOpError()
           << "input must have a static shape, found " << type;
  if (axis < 0 || axis >= type.getRank())
    return op->emitOpError()
           << "axis " << axis << " is not a dimension of " << type;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getInput(), getAxis());
}

LogicalResult SoftmaxGradOp::verify() {
  RankedTensorType result = ranked(getResult());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= result.getRank())
    return emitOpError() << "axis " << axis << " is not a dimension of "
                         << result;
  if (failed(verifyAdjointShapes(*this, getResultGrad(), getInputGrad(), result,
                                 "result")))
    return failure();
  SmallVector<int64_t> sums(result.getShape());
  sums[axis] = 1;
  if (Value dot = getDot();
      dot && failed(verifyCompatibleShape(ranked(dot).getShape(), sums)))
    return emitOpError() << "dot " << dot.getType()
                         << " must hold one sum per softmax of " << result
                         << " (its shape with axis " << axis << " 1)";
  return success();
}

LogicalResult NormalizeOp::verify() {
  if (!(getEps().convertToDouble() >= 0))
    return emitOpError() << "eps must be non-negative";
  return verifyAxis(*this, getInput(), getAxis());
}

/// `type` with `rows` leading rows, or null if it has no leading dimension.
static Type withLeadingRows(Type type, int64_t rows) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() == 0)
    return {};
  return FusedOp::withRows(tensor, rows);
}

LogicalResult FusedOp::verify() {
  int64_t tokens = getTokens(), tile = getTile();
  if (tile <= 0 || tokens <= 0 || tokens % tile != 0)
    return emitOpError() << "tile " << tile << " must divide the " << tokens
                         << " tokens";
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its body takes "
                         << body.getNumArguments() << " arguments";
  for (auto [index, input, argument] :
       llvm::enumerate(getInputs(), body.getArguments())) {
    Type whole = input.getType(), seen = argument.getType();
    if (seen != whole && seen != withLeadingRows(whole, tile))
      return emitOpError() << "body argument " << index << " has type " << seen
                           << "; input " << index << " of type " << whole
                           << " is read whole (the same type) or one tile of "
                           << tile << " tokens at a time";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with drc.yield";
  if (yield.getValues().size() != getNumResults())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values for " << getNumResults() << " results";
  for (int64_t index : getPartials())
    if (index < 0 || index >= int64_t(getNumResults()))
      return emitOpError() << "partials names result " << index << " of "
                           << getNumResults();
  for (auto [index, value, result] :
       llvm::enumerate(yield.getValues(), getResults())) {
    if (isPartial(index)) {
      if (!isa<RankedTensorType>(value.getType()) ||
          stackedPartials(value.getType(), tokens, tile) != result.getType())
        return emitOpError()
               << "partial-sum result " << index << " of type "
               << result.getType() << " does not stack one yielded "
               << value.getType() << " per tile of " << tile << " out of "
               << tokens << " tokens";
      continue;
    }
    if (withLeadingRows(value.getType(), tile) != value.getType() ||
        withLeadingRows(value.getType(), tokens) != result.getType())
      return emitOpError() << "result " << index << " of type "
                           << result.getType() << " is not the " << tokens
                           << "-token whole of its yielded tile of type "
                           << value.getType();
  }
  return success();
}
