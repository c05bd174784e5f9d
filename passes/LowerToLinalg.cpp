//===- LowerToLinalg.cpp - Kernel-level drc ops -> linalg on tensors -----===//
//
// Each kernel-level op becomes a few linalg.generic ops (plus an scf.for for
// the embedding scatter-add) on tensors of its own element type, so the same
// lowering serves f32 training and f64 gradient checks. Attention works on
// [batch, seq, head, head_dim] views of the [tokens, width] operands.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

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

  Value c(double v) { return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v)); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, loc, x); }
  Value sigmoid(Value x) { return div(c(1.0), add(c(1.0), exp(neg(x)))); }
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
    auto op = linalg::GenericOp::create(b, 
        loc, TypeRange(inits), inputs, inits, maps, iterators,
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
    return tensor::ExpandShapeOp::create(b, 
        loc, tensor({n / seqLen, seqLen, nHead, d / nHead}), x,
        ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
  }
  /// [B, T, H, dh] -> [N, D].
  Value tokens(Value x) {
    auto s = cast<RankedTensorType>(x.getType()).getShape();
    return tensor::CollapseShapeOp::create(b, 
        loc, tensor({s[0] * s[1], s[2] * s[3]}), x,
        ArrayRef<ReassociationIndices>{{0, 1}, {2, 3}});
  }

  /// Row-wise sum of squares of x over its last dimension.
  Value rowSumSquares(Value x) {
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
                        Value r = s.rsqrt(s.add(s.div(a[1], s.c(width)), s.c(eps)));
                        k.yield(s, s.mul(s.mul(a[0], r), a[2]));
                      });
  return k.generic1({op.getInput(), ss}, k.empty(type.getShape()),
                    {all, row, all}, its, [&](Scalar &s, ValueRange a) {
                      Value r = s.rsqrt(s.add(s.div(a[1], s.c(width)), s.c(eps)));
                      k.yield(s, s.mul(a[0], r));
                    });
}

Value lowerRMSNormGrad(KernelBuilder &k, RMSNormGradOp op) {
  // dx = r (g dy - xhat mean(g dy xhat)), r = rsqrt(mean x^2 + eps).
  auto type = cast<RankedTensorType>(op.getType());
  unsigned rank = type.getRank();
  double width = type.getShape().back(), eps = op.getEps().convertToDouble();
  AffineMap all, row, last;
  rowMaps(k, rank, all, row, last);
  Value x = op.getInput(), dy = op.getResultGrad(), gain = op.getGain();
  Value ss = k.rowSumSquares(x);
  SmallVector<IteratorType> redIts(rank - 1, kPar);
  redIts.push_back(kRed);
  SmallVector<Value> dotInputs{x, dy};
  SmallVector<AffineMap> dotMaps{all, all};
  if (gain) {
    dotInputs.push_back(gain);
    dotMaps.push_back(last);
  }
  dotMaps.push_back(row);
  Value dot = k.generic1(dotInputs, k.filled(type.getShape().drop_back(), 0.0),
                         dotMaps, redIts, [&](Scalar &s, ValueRange a) {
                           Value gdy = gain ? s.mul(a[1], a[2]) : a[1];
                           k.yield(s, s.add(a.back(), s.mul(gdy, a[0])));
                         });
  SmallVector<Value> inputs{x, dy, ss, dot};
  SmallVector<AffineMap> maps{all, all, row, row};
  if (gain) {
    inputs.push_back(gain);
    maps.push_back(last);
  }
  maps.push_back(all);
  return k.generic1(inputs, k.empty(type.getShape()), maps,
                    SmallVector<IteratorType>(rank, kPar),
                    [&](Scalar &s, ValueRange a) {
                      Value r = s.rsqrt(s.add(s.div(a[2], s.c(width)), s.c(eps)));
                      Value gdy = gain ? s.mul(a[1], a[4]) : a[1];
                      Value corr = s.mul(s.mul(a[0], s.mul(r, r)),
                                         s.div(a[3], s.c(width)));
                      k.yield(s, s.mul(r, s.sub(gdy, corr)));
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
                      Value r = s.rsqrt(s.add(s.div(a[2], s.c(width)), s.c(eps)));
                      k.yield(s, s.add(a[3], s.mul(s.mul(a[0], a[1]), r)));
                    });
}

