//===- LowerToLinalg.cpp - Kernel-level drc ops -> linalg on tensors -----===//
//
// Each kernel-level op becomes a few linalg.generic ops (plus an scf.for for
// the embedding scatter-add) on tensors of its own element type, so the same
// lowering serves f32 training and f64 gradient checks. Attention works on
// [batch, seq, head, head_dim] views of the [tokens, width] operands.
//
//===----------------------------------------------------------------------===//
#include "passes/KernelRole.h"
#include "passes/Passes.h"
#include "passes/RowSlice.h"
#include "passes/Stacking.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

#include <cmath>

namespace mlir::drc {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;
using utils::IteratorType;

namespace {

constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// Scalar arithmetic in one float element type, for generic bodies.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type type;

  Value c(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value max(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, loc, x); }
  Value sigmoid(Value x) { return div(c(1.0), add(c(1.0), exp(neg(x)))); }
  /// 1 - 2 / (exp(2x) + 1): saturates to +-1 without overflow trouble.
  Value tanh(Value x) {
    return sub(c(1.0), div(c(2.0), add(exp(add(x, x)), c(1.0))));
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value index(unsigned dim) { return linalg::IndexOp::create(b, loc, dim); }
  /// True where index `i` <= index `j` (the causal mask s <= t).
  Value indexLE(Value i, Value j) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, i, j);
  }
  Value fromIndex(Value i) {
    Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
    return arith::SIToFPOp::create(b, loc, type, asInt);
  }
};

using BodyFn = function_ref<void(Scalar &, ValueRange)>;

/// Builds kernels in one function at one insertion point.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  Type element;
  /// Row sums of squares already built, by input: the weight gradients of
  /// several normed linears of one state (HC's coefficient projections)
  /// share one pass over it instead of each reading it again.
  llvm::DenseMap<Value, Value> *sumSquaresOf = nullptr;

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  }
  Value filled(ArrayRef<int64_t> shape, double value) {
    Value empty = tensor::EmptyOp::create(b, loc, shape, element);
    Value v = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, value));
    return linalg::FillOp::create(b, loc, v, empty).getResult(0);
  }
  Value empty(ArrayRef<int64_t> shape) {
    return tensor::EmptyOp::create(b, loc, shape, element);
  }
  AffineMap map(unsigned numDims, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(numDims, 0, exprs, b.getContext());
  }
  /// linalg.generic over `inits`; `body` yields one value per init.
  SmallVector<Value> generic(ValueRange inputs, ValueRange inits,
                             ArrayRef<AffineMap> maps,
                             ArrayRef<IteratorType> iterators, BodyFn body) {
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange(inits), inputs, inits, maps, iterators,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Scalar s{nb, nl, element};
          body(s, args);
        });
    return SmallVector<Value>(op.getResults());
  }
  Value generic1(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                 ArrayRef<IteratorType> iterators, BodyFn body) {
    return generic(inputs, init, maps, iterators, body).front();
  }
  void yield(Scalar &s, ValueRange values) {
    linalg::YieldOp::create(s.b, s.loc, values);
  }

  /// [N, D] -> [B, T, H, dh].
  Value heads(Value x, int64_t seqLen, int64_t nHead) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t n = type.getDimSize(0), d = type.getDimSize(1);
    return tensor::ExpandShapeOp::create(
        b, loc, tensor({n / seqLen, seqLen, nHead, d / nHead}), x,
        ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
  }
  /// [B, T, H, dh] -> [N, D].
  Value tokens(Value x) {
    auto s = cast<RankedTensorType>(x.getType()).getShape();
    return tensor::CollapseShapeOp::create(
        b, loc, tensor({s[0] * s[1], s[2] * s[3]}), x,
        ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
  }

  /// Row-wise sum of squares of x over its last dimension; one built
  /// earlier in the same block is reused.
  Value rowSumSquares(Value x) {
    if (sumSquaresOf)
      if (Value known = sumSquaresOf->lookup(x);
          known && known.getParentBlock() == b.getInsertionBlock())
        return known;
    Value ss = buildRowSumSquares(x);
    if (sumSquaresOf)
      (*sumSquaresOf)[x] = ss;
    return ss;
  }
  Value buildRowSumSquares(Value x) {
    auto shape = cast<RankedTensorType>(x.getType()).getShape();
    unsigned rank = shape.size();
    SmallVector<unsigned> all, rows;
    for (unsigned i = 0; i < rank; ++i) {
      all.push_back(i);
      if (i + 1 < rank)
        rows.push_back(i);
    }
    SmallVector<IteratorType> its(rank - 1, kPar);
    its.push_back(kRed);
    return generic1(x, filled(shape.drop_back(), 0.0),
                    {map(rank, all), map(rank, rows)}, its,
                    [&](Scalar &s, ValueRange a) {
                      yield(s, s.add(a[1], s.mul(a[0], a[0])));
                    });
  }
};

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// 1/sqrt(mean(x^2) + eps) of a row of `width` values from its sum of squares.
Value invRms(Scalar &s, Value sumSquares, double width, double eps) {
  return s.rsqrt(s.add(s.div(sumSquares, s.c(width)), s.c(eps)));
}

struct RowMaps {
  SmallVector<AffineMap> x, row, lastDim;
};

/// Identity, drop-last-dim and last-dim-only maps of a rank-r operand.
void rowMaps(KernelBuilder &k, unsigned rank, AffineMap &all, AffineMap &row,
             AffineMap &last) {
  SmallVector<unsigned> a, r;
  for (unsigned i = 0; i < rank; ++i) {
    a.push_back(i);
    if (i + 1 < rank)
      r.push_back(i);
  }
  all = k.map(rank, a);
  row = k.map(rank, r);
  last = k.map(rank, {rank - 1});
}

/// The map from a rank-r operand's loops, `axis` innermost and the others
/// in order, to a reduction along `axis` kept at rank r, the axis as 1.
AffineMap keptAxisMap(KernelBuilder &k, unsigned rank, unsigned axis) {
  SmallVector<AffineExpr> at;
  for (unsigned d = 0; d < rank; ++d)
    at.push_back(d == axis ? k.b.getAffineConstantExpr(0)
                           : k.b.getAffineDimExpr(d < axis ? d : d - 1));
  return AffineMap::get(rank, 0, at, k.b.getContext());
}

/// The map from a rank-r operand's loops to a row reduction's result kept
/// as [..., 1]: the row's one sum.
AffineMap keptRowMap(KernelBuilder &k, unsigned rank) {
  return keptAxisMap(k, rank, rank - 1);
}

Value lowerRMSNorm(KernelBuilder &k, RMSNormOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  unsigned rank = type.getRank();
  double width = type.getShape().back(), eps = op.getEps().convertToDouble();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  Value ss = k.rowSumSquares(op.getInput());
  SmallVector<IteratorType> its(rank, kPar);
  if (Value gain = op.getGain())
    return k.generic1({op.getInput(), ss, gain}, k.empty(type.getShape()),
                      {all, row, last, all}, its, [&](Scalar &s, ValueRange a) {
                        Value r = invRms(s, a[1], width, eps);
                        k.yield(s, s.mul(s.mul(a[0], r), a[2]));
                      });
  return k.generic1({op.getInput(), ss}, k.empty(type.getShape()),
                    {all, row, all}, its, [&](Scalar &s, ValueRange a) {
                      Value r = invRms(s, a[1], width, eps);
                      k.yield(s, s.mul(a[0], r));
                    });
}

Value lowerCenter(KernelBuilder &k, CenterOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  unsigned rank = type.getRank();
  double width = type.getShape().back();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  SmallVector<IteratorType> sumIts(rank - 1, kPar);
  sumIts.push_back(kRed);
  Value sum = k.generic1(
      op.getInput(), k.filled(type.getShape().drop_back(), 0), {all, row},
      sumIts, [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[1], a[0])); });
  return k.generic1({op.getInput(), sum}, k.empty(type.getShape()),
                    {all, row, all}, SmallVector<IteratorType>(rank, kPar),
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.sub(a[0], s.div(a[1], s.c(width))));
                    });
}

Value lowerRMSNormGrad(KernelBuilder &k, RMSNormGradOp op) {
  // dx = r (g dy - xhat mean(g dy xhat)), r = rsqrt(mean x^2 + eps); the
  // corrections x r^2 mean(g dy x) = x r mean(g dy xhat), from the rows'
  // sums of g dy x (computed here) or of g dy xhat (the op's `dot`).
  auto type = cast<RankedTensorType>(op.getType());
  unsigned rank = type.getRank();
  double width = type.getShape().back(), eps = op.getEps().convertToDouble();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  Value x = op.getInput(), dy = op.getResultGrad(), gain = op.getGain();
  Value ss = k.rowSumSquares(x), dot = op.getDot();
  bool normedDot = static_cast<bool>(dot);
  AffineMap dotMap = normedDot ? keptRowMap(k, rank) : row;
  if (!normedDot) {
    SmallVector<IteratorType> redIts(rank - 1, kPar);
    redIts.push_back(kRed);
    SmallVector<Value> dotInputs{x, dy};
    SmallVector<AffineMap> dotMaps{all, all};
    if (gain) {
      dotInputs.push_back(gain);
      dotMaps.push_back(last);
    }
    dotMaps.push_back(row);
    dot = k.generic1(dotInputs, k.filled(type.getShape().drop_back(), 0.0),
                     dotMaps, redIts, [&](Scalar &s, ValueRange a) {
                       Value gdy = gain ? s.mul(a[1], a[2]) : a[1];
                       k.yield(s, s.add(a.back(), s.mul(gdy, a[0])));
                     });
  }
  SmallVector<Value> inputs{x, dy, ss, dot};
  SmallVector<AffineMap> maps{all, all, row, dotMap};
  if (gain) {
    inputs.push_back(gain);
    maps.push_back(last);
  }
  maps.push_back(all);
  return k.generic1(
      inputs, k.empty(type.getShape()), maps,
      SmallVector<IteratorType>(rank, kPar), [&](Scalar &s, ValueRange a) {
        Value r = invRms(s, a[2], width, eps);
        Value gdy = gain ? s.mul(a[1], a[4]) : a[1];
        Value perX = normedDot ? r : s.mul(r, r);
        Value corr = s.mul(s.mul(a[0], perX), s.div(a[3], s.c(width)));
        k.yield(s, s.mul(r, s.sub(gdy, corr)));
      });
}

/// Loops (..., k), k reduced into the result's last axis of 1.
Value lowerRowDot(KernelBuilder &k, RowDotOp op) {
  auto type = cast<RankedTensorType>(op.getLhs().getType());
  unsigned rank = type.getRank();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  SmallVector<IteratorType> its(rank - 1, kPar);
  its.push_back(kRed);
  return k.generic1(
      {op.getLhs(), op.getRhs()},
      k.filled(cast<RankedTensorType>(op.getType()).getShape(), 0.0),
      {all, all, keptRowMap(k, rank)}, its, [&](Scalar &s, ValueRange a) {
        k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
      });
}

Value lowerRMSNormGainGrad(KernelBuilder &k, RMSNormGainGradOp op) {
  // dg_j = sum over rows of dy x r.
  auto type = cast<RankedTensorType>(op.getInput().getType());
  unsigned rank = type.getRank();
  double width = type.getShape().back(), eps = op.getEps().convertToDouble();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  Value ss = k.rowSumSquares(op.getInput());
  SmallVector<IteratorType> its(rank - 1, kRed);
  its.push_back(kPar);
  return k.generic1({op.getInput(), op.getResultGrad(), ss},
                    k.filled({type.getShape().back()}, 0.0),
                    {all, all, row, last}, its, [&](Scalar &s, ValueRange a) {
                      Value r = invRms(s, a[2], width, eps);
                      k.yield(s, s.add(a[3], s.mul(s.mul(a[0], a[1]), r)));
                    });
}

//===----------------------------------------------------------------------===//
// Dense and elementwise
//===----------------------------------------------------------------------===//

