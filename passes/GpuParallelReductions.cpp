//===- GpuParallelReductions.cpp - Reductions a GPU runs in parallel -----===//
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUPARALLELREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

using utils::IteratorType;

/// The most partial sums one split makes: enough threads to fill a GPU.
constexpr int64_t kMaxPartials = 65536;
/// The fewest elements each partial sum adds.
constexpr int64_t kMinPerPartial = 32;

/// Parallel dimensions first, reductions after, each in their order.
void parallelFirst(linalg::GenericOp op, RewriterBase &rewriter) {
  SmallVector<unsigned> order;
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == IteratorType::parallel)
      order.push_back(unsigned(d));
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == IteratorType::reduction)
      order.push_back(unsigned(d));
  if (llvm::is_sorted(order))
    return;
  rewriter.setInsertionPoint(op);
  (void)linalg::interchangeGenericOp(rewriter, op, order);
}

/// The number of partial sums to split a full reduction of `n` elements
/// into: the largest power of two that leaves each at least kMinPerPartial
/// elements; 1 when there are fewer than 8.
int64_t partialsFor(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= kMaxPartials && n / (p * 2) >= kMinPerPartial)
    p *= 2;
  return p >= 8 ? p : 1;
}

/// A full sum on buffers: every dimension a reduction of static size,
/// inputs read along all of them (or 0-d), a 0-d output, and a body that
/// does not use indices and yields `arith.addf(value, out)` with `out`
/// used nowhere else.
bool isFullSum(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumLoops() == 0 || op.getNumReductionLoops() != op.getNumLoops() ||
      ShapedType::isDynamicShape(op.getStaticLoopRanges()))
    return false;
  MLIRContext *context = op.getContext();
  unsigned rank = op.getNumLoops();
  AffineMap along = AffineMap::getMultiDimIdentityMap(rank, context);
  AffineMap scalar = AffineMap::get(rank, 0, context);
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map != along && map != scalar)
      return false;
  }
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) != scalar ||
      !op.getRegion().getOps<linalg::IndexOp>().empty())
    return false;
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  return add && out.hasOneUse() && (add.getLhs() == out || add.getRhs() == out);
}

/// The same computation as full sum `op` over `rank` new loops with inputs
/// reshaped by `reshape` (null: not possible) and indexed by `along`,
/// 0-d inputs kept, writing `output` through `outMap`.
std::optional<linalg::GenericOp>
reshapedSum(linalg::GenericOp op, RewriterBase &rewriter, unsigned rank,
            AffineMap along, AffineMap outMap, Value output,
            ArrayRef<IteratorType> iterators,
            function_ref<Value(Value)> reshape) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (cast<MemRefType>(input->get().getType()).getRank() == 0) {
      inputs.push_back(input->get());
      maps.push_back(AffineMap::get(rank, 0, op.getContext()));
      continue;
    }
    Value reshaped = reshape(input->get());
    if (!reshaped)
      return std::nullopt;
    inputs.push_back(reshaped);
    maps.push_back(along);
  }
  maps.push_back(outMap);
  auto sum = linalg::GenericOp::create(rewriter, op.getLoc(), inputs,
                                       ValueRange{output}, maps, iterators);
  rewriter.cloneRegionBefore(op.getRegion(), sum.getRegion(),
                             sum.getRegion().end());
  return sum;
}

/// A full sum over several dimensions as one over a single dimension, its
/// inputs collapsed (when their layouts allow); nothing otherwise.
std::optional<linalg::GenericOp> flatten(linalg::GenericOp op,
                                         RewriterBase &rewriter) {
  if (op.getNumLoops() == 1)
    return op;
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  ReassociationIndices all;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    all.push_back(int64_t(d));
  SmallVector<ReassociationIndices> reassociation{all};
  rewriter.setInsertionPoint(op);
  std::optional<linalg::GenericOp> flat = reshapedSum(
      op, rewriter, 1, AffineMap::getMultiDimIdentityMap(1, context),
      AffineMap::get(1, 0, context), op.getDpsInitOperand(0)->get(),
      {IteratorType::reduction}, [&](Value input) -> Value {
        if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
                cast<MemRefType>(input.getType()), reassociation))
          return nullptr;
        return memref::CollapseShapeOp::create(rewriter, loc, input,
                                               reassociation);
      });
  if (flat)
    rewriter.eraseOp(op);
  return flat;
}

