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
// consecutive vectors. A long sum along the row is split into per-thread
// partial sums, so that a block's threads share it too.
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
/// every op elementwise (arith, math) with one result, or a loop index
/// (causal attention's mask compares two).
bool lanewiseBody(linalg::GenericOp op) {
  for (Operation &inner : op.getBody()->without_terminator())
    if (!isa<linalg::IndexOp>(inner) &&
        (!inner.hasTrait<OpTrait::Elementwise>() ||
         inner.getNumResults() != 1 || inner.getNumRegions() != 0))
      return false;
  return true;
}

/// `op` as loops over its dimensions (each dimension of extent 1 a
/// constant 0), `d` innermost in steps of `width`, whose body loads
/// `width` elements along `d` of each operand that uses it as a vector,
/// reads the others as scalars, computes on vectors where a value varies
/// along `d` and on scalars where it does not, and stores a vector, or,
/// for an output reduced along `d`, reduces the vector into the scalar
/// accumulator (in order, as the scalar loop would; or, for a long row,
/// in per-thread partial sums first: splitRowSums). Fails, changing
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
    OpBuilder b(op);
    extents = op.getStaticLoopRanges();
    ivs.assign(extents.size(), Value());
    zero = index(b, 0);
    // The parallel dimensions (the row's last, if it is one) as one
    // parallel loop, so that a GPU block may share them among its threads
    // (drc-gpu-block-regions); then the reduced ones in order, the row's
    // innermost.
    SmallVector<unsigned> reduced;
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
    bool rowReduced =
        !linalg::isParallelIterator(op.getIteratorTypesArray()[d]);
    if (rowReduced && reduced.empty()) {
      if (int64_t slices = sliceCount(combiners)) {
        splitRowSums(b, combiners, slices);
        rewriter.eraseOp(op);
        return success();
      }
    }
    (rowReduced ? reduced : parallel).push_back(d);
    openParallel(b, {});
    for (unsigned dim : reduced) {
      auto loop = scf::ForOp::create(
          b, op.getLoc(), zero, index(b, extents[dim]), index(b, step(dim)));
      ivs[dim] = loop.getInductionVar();
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    SmallVector<Value> sums = iteration(b, combiners, {});
    for (auto [out, sum] : llvm::zip(reducedOutputs(), sums))
      memref::StoreOp::create(b, op.getLoc(), sum, out->get(),
                              indices(b, *out));
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// Vectors of a row one thread sums (split row sums).
  static constexpr int64_t kSliceVectors = 8;

  Value index(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, op.getLoc(), v);
  }

  int64_t step(unsigned dim) { return dim == d ? width : 1; }

  /// Opens one parallel loop over `parallel` (in steps of `width` along the
  /// row) and the extra dimensions of `more` extents, leaving `b` in its
  /// body; returns the extra dimensions' induction variables. Nothing to
  /// loop over opens nothing.
  SmallVector<Value> openParallel(OpBuilder &b, ArrayRef<int64_t> more) {
    SmallVector<Value> lower, upper, steps;
    for (unsigned dim : parallel) {
      lower.push_back(zero);
      upper.push_back(index(b, extents[dim]));
      steps.push_back(index(b, step(dim)));
    }
    for (int64_t n : more) {
      lower.push_back(zero);
      upper.push_back(index(b, n));
      steps.push_back(index(b, 1));
    }
    if (lower.empty())
      return {};
    auto loop = scf::ParallelOp::create(b, op.getLoc(), lower, upper, steps);
    for (auto [dim, iv] : llvm::zip(parallel, loop.getInductionVars()))
      ivs[dim] = iv;
    b.setInsertionPoint(loop.getBody()->getTerminator());
    return llvm::to_vector(
        ValueRange(loop.getInductionVars()).drop_front(parallel.size()));
  }

  /// The outputs reduced along the row, in order.
  SmallVector<OpOperand *> reducedOutputs() {
    SmallVector<OpOperand *> outs;
    for (OpOperand &out : op.getDpsInitsMutable())
      if (!usesRowDim(out))
        outs.push_back(&out);
    return outs;
  }

  /// The value `kind` leaves its other operand unchanged with, for f32-like
  /// `type`; null for the kinds a split sum does not take. (Not
  /// arith::getNeutralElement: its addf element is +0.0, which turns a sum
  /// of -0.0s positive.)
  static Value identity(OpBuilder &b, Location loc, vector::CombiningKind kind,
                        Type type) {
    auto f = dyn_cast<FloatType>(type);
    if (!f)
      return {};
    auto constant = [&](APFloat v) -> Value {
      return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, v));
    };
    switch (kind) {
    case vector::CombiningKind::ADD: // -0 + x is x, even for x = -0
      return constant(
          APFloat::getZero(f.getFloatSemantics(), /*Negative=*/true));
    case vector::CombiningKind::MUL:
      return constant(APFloat::getOne(f.getFloatSemantics()));
    case vector::CombiningKind::MAXIMUMF:
      return constant(
          APFloat::getInf(f.getFloatSemantics(), /*Negative=*/true));
    case vector::CombiningKind::MINIMUMF:
      return constant(APFloat::getInf(f.getFloatSemantics()));
    default:
      return {};
    }
  }

  /// Into how many per-thread partial sums a sum along the row splits
  /// (kSliceVectors vectors each), or 0: not at least two, or a combining
  /// kind without an identity.
  int64_t sliceCount(ArrayRef<Operation *> combiners) {
    int64_t vectors = extents[d] / width;
    if (vectors % kSliceVectors != 0 || vectors < 2 * kSliceVectors)
      return 0;
    for (Operation *combiner : combiners)
      if (!isa<FloatType>(combiner->getResult(0).getType()) ||
          !llvm::is_contained({vector::CombiningKind::ADD,
                               vector::CombiningKind::MUL,
                               vector::CombiningKind::MAXIMUMF,
                               vector::CombiningKind::MINIMUMF},
                              *linalg::getCombinerOpKind(combiner)))
        return 0;
    return vectors / kSliceVectors;
  }

  /// A sum along the row as two parallel loops: partial sums, slice s of
  /// thread-sized ones summing the row's vectors s, s + slices, ... (so
  /// consecutive threads read consecutive vectors), into a temporary
  /// [output..., slices] from the combining kind's identity; then each
  /// output's first value combined with its partial sums in order. On a
  /// GPU block the first loop keeps slices times more threads busy than the
  /// sum's own parallel dimensions would.
  void splitRowSums(OpBuilder &b, ArrayRef<Operation *> combiners,
                    int64_t slices) {
    Location loc = op.getLoc();
    SmallVector<OpOperand *> outs = reducedOutputs();
    SmallVector<Value> partials;
    for (OpOperand *out : outs) {
      auto type = cast<MemRefType>(out->get().getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.push_back(slices);
      partials.push_back(memref::AllocaOp::create(
          b, loc, MemRefType::get(shape, type.getElementType()),
          b.getI64IntegerAttr(64)));
    }
    auto partialAt = [&](OpBuilder &at, OpOperand *out, Value slice) {
      SmallVector<Value> where = indices(at, *out);
      where.push_back(slice);
      return where;
    };
    {
      OpBuilder::InsertionGuard guard(b);
      Value slice = openParallel(b, {slices})[0];
      SmallVector<Value> inits;
      for (Operation *combiner : combiners)
        inits.push_back(identity(b, loc, *linalg::getCombinerOpKind(combiner),
                                 combiner->getResult(0).getType()));
      auto each = scf::ForOp::create(b, loc, zero,
                                     index(b, extents[d] / width / slices),
                                     index(b, 1), inits);
      b.setInsertionPointToStart(each.getBody());
      Value vector = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, each.getInductionVar(),
                                index(b, slices)),
          slice);
      ivs[d] = arith::MulIOp::create(b, loc, vector, index(b, width));
      scf::YieldOp::create(b, loc,
                           iteration(b, combiners, each.getRegionIterArgs()));
      b.setInsertionPointAfter(each);
      for (auto [out, partial, sum] :
           llvm::zip(outs, partials, each.getResults()))
        memref::StoreOp::create(b, loc, sum, partial, partialAt(b, out, slice));
    }
    openParallel(b, {});
    for (auto [out, partial, combiner] : llvm::zip(outs, partials, combiners)) {
      Value first =
          memref::LoadOp::create(b, loc, out->get(), indices(b, *out));
      auto each = scf::ForOp::create(b, loc, zero, index(b, slices),
                                     index(b, 1), ValueRange{first});
      OpBuilder inner = OpBuilder::atBlockBegin(each.getBody());
      Value term = memref::LoadOp::create(
          inner, loc, partial, partialAt(inner, out, each.getInductionVar()));
      scf::YieldOp::create(inner, loc,
                           vector::makeArithReduction(
                               inner, loc, *linalg::getCombinerOpKind(combiner),
                               each.getRegionIterArgs()[0], term));
      memref::StoreOp::create(b, loc, each.getResult(0), out->get(),
                              indices(b, *out));
    }
  }

  /// One iteration at `b` (ivs set): loads of the operands, the body's
  /// arithmetic on vectors where it varies along the row, stores of the
  /// outputs along the row; returns each reduced output's accumulator
  /// combined with this iteration's vector (`vector.reduction`), which
  /// starts from `accumulators` or, if none are given, from the output.
  SmallVector<Value> iteration(OpBuilder &b, ArrayRef<Operation *> combiners,
                               ValueRange accumulators) {
    Location loc = op.getLoc();
    IRMapping map;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg.use_empty())
        continue;
      if (!isa<MemRefType>(operand.get().getType())) {
        map.map(arg, operand.get());
        continue;
      }
      if (op.isDpsInit(&operand) && !usesRowDim(operand) &&
          !accumulators.empty())
        continue; // the accumulators, mapped below
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
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        // The row's index varies by lane: its first plus 0, 1, ...
        Value at = ivs[index.getDim()];
        if (index.getDim() == d) {
          auto lanes = VectorType::get({width}, b.getIndexType());
          SmallVector<APInt> steps;
          for (int64_t lane = 0; lane < width; ++lane)
            steps.push_back(APInt(IndexType::kInternalStorageBitWidth, lane));
          at = arith::AddIOp::create(
              b, loc, vector::BroadcastOp::create(b, loc, lanes, at),
              arith::ConstantOp::create(b, loc, lanes,
                                        DenseElementsAttr::get(lanes, steps)));
          varying.insert(index.getResult());
        }
        map.map(index.getResult(), at);
        continue;
      }
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
    SmallVector<Value> sums;
    for (OpOperand &out : op.getDpsInitsMutable()) {
      unsigned i = out.getOperandNumber() - op.getNumDpsInputs();
      Value result = yield.getOperand(i);
      if (usesRowDim(out)) {
        Value value = map.lookupOrDefault(result);
        if (!varying.contains(result))
          value = vector::BroadcastOp::create(
              b, loc, vectorOf(result.getType()), value);
        vector::StoreOp::create(b, loc, value, out.get(), indices(b, out));
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
      Value start = accumulators.empty() ? map.lookupOrDefault(acc)
                                         : accumulators[sums.size()];
      sums.push_back(vector::ReductionOp::create(
          b, loc, *linalg::getCombinerOpKind(combiner), lanes, start));
    }
    return sums;
  }

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
  SmallVector<int64_t> extents;
  SmallVector<unsigned> parallel; ///< non-unit parallel dimensions
  Value zero;
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
    // Every op on buffers but a kernel's matrix product, which may yet go
    // to cuBLASLt (drc-gpu-linalg-to-loops): a fused region's ops, and the
    // other kernels, whose rows (a softmax's, a norm's) a block then reads
    // coalesced, a long sum along them split among threads.
    // (A fill outside one stays too: before a matrix product it is folded
    // into cuBLASLt's, which then overwrites C; a fill's stores are
    // coalesced anyway.)
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() &&
          (op->getParentOfType<scf::ForallOp>() ||
           !(linalg::isaContractionOpInterface(op) || isa<linalg::FillOp>(op))))
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