/// `x` as the matrix of its rows: leading dimensions collapsed.
Value rowsMatrix(KernelBuilder &k, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() == 2)
    return x;
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    leading.push_back(d);
  int64_t rows = type.getNumElements() / type.getShape().back();
  return tensor::CollapseShapeOp::create(
      k.b, k.loc, k.tensor({rows, type.getShape().back()}), x,
      ArrayRef<ReassociationIndices>{leading, {type.getRank() - 1}});
}

/// Whether `x`, of rank > 2, may be some rows of each token's set in a
/// larger one (a depth bank in its store, drc-store-banks): a strided view
/// whose rows cannot be collapsed into a matrix without a copy. Inside a
/// fused region, the region's input decides.
bool isPartialRowSlice(Value x) {
  if (auto arg = dyn_cast<BlockArgument>(x))
    if (auto fused = dyn_cast<FusedOp>(arg.getOwner()->getParentOp()))
      x = fused.getInputs()[arg.getArgNumber()];
  auto slice = x.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return false;
  RankedTensorType type = slice.getResultType();
  return type.getRank() > 2 && type.getDimSize(1) > 1 &&
         type.getDimSize(1) < slice.getSourceType().getDimSize(1);
}

/// The matmul of a set by a matrix, or the transposed sets' product, as a
/// contraction over the sets' own dimensions: no collapsed view, so a
/// strided set is read in place. x [rows..., c] W (W [c, j], or [j, c]
/// transposed) -> [rows..., j]; or with `transposeLhs`, the sum over rows of
/// a[rows..., m]^T b[rows..., j] -> [m, j].
Value setContraction(KernelBuilder &k, Value lhs, Value rhs, bool transposeLhs,
                     bool transposeRhs, RankedTensorType type) {
  unsigned rank = cast<RankedTensorType>(lhs.getType()).getRank(),
           rows = rank - 1, loops = rank + 1;
  SmallVector<unsigned> rowDims;
  for (unsigned d = 0; d < rows; ++d)
    rowDims.push_back(d);
  auto with = [&](std::initializer_list<unsigned> last) {
    SmallVector<unsigned> dims(rowDims);
    dims.append(last);
    return k.map(loops, dims);
  };
  SmallVector<AffineMap> maps;
  SmallVector<IteratorType> iterators;
  if (transposeLhs) { // loops: rows, m, j
    maps = {with({rows}), with({rows + 1}), k.map(loops, {rows, rows + 1})};
    iterators.assign(rows, kRed);
    iterators.append({kPar, kPar});
  } else { // loops: rows, j, c
    maps = {with({rows + 1}),
            transposeRhs ? k.map(loops, {rows, rows + 1})
                         : k.map(loops, {rows + 1, rows}),
            with({rows})};
    iterators.assign(rank, kPar);
    iterators.push_back(kRed);
  }
  return k.generic1({lhs, rhs}, k.filled(type.getShape(), 0.0), maps, iterators,
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                    });
}

/// op(lhs) op(rhs) as `type`, op transposing where the flag is set.
Value matmul(KernelBuilder &k, Value lhsValue, Value rhsValue,
             bool transposeLhs, bool transposeRhs, RankedTensorType type) {
  auto rank = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  bool lhsStrided = rank(lhsValue) > 2 && isPartialRowSlice(lhsValue),
       rhsStrided = rank(rhsValue) > 2 && isPartialRowSlice(rhsValue);
  if ((lhsStrided || rhsStrided) &&
      (transposeLhs ? rank(rhsValue) == rank(lhsValue) && !transposeRhs
                    : rank(rhsValue) == 2 && !rhsStrided))
    return setContraction(k, lhsValue, rhsValue, transposeLhs, transposeRhs,
                          type);
  // Operands of rank > 2 are matrices of their rows (collapsed views).
  // Transposed operands are read in place through the indexing maps: the CPU
  // register tile loads a contiguous row of a transposed A per k step, and
  // the CPU schedule packs B into panels from either layout.
  Value lhs = rowsMatrix(k, lhsValue), rhs = rowsMatrix(k, rhsValue);
  auto lhsShape = cast<RankedTensorType>(lhs.getType()).getShape();
  auto rhsShape = cast<RankedTensorType>(rhs.getType()).getShape();
  SmallVector<int64_t> shape = {transposeLhs ? lhsShape[1] : lhsShape[0],
                                transposeRhs ? rhsShape[0] : rhsShape[1]};
  SmallVector<NamedAttribute> attributes;
  if (transposeLhs || transposeRhs) {
    SmallVector<AffineMap> maps =
        linalg::MatmulOp::getDefaultIndexingMaps(k.b.getContext());
    if (transposeLhs)
      maps[0] = k.map(3, {2, 0});
    if (transposeRhs)
      maps[1] = k.map(3, {1, 2});
    attributes.push_back(
        k.b.getNamedAttr("indexing_maps", k.b.getAffineMapArrayAttr(maps)));
  }
  Value product =
      linalg::MatmulOp::create(k.b, k.loc, TypeRange{k.tensor(shape)},
                               ValueRange{lhs, rhs},
                               ValueRange{k.filled(shape, 0.0)}, attributes)
          .getResult(0);
  if (type.getRank() == 2)
    return product;
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    leading.push_back(d);
  return tensor::ExpandShapeOp::create(
      k.b, k.loc, type, product,
      ArrayRef<ReassociationIndices>{leading, {type.getRank() - 1}});
}

Value lowerMatmul(KernelBuilder &k, MatmulOp op) {
  return matmul(k, op.getLhs(), op.getRhs(), op.getTransposeLhs(),
                op.getTransposeRhs(), cast<RankedTensorType>(op.getType()));
}

/// `rows` [..., c] times each row's 1/rms of x, from x's row sums of squares
/// `sumSquares` [...] and width.
Value scaleByInvRms(KernelBuilder &k, Value rows, Value sumSquares,
                    double width, double eps) {
  auto type = cast<RankedTensorType>(rows.getType());
  AffineMap all, row, last;
  rowMaps(k, type.getRank(), all, row, last);
  return k.generic1({rows, sumSquares}, k.empty(type.getShape()),
                    {all, row, all},
                    SmallVector<IteratorType>(type.getRank(), kPar),
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.mul(a[0], invRms(s, a[1], width, eps)));
                    });
}

/// (x W_i^T) / rms(x): each projection, then its rows scaled; x's row norms
/// computed once.
SmallVector<Value> lowerNormedLinear(KernelBuilder &k, NormedLinearOp op) {
  Value x = op.getInput();
  double width = cast<RankedTensorType>(x.getType()).getShape().back();
  Value ss = k.rowSumSquares(x);
  SmallVector<Value> results;
  for (auto [w, y] : llvm::zip(op.getWeights(), op.getResults())) {
    Value product =
        matmul(k, x, w, false, true, cast<RankedTensorType>(y.getType()));
    results.push_back(
        scaleByInvRms(k, product, ss, width, op.getEps().convertToDouble()));
  }
  return results;
}

/// dy / rms(x), row by row (x's rows as wide as dy's are many: same leading
/// shape).
Value scaleRowsByInvRms(KernelBuilder &k, Value dy, Value x, double eps) {
  return scaleByInvRms(k, dy, k.rowSumSquares(x),
                       cast<RankedTensorType>(x.getType()).getShape().back(),
                       eps);
}

/// sum over rows of (dy / rms(x))^T x -> [dy's width, x's width]: the small
/// dy scaled (unless `prescaled`: already dy / rms(x)), then one matmul over
/// all rows (threaded like any parameter gradient).
Value normedLinearWeightGrad(KernelBuilder &k, Value x, Value dy, double eps,
                             bool prescaled) {
  int64_t width = cast<RankedTensorType>(x.getType()).getShape().back();
  Value scaled = prescaled ? dy : scaleRowsByInvRms(k, dy, x, eps);
  return matmul(
      k, scaled, x, true, false,
      k.tensor(
          {cast<RankedTensorType>(dy.getType()).getShape().back(), width}));
}

Value lowerNormedLinearWeightGrad(KernelBuilder &k,
                                  NormedLinearWeightGradOp op) {
  return normedLinearWeightGrad(k, op.getInput(), op.getResultGrad(),
                                op.getEps().convertToDouble(),
                                op.getPrescaled());
}

Value lowerScaleByInvRMS(KernelBuilder &k, ScaleByInvRMSOp op) {
  return scaleRowsByInvRms(k, op.getResultGrad(), op.getInput(),
                           op.getEps().convertToDouble());
}

/// The weight gradients of the normed linears of one input x (HC's three
/// coefficient projections of a state, mHC's φ^pre, φ^post and φ^res) as one
/// product: their result gradients stacked along the last dimension, scaled
/// by 1/rms(x) once, and one matmul over all rows, so x (the largest
/// operand, [tokens, n, C]) is read once rather than once per weight. Built
/// where the last of them was (every result gradient is defined by then);
/// an op with a reader before that point keeps its own product.
void mergeWeightGrads(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<SmallVector<NormedLinearWeightGradOp>> groups;
  func.walk([&](Block *block) {
    llvm::MapVector<std::pair<Value, Attribute>,
                    SmallVector<NormedLinearWeightGradOp>>
        byInput;
    // A prescaled gradient's product reads no norms, so its eps is moot.
    for (auto op : block->getOps<NormedLinearWeightGradOp>())
      byInput[{op.getInput(), op.getPrescaled()
                                  ? Attribute(UnitAttr::get(op.getContext()))
                                  : op.getEpsAttr()}]
          .push_back(op);
    for (auto &[key, ops] : byInput) {
      Operation *last = ops.back();
      llvm::erase_if(ops, [&](NormedLinearWeightGradOp op) {
        return llvm::any_of(op->getUsers(), [&](Operation *user) {
          Operation *at = block->findAncestorOpInBlock(*user);
          return !at || at->isBeforeInBlock(last);
        });
      });
      if (ops.size() > 1)
        groups.push_back(ops);
    }
  });
  for (ArrayRef<NormedLinearWeightGradOp> ops : groups) {
    NormedLinearWeightGradOp last = ops.back();
    rewriter.setInsertionPoint(last);
    KernelBuilder k{rewriter, last.getLoc(),
                    getElementTypeOrSelf(last.getType())};
    SmallVector<Value> grads;
    for (NormedLinearWeightGradOp op : ops)
      grads.push_back(op.getResultGrad());
    SmallVector<int64_t> starts;
    unsigned lastDim =
        cast<RankedTensorType>(grads.front().getType()).getRank() - 1;
    Value all = normedLinearWeightGrad(
        k, last.getInput(), stackAlong(rewriter, k.loc, grads, lastDim, starts),
        last.getEps().convertToDouble(), last.getPrescaled());
    for (auto [op, start] : llvm::zip(ops, starts)) {
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      rewriter.replaceOp(op, sliceAlong(rewriter, k.loc, all, type, 0, start));
    }
  }
}

SmallVector<unsigned> identityDims(unsigned rank) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i < rank; ++i)
    dims.push_back(i);
  return dims;
}

SmallVector<AffineMap> identityMaps(KernelBuilder &k, unsigned rank,
                                    unsigned count) {
  return SmallVector<AffineMap>(count, k.map(rank, identityDims(rank)));
}

Value lowerAdd(KernelBuilder &k, AddOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  return k.generic1(
      {op.getLhs(), op.getRhs()}, k.empty(type.getShape()),
      identityMaps(k, type.getRank(), 3),
      SmallVector<IteratorType>(type.getRank(), kPar),
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[0], a[1])); });
}

Value lowerSiluMul(KernelBuilder &k, SiluMulOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  return k.generic1({op.getGate(), op.getUp()}, k.empty(type.getShape()),
                    identityMaps(k, type.getRank(), 3),
                    SmallVector<IteratorType>(type.getRank(), kPar),
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.mul(s.mul(a[0], s.sigmoid(a[0])), a[1]));
                    });
}

