//===- GpuVectorizeRows.cpp - A token's row loops in short vectors -------===//
//
// On a GPU a fused residual region runs one token per thread block: every
// linalg op inside the token loop becomes loops over the token's rows,
// their parallel iterations shared among the block's threads
// (drc-gpu-block-regions). Here each such op whose rows are contiguous
// becomes loops that step over `width` neighbouring elements of the row:
// one vector load, arithmetic and store per iteration instead of `width`
// scalar ones (drc-gpu-align-vectors later proves the accesses aligned, so
// NVPTX makes each one ld.global.v4.b32), consecutive threads on
// consecutive vectors.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUVECTORIZEROWS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// Whether `operand` is read or written along a contiguous row: its
/// memref's last stride is 1.
bool contiguousRows(OpOperand &operand) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type || type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// The loop dimension to vectorise `op` along, if any (static extents
/// only): the one that is the last index of the most operands with
/// contiguous rows, whose extent `width` divides; every operand that uses it
/// must use it as its last, contiguous index, and the others see it as a
/// broadcast.
std::optional<unsigned> rowDimension(linalg::LinalgOp op, int64_t width) {
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<int> votes(extents.size());
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (AffineExpr e : map.getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(e))
        return std::nullopt;
    if (map.getNumResults() == 0 || !contiguousRows(operand))
      continue;
    if (auto last = dyn_cast<AffineDimExpr>(map.getResults().back()))
      ++votes[last.getPosition()];
  }
  std::optional<unsigned> best;
  for (unsigned d = 0; d < extents.size(); ++d)
    if (votes[d] > 0 && extents[d] % width == 0 &&
        (!best || votes[d] >= votes[*best]))
      best = d;
  if (!best)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (dim && dim.getPosition() == *best &&
          (i + 1 != map.getNumResults() || !contiguousRows(operand)))
        return std::nullopt;
    }
  }
  return best;
}

/// Whether `op`'s body is arithmetic that works lane by lane on vectors:
/// every op elementwise (arith, math) with one result, and no linalg.index.
bool lanewiseBody(linalg::GenericOp op) {
  for (Operation &inner : op.getBody()->without_terminator())
    if (!inner.hasTrait<OpTrait::Elementwise>() || inner.getNumResults() != 1 ||
        inner.getNumRegions() != 0)
      return false;
  return true;
}

/// `op` as loops over its dimensions (each dimension of extent 1 a
/// constant 0), `d` innermost in steps of `width`, whose body loads
/// `width` elements along `d` of each operand that uses it as a vector,
/// reads the others as scalars, computes on vectors where a value varies
/// along `d` and on scalars where it does not, and stores a vector, or,
/// for an output reduced along `d`, reduces the vector into the scalar
/// accumulator (in order, as the scalar loop would). Fails, changing
/// nothing, when an output's reduction has no single combining op.
class RowVectorizer {
public:
  RowVectorizer(linalg::GenericOp op, unsigned d, int64_t width)
      : op(op), d(d), width(width) {}

