//===- FuseTileElementwise.cpp - One loop nest per elementwise chain -----===//
//
// A fused region's tile lowers to one linalg op per drc op: each reads and
// writes a tile-sized temporary (16 tokens x 4 streams x 256 channels is
// 64 KiB, beyond L1), and a stream mix (HC's h ⊗ β, the write of a
// sublayer's output into n streams, or a mix of the n streams) is a zero
// fill plus a "reduction" over one to n elements. This pass makes such a
// mix elementwise, lets it write its result instead of adding to zeros, and
// merges single-use elementwise producers into their consumers inside the
// tile, so a chain of them is one pass over the tile. A kernel a tile
// computes twice (the backward's recomputed forward values) is computed once,
// and a result saved through a reshape or split between outputs is written
// in place, not copied.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::drc {
#define GEN_PASS_DEF_FUSETILEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A fused region's tile runs a stream mix over n = 4 streams as a reduction:
/// a zero fill of its [16, 4, 256] result, then a read-modify-write of it
/// per stream. With its reduction loops run at most this many times in all,
/// a generic is elementwise instead.
constexpr int64_t kUnrolledReduction = 4;

/// The static extent of the reduction loops of `op`, all together; 0 if
/// any is dynamic.
int64_t reductionTrips(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  int64_t trips = 1;
  for (unsigned d : reductions)
    trips = ShapedType::isDynamic(ranges[d]) ? 0 : trips * ranges[d];
  return trips;
}

/// Drops the reduction loops of a generic that runs them at most
/// kUnrolledReduction times (once, outside fused regions' tiles: the
/// unfused program is the reference): its body is repeated once per
/// reduction index, in loop order, each copy reading its own copy of the
/// operands indexed by the reduction loops (at constant indices) and
/// updating the previous copy's result. The arithmetic is the loop's, in
/// the same order.
struct ShortReductionToParallel : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned> reductions;
    op.getReductionDims(reductions);
    if (reductions.empty() || !op.hasPureTensorSemantics() ||
        ShapedType::isDynamicShape(ranges) ||
        !op.getBody()->getOps<linalg::IndexOp>().empty())
      return failure();
    int64_t trips = reductionTrips(op);
    if (trips >
        (isa<scf::ForallOp>(op->getParentOp()) ? kUnrolledReduction : 1))
      return failure();
    // The reduction indices of each copy, the last loop fastest.
    SmallVector<SmallVector<int64_t>> points(1);
    for (unsigned d : reductions) {
      SmallVector<SmallVector<int64_t>> next;
      for (ArrayRef<int64_t> point : points)
        for (int64_t i = 0; i < ranges[d]; ++i) {
          next.emplace_back(point);
          next.back().push_back(i);
        }
      points = std::move(next);
    }
    MLIRContext *ctx = op.getContext();
    unsigned rank = ranges.size(), kept = rank - reductions.size();
    auto at = [&](AffineMap map, ArrayRef<int64_t> point) {
      SmallVector<AffineExpr> replacement;
      for (unsigned d = 0, r = 0, next = 0; d < rank; ++d)
        replacement.push_back(llvm::is_contained(reductions, d)
                                  ? getAffineConstantExpr(point[r++], ctx)
                                  : getAffineDimExpr(next++, ctx));
      return map.replaceDimsAndSymbols(replacement, {}, kept, 0);
    };
    // Operands and maps: one copy per point of each input the reduction
    // loops index, one of the others; copyOf[input][point] is its position.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<SmallVector<unsigned>> copyOf;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      bool indexed = llvm::any_of(
          reductions, [&](unsigned d) { return map.isFunctionOfDim(d); });
      copyOf.emplace_back();
      for (ArrayRef<int64_t> point : points) {
        if (indexed || copyOf.back().empty()) {
          inputs.push_back(input->get());
          maps.push_back(at(map, point));
        }
        copyOf.back().push_back(inputs.size() - 1);
      }
    }
    for (OpOperand &init : op.getDpsInitsMutable())
      maps.push_back(at(op.getMatchingIndexingMap(&init), points.front()));
    // Every loop left must still take its extent from some operand.
    llvm::SmallBitVector bare(kept);
    for (AffineMap map : maps)
      for (AffineExpr e : map.getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          bare.set(dim.getPosition());
    if (!bare.all())
      return failure();

    Location loc = op.getLoc();
    auto parallel = linalg::GenericOp::create(
        rewriter, loc, op.getResultTypes(), inputs, op.getDpsInits(), maps,
        SmallVector<utils::IteratorType>(kept, utils::IteratorType::parallel));
    SmallVector<Type> argTypes;
    for (Value v : llvm::concat<Value>(inputs, op.getDpsInits()))
      argTypes.push_back(getElementTypeOrSelf(v.getType()));
    Block *body =
        rewriter.createBlock(&parallel.getRegion(), {}, argTypes,
                             SmallVector<Location>(argTypes.size(), loc));
    Block &old = *op.getBody();
    unsigned numInputs = op.getNumDpsInputs();
    SmallVector<Value> results(
        body->getArguments().take_back(op.getNumDpsInits()));
    for (unsigned point = 0; point < points.size(); ++point) {
      IRMapping mapping;
      for (unsigned i = 0; i < numInputs; ++i)
        mapping.map(old.getArgument(i), body->getArgument(copyOf[i][point]));
      for (auto [i, result] : llvm::enumerate(results))
        mapping.map(old.getArgument(numInputs + i), result);
      for (Operation &inner : old.without_terminator())
        rewriter.clone(inner, mapping);
      for (auto [result, yielded] :
           llvm::zip(results, old.getTerminator()->getOperands()))
        result = mapping.lookupOrDefault(yielded);
    }
    linalg::YieldOp::create(rewriter, loc, results);
    rewriter.replaceOp(op, parallel.getResults());
    return success();
  }
};