SmallVector<Value> lowerSiluMulGrad(KernelBuilder &k, SiluMulGradOp op) {
  // d/da [a sig(a)] = sig(a) (1 + a (1 - sig(a))).
  auto type = cast<RankedTensorType>(op.getGate().getType());
  return k.generic(
      {op.getGate(), op.getUp(), op.getResultGrad()},
      {k.empty(type.getShape()), k.empty(type.getShape())},
      identityMaps(k, type.getRank(), 5),
      SmallVector<IteratorType>(type.getRank(), kPar),
      [&](Scalar &s, ValueRange a) {
        Value sig = s.sigmoid(a[0]);
        Value dsilu =
            s.mul(sig, s.add(s.c(1.0), s.mul(a[0], s.sub(s.c(1.0), sig))));
        k.yield(s, {s.mul(s.mul(a[2], a[1]), dsilu),
                    s.mul(a[2], s.mul(a[0], sig))});
      });
}

//===----------------------------------------------------------------------===//
// Token-local sets
//===----------------------------------------------------------------------===//

/// Loops (t, j, w, i) over the result [t, j, w] and the reduced input row i.
Value lowerMix(KernelBuilder &k, MixOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  // Coefficient indices in loop dims: i = 3, j = 1.
  SmallVector<unsigned> c = op.getTransposeCoef() ? SmallVector<unsigned>{1, 3}
                                                  : SmallVector<unsigned>{3, 1};
  if (op.isPerToken())
    c.insert(c.begin(), 0);
  return k.generic1({op.getInput(), op.getCoef()},
                    k.filled(type.getShape(), 0.0),
                    {k.map(4, {0, 3, 2}), k.map(4, c), k.map(4, {0, 1, 2})},
                    {kPar, kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                    });
}

/// Per token: loops (t, i, j, w), w reduced. Shared: loops (i, j, t, w),
/// t and w reduced, the parallel loops outermost.
Value lowerMixCoefGrad(KernelBuilder &k, MixCoefGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  bool tr = op.getTransposeCoef();
  auto body = [&](Scalar &s, ValueRange a) {
    k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
  };
  Value init = k.filled(type.getShape(), 0.0);
  if (type.getRank() == 3)
    return k.generic1({op.getInput(), op.getResultGrad()}, init,
                      {k.map(4, {0, 1, 3}), k.map(4, {0, 2, 3}),
                       tr ? k.map(4, {0, 2, 1}) : k.map(4, {0, 1, 2})},
                      {kPar, kPar, kPar, kRed}, body);
  return k.generic1({op.getInput(), op.getResultGrad()}, init,
                    {k.map(4, {2, 0, 3}), k.map(4, {2, 1, 3}),
                     tr ? k.map(4, {1, 0}) : k.map(4, {0, 1})},
                    {kPar, kPar, kRed, kRed}, body);
}

/// The map from x's loops to the operand that is broadcast over x's
/// leading dimensions (its shape a suffix of x's).
AffineMap suffixMap(KernelBuilder &k, Value x, Value operand) {
  unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
  unsigned suffix = cast<RankedTensorType>(operand.getType()).getRank();
  SmallVector<unsigned> dims;
  for (unsigned d = rank - suffix; d < rank; ++d)
    dims.push_back(d);
  return k.map(rank, dims);
}

Value lowerScale(KernelBuilder &k, ScaleOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  double factor = op.getFactor().convertToDouble();
  SmallVector<Value> inputs = {op.getInput()};
  SmallVector<AffineMap> maps = identityMaps(k, type.getRank(), 1);
  if (Value s = op.getScale()) {
    inputs.push_back(s);
    maps.push_back(suffixMap(k, op.getInput(), s));
  }
  maps.push_back(maps.front());
  return k.generic1(inputs, k.empty(type.getShape()), maps,
                    SmallVector<IteratorType>(type.getRank(), kPar),
                    [&](Scalar &s, ValueRange a) {
                      Value y = s.mul(a[0], s.c(factor));
                      k.yield(s, inputs.size() == 2 ? s.mul(y, a[1]) : y);
                    });
}

Value lowerShift(KernelBuilder &k, ShiftOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  AffineMap all = identityMaps(k, type.getRank(), 1).front();
  return k.generic1(
      {op.getInput(), op.getShift()}, k.empty(type.getShape()),
      {all, suffixMap(k, op.getInput(), op.getShift()), all},
      SmallVector<IteratorType>(type.getRank(), kPar),
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[0], a[1])); });
}

/// Sums over the leading dimensions. Inside a fused region's tile (a few
/// tokens) the summed loops are innermost, which drc-cpu-tile vectorises
/// with the tile; a step's sum of per-tile partials ([tiles, n, C], the
/// residual parameters' gradients) runs them outermost instead, so each
/// step adds a contiguous row onto the result, where summing innermost
/// would read the input a whole row apart per element.
Value lowerSumLeading(KernelBuilder &k, SumLeadingOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getType());
  unsigned rank = in.getRank(), kept = out.getRank(), summed = rank - kept;
  bool summedOutermost = !op->getParentOfType<FusedOp>();
  SmallVector<unsigned> inDims, outDims;
  SmallVector<IteratorType> its;
  if (summedOutermost) {
    for (unsigned d = 0; d < rank; ++d)
      inDims.push_back(d);
    for (unsigned d = summed; d < rank; ++d)
      outDims.push_back(d);
    its.append(summed, kRed);
    its.append(kept, kPar);
  } else {
    for (unsigned d = 0; d < summed; ++d)
      inDims.push_back(kept + d);
    for (unsigned d = 0; d < kept; ++d) {
      inDims.push_back(d);
      outDims.push_back(d);
    }
    its.append(kept, kPar);
    its.append(summed, kRed);
  }
  return k.generic1(
      op.getInput(), k.filled(out.getShape(), 0.0),
      {k.map(rank, inDims), k.map(rank, outDims)}, its,
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[1], a[0])); });
}

/// Loops over a tensor with `axis` innermost (the reduced loop), and the
/// maps from them to the tensor and to the tensor without `axis`.
struct AxisLoops {
  SmallVector<AffineMap> full, reduced;
  /// The reduced result kept at the operand's rank, the axis as 1.
  AffineMap kept;
  SmallVector<IteratorType> iterators;
  SmallVector<int64_t> reducedShape;
  AxisLoops(KernelBuilder &k, RankedTensorType type, int64_t axis) {
    unsigned rank = type.getRank();
    SmallVector<unsigned> toFull(rank), toReduced;
    for (unsigned d = 0, loop = 0; d < rank; ++d) {
      if (static_cast<int64_t>(d) == axis)
        continue;
      toFull[d] = loop;
      toReduced.push_back(loop++);
      reducedShape.push_back(type.getDimSize(d));
    }
    toFull[axis] = rank - 1;
    full = {k.map(rank, toFull)};
    reduced = {k.map(rank, toReduced)};
    kept = keptAxisMap(k, rank, axis);
    iterators.assign(rank - 1, kPar);
    iterators.push_back(kRed);
  }
};

/// Max, then sum of exp(x - max) along the axis, then the quotient.
Value lowerSoftmax(KernelBuilder &k, SoftmaxOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  AxisLoops l(k, type, op.getAxis());
  Value x = op.getInput();
  Value top = k.generic1(
      x, k.filled(l.reducedShape, -std::numeric_limits<double>::infinity()),
      {l.full[0], l.reduced[0]}, l.iterators,
      [&](Scalar &s, ValueRange a) { k.yield(s, s.max(a[1], a[0])); });
  Value sum = k.generic1({x, top}, k.filled(l.reducedShape, 0.0),
                         {l.full[0], l.reduced[0], l.reduced[0]}, l.iterators,
                         [&](Scalar &s, ValueRange a) {
                           k.yield(s, s.add(a[2], s.exp(s.sub(a[0], a[1]))));
                         });
  SmallVector<IteratorType> all(type.getRank(), kPar);
  return k.generic1({x, top, sum}, k.empty(type.getShape()),
                    {l.full[0], l.reduced[0], l.reduced[0], l.full[0]}, all,
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.div(s.exp(s.sub(a[0], a[1])), a[2]));
                    });
}

/// Sum of x along the axis, plus eps.
Value axisSum(KernelBuilder &k, AxisLoops &l, Value x, double eps) {
  return k.generic1(
      x, k.filled(l.reducedShape, eps), {l.full[0], l.reduced[0]}, l.iterators,
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[1], a[0])); });
}

/// Along an axis this short, normalize and its adjoint sum inline: each
/// element reads the axis's elements through maps with a constant index, so
/// the op is one elementwise kernel with no temporaries. A per-token
/// Sinkhorn step on 4 x 4 matrices was a fill, a reduction and a quotient,
/// each its own loop nest over 16 elements per token.
constexpr int64_t kInlineAxis = 8;

/// One map per index i along `axis` of `type`: the loops, with i at `axis`.
SmallVector<AffineMap> axisElementMaps(KernelBuilder &k, RankedTensorType type,
                                       int64_t axis) {
  SmallVector<AffineMap> maps;
  for (int64_t i = 0; i < type.getDimSize(axis); ++i) {
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < type.getRank(); ++d)
      exprs.push_back(d == axis ? k.b.getAffineConstantExpr(i)
                                : k.b.getAffineDimExpr(d));
    maps.push_back(AffineMap::get(type.getRank(), 0, exprs, k.b.getContext()));
  }
  return maps;
}

/// eps + x_0 + x_1 + ... over the block arguments `xs`, in the order the
/// reduction loop adds them.
Value inlineSum(Scalar &s, ValueRange xs, double eps) {
  Value sum = s.c(eps);
  for (Value x : xs)
    sum = s.add(sum, x);
  return sum;
}

Value lowerNormalize(KernelBuilder &k, NormalizeOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Value x = op.getInput();
  double eps = op.getEps().convertToDouble();
  SmallVector<IteratorType> all(type.getRank(), kPar);
  if (int64_t n = type.getDimSize(op.getAxis()); n <= kInlineAxis) {
    SmallVector<AffineMap> maps = axisElementMaps(k, type, op.getAxis());
    AffineMap id = identityMaps(k, type.getRank(), 1)[0];
    maps.append({id, id});
    SmallVector<Value> inputs(n, x);
    inputs.push_back(x);
    return k.generic1(inputs, k.empty(type.getShape()), maps, all,
                      [&](Scalar &s, ValueRange a) {
                        k.yield(
                            s, s.div(a[n], inlineSum(s, a.take_front(n), eps)));
                      });
  }
  AxisLoops l(k, type, op.getAxis());
  Value sum = axisSum(k, l, x, eps);
  return k.generic1(
      {x, sum}, k.empty(type.getShape()), {l.full[0], l.reduced[0], l.full[0]},
      all, [&](Scalar &s, ValueRange a) { k.yield(s, s.div(a[0], a[1])); });
}

/// dx = (dy - sum(dy x) / S) / S with S = sum(x) + eps.
Value lowerNormalizeGrad(KernelBuilder &k, NormalizeGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Value x = op.getInput(), dy = op.getResultGrad();
  double eps = op.getEps().convertToDouble();
  SmallVector<IteratorType> all(type.getRank(), kPar);
  if (int64_t n = type.getDimSize(op.getAxis()); n <= kInlineAxis) {
    SmallVector<AffineMap> along = axisElementMaps(k, type, op.getAxis());
    SmallVector<AffineMap> maps(along);
    maps.append(along);
    AffineMap id = identityMaps(k, type.getRank(), 1)[0];
    maps.append({id, id});
    SmallVector<Value> inputs(n, x);
    inputs.append(n, dy);
    inputs.push_back(dy);
    return k.generic1(inputs, k.empty(type.getShape()), maps, all,
                      [&](Scalar &s, ValueRange a) {
                        Value sum = inlineSum(s, a.take_front(n), eps);
                        Value dot = s.c(0.0);
                        for (int64_t i = 0; i < n; ++i)
                          dot = s.add(dot, s.mul(a[i], a[n + i]));
                        k.yield(s,
                                s.div(s.sub(a[2 * n], s.div(dot, sum)), sum));
                      });
  }
  AxisLoops l(k, type, op.getAxis());
  Value sum = axisSum(k, l, x, eps);
  Value dot = k.generic1({x, dy}, k.filled(l.reducedShape, 0.0),
                         {l.full[0], l.full[0], l.reduced[0]}, l.iterators,
                         [&](Scalar &s, ValueRange a) {
                           k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                         });
  return k.generic1({dy, sum, dot}, k.empty(type.getShape()),
                    {l.full[0], l.reduced[0], l.reduced[0], l.full[0]}, all,
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.div(s.sub(a[0], s.div(a[2], a[1])), a[1]));
                    });
}