  LogicalResult run(RewriterBase &rewriter) {
    SmallVector<Operation *> combiners;
    for (OpOperand &out : op.getDpsInitsMutable()) {
      if (usesRowDim(out))
        continue;
      unsigned i = out.getOperandNumber() - op.getNumDpsInputs();
      SmallVector<Operation *> ops;
      if (!op.getRegionOutputArgs()[i].hasOneUse() ||
          !matchReduction(op.getRegionOutputArgs(), i, ops) ||
          ops.size() != 1 || !linalg::getCombinerOpKind(ops.front()))
        return failure();
      combiners.push_back(ops.front());
    }
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    ivs.assign(extents.size(), Value());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    auto step = [&](unsigned dim) { return dim == d ? width : 1; };
    // The parallel dimensions (the row's last, if it is one) as one
    // parallel loop, so that a GPU block may share them among its threads
    // (drc-gpu-block-regions); then the reduced ones in order, the row's
    // innermost.
    SmallVector<unsigned> parallel, reduced;
    for (unsigned dim = 0; dim < extents.size(); ++dim) {
      if (dim == d)
        continue;
      if (extents[dim] == 1)
        ivs[dim] = zero;
      else if (linalg::isParallelIterator(op.getIteratorTypesArray()[dim]))
        parallel.push_back(dim);
      else
        reduced.push_back(dim);
    }
    (linalg::isParallelIterator(op.getIteratorTypesArray()[d]) ? parallel
                                                               : reduced)
        .push_back(d);
    if (!parallel.empty()) {
      SmallVector<Value> lower, upper, steps;
      for (unsigned dim : parallel) {
        lower.push_back(zero);
        upper.push_back(index(extents[dim]));
        steps.push_back(index(step(dim)));
      }
      auto loop = scf::ParallelOp::create(b, loc, lower, upper, steps);
      for (auto [dim, iv] : llvm::zip(parallel, loop.getInductionVars()))
        ivs[dim] = iv;
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    for (unsigned dim : reduced) {
      auto loop = scf::ForOp::create(b, loc, zero, index(extents[dim]),
                                     index(step(dim)));
      ivs[dim] = loop.getInductionVar();
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }

    IRMapping map;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg.use_empty())
        continue;
      if (!isa<MemRefType>(operand.get().getType())) {
        map.map(arg, operand.get());
        continue;
      }
      SmallVector<Value> at = indices(b, operand);
      if (usesRowDim(operand)) {
        varying.insert(arg);
        map.map(arg, vector::LoadOp::create(b, loc, vectorOf(arg.getType()),
                                            operand.get(), at));
      } else {
        map.map(arg, memref::LoadOp::create(b, loc, operand.get(), at));
      }
    }
    for (Operation &inner : op.getBody()->without_terminator()) {
      if (llvm::is_contained(combiners, &inner))
        continue; // the reduction, below
      bool varies = llvm::any_of(inner.getOperands(),
                                 [&](Value v) { return varying.contains(v); });
      if (!varies) {
        b.clone(inner, map);
        continue;
      }
      SmallVector<Value> operands;
      for (Value v : inner.getOperands()) {
        Value mapped = map.lookupOrDefault(v);
        operands.push_back(varying.contains(v)
                               ? mapped
                               : vector::BroadcastOp::create(
                                     b, loc, vectorOf(v.getType()), mapped));
      }
      Operation *vectorOp =
          b.create(loc, inner.getName().getIdentifier(), operands,
                   {vectorOf(inner.getResult(0).getType())}, inner.getAttrs());
      map.map(inner.getResult(0), vectorOp->getResult(0));
      varying.insert(inner.getResult(0));
    }
    auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
    for (OpOperand &out : op.getDpsInitsMutable()) {
      unsigned i = out.getOperandNumber() - op.getNumDpsInputs();
      Value result = yield.getOperand(i);
      SmallVector<Value> at = indices(b, out);
      if (usesRowDim(out)) {
        Value value = map.lookupOrDefault(result);
        if (!varying.contains(result))
          value = vector::BroadcastOp::create(
              b, loc, vectorOf(result.getType()), value);
        vector::StoreOp::create(b, loc, value, out.get(), at);
        continue;
      }
      Operation *combiner = result.getDefiningOp();
      BlockArgument acc = op.getRegionOutputArgs()[i];
      Value term = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                  : combiner->getOperand(0);
      Value lanes = map.lookupOrDefault(term);
      if (!varying.contains(term))
        lanes = vector::BroadcastOp::create(b, loc, vectorOf(term.getType()),
                                            lanes);
      Value reduced = vector::ReductionOp::create(
          b, loc, *linalg::getCombinerOpKind(combiner), lanes,
          map.lookupOrDefault(acc));
      memref::StoreOp::create(b, loc, reduced, out.get(), at);
    }
    rewriter.eraseOp(op);
    return success();
  }

private:
  bool usesRowDim(OpOperand &operand) {
    return op.getMatchingIndexingMap(&operand).isFunctionOfDim(d);
  }

  VectorType vectorOf(Type element) {
    return VectorType::get({width}, element);
  }

  /// Where this iteration reads or writes `operand`.
  SmallVector<Value> indices(OpBuilder &b, OpOperand &operand) {
    SmallVector<Value> at;
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        at.push_back(ivs[dim.getPosition()]);
      else
        at.push_back(arith::ConstantIndexOp::create(
            b, op.getLoc(), cast<AffineConstantExpr>(e).getValue()));
    }
    return at;
  }

  linalg::GenericOp op;
  unsigned d;
  int64_t width;
  SmallVector<Value> ivs;
  llvm::DenseSet<Value> varying;
};

struct GpuVectorizeRowsPass
    : mlir::drc::impl::GpuVectorizeRowsBase<GpuVectorizeRowsPass> {
  using GpuVectorizeRowsBase::GpuVectorizeRowsBase;

  void runOnOperation() override {
    if (width < 2) {
      getOperation().emitError("drc-gpu-vectorize-rows: width must be at "
                               "least 2");
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op->getParentOfType<scf::ForallOp>() && op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      std::optional<unsigned> d = rowDimension(op, width);
      if (!d)
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> general =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(general))
          continue;
        generic = *general;
      }
      if (lanewiseBody(generic))
        (void)RowVectorizer(generic, *d, width).run(rewriter);
    }
  }
};

} // namespace