/// Whether `op` is in a fused region's tile and runs its reduction loops at
/// most kUnrolledReduction times in all (statically).
bool isShortReductionInTile(linalg::LinalgOp op) {
  int64_t trips = reductionTrips(op);
  return isa<scf::ForallOp>(op->getParentOp()) && trips != 0 &&
         trips <= kUnrolledReduction;
}

/// In a tile, a matmul over at most kUnrolledReduction terms is an outer
/// product (HC's coefficient gradients [64, 1] or [64, 4] times a [k, 256]
/// weight): as a generic it unrolls into an elementwise kernel that merges
/// into its consumers, where the matmul wrote a 64 KiB temporary. The generic
/// is then expanded to the tile's [16, 4, 256] shape by the reshape patterns
/// run alongside, so it meets the elementwise kernels that read it.
struct OuterProductToGeneric : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || !isShortReductionInTile(op))
      return failure();
    return linalg::generalizeNamedOp(rewriter, op);
  }
};

/// Reshapes fold into a generic of a tile with short reductions (an outer
/// product from OuterProductToGeneric) by expanding its loops, so it
/// computes in the shape its consumers read.
bool expandsShortReduction(OpOperand *operand) {
  Operation *op = operand->getOwner();
  if (!isa<linalg::GenericOp>(op))
    op = operand->get().getDefiningOp();
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.getNumReductionLoops() != 0 &&
         isShortReductionInTile(generic);
}

/// A kernel recomputed by each of its readers has at most this many
/// arithmetic operations per element: a few vector FMAs per 16 elements cost
/// less than writing a 64 KiB tile temporary and reading it back from L2.
constexpr int64_t kRecomputedOps = 12;

/// An elementwise kernel of a tile that only spreads smaller operands over
/// the tile (an outer product, a per-stream scale of one row) with few adds
/// and multiplies per element.
bool isCheapSpread(linalg::GenericOp op) {
  if (!isa<scf::ForallOp>(op->getParentOp()) || !op.hasPureTensorSemantics() ||
      op.getNumResults() != 1 || op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getMatchingBlockArgument(op.getDpsInitOperand(0)).use_empty())
    return false;
  for (OpOperand *input : op.getDpsInputOperands())
    if (op.getMatchingIndexingMap(input).isPermutation())
      return false;
  int64_t ops = 0;
  for (Operation &inner : op.getBody()->without_terminator()) {
    if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp>(inner))
      return false;
    ++ops;
  }
  return ops <= kRecomputedOps;
}