Value lowerSoftmaxGrad(KernelBuilder &k, SoftmaxGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  AxisLoops l(k, type, op.getAxis());
  Value y = op.getResult(), dy = op.getResultGrad();
  // Given sums keep the axis, as 1.
  Value dot = op.getDot();
  AffineMap dotMap = dot ? l.kept : l.reduced[0];
  if (!dot)
    dot = k.generic1({y, dy}, k.filled(l.reducedShape, 0.0),
                     {l.full[0], l.full[0], l.reduced[0]}, l.iterators,
                     [&](Scalar &s, ValueRange a) {
                       k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                     });
  SmallVector<IteratorType> all(type.getRank(), kPar);
  return k.generic1({y, dy, dot}, k.empty(type.getShape()),
                    {l.full[0], l.full[0], dotMap, l.full[0]}, all,
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.mul(a[0], s.sub(a[1], a[2])));
                    });
}

/// g(x / temperature) and g' at the same point.
std::pair<Value, Value> squashAt(Scalar &s, StringRef kind, Value x,
                                 double temperature) {
  Value z = s.mul(x, s.c(1.0 / temperature));
  if (kind == "tanh") {
    Value t = s.tanh(z);
    return {t, s.sub(s.c(1.0), s.mul(t, t))};
  }
  if (kind == "exp") {
    Value e = s.exp(z);
    return {e, e};
  }
  Value g = s.sigmoid(z);
  return {g, s.mul(g, s.sub(s.c(1.0), g))};
}

Value lowerSquash(KernelBuilder &k, SquashOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  double scale = op.getScale().convertToDouble();
  double temperature = op.getTemperature().convertToDouble();
  return k.generic1(op.getInput(), k.empty(type.getShape()),
                    identityMaps(k, type.getRank(), 2),
                    SmallVector<IteratorType>(type.getRank(), kPar),
                    [&](Scalar &s, ValueRange a) {
                      Value g =
                          squashAt(s, op.getKind(), a[0], temperature).first;
                      k.yield(s, s.mul(s.c(scale), g));
                    });
}

Value lowerSquashGrad(KernelBuilder &k, SquashGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  double temperature = op.getTemperature().convertToDouble();
  double factor = op.getScale().convertToDouble() / temperature;
  return k.generic1(
      {op.getInput(), op.getResultGrad()}, k.empty(type.getShape()),
      identityMaps(k, type.getRank(), 3),
      SmallVector<IteratorType>(type.getRank(), kPar),
      [&](Scalar &s, ValueRange a) {
        Value dg = squashAt(s, op.getKind(), a[0], temperature).second;
        k.yield(s, s.mul(a[1], s.mul(s.c(factor), dg)));
      });
}

/// Each operand's rows inserted at their offset.
Value lowerAppend(KernelBuilder &k, AppendOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Value result = k.empty(type.getShape());
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(input.getType()).getShape();
    RowSlice s(k.b, offset, shape);
    result = tensor::InsertSliceOp::create(k.b, k.loc, input, result, s.offsets,
                                           s.sizes, s.strides);
    offset += shape[1];
  }
  return result;
}

Value lowerRows(KernelBuilder &k, RowsOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  RowSlice s(k.b, static_cast<int64_t>(op.getOffset()), type.getShape());
  return tensor::ExtractSliceOp::create(k.b, k.loc, type, op.getInput(),
                                        s.offsets, s.sizes, s.strides);
}

Value lowerRowsGrad(KernelBuilder &k, RowsGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  RowSlice s(k.b, static_cast<int64_t>(op.getOffset()),
             cast<RankedTensorType>(op.getResultGrad().getType()).getShape());
  return tensor::InsertSliceOp::create(k.b, k.loc, op.getResultGrad(),
                                       k.filled(type.getShape(), 0.0),
                                       s.offsets, s.sizes, s.strides);
}

/// Collapses all of a token's values into one dimension, then expands them
/// to the result's shape.
Value lowerView(KernelBuilder &k, ViewOp op) {
  auto from = cast<RankedTensorType>(op.getInput().getType());
  auto to = cast<RankedTensorType>(op.getType());
  auto flat = [](int64_t rank) {
    ReassociationIndices rest;
    for (int64_t i = 1; i < rank; ++i)
      rest.push_back(i);
    return SmallVector<ReassociationIndices>{{0}, rest};
  };
  int64_t tokens = from.getDimSize(0);
  Value x = op.getInput();
  if (from.getRank() > 2)
    x = tensor::CollapseShapeOp::create(
        k.b, k.loc, k.tensor({tokens, from.getNumElements() / tokens}), x,
        flat(from.getRank()));
  if (to.getRank() > 2)
    x = tensor::ExpandShapeOp::create(k.b, k.loc, to, x, flat(to.getRank()));
  return x;
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

Value lowerEmbed(KernelBuilder &k, EmbedOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Value table = op.getTable();
  return k.generic1(op.getTokens(), k.empty(type.getShape()),
                    {k.map(2, {0}), k.map(2, {0, 1})}, {kPar, kPar},
                    [&](Scalar &s, ValueRange a) {
                      Value row = arith::IndexCastOp::create(
                          s.b, s.loc, s.b.getIndexType(), a[0]);
                      Value v = tensor::ExtractOp::create(
                          s.b, s.loc, table, ValueRange{row, s.index(1)});
                      k.yield(s, v);
                    });
}

Value lowerEmbedGrad(KernelBuilder &k, EmbedGradOp op) {
  // A sequential scatter-add over tokens: O(N d), in place after bufferization.
  auto type = cast<RankedTensorType>(op.getType());
  int64_t n = cast<RankedTensorType>(op.getTokens().getType()).getDimSize(0);
  int64_t d = type.getDimSize(1);
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value upper = arith::ConstantIndexOp::create(b, loc, n);
  auto loop = scf::ForOp::create(
      b, loc, zero, upper, one, ValueRange{k.filled(type.getShape(), 0.0)},
      [&](OpBuilder &lb, Location ll, Value t, ValueRange iter) {
        KernelBuilder inner{lb, ll, k.element};
        Value tok = tensor::ExtractOp::create(lb, ll, op.getTokens(), t);
        Value v = arith::IndexCastOp::create(lb, ll, lb.getIndexType(), tok);
        SmallVector<OpFoldResult> sizes{lb.getIndexAttr(1), lb.getIndexAttr(d)};
        SmallVector<OpFoldResult> strides{lb.getIndexAttr(1),
                                          lb.getIndexAttr(1)};
        auto rowType = inner.tensor({d});
        Value dyRow = tensor::ExtractSliceOp::create(
            lb, ll, rowType, op.getResultGrad(),
            ArrayRef<OpFoldResult>{t, lb.getIndexAttr(0)}, sizes, strides);
        Value accRow = tensor::ExtractSliceOp::create(
            lb, ll, rowType, iter[0],
            ArrayRef<OpFoldResult>{v, lb.getIndexAttr(0)}, sizes, strides);
        Value sum = inner.generic1(dyRow, accRow, identityMaps(inner, 1, 2),
                                   {kPar}, [&](Scalar &s, ValueRange a) {
                                     inner.yield(s, s.add(a[0], a[1]));
                                   });
        Value updated = tensor::InsertSliceOp::create(
            lb, ll, sum, iter[0], ArrayRef<OpFoldResult>{v, lb.getIndexAttr(0)},
            sizes, strides);
        scf::YieldOp::create(lb, ll, updated);
      });
  return loop.getResult(0);
}

/// The embedding gradient as a dense contraction: table[v, c] = sum over
/// tokens t of [token t is v] * dy[t, c]. O(V N d) against the scatter's
/// O(N d), but parallel over the whole table with no write conflicts: what
/// a GPU wants for a small vocabulary.
Value lowerEmbedGradDense(KernelBuilder &k, EmbedGradOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  return k.generic1(
      {op.getTokens(), op.getResultGrad()}, k.filled(type.getShape(), 0.0),
      {k.map(3, {2}), k.map(3, {2, 1}), k.map(3, {0, 1})}, {kPar, kPar, kRed},
      [&](Scalar &s, ValueRange a) {
        Value token =
            arith::IndexCastOp::create(s.b, s.loc, s.b.getIndexType(), a[0]);
        Value mine = arith::CmpIOp::create(s.b, s.loc, arith::CmpIPredicate::eq,
                                           token, s.index(0));
        k.yield(s, s.add(a[2], s.select(mine, a[1], s.c(0.0))));
      });
}

/// Row max and row sum of exp(x - max) of logits [N, V].
std::pair<Value, Value> softmaxStats(KernelBuilder &k, Value logits) {
  auto shape = cast<RankedTensorType>(logits.getType()).getShape();
  Value mx = k.generic1(
      logits, k.filled({shape[0]}, -INFINITY),
      {k.map(2, {0, 1}), k.map(2, {0})}, {kPar, kRed},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.max(a[1], a[0])); });
  Value se = k.generic1({logits, mx}, k.filled({shape[0]}, 0.0),
                        {k.map(2, {0, 1}), k.map(2, {0}), k.map(2, {0})},
                        {kPar, kRed}, [&](Scalar &s, ValueRange a) {
                          k.yield(s, s.add(a[2], s.exp(s.sub(a[0], a[1]))));
                        });
  return {mx, se};
}

/// Whether a row's target is one (not negative: see cross_entropy), and the
/// index to read it at (0 when it is not).
std::pair<Value, Value> targetIndex(Scalar &s, Value target) {
  Value zero = arith::ConstantOp::create(s.b, s.loc, s.b.getI32IntegerAttr(0));
  Value valid = arith::CmpIOp::create(s.b, s.loc, arith::CmpIPredicate::sge,
                                      target, zero);
  Value safe = arith::SelectOp::create(s.b, s.loc, valid, target, zero);
  return {valid,
          arith::IndexCastOp::create(s.b, s.loc, s.b.getIndexType(), safe)};
}

/// The number of rows with a target, as a scalar tensor (at least 1).
Value targetCount(KernelBuilder &k, Value targets) {
  AffineMap scalar = AffineMap::get(1, 0, {}, k.b.getContext());
  return k.generic1(targets, k.filled({}, 0.0), {k.map(1, {0}), scalar}, {kRed},
                    [&](Scalar &s, ValueRange a) {
                      auto [valid, index] = targetIndex(s, a[0]);
                      (void)index;
                      k.yield(s,
                              s.add(a[1], s.select(valid, s.c(1.0), s.c(0.0))));
                    });
}

Value lowerCrossEntropy(KernelBuilder &k, CrossEntropyOp op) {
  Value logits = op.getLogits();
  auto [mx, se] = softmaxStats(k, logits);
  AffineMap tok = k.map(1, {0});
  Value sum =
      k.generic1({mx, se, op.getTargets()}, k.filled({}, 0.0),
                 {tok, tok, tok, AffineMap::get(1, 0, {}, k.b.getContext())},
                 {kRed}, [&](Scalar &s, ValueRange a) {
                   auto [valid, target] = targetIndex(s, a[2]);
                   Value picked = tensor::ExtractOp::create(
                       s.b, s.loc, logits, ValueRange{s.index(0), target});
                   Value nll = s.sub(s.add(s.log(a[1]), a[0]), picked);
                   k.yield(s, s.add(a[3], s.select(valid, nll, s.c(0.0))));
                 });
  AffineMap scalar = AffineMap::get(0, 0, {}, k.b.getContext());
  return k.generic1({sum, targetCount(k, op.getTargets())}, k.empty({}),
                    {scalar, scalar, scalar}, {}, [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.div(a[0], s.max(a[1], s.c(1.0))));
                    });
}