//===----------------------------------------------------------------------===//
// Dense and elementwise
//===----------------------------------------------------------------------===//

Value lowerMatmul(KernelBuilder &k, MatmulOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  // Dims (m, n, kk).
  AffineMap lhs = op.getTransposeLhs() ? k.map(3, {2, 0}) : k.map(3, {0, 2});
  AffineMap rhs = op.getTransposeRhs() ? k.map(3, {1, 2}) : k.map(3, {2, 1});
  return k.generic1({op.getLhs(), op.getRhs()},
                    k.filled(type.getShape(), 0.0),
                    {lhs, rhs, k.map(3, {0, 1})}, {kPar, kPar, kRed},
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                    });
}

SmallVector<AffineMap> identityMaps(KernelBuilder &k, unsigned rank,
                                   unsigned count) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i < rank; ++i)
    dims.push_back(i);
  return SmallVector<AffineMap>(count, k.map(rank, dims));
}

Value lowerAdd(KernelBuilder &k, AddOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  return k.generic1({op.getLhs(), op.getRhs()}, k.empty(type.getShape()),
                    identityMaps(k, type.getRank(), 3),
                    SmallVector<IteratorType>(type.getRank(), kPar),
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.add(a[0], a[1]));
                    });
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
  return k.generic({op.getGate(), op.getUp(), op.getResultGrad()},
                   {k.empty(type.getShape()), k.empty(type.getShape())},
                   identityMaps(k, type.getRank(), 5),
                   SmallVector<IteratorType>(type.getRank(), kPar),
                   [&](Scalar &s, ValueRange a) {
                     Value sig = s.sigmoid(a[0]);
                     Value dsilu = s.mul(sig, s.add(s.c(1.0),
                                                    s.mul(a[0], s.sub(s.c(1.0), sig))));
                     k.yield(s, {s.mul(s.mul(a[2], a[1]), dsilu),
                                 s.mul(a[2], s.mul(a[0], sig))});
                   });
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
                      Value row = arith::IndexCastOp::create(s.b, 
                          s.loc, s.b.getIndexType(), a[0]);
                      Value v = tensor::ExtractOp::create(s.b, 
                          s.loc, table, ValueRange{row, s.index(1)});
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
  auto loop = scf::ForOp::create(b, 
      loc, zero, upper, one, ValueRange{k.filled(type.getShape(), 0.0)},
      [&](OpBuilder &lb, Location ll, Value t, ValueRange iter) {
        KernelBuilder inner{lb, ll, k.element};
        Value tok = tensor::ExtractOp::create(lb, ll, op.getTokens(), t);
        Value v = arith::IndexCastOp::create(lb, ll, lb.getIndexType(), tok);
        SmallVector<OpFoldResult> sizes{lb.getIndexAttr(1), lb.getIndexAttr(d)};
        SmallVector<OpFoldResult> strides{lb.getIndexAttr(1), lb.getIndexAttr(1)};
        auto rowType = inner.tensor({d});
        Value dyRow = tensor::ExtractSliceOp::create(lb, 
            ll, rowType, op.getResultGrad(),
            ArrayRef<OpFoldResult>{t, lb.getIndexAttr(0)}, sizes, strides);
        Value accRow = tensor::ExtractSliceOp::create(lb, 
            ll, rowType, iter[0],
            ArrayRef<OpFoldResult>{v, lb.getIndexAttr(0)}, sizes, strides);
        Value sum = inner.generic1(dyRow, accRow,
                                   identityMaps(inner, 1, 2), {kPar},
                                   [&](Scalar &s, ValueRange a) {
                                     inner.yield(s, s.add(a[0], a[1]));
                                   });
        Value updated = tensor::InsertSliceOp::create(lb, 
            ll, sum, iter[0], ArrayRef<OpFoldResult>{v, lb.getIndexAttr(0)},
            sizes, strides);
        scf::YieldOp::create(lb, ll, updated);
      });
  return loop.getResult(0);
}