/// A cheap spread read by several elementwise kernels (each reading each of
/// its elements once) is cloned for each: every clone then merges into its
/// reader, and the tile-sized temporary they shared is never written.
/// (MergeRepeatedKernels leaves such twins alone.)
struct RecomputeSpreadKernel : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isCheapSpread(op) || op->hasOneUse() || op->use_empty())
      return failure();
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getUses()) {
      auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!reader || reader->getBlock() != op->getBlock() ||
          !reader.isDpsInput(&use) ||
          !reader.getMatchingIndexingMap(&use).isPermutation())
        return failure();
      uses.push_back(&use);
    }
    rewriter.setInsertionPointAfter(op);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      Operation *clone = rewriter.clone(*op);
      rewriter.modifyOpInPlace(use->getOwner(),
                               [&] { use->set(clone->getResult(0)); });
    }
    return success();
  }
};

/// An elementwise generic (all loops parallel, each output element written
/// once) whose init is a fill reads the fill's value, not the tensor: the
/// zeros are never written. `0 + x` becomes `x` (the sign of a zero result
/// may differ; nothing downstream tells them apart).
struct ReadFillValue : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        op.getNumLoops() != op.getNumParallelLoops())
      return failure();
    bool changed = false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      auto fill = init.get().getDefiningOp<linalg::FillOp>();
      BlockArgument out = op.getMatchingBlockArgument(&init);
      if (!fill || out.use_empty() ||
          !op.getMatchingIndexingMap(&init).isPermutation())
        continue;
      Value value = fill.getInputs().front();
      // The adds that read the output, before it is replaced.
      SmallVector<arith::AddFOp> adds;
      if (matchPattern(value, m_PosZeroFloat()))
        for (Operation *user : out.getUsers())
          if (auto add = dyn_cast<arith::AddFOp>(user))
            adds.push_back(add);
      rewriter.modifyOpInPlace(op, [&] {
        out.replaceAllUsesWith(value);
        init.set(fill.getOutputs().front());
      });
      for (arith::AddFOp add : adds)
        rewriter.replaceOp(add,
                           add.getLhs() == value ? add.getRhs() : add.getLhs());
      changed = true;
    }
    return success(changed);
  }
};

/// A tile computing the same kernel twice (a backward region's recomputed
/// forward value next to another use of it, e.g. a norm's sum of squares)
/// keeps the first: same inputs, same body, and inits that are equal as far
/// as the body can tell (fills of one value, or empty tensors).
struct MergeRepeatedKernels : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<scf::ForallOp>(op->getParentOp()) ||
        !op.hasPureTensorSemantics() || isCheapSpread(op))
      return failure();
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
      if (auto earlier = dyn_cast<linalg::GenericOp>(prev);
          earlier && sameKernel(earlier, op)) {
        rewriter.replaceOp(op, earlier.getResults());
        return success();
      }
    return failure();
  }

  static bool sameKernel(linalg::GenericOp a, linalg::GenericOp b) {
    llvm::DenseMap<Value, Value> inside;
    auto equal = [&](Value x, Value y) -> LogicalResult {
      if (x == y || inside.lookup(x) == y)
        return success();
      if (x.getType() != y.getType())
        return failure();
      if (x.getDefiningOp<tensor::EmptyOp>() &&
          y.getDefiningOp<tensor::EmptyOp>())
        return success();
      auto fx = x.getDefiningOp<linalg::FillOp>();
      auto fy = y.getDefiningOp<linalg::FillOp>();
      return success(fx && fy &&
                     fx.getInputs().front() == fy.getInputs().front());
    };
    auto mark = [&](Value x, Value y) { inside[x] = y; };
    return OperationEquivalence::isEquivalentTo(
        a, b, equal, mark, OperationEquivalence::IgnoreLocations);
  }
};