Value lowerCrossEntropyGrad(KernelBuilder &k, CrossEntropyGradOp op) {
  Value logits = op.getLogits();
  auto shape = cast<RankedTensorType>(logits.getType()).getShape();
  auto [mx, se] = softmaxStats(k, logits);
  Value dloss =
      tensor::ExtractOp::create(k.b, k.loc, op.getResultGrad(), ValueRange{});
  Value count = tensor::ExtractOp::create(
      k.b, k.loc, targetCount(k, op.getTargets()), ValueRange{});
  AffineMap all = k.map(2, {0, 1}), row = k.map(2, {0});
  return k.generic1(
      {logits, mx, se, op.getTargets()}, k.empty(shape),
      {all, row, row, row, all}, {kPar, kPar}, [&](Scalar &s, ValueRange a) {
        Value p = s.div(s.exp(s.sub(a[0], a[1])), a[2]);
        auto [valid, target] = targetIndex(s, a[3]);
        Value isTarget = arith::CmpIOp::create(
            s.b, s.loc, arith::CmpIPredicate::eq, s.index(1), target);
        Value g = s.sub(p, s.select(isTarget, s.c(1.0), s.c(0.0)));
        g = s.mul(g, s.div(dloss, s.max(count, s.c(1.0))));
        k.yield(s, s.select(valid, g, s.c(0.0)));
      });
}

/// targets shifted one token back within each sequence; -1 at its end.
Value lowerLookahead(KernelBuilder &k, LookaheadOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  int64_t n = type.getDimSize(0), seqLen = op.getSeqLen();
  Value none = arith::ConstantOp::create(k.b, k.loc, k.b.getI32IntegerAttr(-1));
  Value filled = linalg::FillOp::create(
                     k.b, k.loc, none,
                     tensor::EmptyOp::create(k.b, k.loc, type.getShape(),
                                             type.getElementType())
                         .getResult())
                     .getResult(0);
  if (n == 1)
    return filled;
  auto at = [&](int64_t i) -> SmallVector<OpFoldResult> {
    return {k.b.getIndexAttr(i)};
  };
  auto sliceType = RankedTensorType::get({n - 1}, type.getElementType());
  Value next = tensor::ExtractSliceOp::create(
      k.b, k.loc, sliceType, op.getTargets(), at(1), at(n - 1), at(1));
  Value shifted = tensor::InsertSliceOp::create(k.b, k.loc, next, filled, at(0),
                                                at(n - 1), at(1));
  AffineMap id = k.map(1, {0});
  auto generic = linalg::GenericOp::create(
      k.b, k.loc, TypeRange{type}, ValueRange{shifted},
      ValueRange{tensor::EmptyOp::create(k.b, k.loc, type.getShape(),
                                         type.getElementType())
                     .getResult()},
      ArrayRef<AffineMap>{id, id}, ArrayRef<IteratorType>{kPar},
      [&](OpBuilder &b, Location loc, ValueRange a) {
        Value t = linalg::IndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        Value s = arith::ConstantIndexOp::create(b, loc, seqLen);
        Value pos = arith::RemUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, t, one), s);
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value end =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pos, zero);
        Value minus =
            arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1));
        linalg::YieldOp::create(
            b, loc,
            ValueRange{arith::SelectOp::create(b, loc, end, minus, a[0])});
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// RoPE and attention
//===----------------------------------------------------------------------===//

Value lowerRope(KernelBuilder &k, RopeOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  int64_t width = type.getDimSize(1), seqLen = op.getSeqLen();
  int64_t headDim = width / op.getNHead(), half = headDim / 2;
  double logTheta = std::log(op.getTheta().convertToDouble());
  double sign = op.getInverse() ? -1.0 : 1.0;
  // cos/sin table [seq_len, half], angles in f64 for accuracy at long range.
  Type f64 = k.b.getF64Type();
  KernelBuilder table{k.b, k.loc, k.element};
  SmallVector<Value> cs = table.generic(
      {}, {k.empty({seqLen, half}), k.empty({seqLen, half})},
      {k.map(2, {0, 1}), k.map(2, {0, 1})}, {kPar, kPar},
      [&](Scalar &s, ValueRange) {
        Scalar d{s.b, s.loc, f64};
        Value t = d.fromIndex(s.index(0));
        Value i = d.fromIndex(s.index(1));
        Value freq = d.exp(d.mul(i, d.c(-2.0 * logTheta / headDim)));
        Value angle = d.mul(t, freq);
        Value c = math::CosOp::create(s.b, s.loc, angle);
        Value sn = d.mul(math::SinOp::create(s.b, s.loc, angle), d.c(sign));
        if (k.element != f64) {
          c = arith::TruncFOp::create(s.b, s.loc, k.element, c);
          sn = arith::TruncFOp::create(s.b, s.loc, k.element, sn);
        }
        k.yield(s, {c, sn});
      });
  // x [N, D] as [N, H, 2, half]: the pair (i, i + half) of head h is
  // (x[n, h, 0, i], x[n, h, 1, i]), so the innermost loop walks a half
  // contiguously and the partner half, cos and sin are contiguous loads
  // too (indexed by the whole column, the partner was a gather).
  int64_t tokens = type.getDimSize(0), nHead = op.getNHead();
  SmallVector<ReassociationIndices> split{{0}, {1, 2, 3}};
  Value x = tensor::ExpandShapeOp::create(
      k.b, k.loc, k.tensor({tokens, nHead, 2, half}), op.getInput(), split);
  Value cosT = cs[0], sinT = cs[1];
  AffineMap id = k.map(4, {0, 1, 2, 3});
  Value rotated = k.generic1(
      x, k.empty({tokens, nHead, 2, half}), {id, id}, {kPar, kPar, kPar, kPar},
      [&](Scalar &s, ValueRange a) {
        OpBuilder &b = s.b;
        Location l = s.loc;
        auto ci = [&](int64_t v) {
          return arith::ConstantIndexOp::create(b, l, v).getResult();
        };
        Value n = s.index(0), head = s.index(1), j = s.index(2), i = s.index(3);
        Value t = arith::RemUIOp::create(b, l, n, ci(seqLen));
        Value low =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, j, ci(0));
        Value partner = tensor::ExtractOp::create(
            b, l, x,
            ValueRange{n, head, arith::SubIOp::create(b, l, ci(1), j), i});
        Value c = tensor::ExtractOp::create(b, l, cosT, ValueRange{t, i});
        Value sn = tensor::ExtractOp::create(b, l, sinT, ValueRange{t, i});
        // low half: x c - p s; high half: x c + p s.
        Value xc = s.mul(a[0], c), ps = s.mul(partner, sn);
        k.yield(s, s.select(low, s.sub(xc, ps), s.add(xc, ps)));
      });
  return tensor::CollapseShapeOp::create(k.b, k.loc, type, rotated, split);
}

/// Attention works per (sequence, head) block [T, dh] of its [N, D]
/// operands (N = B*T tokens, D = H*dh), so that its products are batched
/// row-major matmuls like every other product.
struct HeadLayout {
  int64_t batch, seqLen, nHead, headDim;
  int64_t blocks() const { return batch * nHead; }
};

HeadLayout headLayout(Value x, int64_t seqLen, int64_t nHead) {
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  return {shape[0] / seqLen, seqLen, nHead, shape[1] / nHead};
}