/// Row max and row sum of exp(x - max) of logits [N, V].
std::pair<Value, Value> softmaxStats(KernelBuilder &k, Value logits) {
  auto shape = cast<RankedTensorType>(logits.getType()).getShape();
  Value mx = k.generic1(logits, k.filled({shape[0]}, -INFINITY),
                        {k.map(2, {0, 1}), k.map(2, {0})}, {kPar, kRed},
                        [&](Scalar &s, ValueRange a) {
                          k.yield(s, s.max(a[1], a[0]));
                        });
  Value se = k.generic1({logits, mx}, k.filled({shape[0]}, 0.0),
                        {k.map(2, {0, 1}), k.map(2, {0}), k.map(2, {0})},
                        {kPar, kRed}, [&](Scalar &s, ValueRange a) {
                          k.yield(s, s.add(a[2], s.exp(s.sub(a[0], a[1]))));
                        });
  return {mx, se};
}

Value lowerCrossEntropy(KernelBuilder &k, CrossEntropyOp op) {
  Value logits = op.getLogits();
  int64_t n = cast<RankedTensorType>(logits.getType()).getDimSize(0);
  auto [mx, se] = softmaxStats(k, logits);
  AffineMap tok = k.map(1, {0});
  Value sum = k.generic1(
      {mx, se, op.getTargets()}, k.filled({}, 0.0),
      {tok, tok, tok, AffineMap::get(1, 0, {}, k.b.getContext())}, {kRed},
      [&](Scalar &s, ValueRange a) {
        Value target = arith::IndexCastOp::create(s.b, s.loc, s.b.getIndexType(), a[2]);
        Value picked = tensor::ExtractOp::create(s.b, 
            s.loc, logits, ValueRange{s.index(0), target});
        Value nll = s.sub(s.add(s.log(a[1]), a[0]), picked);
        k.yield(s, s.add(a[3], nll));
      });
  AffineMap scalar = AffineMap::get(0, 0, {}, k.b.getContext());
  return k.generic1(sum, k.empty({}), {scalar, scalar}, {},
                    [&](Scalar &s, ValueRange a) {
                      k.yield(s, s.div(a[0], s.c(double(n))));
                    });
}

Value lowerCrossEntropyGrad(KernelBuilder &k, CrossEntropyGradOp op) {
  Value logits = op.getLogits();
  auto shape = cast<RankedTensorType>(logits.getType()).getShape();
  auto [mx, se] = softmaxStats(k, logits);
  Value dloss = tensor::ExtractOp::create(k.b, k.loc, op.getResultGrad(), ValueRange{});
  AffineMap all = k.map(2, {0, 1}), row = k.map(2, {0});
  return k.generic1(
      {logits, mx, se, op.getTargets()}, k.empty(shape),
      {all, row, row, row, all}, {kPar, kPar}, [&](Scalar &s, ValueRange a) {
        Value p = s.div(s.exp(s.sub(a[0], a[1])), a[2]);
        Value target = arith::IndexCastOp::create(s.b, s.loc, s.b.getIndexType(), a[3]);
        Value isTarget = arith::CmpIOp::create(s.b, 
            s.loc, arith::CmpIPredicate::eq, s.index(1), target);
        Value g = s.sub(p, s.select(isTarget, s.c(1.0), s.c(0.0)));
        k.yield(s, s.mul(g, s.div(dloss, s.c(double(shape[0])))));
      });
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
  Value x = op.getInput();
  Value cosT = cs[0], sinT = cs[1];
  return k.generic1(x, k.empty(type.getShape()),
                    {k.map(2, {0, 1}), k.map(2, {0, 1})}, {kPar, kPar},
                    [&](Scalar &s, ValueRange a) {
                      OpBuilder &b = s.b;
                      Location l = s.loc;
                      auto ci = [&](int64_t v) {
                        return arith::ConstantIndexOp::create(b, l, v).getResult();
                      };
                      Value n = s.index(0), col = s.index(1);
                      Value t = arith::RemUIOp::create(b, l, n, ci(seqLen));
                      Value within = arith::RemUIOp::create(b, l, col, ci(headDim));
                      Value low = arith::CmpIOp::create(b, 
                          l, arith::CmpIPredicate::ult, within, ci(half));
                      Value i = arith::SelectOp::create(b, 
                          l, low, within, arith::SubIOp::create(b, l, within, ci(half)));
                      Value partnerCol = arith::SelectOp::create(b, 
                          l, low, arith::AddIOp::create(b, l, col, ci(half)),
                          arith::SubIOp::create(b, l, col, ci(half)));
                      Value partner = tensor::ExtractOp::create(b, 
                          l, x, ValueRange{n, partnerCol});
                      Value c = tensor::ExtractOp::create(b, l, cosT, ValueRange{t, i});
                      Value sn = tensor::ExtractOp::create(b, l, sinT, ValueRange{t, i});
                      // low half: x c - p s; high half: x c + p s.
                      Value ps = s.mul(partner, sn);
                      Value rotated = s.select(low, s.sub(s.mul(a[0], c), ps),
                                               s.add(s.mul(a[0], c), ps));
                      k.yield(s, rotated);
                    });
}