/// A tile's result leaves through a reshape when the region's output is a
/// view of it: mHC's state tile [16, 4, 256] saved as the [16, 1024] rows its
/// backward reads, a stream mix [16, 1, 256] saved as [16, 256].
/// Bufferization cannot write the producer in place through the reshape, so
/// it computed into a temporary and copied it out. The loop's output is
/// reshaped instead (outside the loop, where it is a view): the tile inserts
/// the value as computed, whose producer then writes the output directly.
/// Applies when the reshape merges only dimensions the insert covers whole.
struct InsertBeforeReshape : OpRewritePattern<scf::ForallOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::ForallOp forall,
                                PatternRewriter &rewriter) const override {
    for (Operation &op : forall.getTerminator().getYieldingOps()) {
      auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(&op);
      auto collapse =
          insert ? insert.getSource().getDefiningOp<tensor::CollapseShapeOp>()
                 : nullptr;
      if (!collapse || !insert.hasUnitStride() ||
          !collapse.getSrcType().hasStaticShape())
        continue;
      auto out = cast<BlockArgument>(insert.getDest());
      auto type = cast<RankedTensorType>(out.getType());
      if (insert.getSourceType().getRank() != type.getRank() ||
          !type.hasStaticShape())
        continue;
      SmallVector<ReassociationIndices> groups =
          collapse.getReassociationIndices();
      if (!llvm::all_of(llvm::enumerate(groups), [&](auto group) {
            unsigned i = group.index();
            return group.value().size() == 1 ||
                   (isConstantIntValue(insert.getMixedOffsets()[i], 0) &&
                    getConstantIntValue(insert.getMixedSizes()[i]) ==
                        type.getDimSize(i));
          }))
        continue;
      rewrite(forall, insert, collapse, rewriter);
      return success();
    }
    return failure();
  }

  static void rewrite(scf::ForallOp forall,
                      tensor::ParallelInsertSliceOp insert,
                      tensor::CollapseShapeOp collapse,
                      PatternRewriter &rewriter) {
    Location loc = forall.getLoc();
    auto out = cast<BlockArgument>(insert.getDest());
    auto type = cast<RankedTensorType>(out.getType());
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    for (auto [i, group] : llvm::enumerate(groups))
      for (int64_t d : group)
        shape.push_back(group.size() == 1
                            ? type.getDimSize(i)
                            : collapse.getSrcType().getDimSize(d));
    auto expanded = RankedTensorType::get(shape, type.getElementType());
    unsigned position = out.getArgNumber();
    unsigned index = position - forall.getRank();
    rewriter.setInsertionPoint(forall);
    SmallVector<Value> outputs(forall.getOutputs());
    outputs[index] = tensor::ExpandShapeOp::create(rewriter, loc, expanded,
                                                   outputs[index], groups);
    auto replacement = scf::ForallOp::create(
        rewriter, loc, forall.getMixedLowerBound(), forall.getMixedUpperBound(),
        forall.getMixedStep(), outputs, forall.getMapping());
    replacement->setDiscardableAttrs(forall->getDiscardableAttrDictionary());
    Block *body = replacement.getBody();
    rewriter.eraseOp(body->getTerminator());
    // Other readers of the output see it in its old shape.
    rewriter.setInsertionPointToStart(body);
    SmallVector<Value> arguments(body->getArguments());
    Value expandedOut = arguments[position];
    arguments[position] = tensor::CollapseShapeOp::create(rewriter, loc, type,
                                                          expandedOut, groups);
    rewriter.mergeBlocks(forall.getBody(), body, arguments);
    // The insert's offsets now refer to the new loop's values.
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets(),
                              sizes = insert.getMixedSizes(), newOffsets,
                              newSizes;
    for (auto [i, group] : llvm::enumerate(groups))
      for (int64_t d : group) {
        bool merged = group.size() > 1;
        newOffsets.push_back(merged ? rewriter.getIndexAttr(0) : offsets[i]);
        newSizes.push_back(
            merged ? rewriter.getIndexAttr(collapse.getSrcType().getDimSize(d))
                   : sizes[i]);
      }
    rewriter.setInsertionPoint(insert);
    SmallVector<OpFoldResult> strides(shape.size(), rewriter.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(rewriter, loc, collapse.getSrc(),
                                          expandedOut, newOffsets, newSizes,
                                          strides);
    rewriter.eraseOp(insert);
    rewriter.setInsertionPointAfter(replacement);
    SmallVector<Value> results(replacement.getResults());
    results[index] = tensor::CollapseShapeOp::create(rewriter, loc, type,
                                                     results[index], groups);
    rewriter.replaceOp(forall, results);
  }
};