/// [N, D] -> [B*H, T, dh], or [B*H, dh, T] with `transpose`.
Value toHeads(KernelBuilder &k, Value x, const HeadLayout &l, bool transpose) {
  Value x4 = k.heads(x, l.seqLen, l.nHead); // [B, T, H, dh]
  Value out = transpose ? k.empty({l.batch, l.nHead, l.headDim, l.seqLen})
                        : k.empty({l.batch, l.nHead, l.seqLen, l.headDim});
  // Dims (b, h, t, i).
  AffineMap outMap =
      transpose ? k.map(4, {0, 1, 3, 2}) : k.map(4, {0, 1, 2, 3});
  Value blocked = k.generic1(
      x4, out, {k.map(4, {0, 2, 1, 3}), outMap}, {kPar, kPar, kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, a[0]); });
  int64_t rows = transpose ? l.headDim : l.seqLen;
  int64_t cols = transpose ? l.seqLen : l.headDim;
  return tensor::CollapseShapeOp::create(
      k.b, k.loc, k.tensor({l.blocks(), rows, cols}), blocked,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// [B*H, T, dh] -> [N, D].
Value fromHeads(KernelBuilder &k, Value x, const HeadLayout &l) {
  Value x4 = tensor::ExpandShapeOp::create(
      k.b, k.loc, k.tensor({l.batch, l.nHead, l.seqLen, l.headDim}), x,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value out = k.generic1(x4, k.empty({l.batch, l.seqLen, l.nHead, l.headDim}),
                         {k.map(4, {0, 2, 1, 3}), k.map(4, {0, 1, 2, 3})},
                         {kPar, kPar, kPar, kPar},
                         [&](Scalar &s, ValueRange a) { k.yield(s, a[0]); });
  return k.tokens(out);
}

/// [G, a, b] -> [G, b, a].
Value transposeBlocks(KernelBuilder &k, Value x) {
  auto s = cast<RankedTensorType>(x.getType()).getShape();
  return k.generic1(x, k.empty({s[0], s[2], s[1]}),
                    {k.map(3, {0, 2, 1}), k.map(3, {0, 1, 2})},
                    {kPar, kPar, kPar},
                    [&](Scalar &sc, ValueRange a) { k.yield(sc, a[0]); });
}

/// [G, m, k] x [G, k, n] -> [G, m, n], from zeros; with `transposeA`, a is
/// [G, k, m], read in place (the register tile loads a contiguous row of it
/// per k step). `causal` (kCausalAttr) says which of a causal attention
/// product's terms are zeros or which of its results go unread (t >= s: a
/// query t reads keys s up to itself).
Value batchMatmul(KernelBuilder &k, Value a, Value b, StringRef causal,
                  bool transposeA = false) {
  auto sa = cast<RankedTensorType>(a.getType()).getShape();
  auto sb = cast<RankedTensorType>(b.getType()).getShape();
  RankedTensorType type = k.tensor({sa[0], transposeA ? sa[2] : sa[1], sb[2]});
  SmallVector<NamedAttribute> attributes;
  if (transposeA) {
    SmallVector<AffineMap> maps =
        linalg::BatchMatmulOp::getDefaultIndexingMaps(k.b.getContext());
    maps[0] = k.map(4, {0, 3, 1});
    attributes.push_back(
        k.b.getNamedAttr("indexing_maps", k.b.getAffineMapArrayAttr(maps)));
  }
  auto op = linalg::BatchMatmulOp::create(
      k.b, k.loc, TypeRange{type}, ValueRange{a, b},
      ValueRange{k.filled(type.getShape(), 0.0)}, attributes);
  op->setAttr(kCausalAttr, k.b.getStringAttr(causal));
  return op.getResult(0);
}

/// Marks `v`'s kernel, over a block's [G, T, T] scores (loops g, t, s), as
/// causal "rows": only entries s <= t are read afterwards or change its
/// results (masked ones enter its reductions as their identities and its
/// products' readers skip them), so drc-cpu-tile may visit, per tile of
/// rows, only the columns up to its last row.
Value causalRows(KernelBuilder &k, Value v) {
  v.getDefiningOp()->setAttr(kCausalAttr, k.b.getStringAttr("rows"));
  return v;
}

/// P[g,t,s] = exp(scale S[g,t,s] - lse[g,t]) for s <= t, else 0 (with the
/// rows' max for lse: the unnormalised probabilities).
Value attentionProbs(KernelBuilder &k, Value scores, Value lse, double scale) {
  auto shape = cast<RankedTensorType>(scores.getType()).getShape();
  return causalRows(
      k,
      k.generic1({scores, lse}, k.empty(shape),
                 {k.map(3, {0, 1, 2}), k.map(3, {0, 1}), k.map(3, {0, 1, 2})},
                 {kPar, kPar, kPar}, [&](Scalar &s, ValueRange a) {
                   Value keep = s.indexLE(s.index(2), s.index(1));
                   Value p = s.exp(s.sub(s.mul(a[0], s.c(scale)), a[1]));
                   k.yield(s, s.select(keep, p, s.c(0.0)));
                 }));
}

/// lse [G, T] <-> [N, H] (token-major, as the op's result): a swap of the
/// last two dims of [B, H, T] / [B, T, H].
Value lseToTokens(KernelBuilder &k, Value lse, const HeadLayout &l) {
  Value bht = tensor::ExpandShapeOp::create(
      k.b, k.loc, k.tensor({l.batch, l.nHead, l.seqLen}), lse,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  return tensor::CollapseShapeOp::create(
      k.b, k.loc, k.tensor({l.batch * l.seqLen, l.nHead}),
      transposeBlocks(k, bht), ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}
Value lseFromTokens(KernelBuilder &k, Value lse, const HeadLayout &l) {
  Value bth = tensor::ExpandShapeOp::create(
      k.b, k.loc, k.tensor({l.batch, l.seqLen, l.nHead}), lse,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  return tensor::CollapseShapeOp::create(
      k.b, k.loc, k.tensor({l.blocks(), l.seqLen}), transposeBlocks(k, bth),
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// Causal attention on G blocks: q [G, T, dh], kT [G, dh, T] and v
/// [G, T, dh] -> the output [G, T, dh] and the rows' log-sum-exps [G, T].
std::pair<Value, Value> attendBlocks(KernelBuilder &k, Value q, Value kT,
                                     Value v) {
  auto shape = cast<RankedTensorType>(q.getType()).getShape();
  int64_t blocks = shape[0], seqLen = shape[1];
  double scale = 1.0 / std::sqrt(double(shape[2]));
  Value scores = batchMatmul(k, q, kT, "output"); // [G, T, T], masked s > t
  AffineMap all = k.map(3, {0, 1, 2}), row = k.map(3, {0, 1});
  SmallVector<IteratorType> red{kPar, kPar, kRed};
  // Masked entries enter the max as -inf and the sum as 0, so each row is a
  // plain reduction that LLVM vectorises (a select around the accumulator
  // would keep it scalar).
  Value mx = causalRows(
      k, k.generic1(scores, k.filled({blocks, seqLen}, -INFINITY), {all, row},
                    red, [&](Scalar &s, ValueRange a) {
                      Value keep = s.indexLE(s.index(2), s.index(1));
                      Value v = s.mul(a[0], s.c(scale));
                      k.yield(s,
                              s.max(a[1], s.select(keep, v, s.c(-INFINITY))));
                    }));
  // The unnormalised probabilities e^(scale S - max), one exp per score;
  // the rows' sums of them; the output (e V) / sum. (Normalising the
  // probabilities instead took a second exp per score.)
  Value e = attentionProbs(k, scores, mx, scale);
  Value se =
      causalRows(k, k.generic1(e, k.filled({blocks, seqLen}, 0.0), {all, row},
                               red, [&](Scalar &s, ValueRange a) {
                                 k.yield(s, s.add(a[1], a[0]));
                               }));
  AffineMap id2 = k.map(2, {0, 1});
  Value lse = k.generic1(
      {mx, se}, k.empty({blocks, seqLen}), {id2, id2, id2}, {kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[0], s.log(a[1]))); });
  Value unnormalised = batchMatmul(k, e, v, "prefix");
  Value out = k.generic1(
      {unnormalised, se}, k.empty(shape), {all, row, all}, {kPar, kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.div(a[0], a[1])); });
  return {out, lse};
}

/// The adjoints dq, dk, dv [G, T, dh] of attendBlocks from its output's
/// adjoint dOut [G, T, dh] and, when not null, its log-sum-exps' dLse
/// [G, T]; kk and vT are k [G, T, dh] and v transposed [G, dh, T].
SmallVector<Value> attendBlocksGrad(KernelBuilder &k, Value q, Value kk,
                                    Value kT, Value vT, Value out, Value lse,
                                    Value dOut, Value dLse) {
  auto shape = cast<RankedTensorType>(q.getType()).getShape();
  int64_t blocks = shape[0], seqLen = shape[1];
  double scale = 1.0 / std::sqrt(double(shape[2]));
  Value scores = batchMatmul(k, q, kT, "output");
  Value probs = attentionProbs(k, scores, lse, scale);
  // dV = P^T dO; dP = dO V^T, read only where P is not 0.
  Value dv = batchMatmul(k, probs, dOut, "suffix", /*transposeA=*/true);
  Value dp = batchMatmul(k, dOut, vT, "output");
  // D[g,t] = sum_i dO[g,t,i] O[g,t,i].
  Value dsum =
      k.generic1({dOut, out}, k.filled({blocks, seqLen}, 0.0),
                 {k.map(3, {0, 1, 2}), k.map(3, {0, 1, 2}), k.map(3, {0, 1})},
                 {kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
                   k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                 });
  // d lse / d S = scale P, so a log-sum-exp adjoint enters as D - dlse.
  if (dLse) {
    AffineMap same = k.map(2, {0, 1});
    dsum =
        k.generic1({dsum, dLse}, k.empty({blocks, seqLen}), {same, same, same},
                   {kPar, kPar}, [&](Scalar &s, ValueRange a) {
                     k.yield(s, s.sub(a[0], a[1]));
                   });
  }
  // dS = scale P (dP - D), scaled here once for both dQ and dK.
  AffineMap all = k.map(3, {0, 1, 2}), row = k.map(3, {0, 1});
  Value ds = causalRows(
      k, k.generic1({probs, dp, dsum}, k.empty({blocks, seqLen, seqLen}),
                    {all, all, row, all}, {kPar, kPar, kPar},
                    [&](Scalar &s, ValueRange a) {
                      k.yield(
                          s, s.mul(s.mul(a[0], s.sub(a[1], a[2])), s.c(scale)));
                    }));
  Value dq = batchMatmul(k, ds, kk, "prefix");
  Value dk = batchMatmul(k, ds, q, "suffix", /*transposeA=*/true);
  return {dq, dk, dv};
}

/// The blocks attention reads from its [N, D] operands (and [N, H]
/// log-sum-exps): all G = B*H of them at once, [G, T, dh] copies; or, in a
/// loop over blocks, one block's [1, T, dh] slice (rows `row`..row+T,
/// columns `column`..column+dh, head `head`), read in place.
struct HeadBlocks {
  HeadLayout l;
  Value row, column, head; // null: all blocks

  using Slice = std::tuple<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>,
                           SmallVector<OpFoldResult>>;
  /// The block's [T, dh] in [N, D].
  Slice blockSlice(KernelBuilder &k) const {
    return {{row, column},
            {k.b.getIndexAttr(l.seqLen), k.b.getIndexAttr(l.headDim)},
            {k.b.getIndexAttr(1), k.b.getIndexAttr(1)}};
  }
  /// The block's column [T, 1] in [N, H].
  Slice lseSlice(KernelBuilder &k) const {
    return {{row, head},
            {k.b.getIndexAttr(l.seqLen), k.b.getIndexAttr(1)},
            {k.b.getIndexAttr(1), k.b.getIndexAttr(1)}};
  }

  /// x [N, D] -> [G, T, dh], or [G, dh, T] with `transpose`.
  Value of(KernelBuilder &k, Value x, bool transpose = false) const {
    if (!row)
      return toHeads(k, x, l, transpose);
    auto [offsets, sizes, strides] = blockSlice(k);
    Value slice = tensor::ExtractSliceOp::create(
        k.b, k.loc, k.tensor({l.seqLen, l.headDim}), x, offsets, sizes,
        strides);
    Value block = tensor::ExpandShapeOp::create(
        k.b, k.loc, k.tensor({1, l.seqLen, l.headDim}), slice,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    return transpose ? transposeBlocks(k, block) : block;
  }
  /// lse [N, H] -> [G, T].
  Value rowsOf(KernelBuilder &k, Value lse) const {
    if (!row)
      return lseFromTokens(k, lse, l);
    auto [offsets, sizes, strides] = lseSlice(k);
    Value column = tensor::ExtractSliceOp::create(
        k.b, k.loc, RankedTensorType::get({l.seqLen}, k.element), lse, offsets,
        sizes, strides);
    return tensor::ExpandShapeOp::create(
        k.b, k.loc, k.tensor({1, l.seqLen}), column,
        ArrayRef<ReassociationIndices>{{0, 1}});
  }
};

/// Runs `attend` on causal attention's blocks and returns its results
/// ([G, T, dh] blocks, [G, T] log-sum-exps) as `types` ([N, D], [N, H]).
/// With `inPlace` it runs once per block, in one parallel loop over the
/// B*H blocks: the block's q, k, v are slices of the [N, D] operands and
/// its results are written into the [N, D] results, so no operand is
/// copied into head-major blocks, and each block's [T, T] scores and
/// probabilities stay in cache between the products and the softmax
/// that read them (all blocks' at once are 8 MB at T = 256, B*H = 32).
/// Otherwise it runs once on all blocks, copied [G, T, dh].
SmallVector<Value> attendByHeadBlocks(
    KernelBuilder &k, const HeadLayout &l, bool inPlace, TypeRange types,
    function_ref<SmallVector<Value>(KernelBuilder &, const HeadBlocks &)>
        attend) {
  if (!inPlace) {
    SmallVector<Value> results = attend(k, HeadBlocks{l, {}, {}, {}});
    for (Value &r : results)
      r = cast<RankedTensorType>(r.getType()).getRank() == 3
              ? fromHeads(k, r, l)
              : lseToTokens(k, r, l);
    return results;
  }
  SmallVector<Value> inits;
  for (Type type : types)
    inits.push_back(k.empty(cast<RankedTensorType>(type).getShape()));
  OpBuilder::InsertionGuard guard(k.b);
  auto forall = scf::ForallOp::create(
      k.b, k.loc, ArrayRef<OpFoldResult>{k.b.getIndexAttr(l.blocks())}, inits,
      std::nullopt);
  setKernelRole(forall, kAttentionRole);
  k.b.setInsertionPointToStart(forall.getBody());
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(k.b, k.loc, v);
  };
  Value g = forall.getInductionVar(0);
  Value head = arith::RemUIOp::create(k.b, k.loc, g, index(l.nHead));
  Value row = arith::MulIOp::create(
      k.b, k.loc, arith::DivUIOp::create(k.b, k.loc, g, index(l.nHead)),
      index(l.seqLen));
  HeadBlocks block{
      l, row, arith::MulIOp::create(k.b, k.loc, head, index(l.headDim)), head};
  SmallVector<Value> results = attend(k, block);
  // Each result computed in its slice of the loop's output: the empty
  // tensor its op starts from (or zero-fills) replaced by the slice, so
  // bufferization writes it there rather than into a temporary copied in.
  for (auto [r, out] : llvm::zip(results, forall.getRegionIterArgs())) {
    auto op = r.getDefiningOp<DestinationStyleOpInterface>();
    if (!op || op.getNumDpsInits() != 1)
      continue;
    OpOperand *init = op.getDpsInitOperand(0);
    if (auto fill = init->get().getDefiningOp<linalg::FillOp>())
      init = fill.getDpsInitOperand(0);
    auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
    if (!empty || !empty->hasOneUse())
      continue;
    OpBuilder::InsertionGuard inner(k.b);
    k.b.setInsertionPoint(init->getOwner());
    init->set(cast<RankedTensorType>(r.getType()).getRank() == 3
                  ? block.of(k, out)
                  : block.rowsOf(k, out));
    empty->erase();
  }
  // Collapsed to the slice's shape, [T, dh] or [T], before the terminator.
  for (Value &r : results) {
    auto shape = cast<RankedTensorType>(r.getType()).getShape();
    r = tensor::CollapseShapeOp::create(
        k.b, k.loc, RankedTensorType::get(shape.drop_front(), k.element), r,
        shape.size() == 3 ? ArrayRef<ReassociationIndices>{{0, 1}, {2}}
                          : ArrayRef<ReassociationIndices>{{0, 1}});
  }
  k.b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [r, out] : llvm::zip(results, forall.getRegionIterArgs())) {
    auto [offsets, sizes, strides] =
        cast<RankedTensorType>(r.getType()).getRank() == 2 ? block.blockSlice(k)
                                                           : block.lseSlice(k);
    tensor::ParallelInsertSliceOp::create(k.b, k.loc, r, out, offsets, sizes,
                                          strides);
  }
  return SmallVector<Value>(forall.getResults());
}

SmallVector<Value> lowerCausalAttention(KernelBuilder &k, CausalAttentionOp op,
                                        bool headBlocks) {
  HeadLayout l = headLayout(op.getQ(), op.getSeqLen(), op.getNHead());
  return attendByHeadBlocks(
      k, l, headBlocks, op->getResultTypes(),
      [&](KernelBuilder &k, const HeadBlocks &blocks) -> SmallVector<Value> {
        auto [out, lse] = attendBlocks(k, blocks.of(k, op.getQ()),
                                       blocks.of(k, op.getK(), true),
                                       blocks.of(k, op.getV()));
        return {out, lse};
      });
}

SmallVector<Value> lowerCausalAttentionGrad(KernelBuilder &k,
                                            CausalAttentionGradOp op,
                                            bool headBlocks) {
  HeadLayout l = headLayout(op.getQ(), op.getSeqLen(), op.getNHead());
  return attendByHeadBlocks(
      k, l, headBlocks, op->getResultTypes(),
      [&](KernelBuilder &k, const HeadBlocks &blocks) {
        Value dLse = op.getLseGrad();
        return attendBlocksGrad(
            k, blocks.of(k, op.getQ()), blocks.of(k, op.getK()),
            blocks.of(k, op.getK(), true), blocks.of(k, op.getV(), true),
            blocks.of(k, op.getOut()), blocks.rowsOf(k, op.getLse()),
            blocks.of(k, op.getResultGrad()),
            dLse ? blocks.rowsOf(k, dLse) : Value());
      });
}

//===----------------------------------------------------------------------===//
// Depth attention (MoDA): per token, r extra keys in each head's softmax
//===----------------------------------------------------------------------===//

/// Per-token head views: [N, d] -> [N, H, dh] and [N, r, d] -> [N, r, H, dh].
Value splitHeads(KernelBuilder &k, Value x, int64_t nHead) {
  auto s = cast<RankedTensorType>(x.getType()).getShape();
  SmallVector<int64_t> shape(s.drop_back());
  shape.append({nHead, s.back() / nHead});
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < int64_t(s.size()); ++i)
    groups.push_back({i});
  groups.push_back({int64_t(s.size()) - 1, int64_t(s.size())});
  return tensor::ExpandShapeOp::create(k.b, k.loc, k.tensor(shape), x, groups);
}
Value mergeHeads(KernelBuilder &k, Value x) {
  auto s = cast<RankedTensorType>(x.getType()).getShape();
  SmallVector<int64_t> shape(s.drop_back(2));
  shape.push_back(s[s.size() - 2] * s.back());
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 2 < int64_t(s.size()); ++i)
    groups.push_back({i});
  groups.push_back({int64_t(s.size()) - 2, int64_t(s.size()) - 1});
  return tensor::CollapseShapeOp::create(k.b, k.loc, k.tensor(shape), x,
                                         groups);
}

/// The merged softmax of depth_attention: scaled depth scores S [N, r, H]
/// and the log-sum-exp L [N, H] over the sequence keys (given as `lse`) and
/// the depth keys together.
struct DepthSoftmax {
  Value scores, lse;
};
DepthSoftmax depthSoftmax(KernelBuilder &k, Value q, Value keys, Value lse) {
  auto ks = cast<RankedTensorType>(keys.getType()).getShape(); // N, r, H, dh
  double c = 1.0 / std::sqrt(double(ks[3]));
  // (t, i, h, e)
  Value scores = k.generic1(
      {q, keys}, k.filled({ks[0], ks[1], ks[2]}, 0.0),
      {k.map(4, {0, 2, 3}), k.map(4, {0, 1, 2, 3}), k.map(4, {0, 1, 2})},
      {kPar, kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
        k.yield(s, s.add(a[2], s.mul(s.mul(a[0], a[1]), s.c(c))));
      });
  // (t, h, i): max and sum of exponentials, starting from the sequence lse.
  AffineMap score = k.map(3, {0, 2, 1}), row3 = k.map(3, {0, 1});
  AffineMap id2 = k.map(2, {0, 1});
  Value mx = k.generic1(
      scores, lse, {score, row3}, {kPar, kPar, kRed},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.max(a[0], a[1])); });
  Value seq = k.generic1(
      {lse, mx}, k.empty({ks[0], ks[2]}), {id2, id2, id2}, {kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.exp(s.sub(a[0], a[1]))); });
  Value sum = k.generic1({scores, mx}, seq, {score, row3, row3},
                         {kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
                           k.yield(s, s.add(a[2], s.exp(s.sub(a[0], a[1]))));
                         });
  Value total = k.generic1(
      {mx, sum}, k.empty({ks[0], ks[2]}), {id2, id2, id2}, {kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.add(a[0], s.log(a[1]))); });
  return {scores, total};
}