/// Scaled scores S[b,h,t,s] = scale q[b,t,h,:] . k[b,s,h,:].
Value attentionScores(KernelBuilder &k, Value q4, Value k4, double scale) {
  auto s = cast<RankedTensorType>(q4.getType()).getShape(); // B T H dh
  // Dims (b, h, t, s, i).
  return k.generic1({q4, k4}, k.filled({s[0], s[2], s[1], s[1]}, 0.0),
                    {k.map(5, {0, 2, 1, 4}), k.map(5, {0, 3, 1, 4}),
                     k.map(5, {0, 1, 2, 3})},
                    {kPar, kPar, kPar, kPar, kRed},
                    [&](Scalar &sc, ValueRange a) {
                      k.yield(sc, sc.add(a[2], sc.mul(sc.mul(a[0], a[1]), sc.c(scale))));
                    });
}

/// P[b,h,t,s] = exp(S - lse[b,h,t]) for s <= t, else 0.
Value attentionProbs(KernelBuilder &k, Value scores, Value lse) {
  auto shape = cast<RankedTensorType>(scores.getType()).getShape();
  return k.generic1({scores, lse}, k.empty(shape),
                    {k.map(4, {0, 1, 2, 3}), k.map(4, {0, 1, 2}),
                     k.map(4, {0, 1, 2, 3})},
                    {kPar, kPar, kPar, kPar}, [&](Scalar &s, ValueRange a) {
                      Value keep = s.indexLE(s.index(3), s.index(2));
                      k.yield(s, s.select(keep, s.exp(s.sub(a[0], a[1])), s.c(0.0)));
                    });
}

/// [B, T, H] <-> [B, H, T] for the log-sum-exp.
Value lseToHeadMajor(KernelBuilder &k, Value lse3) { // [B,T,H] -> [B,H,T]
  auto s = cast<RankedTensorType>(lse3.getType()).getShape();
  return k.generic1(lse3, k.empty({s[0], s[2], s[1]}),
                    {k.map(3, {0, 2, 1}), k.map(3, {0, 1, 2})}, {kPar, kPar, kPar},
                    [&](Scalar &sc, ValueRange a) { k.yield(sc, a[0]); });
}