/// A tile's result split between outputs (AttnRes's backward: the bank
/// gradient's first rows go on to the next region, its last row is the
/// sublayer's output gradient) was computed into a temporary and each part
/// copied out. Each part is computed on its own instead, by the kernel
/// tiled to it, which then writes its output in place. Applies to an
/// elementwise kernel whose every use is a slice inserted into an output.
struct ComputeOutputSlicesApart : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<scf::ForallOp>(op->getParentOp()) ||
        !op.hasPureTensorSemantics() || op.getNumResults() != 1 ||
        op.getNumLoops() != op.getNumParallelLoops() ||
        !op.getIndexingMapMatchingResult(op->getResult(0)).isIdentity() ||
        op->use_empty())
      return failure();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<tensor::ExtractSliceOp> slices;
    for (Operation *user : op->getUsers()) {
      auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!slice || !slice.hasUnitStride() ||
          slice.getType().getRank() != type.getRank() ||
          slice.getType() == type || !slice->hasOneUse() ||
          !isa<tensor::ParallelInsertSliceOp>(*slice->user_begin()))
        return failure();
      slices.push_back(slice);
    }
    for (tensor::ExtractSliceOp slice : slices) {
      rewriter.setInsertionPoint(slice);
      FailureOr<TilingResult> part =
          cast<TilingInterface>(op.getOperation())
              .getTiledImplementation(rewriter, slice.getMixedOffsets(),
                                      slice.getMixedSizes());
      // Tiling a generic to a static in-bounds slice does not fail; were
      // it to, parts already built would stay beside the whole kernel.
      if (failed(part))
        return failure();
      // Its result starts empty (not as a slice of the whole one's empty
      // tensor), so bufferization can put the output it is inserted into
      // in its place.
      auto tiled = cast<linalg::GenericOp>(part->tiledOps.front());
      OpOperand *init = tiled.getDpsInitOperand(0);
      if (auto from = init->get().getDefiningOp<tensor::ExtractSliceOp>();
          from && from.getSource().getDefiningOp<tensor::EmptyOp>()) {
        rewriter.setInsertionPoint(tiled);
        Value empty = tensor::EmptyOp::create(rewriter, slice.getLoc(),
                                              slice.getType().getShape(),
                                              slice.getType().getElementType());
        rewriter.modifyOpInPlace(tiled, [&] { init->set(empty); });
      }
      rewriter.replaceOp(slice, part->tiledValues.front());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// The offsets of `slice` within the tensor it is a slice of through a
/// chain of unit-stride extract_slices, when the chain starts at `root`
/// and every slice but the first from `root` is at constant offsets. Unlike
/// drc-cpu-tile's sliceOrigin, which composes any offsets with affine ops,
/// it creates no IR: a pattern calls it while matching.
std::optional<SmallVector<OpFoldResult>> offsetsIn(Value slice, Value root,
                                                   OpBuilder &b) {
  SmallVector<int64_t> inner;
  while (auto extract = slice.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!extract.hasUnitStride() ||
        extract.getSourceType().getRank() != extract.getType().getRank())
      return std::nullopt;
    SmallVector<OpFoldResult> offsets = extract.getMixedOffsets();
    if (extract.getSource() == root) {
      if (inner.empty())
        return offsets;
      for (auto [offset, add] : llvm::zip(offsets, inner)) {
        std::optional<int64_t> value = getConstantIntValue(offset);
        if (add == 0)
          continue;
        if (!value)
          return std::nullopt;
        offset = b.getIndexAttr(*value + add);
      }
      return offsets;
    }
    std::optional<SmallVector<int64_t>> constants =
        getConstantIntValues(offsets);
    if (!constants)
      return std::nullopt;
    if (inner.empty())
      inner = *constants;
    else
      for (auto [sum, add] : llvm::zip(inner, *constants))
        sum += add;
    slice = extract.getSource();
  }
  return std::nullopt;
}