Value lowerDepthAttention(KernelBuilder &k, DepthAttentionOp op) {
  int64_t h = op.getNHead();
  Value q = splitHeads(k, op.getQ(), h), keys = splitHeads(k, op.getKeys(), h);
  Value values = splitHeads(k, op.getValues(), h);
  Value out = splitHeads(k, op.getOut(), h), lse = op.getLse();
  DepthSoftmax sm = depthSoftmax(k, q, keys, lse);
  auto shape = cast<RankedTensorType>(q.getType()).getShape();
  AffineMap id3 = k.map(3, {0, 1, 2}), row = k.map(3, {0, 1});
  // e^(lse - L) out, then + sum_i e^(s_i - L) V_i over (t, h, e, i).
  Value seq =
      k.generic1({out, lse, sm.lse}, k.empty(shape), {id3, row, row, id3},
                 {kPar, kPar, kPar}, [&](Scalar &s, ValueRange a) {
                   k.yield(s, s.mul(a[0], s.exp(s.sub(a[1], a[2]))));
                 });
  Value merged = k.generic1(
      {sm.scores, sm.lse, values}, seq,
      {k.map(4, {0, 3, 1}), k.map(4, {0, 1}), k.map(4, {0, 3, 1, 2}),
       k.map(4, {0, 1, 2})},
      {kPar, kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
        k.yield(s, s.add(a[3], s.mul(s.exp(s.sub(a[0], a[1])), a[2])));
      });
  return mergeHeads(k, merged);
}

SmallVector<Value> lowerDepthAttentionGrad(KernelBuilder &k,
                                           DepthAttentionGradOp op) {
  int64_t h = op.getNHead();
  Value q = splitHeads(k, op.getQ(), h), keys = splitHeads(k, op.getKeys(), h);
  Value values = splitHeads(k, op.getValues(), h);
  Value out = splitHeads(k, op.getOut(), h), lse = op.getLse();
  Value result = splitHeads(k, op.getResult(), h);
  Value dy = splitHeads(k, op.getResultGrad(), h);
  DepthSoftmax sm = depthSoftmax(k, q, keys, lse);
  auto ks = cast<RankedTensorType>(keys.getType()).getShape(); // N, r, H, dh
  double c = 1.0 / std::sqrt(double(ks[3]));
  AffineMap id2 = k.map(2, {0, 1}), id3 = k.map(3, {0, 1, 2});
  AffineMap row3 = k.map(3, {0, 1}), id4 = k.map(4, {0, 1, 2, 3});
  // Probabilities of the depth keys [N, r, H] and of the sequence [N, H].
  Value p = k.generic1(
      {sm.scores, sm.lse}, k.empty({ks[0], ks[1], ks[2]}),
      {id3, k.map(3, {0, 2}), id3}, {kPar, kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.exp(s.sub(a[0], a[1]))); });
  Value pSeq = k.generic1(
      {lse, sm.lse}, k.empty({ks[0], ks[2]}), {id2, id2, id2}, {kPar, kPar},
      [&](Scalar &s, ValueRange a) { k.yield(s, s.exp(s.sub(a[0], a[1]))); });
  auto dot = [&](Value x) { // sum_e dy[t,h,e] x[t,h,e] -> [N, H]
    return k.generic1({dy, x}, k.filled({ks[0], ks[2]}, 0.0), {id3, id3, row3},
                      {kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
                        k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                      });
  };
  Value dsum = dot(result);
  // dS_i = p_i (dy . V_i - D), scaled once for dq and dK.
  Value dp = k.generic1({dy, values}, k.filled({ks[0], ks[1], ks[2]}, 0.0),
                        {k.map(4, {0, 2, 3}), id4, k.map(4, {0, 1, 2})},
                        {kPar, kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
                          k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                        });
  Value ds =
      k.generic1({p, dp, dsum}, k.empty({ks[0], ks[1], ks[2]}),
                 {id3, id3, k.map(3, {0, 2}), id3}, {kPar, kPar, kPar},
                 [&](Scalar &s, ValueRange a) {
                   k.yield(s, s.mul(s.mul(a[0], s.sub(a[1], a[2])), s.c(c)));
                 });
  Value dq = k.generic1(
      {ds, keys}, k.filled({ks[0], ks[2], ks[3]}, 0.0),
      {k.map(4, {0, 3, 1}), k.map(4, {0, 3, 1, 2}), k.map(4, {0, 1, 2})},
      {kPar, kPar, kPar, kRed}, [&](Scalar &s, ValueRange a) {
        k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
      });
  auto outer = [&](Value perRow, Value perHead) { // [N,r,H] x [N,H,dh]
    return k.generic1({perRow, perHead}, k.empty(ks),
                      {k.map(4, {0, 1, 2}), k.map(4, {0, 2, 3}), id4},
                      {kPar, kPar, kPar, kPar}, [&](Scalar &s, ValueRange a) {
                        k.yield(s, s.mul(a[0], a[1]));
                      });
  };
  Value dkeys = outer(ds, q), dvalues = outer(p, dy);
  Value dout =
      k.generic1({pSeq, dy}, k.empty({ks[0], ks[2], ks[3]}), {row3, id3, id3},
                 {kPar, kPar, kPar}, [&](Scalar &s, ValueRange a) {
                   k.yield(s, s.mul(a[0], a[1]));
                 });
  Value dlse = k.generic1({pSeq, dot(out), dsum}, k.empty({ks[0], ks[2]}),
                          {id2, id2, id2, id2}, {kPar, kPar},
                          [&](Scalar &s, ValueRange a) {
                            k.yield(s, s.mul(a[0], s.sub(a[1], a[2])));
                          });
  return {mergeHeads(k, dq), mergeHeads(k, dkeys), mergeHeads(k, dvalues),
          mergeHeads(k, dout), dlse};
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Replaces `op` by its lowering; returns false for ops left to other passes.
FailureOr<bool> lowerOne(Operation *op, IRRewriter &rewriter,
                         bool denseEmbeddingGrad, bool headBlocks,
                         llvm::DenseMap<Value, Value> *sumSquaresOf) {
  rewriter.setInsertionPoint(op);
  Type element;
  for (Value v : llvm::concat<Value>(op->getResults(), op->getOperands()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && isa<FloatType>(t.getElementType())) {
      element = t.getElementType();
      break;
    }
  KernelBuilder k{rewriter, op->getLoc(), element, sumSquaresOf};
  SmallVector<Value> results;
  bool handled = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](RMSNormOp o) { results = {lowerRMSNorm(k, o)}; })
      .Case([&](RMSNormGradOp o) { results = {lowerRMSNormGrad(k, o)}; })
      .Case([&](RowDotOp o) { results = {lowerRowDot(k, o)}; })
      .Case([&](CenterOp o) { results = {lowerCenter(k, o)}; })
      .Case(
          [&](RMSNormGainGradOp o) { results = {lowerRMSNormGainGrad(k, o)}; })
      .Case([&](MatmulOp o) { results = {lowerMatmul(k, o)}; })
      .Case([&](NormedLinearOp o) { results = lowerNormedLinear(k, o); })
      .Case([&](ScaleByInvRMSOp o) { results = {lowerScaleByInvRMS(k, o)}; })
      .Case([&](NormedLinearWeightGradOp o) {
        results = {lowerNormedLinearWeightGrad(k, o)};
      })
      .Case([&](AddOp o) { results = {lowerAdd(k, o)}; })
      .Case([&](MixOp o) { results = {lowerMix(k, o)}; })
      .Case([&](MixCoefGradOp o) { results = {lowerMixCoefGrad(k, o)}; })
      .Case([&](ViewOp o) { results = {lowerView(k, o)}; })
      .Case([&](AppendOp o) { results = {lowerAppend(k, o)}; })
      .Case([&](SquashOp o) { results = {lowerSquash(k, o)}; })
      .Case([&](ScaleOp o) { results = {lowerScale(k, o)}; })
      .Case([&](SoftmaxOp o) { results = {lowerSoftmax(k, o)}; })
      .Case([&](SoftmaxGradOp o) { results = {lowerSoftmaxGrad(k, o)}; })
      .Case([&](NormalizeOp o) { results = {lowerNormalize(k, o)}; })
      .Case([&](NormalizeGradOp o) { results = {lowerNormalizeGrad(k, o)}; })
      .Case([&](ShiftOp o) { results = {lowerShift(k, o)}; })
      .Case([&](SumLeadingOp o) { results = {lowerSumLeading(k, o)}; })
      .Case([&](SquashGradOp o) { results = {lowerSquashGrad(k, o)}; })
      .Case([&](RowsOp o) { results = {lowerRows(k, o)}; })
      .Case([&](RowsGradOp o) { results = {lowerRowsGrad(k, o)}; })
      .Case([&](SiluMulOp o) { results = {lowerSiluMul(k, o)}; })
      .Case([&](SiluMulGradOp o) { results = lowerSiluMulGrad(k, o); })
      .Case([&](EmbedOp o) { results = {lowerEmbed(k, o)}; })
      .Case([&](EmbedGradOp o) {
        results = {denseEmbeddingGrad ? lowerEmbedGradDense(k, o)
                                      : lowerEmbedGrad(k, o)};
      })
      .Case([&](CrossEntropyOp o) { results = {lowerCrossEntropy(k, o)}; })
      .Case([&](CrossEntropyGradOp o) {
        results = {lowerCrossEntropyGrad(k, o)};
      })
      .Case([&](LookaheadOp o) { results = {lowerLookahead(k, o)}; })
      .Case([&](RopeOp o) { results = {lowerRope(k, o)}; })
      .Case([&](CausalAttentionOp o) {
        results = lowerCausalAttention(k, o, headBlocks);
      })
      .Case([&](CausalAttentionGradOp o) {
        results = lowerCausalAttentionGrad(k, o, headBlocks);
      })
      .Case([&](DepthAttentionOp o) { results = {lowerDepthAttention(k, o)}; })
      .Case([&](DepthAttentionGradOp o) {
        results = lowerDepthAttentionGrad(k, o);
      })
      .Default([&](Operation *) { handled = false; });
  if (!handled)
    return false;
  rewriter.replaceOp(op, results);
  return true;
}