/// sum_i f(x_i) into out, as partial[p] = sum_j f(x[j * P + p]) (thread p
/// reads consecutive addresses with its neighbours) and then out +=
/// sum_p partial[p], which is split again while it is large.
void splitSum(linalg::GenericOp op, int64_t n, RewriterBase &rewriter) {
  int64_t partials = partialsFor(n);
  if (partials == 1)
    return;
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  if (n % partials != 0) {
    // The sum of the first m = n - n % P elements, then of the rest.
    int64_t m = n - n % partials;
    auto part = [&](int64_t offset, int64_t size) {
      IRMapping views;
      for (OpOperand *input : op.getDpsInputOperands())
        if (cast<MemRefType>(input->get().getType()).getRank() == 1)
          views.map(input->get(),
                    memref::SubViewOp::create(
                        rewriter, loc, input->get(), ArrayRef<int64_t>{offset},
                        ArrayRef<int64_t>{size}, ArrayRef<int64_t>{1}));
      return cast<linalg::GenericOp>(rewriter.clone(*op, views));
    };
    linalg::GenericOp head = part(0, m), tail = part(m, n - m);
    rewriter.eraseOp(op);
    splitSum(head, m, rewriter);
    splitSum(tail, n - m, rewriter);
    return;
  }
  auto outType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  Type element = outType.getElementType();
  auto partialType = MemRefType::get({partials}, element);
  Value partial = memref::AllocOp::create(rewriter, loc, partialType);
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  linalg::FillOp::create(rewriter, loc, zero, partial);

  // (j, p): inputs [n] viewed as [n / P, P].
  linalg::GenericOp first = *reshapedSum(
      op, rewriter, 2, AffineMap::getMultiDimIdentityMap(2, context),
      AffineMap::get(2, 0, getAffineDimExpr(1, context)), partial,
      {IteratorType::reduction, IteratorType::parallel}, [&](Value input) {
        return memref::ExpandShapeOp::create(
            rewriter, loc, SmallVector<int64_t>{n / partials, partials}, input,
            SmallVector<ReassociationIndices>{{0, 1}});
      });
  Value out = op.getDpsInitOperand(0)->get();
  AffineMap along = AffineMap::getMultiDimIdentityMap(1, context);
  AffineMap outMap = AffineMap::get(1, 0, context);
  auto rest = linalg::GenericOp::create(
      rewriter, loc, ValueRange{partial}, ValueRange{out},
      ArrayRef<AffineMap>{along, outMap}, {IteratorType::reduction},
      [](OpBuilder &b, Location loc, ValueRange args) {
        Value sum = arith::AddFOp::create(b, loc, args[0], args[1]);
        linalg::YieldOp::create(b, loc, sum);
      });
  rewriter.setInsertionPointAfter(rest);
  memref::DeallocOp::create(rewriter, loc, partial);
  rewriter.eraseOp(op);
  parallelFirst(first, rewriter);
  splitSum(rest, partials, rewriter);
}

struct GpuParallelReductionsPass
    : mlir::drc::impl::GpuParallelReductionsBase<GpuParallelReductionsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      // Only on the host's level: a kernel cannot allocate the partials.
      if (op->getParentOp() == getOperation() && isFullSum(op))
        if (std::optional<linalg::GenericOp> flat = flatten(op, rewriter)) {
          splitSum(*flat, flat->getStaticLoopRanges()[0], rewriter);
          continue;
        }
      parallelFirst(op, rewriter);
    }
  }
};

} // namespace