/// A region's result written over one of its inputs (drc-lower-to-linalg:
/// an adjoint carried from region to region, AttnRes's bank gradient) makes
/// the loop's output the input: each tile reads its slice of the input from
/// the output and inserts the kernel that adds to it. Computed into its own
/// temporary, that kernel's result is then copied out, and the input's
/// slice copied first (bufferization cannot tell the kernel reads it
/// before writing it). Here the kernel reads and writes one slice of the
/// output, the insert's own (the same value, so bufferization sees an
/// elementwise update in place), and runs after the tile's other readers of
/// the output when the insert is its only use.
struct AccumulateInPlace : OpRewritePattern<tensor::ParallelInsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ParallelInsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto op = insert.getSource().getDefiningOp<linalg::GenericOp>();
    auto out = dyn_cast<BlockArgument>(insert.getDest());
    if (!op || !out || !insert.hasUnitStride() ||
        insert.getSourceType().getRank() != insert.getDestType().getRank() ||
        op->getBlock() != out.getOwner() || !op.hasPureTensorSemantics() ||
        op.getNumResults() != 1 || op.getNumLoops() != op.getNumParallelLoops())
      return failure();
    OpOperand *init = op.getDpsInitOperand(0);
    AffineMap written = op.getMatchingIndexingMap(init);
    if (!written.isIdentity() || !op.getMatchingBlockArgument(init).use_empty())
      return failure();
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
    OpOperand *read = nullptr;
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (input->get().getType() != insert.getSourceType() ||
          op.getMatchingIndexingMap(input) != written)
        continue;
      std::optional<SmallVector<OpFoldResult>> at =
          offsetsIn(input->get(), out, rewriter);
      if (at && *at == offsets) {
        read = input;
        break;
      }
    }
    if (!read)
      return failure();
    Value slice = read->get();
    if (slice.getDefiningOp<tensor::ExtractSliceOp>().getSource() == out &&
        init->get() == slice)
      return failure(); // done
    if (op->hasOneUse())
      rewriter.moveOpBefore(op, out.getOwner()->getTerminator());
    rewriter.setInsertionPoint(op);
    Value own = tensor::ExtractSliceOp::create(
        rewriter, insert.getLoc(), insert.getSourceType(), out, offsets,
        insert.getMixedSizes(), insert.getMixedStrides());
    rewriter.modifyOpInPlace(op, [&] {
      for (OpOperand *input : op.getDpsInputOperands())
        if (input->get() == slice &&
            op.getMatchingIndexingMap(input) == written)
          input->set(own);
      init->set(own);
    });
    return success();
  }
};

/// Merge an elementwise producer into its only user when both are in
/// the same fused-region tile and the consumer reads each produced element
/// once (its map for the operand is a permutation of its loops): nothing is
/// computed twice, and kernels outside regions stay as they are (the
/// unfused program is the reference).
bool fusibleInTile(OpOperand *operand) {
  Operation *consumer = operand->getOwner();
  Operation *producer = operand->get().getDefiningOp();
  auto generic = dyn_cast<linalg::GenericOp>(consumer);
  return producer && generic && producer->getBlock() == consumer->getBlock() &&
         isa<scf::ForallOp>(consumer->getParentOp()) && producer->hasOneUse() &&
         generic.getMatchingIndexingMap(operand).isPermutation();
}

struct FuseTileElementwisePass
    : mlir::drc::impl::FuseTileElementwiseBase<FuseTileElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Outer products first, in the shape they are read in: the reshape
    // patterns need their reduction loop, which the unrolling removes.
    RewritePatternSet outerProducts(ctx);
    outerProducts.add<OuterProductToGeneric>(ctx);
    linalg::populateFoldReshapeOpsByExpansionPatterns(outerProducts,
                                                      expandsShortReduction);
    linalg::FillOp::getCanonicalizationPatterns(outerProducts, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(outerProducts, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(outerProducts))))
      return signalPassFailure();
    RewritePatternSet patterns(ctx);
    patterns.add<ShortReductionToParallel, ReadFillValue, MergeRepeatedKernels,
                 InsertBeforeReshape, RecomputeSpreadKernel>(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusibleInTile);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // After the merges: a kernel split into parts would leave its producers
    // with one reader per part.
    RewritePatternSet slicesApart(ctx);
    slicesApart.add<ComputeOutputSlicesApart>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(slicesApart))))
      return signalPassFailure();
    // Last: the kernel that updates an output it reads is final now.
    RewritePatternSet inPlace(ctx);
    inPlace.add<AccumulateInPlace>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(inPlace))))
      return signalPassFailure();
  }
};

} // namespace