/// The results of a drc.fused region written over one of its inputs, by
/// result: a tiled input that only this region reads, and
///  - the result yields (the leading rows of) a sum one of whose terms is
///    that input, with the result's shape but for as many rows or more (the
///    gradient of a depth bank carried from region to region, less the row
///    its append takes each time); or else
///  - the input has the result's type, is another region's result, and
///    every op of the body that reads it comes before the one that yields
///    the result (HC's and mHC's state gradient, passed from one layer's
///    backward region to the one before): the tile's reads of it are over
///    when its result is written.
/// Written over the input's buffer the result needs no fresh one, whose
/// first write would read every line it misses (HC's backward regions take
/// ~10% fewer samples against the products' in bench/cpu-profile).
DenseMap<unsigned, unsigned> writtenOverInputs(FusedOp op) {
  DenseMap<unsigned, unsigned> onto;
  llvm::SmallDenseSet<unsigned> taken;
  Block &body = op.getBody().front();
  for (auto [index, value] :
       llvm::enumerate(cast<YieldOp>(body.getTerminator()).getValues())) {
    if (op.isPartial(index))
      continue;
    if (auto rows = value.getDefiningOp<RowsOp>();
        rows && rows.getOffset() == 0)
      value = rows.getInput();
    auto result = cast<RankedTensorType>(op.getResult(index).getType());
    auto fits = [&](unsigned input) {
      auto type = cast<RankedTensorType>(op.getInputs()[input].getType());
      if (!op.isTiled(input) || !op.getInputs()[input].hasOneUse() ||
          taken.contains(input))
        return false;
      if (type == result)
        return true;
      // A set tensor<N x k x w> with the result's rows and more.
      return type.getRank() == 3 && result.getRank() == 3 &&
             type.getElementType() == result.getElementType() &&
             type.getDimSize(0) == result.getDimSize(0) &&
             type.getDimSize(1) > result.getDimSize(1) &&
             type.getDimSize(2) == result.getDimSize(2);
    };
    // The terms nearest the result first, left before right.
    SmallVector<Value> terms{value};
    for (size_t next = 0; next < terms.size(); ++next) {
      Value term = terms[next];
      if (auto arg = dyn_cast<BlockArgument>(term);
          arg && arg.getOwner() == &body && fits(arg.getArgNumber())) {
        onto[index] = arg.getArgNumber();
        taken.insert(arg.getArgNumber());
        break;
      }
      if (auto add = term.getDefiningOp<AddOp>())
        terms.append({add.getLhs(), add.getRhs()});
    }
    Operation *producer = value.getDefiningOp();
    auto readBefore = [&](unsigned input) {
      Value arg = body.getArgument(input);
      return producer && producer->getBlock() == &body &&
             llvm::all_of(arg.getUsers(), [&](Operation *user) {
               Operation *at = body.findAncestorOpInBlock(*user);
               return at && at != producer && at->isBeforeInBlock(producer);
             });
    };
    if (!onto.count(index))
      for (unsigned input = 0; input < op.getInputs().size(); ++input)
        if (fits(input) && op.getInputs()[input].getType() == result &&
            op.getInputs()[input].getDefiningOp<FusedOp>() &&
            readBefore(input)) {
          onto[index] = input;
          taken.insert(input);
          break;
        }
  }
  return onto;
}

/// A drc.fused region whose body is already linalg: an scf.forall over its
/// tiles, each reading a slice of every tiled input and writing its tile of
/// every result (its row of a result of partial sums). A result written
/// over an input (`onto`, from writtenOverInputs before the body was
/// lowered) has that input as the loop's destination: each tile reads the
/// input from there, and the result is its leading rows.
void lowerFused(IRRewriter &rewriter, FusedOp op,
                const DenseMap<unsigned, unsigned> &onto) {
  Location loc = op.getLoc();
  int64_t tile = op.getTile();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inits;
  DenseMap<unsigned, unsigned> destinationOf; // input -> result
  for (auto [index, type] : llvm::enumerate(op.getResultTypes())) {
    if (auto it = onto.find(index); it != onto.end()) {
      inits.push_back(op.getInputs()[it->second]);
      destinationOf[it->second] = index;
      continue;
    }
    auto tensor = cast<RankedTensorType>(type);
    inits.push_back(tensor::EmptyOp::create(rewriter, loc, tensor.getShape(),
                                            tensor.getElementType()));
  }
  auto forall = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(op.getTokens() / tile)},
      inits, std::nullopt);
  setKernelRole(forall, kFusedRole);
  Block *loop = forall.getBody();
  rewriter.setInsertionPointToStart(loop);
  Value offset = arith::MulIOp::create(
      rewriter, loc, forall.getInductionVar(0),
      arith::ConstantIndexOp::create(rewriter, loc, tile));
  /// Offsets, sizes and strides of one tile of a value of `type`.
  auto tileOf = [&](RankedTensorType type) {
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0)),
        sizes, strides(type.getRank(), rewriter.getIndexAttr(1));
    offsets[0] = offset;
    for (int64_t d : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(d));
    sizes[0] = rewriter.getIndexAttr(tile);
    return std::make_tuple(offsets, sizes, strides);
  };
  SmallVector<Value> arguments;
  for (auto [index, input] : llvm::enumerate(op.getInputs())) {
    if (!op.isTiled(index)) {
      arguments.push_back(input);
      continue;
    }
    auto type = cast<RankedTensorType>(input.getType());
    auto [offsets, sizes, strides] = tileOf(type);
    if (auto it = destinationOf.find(index); it != destinationOf.end())
      input = forall.getRegionIterArgs()[it->second];
    arguments.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc,
        cast<RankedTensorType>(op.getBody().getArgument(index).getType()),
        input, offsets, sizes, strides));
  }
  Operation *terminator = loop->getTerminator();
  Block &body = op.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Value> tiles(yield.getValues());
  // A result that is an input's tile as it is (a probe's chain function
  // returns the state it starts from through an identity view) is that
  // tile's slice: the block argument goes with the block.
  for (Value &value : tiles)
    if (auto argument = dyn_cast<BlockArgument>(value);
        argument && argument.getOwner() == &body)
      value = arguments[argument.getArgNumber()];
  rewriter.eraseOp(yield);
  rewriter.inlineBlockBefore(&body, terminator, arguments);
  rewriter.setInsertionPointToStart(
      cast<scf::InParallelOp>(terminator).getBody());
  for (auto [index, value, out] :
       llvm::enumerate(tiles, forall.getRegionIterArgs())) {
    auto [offsets, sizes, strides] =
        tileOf(cast<RankedTensorType>(op.getResult(index).getType()));
    if (op.isPartial(index)) {
      // Row `tile index` of the stacked sums, the partial's own rank.
      offsets[0] = forall.getInductionVar(0);
      sizes[0] = rewriter.getIndexAttr(1);
    }
    tensor::ParallelInsertSliceOp::create(rewriter, loc, value, out, offsets,
                                          sizes, strides);
  }
  rewriter.setInsertionPointAfter(forall);
  SmallVector<Value> results(forall.getResults());
  for (auto [index, result] : llvm::enumerate(results)) {
    auto type = cast<RankedTensorType>(op.getResult(index).getType());
    if (result.getType() == type)
      continue;
    RowSlice rows(rewriter, 0, type.getShape());
    result = tensor::ExtractSliceOp::create(
        rewriter, loc, type, result, rows.offsets, rows.sizes, rows.strides);
  }
  rewriter.replaceOp(op, results);
}

struct LowerToLinalgPass
    : mlir::drc::impl::LowerToLinalgBase<LowerToLinalgPass> {
  using LowerToLinalgBase::LowerToLinalgBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk(
        [&](func::FuncOp func) { mergeWeightGrads(func, rewriter); });
    llvm::DenseMap<Value, Value> sumSquaresOf;
    SmallVector<Operation *> ops;
    DenseMap<Operation *, DenseMap<unsigned, unsigned>> writtenOver;
    getOperation().walk([&](Operation *op) {
      if (isa<DrcDialect>(op->getDialect()))
        ops.push_back(op);
      if (auto fused = dyn_cast<FusedOp>(op))
        writtenOver[op] = writtenOverInputs(fused);
    });
    for (Operation *op : ops) {
      // A region's body is lowered first (post-order walk); its terminator
      // goes with it.
      if (isa<YieldOp>(op))
        continue;
      if (auto fused = dyn_cast<FusedOp>(op)) {
        // Its body goes: forget the sums built in it (a sum sits in the
        // block of the op that read x, so x's scope encloses it).
        SmallVector<Value> inside;
        for (auto [x, ss] : sumSquaresOf)
          if (fused->isProperAncestor(ss.getDefiningOp()))
            inside.push_back(x);
        for (Value x : inside)
          sumSquaresOf.erase(x);
        lowerFused(rewriter, fused, writtenOver.lookup(fused));
        continue;
      }
      FailureOr<bool> lowered =
          lowerOne(op, rewriter, denseEmbeddingGrad, headBlocks, &sumSquaresOf);
      if (failed(lowered))
        return signalPassFailure();
      if (!*lowered && !isa<ParamOp, ParamRefOp, GradStoreOp, AdamWOp>(op)) {
        op->emitError() << "drc-lower-to-linalg: no lowering for '"
                        << op->getName()
                        << "'; run drc-decompose first for sublayer ops";
        return signalPassFailure();
      }
    }
  }
};

} // namespace
