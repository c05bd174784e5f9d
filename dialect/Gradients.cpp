//===- Gradients.cpp - Reverse-mode rules of the differentiable drc ops --===//
//
// One vector-Jacobian product per op. Rules emit kernel-level drc ops only, so
// the backward program lowers through the same path as the forward one.
//
//===----------------------------------------------------------------------===//
#include "dialect/DrcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::drc;

LogicalResult AddOp::buildGradient(OpBuilder &, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign({resultGrads[0], resultGrads[0]});
  return success();
}

LogicalResult RMSNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value dx =
      RMSNormGradOp::create(b, getLoc(), getInput().getType(), getInput(),
                            getGain(), dy, /*dot=*/Value(), getEpsAttr());
  operandGrads.push_back(dx);
  if (Value gain = getGain())
    operandGrads.push_back(RMSNormGainGradOp::create(
        b, getLoc(), gain.getType(), getInput(), dy, getEpsAttr()));
  return success();
}

LogicalResult
CrossEntropyOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      CrossEntropyGradOp::create(b, getLoc(), getLogits().getType(),
                                 getLogits(), getTargets(), resultGrads[0]));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult EmbedOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbedGradOp::create(b, getLoc(), getTable().getType(),
                                             getTokens(), resultGrads[0]));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // With A' = op(A), B' = op(B): dA' = dC B'^T and dB' = A'^T dC; transposing
  // back where op transposed gives each case as one more matmul.
  Value dC = resultGrads[0];
  Value a = getLhs(), bv = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  auto matmul = [&](Value lhs, Value rhs, bool tl, bool tr, Type type) {
    auto op = MatmulOp::create(b, getLoc(), type, lhs, rhs);
    op.setTransposeLhs(tl);
    op.setTransposeRhs(tr);
    return op.getResult();
  };
  Value dA = ta ? matmul(bv, dC, tb, true, a.getType())
                : matmul(dC, bv, false, !tb, a.getType());
  Value dB = tb ? matmul(dC, a, true, ta, bv.getType())
                : matmul(a, dC, !ta, false, bv.getType());
  operandGrads.assign({dA, dB});
  return success();
}

LogicalResult
NormedLinearOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  // The input's adjoint is one rms_norm adjoint of the normalised rows'
  // adjoint sum_i dy_i W_i. Its rows' sums of that times x-hat are
  // sum_i dy_i . y_i, dots over the projections' few outputs (drc.row_dot,
  // rms_norm_grad's `dot`), so the adjoint is elementwise over the row,
  // with no pass of its own. Each weight's adjoint reads x again rather
  // than a saved rms_norm(x). The sums run from the last result to the
  // first, as autodiff sums separate projections' adjoints: a result used
  // later in the forward pass (HC's write coefficients, used after the
  // sublayer) gets its adjoint earlier in the backward one, and those are
  // added where they arise.
  Location loc = getLoc();
  Value x = getInput(), dNormed, dot;
  auto sum = [&](Value total, Value term) {
    return total ? AddOp::create(b, loc, total, term).getResult() : term;
  };
  SmallVector<Value> weightGrads(getWeights().size());
  for (int64_t i = getWeights().size() - 1; i >= 0; --i) {
    Value w = getWeights()[i], y = getResults()[i], dy = resultGrads[i];
    if (!dy)
      continue;
    auto outputs = cast<RankedTensorType>(y.getType());
    SmallVector<int64_t> rows(outputs.getShape());
    rows.back() = 1;
    dot = sum(dot, RowDotOp::create(b, loc, outputs.clone(rows), dy, y));
    dNormed = sum(dNormed, MatmulOp::create(b, loc, x.getType(), dy, w));
    weightGrads[i] = NormedLinearWeightGradOp::create(
        b, loc, w.getType(), x, dy, getEpsAttr(), /*prescaled=*/nullptr);
  }
  operandGrads.push_back(dNormed ? RMSNormGradOp::create(b, loc, x.getType(), x,
                                                         Value(), dNormed, dot,
                                                         getEpsAttr())
                                       .getResult()
                                 : Value());
  operandGrads.append(weightGrads);
  return success();
}

LogicalResult RopeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // A rotation's adjoint is the rotation by the negated angle.
  auto adjoint =
      RopeOp::create(b, getLoc(), getType(), resultGrads[0], getNHeadAttr(),
                     getSeqLenAttr(), getThetaAttr(), UnitAttr());
  adjoint.setInverse(!getInverse());
  operandGrads.push_back(adjoint);
  return success();
}