SmallVector<Value> lowerCausalAttention(KernelBuilder &k, CausalAttentionOp op) {
  int64_t nHead = op.getNHead(), seqLen = op.getSeqLen();
  auto type = cast<RankedTensorType>(op.getQ().getType());
  double scale = 1.0 / std::sqrt(double(type.getDimSize(1) / nHead));
  Value q4 = k.heads(op.getQ(), seqLen, nHead);
  Value k4 = k.heads(op.getK(), seqLen, nHead);
  Value v4 = k.heads(op.getV(), seqLen, nHead);
  auto sh = cast<RankedTensorType>(q4.getType()).getShape(); // B T H dh
  Value scores = attentionScores(k, q4, k4, scale);
  AffineMap all4 = k.map(4, {0, 1, 2, 3}), row4 = k.map(4, {0, 1, 2});
  SmallVector<IteratorType> redS{kPar, kPar, kPar, kRed};
  Value mx = k.generic1(scores, k.filled({sh[0], sh[2], sh[1]}, -INFINITY),
                        {all4, row4}, redS, [&](Scalar &s, ValueRange a) {
                          Value keep = s.indexLE(s.index(3), s.index(2));
                          k.yield(s, s.select(keep, s.max(a[1], a[0]), a[1]));
                        });
  Value se = k.generic1({scores, mx}, k.filled({sh[0], sh[2], sh[1]}, 0.0),
                        {all4, row4, row4}, redS, [&](Scalar &s, ValueRange a) {
                          Value keep = s.indexLE(s.index(3), s.index(2));
                          Value e = s.exp(s.sub(a[0], a[1]));
                          k.yield(s, s.select(keep, s.add(a[2], e), a[2]));
                        });
  AffineMap id3 = k.map(3, {0, 1, 2});
  Value lse = k.generic1({mx, se}, k.empty({sh[0], sh[2], sh[1]}),
                         {id3, id3, id3}, {kPar, kPar, kPar},
                         [&](Scalar &s, ValueRange a) {
                           k.yield(s, s.add(a[0], s.log(a[1])));
                         });
  Value probs = attentionProbs(k, scores, lse);
  // O[b,t,h,i] = sum_s P[b,h,t,s] v[b,s,h,i]; dims (b, t, h, i, s).
  Value out = k.generic1({probs, v4}, k.filled(sh, 0.0),
                         {k.map(5, {0, 2, 1, 4}), k.map(5, {0, 4, 2, 3}),
                          k.map(5, {0, 1, 2, 3})},
                         {kPar, kPar, kPar, kPar, kRed},
                         [&](Scalar &s, ValueRange a) {
                           k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
                         });
  // lse as [N, H]: [B,H,T] -> [B,T,H] -> collapse.
  Value lseBTH = k.generic1(lse, k.empty({sh[0], sh[1], sh[2]}),
                            {k.map(3, {0, 2, 1}), id3}, {kPar, kPar, kPar},
                            [&](Scalar &s, ValueRange a) { k.yield(s, a[0]); });
  Value lse2 = tensor::CollapseShapeOp::create(k.b, 
      k.loc, k.tensor({sh[0] * sh[1], sh[2]}), lseBTH,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  return {k.tokens(out), lse2};
}

SmallVector<Value> lowerCausalAttentionGrad(KernelBuilder &k,
                                            CausalAttentionGradOp op) {
  int64_t nHead = op.getNHead(), seqLen = op.getSeqLen();
  auto type = cast<RankedTensorType>(op.getQ().getType());
  double scale = 1.0 / std::sqrt(double(type.getDimSize(1) / nHead));
  Value q4 = k.heads(op.getQ(), seqLen, nHead);
  Value k4 = k.heads(op.getK(), seqLen, nHead);
  Value v4 = k.heads(op.getV(), seqLen, nHead);
  Value o4 = k.heads(op.getOut(), seqLen, nHead);
  Value do4 = k.heads(op.getResultGrad(), seqLen, nHead);
  auto sh = cast<RankedTensorType>(q4.getType()).getShape(); // B T H dh
  Value lse3 = tensor::ExpandShapeOp::create(k.b, 
      k.loc, k.tensor({sh[0], sh[1], sh[2]}), op.getLse(),
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  Value lse = lseToHeadMajor(k, lse3);
  Value probs = attentionProbs(k, attentionScores(k, q4, k4, scale), lse);
  SmallVector<IteratorType> par4Red{kPar, kPar, kPar, kPar, kRed};
  auto mac = [&](Scalar &s, ValueRange a) {
    k.yield(s, s.add(a[2], s.mul(a[0], a[1])));
  };
  // dV[b,s,h,i] = sum_t P[b,h,t,s] dO[b,t,h,i]; dims (b, s, h, i, t).
  Value dv = k.generic1({probs, do4}, k.filled(sh, 0.0),
                        {k.map(5, {0, 2, 4, 1}), k.map(5, {0, 4, 2, 3}),
                         k.map(5, {0, 1, 2, 3})},
                        par4Red, mac);
  // dP[b,h,t,s] = sum_i dO[b,t,h,i] v[b,s,h,i]; dims (b, h, t, s, i).
  Value dp = k.generic1({do4, v4}, k.filled({sh[0], sh[2], sh[1], sh[1]}, 0.0),
                        {k.map(5, {0, 2, 1, 4}), k.map(5, {0, 3, 1, 4}),
                         k.map(5, {0, 1, 2, 3})},
                        par4Red, mac);
  // D[b,h,t] = sum_i dO[b,t,h,i] O[b,t,h,i]; dims (b, h, t, i).
  Value dsum = k.generic1({do4, o4}, k.filled({sh[0], sh[2], sh[1]}, 0.0),
                          {k.map(4, {0, 2, 1, 3}), k.map(4, {0, 2, 1, 3}),
                           k.map(4, {0, 1, 2})},
                          {kPar, kPar, kPar, kRed}, mac);
  // dS = P (dP - D), scaled here once for both dQ and dK.
  AffineMap all4 = k.map(4, {0, 1, 2, 3}), row4 = k.map(4, {0, 1, 2});
  Value ds = k.generic1({probs, dp, dsum}, k.empty({sh[0], sh[2], sh[1], sh[1]}),
                        {all4, all4, row4, all4}, {kPar, kPar, kPar, kPar},
                        [&](Scalar &s, ValueRange a) {
                          k.yield(s, s.mul(s.mul(a[0], s.sub(a[1], a[2])), s.c(scale)));
                        });
  // dQ[b,t,h,i] = sum_s dS[b,h,t,s] k[b,s,h,i]; dims (b, t, h, i, s).
  Value dq = k.generic1({ds, k4}, k.filled(sh, 0.0),
                        {k.map(5, {0, 2, 1, 4}), k.map(5, {0, 4, 2, 3}),
                         k.map(5, {0, 1, 2, 3})},
                        par4Red, mac);
  // dK[b,s,h,i] = sum_t dS[b,h,t,s] q[b,t,h,i]; dims (b, s, h, i, t).
  Value dk = k.generic1({ds, q4}, k.filled(sh, 0.0),
                        {k.map(5, {0, 2, 4, 1}), k.map(5, {0, 4, 2, 3}),
                         k.map(5, {0, 1, 2, 3})},
                        par4Red, mac);
  return {k.tokens(dq), k.tokens(dk), k.tokens(dv)};
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Replaces `op` by its lowering; returns false for ops left to other passes.
FailureOr<bool> lowerOne(Operation *op, IRRewriter &rewriter) {
  rewriter.setInsertionPoint(op);
  Type element;
  for (Value v : llvm::concat<Value>(op->getResults(), op->getOperands()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && isa<FloatType>(t.getElementType())) {
      element = t.getElementType();
      break;
    }
  KernelBuilder k{rewriter, op->getLoc(), element};
  SmallVector<Value> results;
  bool handled = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](RMSNormOp o) { results = {lowerRMSNorm(k, o)}; })
      .Case([&](RMSNormGradOp o) { results = {lowerRMSNormGrad(k, o)}; })
      .Case([&](RMSNormGainGradOp o) { results = {lowerRMSNormGainGrad(k, o)}; })
      .Case([&](MatmulOp o) { results = {lowerMatmul(k, o)}; })
      .Case([&](AddOp o) { results = {lowerAdd(k, o)}; })
      .Case([&](SiluMulOp o) { results = {lowerSiluMul(k, o)}; })
      .Case([&](SiluMulGradOp o) { results = lowerSiluMulGrad(k, o); })
      .Case([&](EmbedOp o) { results = {lowerEmbed(k, o)}; })
      .Case([&](EmbedGradOp o) { results = {lowerEmbedGrad(k, o)}; })
      .Case([&](CrossEntropyOp o) { results = {lowerCrossEntropy(k, o)}; })
      .Case([&](CrossEntropyGradOp o) { results = {lowerCrossEntropyGrad(k, o)}; })
      .Case([&](RopeOp o) { results = {lowerRope(k, o)}; })
      .Case([&](CausalAttentionOp o) { results = lowerCausalAttention(k, o); })
      .Case([&](CausalAttentionGradOp o) { results = lowerCausalAttentionGrad(k, o); })
      .Default([&](Operation *) { handled = false; });
  if (!handled)
    return false;
  rewriter.replaceOp(op, results);
  return true;
}

struct LowerToLinalgPass : mlir::drc::impl::LowerToLinalgBase<LowerToLinalgPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<DrcDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      FailureOr<bool> lowered = lowerOne(op, rewriter);
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