LogicalResult
CausalAttentionOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dOut = resultGrads[0];
  if (!dOut) { // only the log-sum-exp is used
    auto type = cast<RankedTensorType>(getResult().getType());
    dOut = arith::ConstantOp::create(
        b, getLoc(),
        DenseElementsAttr::get(type,
                               b.getFloatAttr(type.getElementType(), 0.0)));
  }
  auto grad = CausalAttentionGradOp::create(
      b, getLoc(),
      TypeRange{getQ().getType(), getK().getType(), getV().getType()}, getQ(),
      getK(), getV(), getResult(), getLse(), dOut, resultGrads[1],
      getNHeadAttr(), getSeqLenAttr());
  operandGrads.assign(grad.getResults().begin(), grad.getResults().end());
  return success();
}

LogicalResult
DepthAttentionOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  auto grad = DepthAttentionGradOp::create(
      b, getLoc(),
      TypeRange{getQ().getType(), getKeys().getType(), getValues().getType(),
                getOut().getType(), getLse().getType()},
      getQ(), getKeys(), getValues(), getOut(), getLse(), getResult(),
      resultGrads[0], getNHeadAttr());
  operandGrads.assign(grad.getResults().begin(), grad.getResults().end());
  return success();
}

LogicalResult SiluMulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto grad = SiluMulGradOp::create(b, getLoc(), getType(), getType(),
                                    getGate(), getUp(), resultGrads[0]);
  operandGrads.assign({grad.getGateGrad(), grad.getUpGrad()});
  return success();
}

LogicalResult MixOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  // dX = C dY (the mix by the transposed coefficients); dC from x and dY.
  Value dy = resultGrads[0];
  auto dx = MixOp::create(b, getLoc(), getInput().getType(), dy, getCoef(),
                          UnitAttr());
  dx.setTransposeCoef(!getTransposeCoef());
  auto dc = MixCoefGradOp::create(b, getLoc(), getCoef().getType(), getInput(),
                                  dy, getTransposeCoefAttr());
  operandGrads.assign({dx, dc});
  return success();
}

LogicalResult ViewOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ViewOp::create(b, getLoc(), getInput().getType(),
                                        resultGrads[0], ValueRange()));
  return success();
}

LogicalResult AppendOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  int64_t offset = 0;
  for (Value input : getInputs()) {
    operandGrads.push_back(RowsOp::create(b, getLoc(), input.getType(),
                                          resultGrads[0],
                                          b.getI64IntegerAttr(offset)));
    offset += cast<RankedTensorType>(input.getType()).getDimSize(1);
  }
  return success();
}

LogicalResult RowsOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RowsGradOp::create(b, getLoc(), getInput().getType(),
                                            resultGrads[0], getOffsetAttr()));
  return success();
}

LogicalResult SquashOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SquashGradOp::create(
      b, getLoc(), getType(), getInput(), resultGrads[0], getKindAttr(),
      getScaleAttr(), getTemperatureAttr()));
  return success();
}

/// `grad` summed down to the shape of `like` (the identity if equal).
static Value sumLeadingTo(OpBuilder &b, Location loc, Value grad, Value like) {
  if (grad.getType() == like.getType())
    return grad;
  return SumLeadingOp::create(b, loc, like.getType(), grad);
}

LogicalResult ScaleOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      ScaleOp::create(b, getLoc(), getType(), dy, getScale(), getFactorAttr()));
  if (Value s = getScale()) {
    Value product = ScaleOp::create(b, getLoc(), getType(), dy, getInput(),
                                    getFactorAttr());
    operandGrads.push_back(sumLeadingTo(b, getLoc(), product, s));
  }
  return success();
}

LogicalResult ShiftOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(
      {resultGrads[0], sumLeadingTo(b, getLoc(), resultGrads[0], getShift())});
  return success();
}

LogicalResult SoftmaxOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxGradOp::create(b, getLoc(), getType(),
                                               getResult(), resultGrads[0],
                                               Value(), getAxisAttr()));
  return success();
}

/// Centring is an orthogonal projection, so it is its own adjoint.
LogicalResult CenterOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CenterOp::create(b, getLoc(), resultGrads[0]));
  return success();
}

LogicalResult NormalizeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(NormalizeGradOp::create(b, getLoc(), getType(),
                                                 getInput(), resultGrads[0],
                                                 getAxisAttr(), getEpsAttr()));
  return success();
}
