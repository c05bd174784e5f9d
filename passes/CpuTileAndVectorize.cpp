//===- CpuTileAndVectorize.cpp - CPU schedule of drc's kernels -----------===//
//
// linalg.matmul ops become: scf.forall over row blocks (one per thread chunk),
// an optional k block, and an 8x32x1 register tile vectorised to
// vector.contract whose C tile stays in registers across k (hoisted
// transfers). Sizes divide the static shapes, so nothing is masked.
//
//===----------------------------------------------------------------------===//
#include "passes/KernelRole.h"
#include "passes/Passes.h"
#include "passes/Stacking.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::drc {
#define GEN_PASS_DEF_CPUTILEANDVECTORIZE
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

/// The greedy driver's configuration for this pass's rewrites: no region
/// simplification (dead block arguments, unreachable blocks), which walked
/// the whole function again on every iteration of the driver (a sixth of
/// the pass's time on mHC L8); the loops this pass builds have none, and
/// the canonicalizations after bufferization simplify regions anyway.
GreedyRewriteConfig withoutRegionSimplification() {
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return config;
}

/// Side of the squares a transpose is moved in: 16 f32 lanes, one AVX-512
/// register per row.
constexpr int64_t kTransposeSquare = 16;

/// The first of `choices` that divides `extent`, or 0.
int64_t dividing(int64_t extent, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (extent % c == 0)
      return c;
  return 0;
}

/// Tiles `op` by `sizes`, its loops nested in `interchange` order (default:
/// the op's loop order).
FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *op,
                                     ArrayRef<int64_t> sizes, bool forall,
                                     ArrayRef<int64_t> interchange = {}) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setInterchange(interchange);
  options.setLoopType(forall ? scf::SCFTilingOptions::LoopType::ForallOp
                             : scf::SCFTilingOptions::LoopType::ForOp);
  rewriter.setInsertionPoint(op);
  auto result = scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
  if (failed(result))
    return failure();
  rewriter.replaceOp(op, result->replacements);
  return result;
}

/// Copies the right operand B (k x n, or n x k when `transposed`) of a
/// matmul into panels of `width` columns, [n / width, k, width]: the register
/// tile's k loop then reads one contiguous row of `width` floats per step
/// instead of striding n floats, which for n a multiple of 256 maps every
/// row of a panel to the same few L1 sets. B read [k, n] is copied row by
/// row (its loops row, panel, column; threads split the rows), so B is read
/// once, front to back, not once per panel with a stride of n floats: a
/// weight gradient's [2048, 256] B packs in 16% fewer samples
/// (bench/cpu-profile, against an unchanged product's). B read [n, k] is
/// transposed panel by panel in 16 x 16 squares where the shapes allow:
/// Pre-LN's packs of weights read [n, k] 1509 -> 433 samples.
Value packColumnPanels(RewriterBase &rewriter, Location loc, Value b, int64_t k,
                       int64_t n, bool transposed, int64_t width) {
  MLIRContext *ctx = rewriter.getContext();
  // Loops (panel, row, column), or (row, panel, column) for B read [k, n].
  unsigned p = transposed ? 0 : 1, r = transposed ? 1 : 0;
  AffineExpr panel = getAffineDimExpr(p, ctx), row = getAffineDimExpr(r, ctx),
             column = getAffineDimExpr(2, ctx);
  AffineExpr bColumn = panel * width + column;
  AffineMap read = transposed ? AffineMap::get(3, 0, {bColumn, row}, ctx)
                              : AffineMap::get(3, 0, {row, bColumn}, ctx);
  AffineMap write = AffineMap::get(3, 0, {panel, row, column}, ctx);
  Type element = cast<RankedTensorType>(b.getType()).getElementType();
  Value init = tensor::EmptyOp::create(
      rewriter, loc, ArrayRef<int64_t>{n / width, k, width}, element);
  auto copy = [&](Value from, AffineMap map) {
    return linalg::GenericOp::create(
        rewriter, loc, init.getType(), ValueRange{from}, ValueRange{init},
        ArrayRef<AffineMap>{map, write},
        SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
        [](OpBuilder &builder, Location loc, ValueRange args) {
          linalg::YieldOp::create(builder, loc, args[0]);
        });
  };
  if (!transposed || k % kTransposeSquare || width % kTransposeSquare)
    return copy(b, read).getResult(0);
  // B read [n, k] (a weight stored [out, in]), seen as [n / width, width,
  // k]: each panel is its [width, k] slab transposed, a copy that swaps the
  // last two axes in a thread's loop over the panels, which drc-cpu-tile
  // moves in squares (scheduleTranspose). Copied element by element, each
  // vector was gathered from rows k floats apart.
  Value slabs = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({n / width, width, k}, element), b,
      ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  linalg::GenericOp pack = copy(
      slabs, AffineMap::getPermutationMap(ArrayRef<unsigned>{0, 2, 1}, ctx));
  auto panels = tile(rewriter, pack, {1, 0, 0}, /*forall=*/true);
  if (failed(panels))
    llvm::report_fatal_error("drc-cpu-tile: cannot thread a panel pack");
  return panels->replacements.front();
}

/// Offsets of `slice` in the value its chain of unit-stride extract_slices
/// starts from, or in `root` where the chain passes through it, and that
/// value.
std::pair<Value, SmallVector<OpFoldResult>>
sliceOrigin(RewriterBase &rewriter, Location loc, tensor::ExtractSliceOp slice,
            Value root = {}) {
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  Value source = slice.getSource();
  AffineExpr d0, d1;
  bindDims(rewriter.getContext(), d0, d1);
  while (auto outer = source != root
                          ? source.getDefiningOp<tensor::ExtractSliceOp>()
                          : tensor::ExtractSliceOp()) {
    for (auto [offset, outerOffset] :
         llvm::zip(offsets, outer.getMixedOffsets()))
      offset = affine::makeComposedFoldedAffineApply(rewriter, loc, d0 + d1,
                                                     {offset, outerOffset});
    source = outer.getSource();
  }
  return {source, offsets};
}

constexpr int64_t kDotResultElements = 4096;

/// The lanes of a dot product's partial sums over `k` terms: 16 (one
/// AVX-512 register), or 8 where k is a multiple of 8 but not of 16 (a
/// DepthBench width such as d_model 56, whose projections otherwise ran as
/// scalar code); 0 when k is not a multiple of 8 or has fewer than 4
/// groups of lanes.
int64_t dotLanes(int64_t k) {
  for (int64_t lanes : {16, 8})
    if (k % lanes == 0 && k / lanes >= 4)
      return lanes;
  return 0;
}

/// Whether scheduleDotProducts applies to `op`: a matmul in a fused tile
/// reading B [n, k], k with dotLanes, and a result of at most
/// kDotResultElements.
bool runsAsDotProducts(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!isa<linalg::MatmulOp>(op) || ShapedType::isDynamicShape(ranges) ||
      !op->getParentOfType<scf::ForallOp>())
    return false;
  int64_t m = ranges[0], n = ranges[1], k = ranges[2];
  AffineMap identity = AffineMap::getMultiDimIdentityMap(3, op.getContext());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return maps[0] == identity.getSubMap({0, 2}) &&
         maps[1] == identity.getSubMap({1, 2}) && dotLanes(k) &&
         m * n <= kDotResultElements;
}

/// A fused region's coefficient projection, x̂ [16, 1024] · φᵀ with φ
/// [16, 1024] read [n, k]: a register tile vectorised along n would gather
/// each B column from n rows 4 KB apart. Both operands are contiguous along
/// k, so it runs as dot products: for each register tile of up to 4 x 4
/// results, partial sums over L = dotLanes(k) lanes, acc[i, j, l] =
/// Σ_kk A[i, L kk + l] · B[j, L kk + l], start at zero in registers, then
/// the lanes of each are summed (a horizontal reduction) and added to
/// C[i, j]. The partial sums never touch memory: kept in a buffer, LLVM
/// zeroed it and summed its lanes with scatters and gathers, as slow as the
/// dot products themselves.
/// Returns false (nothing changed) when `op` is not such a matmul.
bool scheduleDotProducts(RewriterBase &rewriter, linalg::LinalgOp op) {
  if (!runsAsDotProducts(op))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t m = ranges[0], n = ranges[1], k = ranges[2], width = dotLanes(k);
  int64_t rn = dividing(n, {4, 2, 1}), rm = dividing(m, {16 / rn, 4, 2, 1});
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Type element = getElementTypeOrSelf(op->getResult(0).getType());
  Value a = op.getDpsInputOperand(0)->get(),
        b = op.getDpsInputOperand(1)->get();
  rewriter.setInsertionPoint(op);
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value zero = index(0),
        padding = arith::ConstantOp::create(rewriter, loc, element,
                                            rewriter.getZeroAttr(element));
  auto accType = VectorType::get({rm, rn, width}, element);
  auto tileType = VectorType::get({rm, rn}, element);
  Value zeros = arith::ConstantOp::create(
      rewriter, loc, accType,
      DenseElementsAttr::get(accType, rewriter.getZeroAttr(element)));
  // Rows of A broadcast along the tile's columns, rows of B along its rows.
  AffineMap aMap = AffineMap::get(2, 0,
                                  {getAffineDimExpr(0, ctx),
                                   getAffineConstantExpr(0, ctx),
                                   getAffineDimExpr(1, ctx)},
                                  ctx),
            bMap = AffineMap::get(2, 0,
                                  {getAffineConstantExpr(0, ctx),
                                   getAffineDimExpr(0, ctx),
                                   getAffineDimExpr(1, ctx)},
                                  ctx);
  SmallVector<bool> inBounds3(3, true), inBounds2(2, true);
  auto rowLoop = scf::ForOp::create(
      rewriter, loc, zero, index(m), index(rm),
      ValueRange{op.getDpsInitOperand(0)->get()},
      [&](OpBuilder &builder, Location loc, Value i, ValueRange c) {
        auto columnLoop = scf::ForOp::create(
            builder, loc, zero, index(n), index(rn), c,
            [&](OpBuilder &builder, Location loc, Value j, ValueRange c) {
              auto lanes = scf::ForOp::create(
                  builder, loc, zero, index(k), index(width), ValueRange{zeros},
                  [&](OpBuilder &builder, Location loc, Value kk,
                      ValueRange acc) {
                    Value rows = vector::TransferReadOp::create(
                        builder, loc, accType, a, ValueRange{i, kk}, padding,
                        aMap, inBounds3);
                    Value columns = vector::TransferReadOp::create(
                        builder, loc, accType, b, ValueRange{j, kk}, padding,
                        bMap, inBounds3);
                    scf::YieldOp::create(builder, loc,
                                         vector::FMAOp::create(builder, loc,
                                                               rows, columns,
                                                               acc.front())
                                             .getResult());
                  });
              // Each dot product's lanes summed onto its C element.
              Value after = vector::TransferReadOp::create(
                  builder, loc, tileType, c.front(), ValueRange{i, j}, padding,
                  inBounds2);
              for (int64_t r = 0; r < rm; ++r)
                for (int64_t col = 0; col < rn; ++col) {
                  SmallVector<int64_t> at{r, col};
                  Value sum = vector::ReductionOp::create(
                      builder, loc, vector::CombiningKind::ADD,
                      vector::ExtractOp::create(builder, loc,
                                                lanes.getResult(0), at),
                      vector::ExtractOp::create(builder, loc, after, at),
                      arith::FastMathFlags::reassoc);
                  after =
                      vector::InsertOp::create(builder, loc, sum, after, at);
                }
              scf::YieldOp::create(builder, loc,
                                   vector::TransferWriteOp::create(
                                       builder, loc, after, c.front(),
                                       ValueRange{i, j}, inBounds2)
                                       .getResult());
            });
        scf::YieldOp::create(builder, loc, columnLoop.getResults());
      });
  rewriter.replaceOp(op, rowLoop.getResults());
  return true;
}

/// The coefficient projections of one set of streams in a fused tile (HC's
/// three per stream, mHC's φ^pre, φ^post and φ^res of the flattened set) are
/// dot-product matmuls (runsAsDotProducts) of one tile A by weights defined
/// outside the tile loop, so each reads A once. Merged, A is read once: the
/// weights are stacked before the loop, once per run of it, and each result
/// is a column slice of the merged one. Only fresh (zero-filled) results
/// are merged.
void mergeProjections(RewriterBase &rewriter, Operation *root) {
  // By block and A; an A reshaped from the same value by the same
  // collapse_shape (one per use before CSE) is the same A.
  llvm::MapVector<std::tuple<Block *, Value, Attribute>,
                  SmallVector<linalg::MatmulOp>>
      byOperand;
  auto operand =
      [](linalg::MatmulOp op) -> std::tuple<Block *, Value, Attribute> {
    Value a = op.getDpsInputOperand(0)->get();
    if (auto collapse = a.getDefiningOp<tensor::CollapseShapeOp>())
      return {op->getBlock(), collapse.getSrc(),
              collapse.getReassociationAttr()};
    return {op->getBlock(), a, Attribute()};
  };
  root->walk([&](linalg::MatmulOp op) {
    if (!runsAsDotProducts(op))
      return;
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
    Value b = op.getDpsInputOperand(1)->get();
    auto forall = op->getParentOfType<scf::ForallOp>();
    if (fill && matchPattern(fill.getInputs().front(), m_AnyZeroFloat()) &&
        !forall->isAncestor(b.getParentBlock()->getParentOp()))
      byOperand[operand(op)].push_back(op);
  });
  auto weight = [](linalg::MatmulOp op) {
    return cast<RankedTensorType>(op.getDpsInputOperand(1)->get().getType());
  };
  for (auto &[key, ops] : byOperand) {
    if (ops.size() < 2)
      continue;
    linalg::MatmulOp first = ops.front();
    Location loc = first.getLoc();
    int64_t m = cast<RankedTensorType>(first->getResult(0).getType())
                    .getDimSize(0),
            rows = 0;
    SmallVector<Value> weights;
    for (linalg::MatmulOp op : ops) {
      weights.push_back(op.getDpsInputOperand(1)->get());
      rows += weight(op).getDimSize(0);
    }
    if (m * rows > kDotResultElements)
      continue;
    rewriter.setInsertionPoint(first->getParentOfType<scf::ForallOp>());
    SmallVector<int64_t> firstRow;
    Value stacked = stackAlong(rewriter, loc, weights, 0, firstRow);
    rewriter.setInsertionPoint(first);
    Type element = weight(first).getElementType();
    Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                           rewriter.getZeroAttr(element));
    Value empty = tensor::EmptyOp::create(rewriter, loc,
                                          ArrayRef<int64_t>{m, rows}, element);
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    auto merged = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{first.getDpsInputOperand(0)->get(), stacked},
        ValueRange{init}, first->getAttrs());
    for (auto [op, row] : llvm::zip(ops, firstRow))
      rewriter.replaceOp(
          op, sliceAlong(rewriter, loc, merged.getResult(0),
                         cast<RankedTensorType>(op->getResult(0).getType()), 1,
                         row));
  }
}

/// Narrows a causal attention product's register-tile loops (`loops`: b,
/// m, n, k of a batch_matmul; `kBlock` the k block's offset, or null) to
/// the tiles and terms its `drc.causal` attribute (kCausalAttr, set by
/// drc-lower-to-linalg) says can be nonzero: for "output" only C[i, j] with
/// j <= i is read afterwards, so a row tile visits the column tiles up to
/// its last row's diagonal; for "prefix" A[i, k] is 0 for k > i and for
/// "suffix" for k < i, so a row tile sums only over the k its rows can use.
/// The skipped terms are exact zeros and the skipped outputs keep the
/// product's initial zeros, so the result is unchanged; about half of the
/// work goes.
void narrowCausalLoops(RewriterBase &rewriter, StringRef causal,
                       ArrayRef<LoopLikeOpInterface> loops, Value kBlock,
                       int64_t rm, int64_t rn) {
  if (loops.size() != 4)
    return;
  auto mLoop = dyn_cast<scf::ForOp>(*loops[1]);
  auto nLoop = dyn_cast<scf::ForOp>(*loops[2]);
  auto kLoop = dyn_cast<scf::ForOp>(*loops[3]);
  if (!mLoop || !nLoop || !kLoop)
    return;
  MLIRContext *ctx = rewriter.getContext();
  AffineExpr m0 = getAffineDimExpr(0, ctx), kb = getAffineDimExpr(1, ctx);
  Location loc = mLoop.getLoc();
  auto bound = [&](scf::ForOp loop, AffineExpr expr, bool upper) {
    // min(ub, max(lb, expr)) of (m0, kb): inside the loop's own range.
    rewriter.setInsertionPoint(loop);
    OpFoldResult block =
        kBlock ? OpFoldResult(kBlock) : rewriter.getIndexAttr(0);
    Value at = affine::makeComposedAffineApply(
        rewriter, loc, AffineMap::get(2, 0, expr),
        ArrayRef<OpFoldResult>{mLoop.getInductionVar(), block});
    Value low = arith::MaxSIOp::create(rewriter, loc, loop.getLowerBound(), at);
    Value clamped =
        arith::MinSIOp::create(rewriter, loc, loop.getUpperBound(), low);
    rewriter.modifyOpInPlace(loop, [&] {
      if (upper)
        loop.setUpperBound(clamped);
      else
        loop.setLowerBound(clamped);
    });
  };
  if (causal == "output")
    bound(nLoop, (m0 + rm + rn - 1).floorDiv(rn) * rn, /*upper=*/true);
  else if (causal == "prefix")
    bound(kLoop, m0 + rm - kb, /*upper=*/true);
  else if (causal == "suffix")
    bound(kLoop, m0 - kb, /*upper=*/false);
}

/// Whether a plain matmul reads B [n, k] (its indexing map (m, n, k) ->
/// (n, k)) rather than [k, n].
bool readsBTransposed(linalg::LinalgOp op) {
  return op.getIndexingMapsArray()[1] ==
         AffineMap::getMultiDimIdentityMap(3, op.getContext())
             .getSubMap({1, 2});
}

/// The fill that `op`'s result starts from, when nothing else reads it and
/// it fills a fresh tensor (so the result's first value is the fill's
/// alone); null otherwise.
linalg::FillOp freshFillOf(linalg::LinalgOp op) {
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill->hasOneUse() ||
      !fill.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>())
    return {};
  return fill;
}

/// The zero fill `op` (a matmul) starts from, when every element of its
/// result is computed by a register tile over the whole k range: no k
/// block (which would add to the previous block's sums) and not a causal
/// "output" product (whose skipped tiles must stay zeros: the softmax's
/// adjoint multiplies them by zero probabilities, and garbage there could
/// be a NaN). Null otherwise.
linalg::FillOp zeroStart(linalg::LinalgOp op, bool kBlocked) {
  auto causal = op->getAttrOfType<StringAttr>(kCausalAttr);
  if (kBlocked || (causal && causal.getValue() == "output"))
    return {};
  linalg::FillOp fill = freshFillOf(op);
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return {};
  return fill;
}

/// Starts each register tile of a matmul from zeros (`zeroStart`): its C
/// tile is zero-filled just before its k loop (which ReadFromFill and
/// OverwriteFill then turn into a zero accumulator in registers), and the
/// whole C is no longer filled first, a pass over memory as large as the result
/// before the product writes it. `kLoop` is the register tile's k loop and
/// `tile` the tiled op inside it, whose init is a slice of the loop's C.
/// Returns false, changing nothing, for another loop structure.
bool startTilesFromZero(RewriterBase &rewriter, linalg::FillOp fill,
                        scf::ForOp kLoop, Operation *tile) {
  auto slice = cast<linalg::LinalgOp>(tile)
                   .getDpsInitOperand(0)
                   ->get()
                   .getDefiningOp<tensor::ExtractSliceOp>();
  if (!kLoop || !slice || kLoop.getNumRegionIterArgs() != 1 ||
      slice.getSource() != kLoop.getRegionIterArgs()[0])
    return false;
  Location loc = kLoop.getLoc();
  rewriter.setInsertionPoint(kLoop);
  Value whole = kLoop.getInitArgs()[0];
  auto outer = tensor::ExtractSliceOp::create(
      rewriter, loc, slice.getType(), whole, slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
  Value zeros = linalg::FillOp::create(rewriter, loc, fill.getInputs()[0],
                                       outer.getResult())
                    .getResult(0);
  Value zeroed = tensor::InsertSliceOp::create(
      rewriter, loc, zeros, whole, slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
  rewriter.modifyOpInPlace(kLoop,
                           [&] { kLoop.getInitArgsMutable()[0].set(zeroed); });
  rewriter.replaceOp(fill, fill.getDpsInitOperand(0)->get());
  return true;
}

/// A vector transfer that covers all of its tensor: no mask, indices zero,
/// the vector the tensor's shape in order, every dimension in bounds.
template <typename Transfer> bool coversWholeTensor(Transfer transfer) {
  auto tensor = dyn_cast<RankedTensorType>(transfer.getShapedType());
  return tensor && !transfer.getMask() &&
         transfer.getPermutationMap().isIdentity() &&
         transfer.getVectorType().getShape() == tensor.getShape() &&
         llvm::all_of(transfer.getInBoundsValues(), [](bool b) { return b; }) &&
         llvm::all_of(transfer.getIndices(),
                      [](Value i) { return isZeroInteger(i); });
}

/// A register tile that starts from zeros (startTilesFromZero) reads its
/// accumulator from the tile just filled and writes the result over it.
/// Read from a fill, the accumulator is the fill's value broadcast, in
/// registers; written over all of a fill, the result goes to the fill's
/// destination, and the fill (16 stores the tile's first load waited on)
/// is left unused.
struct ReadFromFill : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    auto fill = read.getBase().getDefiningOp<linalg::FillOp>();
    if (!fill || !coversWholeTensor(read))
      return failure();
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, read.getVectorType(),
                                                     fill.getInputs()[0]);
    return success();
  }
};

struct OverwriteFill : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    auto fill = write.getBase().getDefiningOp<linalg::FillOp>();
    if (!fill || !coversWholeTensor(write))
      return failure();
    rewriter.modifyOpInPlace(write, [&] {
      write.getBaseMutable().set(fill.getDpsInitOperand(0)->get());
    });
    return success();
  }
};

/// A plain matmul whose columns no full-width register tile divides (a
/// SwiGLU width of 688 = 21 x 32 + 16, in its up projections and their
/// weight gradient) ran every column in the narrower tile that does: 8 x 16
/// takes nine loads (eight broadcasts of A, one row of B) per eight FMAs,
/// and the loads, not the FMAs, set its pace. It is split into matmuls
/// instead, one over the columns full-width tiles divide, then one over
/// each half of that width down to 8 that the rest holds (d_model 56 =
/// 32 + 16 + 8, whose weight gradients ran in 8 x 8 tiles: 56 x 56 over
/// 2048 tokens was 6.7% of the mini sweep's HC L8 step), each writing its
/// columns of the result (a zero-filled result is filled per part, so each
/// still starts its tiles from zeros); every result element sums the same
/// products in the same order as before. So is a
/// causal attention product over a head wider than 16 and not a multiple
/// of 8 (20 or 28 in the mini sweep, which ran in tiles 4 columns wide):
/// its first 16 columns, then the rest in one tile across them
/// (scheduleMatmul). Returns the matmuls to schedule: the parts, or `op`
/// unchanged.
SmallVector<linalg::LinalgOp> splitRemainderColumns(RewriterBase &rewriter,
                                                    linalg::LinalgOp op,
                                                    int64_t registerColumns) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  bool causal = op->hasAttr(kCausalAttr);
  if (ShapedType::isDynamicShape(ranges) || !op.hasPureTensorSemantics() ||
      !(causal ? isa<linalg::BatchMatmulOp>(op)
               : isa<linalg::MatmulOp>(op) &&
                     !op->getParentOfType<scf::ForallOp>()))
    return {op};
  ArrayRef<int64_t> mnk = ArrayRef<int64_t>(ranges).take_back(3);
  int64_t m = mnk[0], n = mnk[1];
  // (offset, width) of each part's columns.
  SmallVector<std::pair<int64_t, int64_t>> pieces;
  if (causal) {
    int64_t wide = n / 16 * 16;
    if (n % 8 == 0 || wide == 0)
      return {op};
    pieces = {{0, wide}, {wide, n - wide}};
  } else {
    // The columns full-width tiles divide, then halves of that width down
    // to 8 (56 = 32 + 16 + 8), each part taking register tiles as wide as
    // itself. The product needs two row tiles at least, so that threads can
    // split its rows where a part's columns are one tile wide (fewRows).
    if (n % 8 != 0 || n % registerColumns == 0 || m < 16)
      return {op};
    for (int64_t width = registerColumns, offset = 0; width >= 8; width /= 2) {
      int64_t part = (n - offset) / width * width;
      if (part)
        pieces.push_back({offset, part});
      offset += part;
    }
    if (pieces.size() < 2)
      return {op};
  }
  // Loop n's position among B's and C's axes (a product may read B
  // transposed through its indexing map).
  unsigned nLoop = ranges.size() - 2;
  auto axisOf = [&](OpOperand *operand) {
    return *op.getMatchingIndexingMap(operand).getResultPosition(
        getAffineDimExpr(nLoop, op.getContext()));
  };
  OpOperand *bOperand = op.getDpsInputOperand(1);
  OpOperand *cOperand = op.getDpsInitOperand(0);
  unsigned bAxis = axisOf(bOperand), cAxis = axisOf(cOperand);
  Location loc = op.getLoc();
  Value b = bOperand->get(), c = cOperand->get();
  auto bType = cast<RankedTensorType>(b.getType());
  auto cType = cast<RankedTensorType>(c.getType());
  linalg::FillOp fill = freshFillOf(op);
  rewriter.setInsertionPoint(op);
  Value result = fill ? fill.getDpsInitOperand(0)->get() : c;
  SmallVector<linalg::LinalgOp> parts;
  // Offsets, sizes and unit strides of `type`'s columns [offset, width)
  // along `axis`.
  auto columns = [&](RankedTensorType type, unsigned axis, int64_t offset,
                     int64_t width) {
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0)),
        sizes, strides(type.getRank(), rewriter.getIndexAttr(1));
    for (int64_t extent : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(extent));
    offsets[axis] = rewriter.getIndexAttr(offset);
    sizes[axis] = rewriter.getIndexAttr(width);
    return std::tuple(offsets, sizes, strides);
  };
  for (auto [offset, width] : pieces) {
    auto [bOffsets, bSizes, bStrides] = columns(bType, bAxis, offset, width);
    Value bPart = tensor::ExtractSliceOp::create(rewriter, loc, b, bOffsets,
                                                 bSizes, bStrides);
    auto [cOffsets, cSizes, cStrides] = columns(cType, cAxis, offset, width);
    SmallVector<int64_t> partShape(cType.getShape());
    partShape[cAxis] = width;
    auto partType = RankedTensorType::get(partShape, cType.getElementType());
    Value init;
    if (fill)
      init = linalg::FillOp::create(
                 rewriter, loc, fill.getInputs()[0],
                 tensor::EmptyOp::create(rewriter, loc, partType.getShape(),
                                         partType.getElementType())
                     .getResult())
                 .getResult(0);
    else
      init = tensor::ExtractSliceOp::create(rewriter, loc, partType, c,
                                            cOffsets, cSizes, cStrides);
    auto part = cast<linalg::LinalgOp>(rewriter.clone(*op));
    rewriter.modifyOpInPlace(part, [&] {
      part.getDpsInputOperand(1)->set(bPart);
      part.getDpsInitOperand(0)->set(init);
      part->getResult(0).setType(partType);
    });
    parts.push_back(part);
    result = tensor::InsertSliceOp::create(rewriter, loc, part->getResult(0),
                                           result, cOffsets, cSizes, cStrides);
  }
  rewriter.replaceOp(op, result);
  if (fill)
    rewriter.eraseOp(fill);
  return parts;
}

/// Schedules a linalg.matmul (loops m, n, k) or linalg.batch_matmul (loops
/// b, m, n, k): threads over row blocks (or batch entries) unless it already
/// runs inside a thread-parallel loop (a fused region's tile), a k block for
/// long contractions, then the register tile. A plain matmul reads B from
/// column panels (packColumnPanels) and visits register tiles panel by
/// panel, so each panel is reused from L1 by every row tile of the block.
LogicalResult scheduleMatmul(RewriterBase &rewriter, linalg::LinalgOp op,
                             int64_t registerRows, int64_t registerColumns) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges) || scheduleDotProducts(rewriter, op))
    return success();
  bool batched = ranges.size() == 4;
  auto causal = op->getAttrOfType<StringAttr>(kCausalAttr);
  ArrayRef<int64_t> mnk = ArrayRef<int64_t>(ranges).take_back(3);
  int64_t m = mnk[0], n = mnk[1], k = mnk[2];
  // Rows: the largest divisor of m up to registerRows, so a result of 5 or
  // 6 rows (HC's coefficient projections' weight gradients) keeps 10 or 12
  // accumulators in flight instead of 2, whose FMA chains stall on latency.
  int64_t rm = 0, rn = 0;
  for (int64_t r = registerRows; r >= 1 && !rm; --r)
    rm = m % r == 0 ? r : 0;
  // A causal product must be tiled, not left scalar: the softmax writes a
  // block's scores only up to each row tile's diagonal, and the tiles skip
  // the rest. Its columns may be a head of d_h not a multiple of 8: below
  // 16, one tile spans the head, each row one vector of d_h lanes (the
  // mini sweep's 8-block Pre-LN cell, d_h 14, trained 1.22x as fast as in
  // tiles two columns wide, the largest power of two dividing 14); wider
  // heads were split into 16 columns and the rest (splitRemainderColumns:
  // one tile across a head of 20 or 28, rows of two vectors, trained 0.57x
  // as fast as tiles 4 wide). Otherwise it takes register tiles down to one
  // column wide.
  int64_t narrowest = causal ? 1 : 8;
  if (causal && n % 8 != 0 && n < 16)
    rn = n;
  for (int64_t c = registerColumns; c >= narrowest && !rn; c /= 2)
    rn = n % c == 0 ? c : 0;
  if (!rm || !rn)
    return success(); // left scalar: correct, slower
  auto sizes = [&](int64_t b, int64_t tm, int64_t tn, int64_t tk) {
    SmallVector<int64_t> s;
    if (batched)
      s.push_back(b);
    s.append({tm, tn, tk});
    return s;
  };
  // A plain matmul's B is read [k, n], or [n, k] through its indexing map.
  Value b = op.getDpsInputOperand(1)->get();
  Value panels;
  bool transposedB = readsBTransposed(op);
  // Packing copies all of B once; it pays when each panel is then read by
  // many row tiles. With few rows (a coefficient projection's weight
  // gradient, m = n² + 2n summed over 2048 tokens) the copy costs more
  // than the matmul: B is read in place and threads split the columns.
  bool fewRows = m < 8 * rm;
  if (!batched && !fewRows) {
    rewriter.setInsertionPoint(op);
    panels = packColumnPanels(rewriter, op.getLoc(), b, k, n, transposedB, rn);
  }
  // Decided on `op` itself, which the tilings below replace.
  int64_t tk = k > 512 ? dividing(k, {256, 128}) : 0;
  linalg::FillOp zeros = zeroStart(op, /*kBlocked=*/tk != 0);
  Operation *current = op;
  int64_t tm = dividing(m, {64, 32, 16, 8, 4, 2});
  int64_t tn = n / 8 % rn == 0 ? n / 8 : rn;
  bool threads = !op->getParentOfType<scf::ForallOp>();
  // Threads split the batch, else the row blocks; with few rows the
  // columns, unless they are one register tile wide (a part of
  // splitRemainderColumns), then the row tiles.
  bool splitColumns = !batched && fewRows && n / tn > 1;
  int64_t rowBlock = fewRows ? rm : tm;
  SmallVector<int64_t> threadTile = batched        ? sizes(1, 0, 0, 0)
                                    : splitColumns ? sizes(0, 0, tn, 0)
                                                   : sizes(0, rowBlock, 0, 0);
  int64_t threadPieces = batched        ? ranges[0]
                         : splitColumns ? n / tn
                                        : m / rowBlock;
  if (threads && threadPieces > 1) {
    auto threads = tile(rewriter, current, threadTile, /*forall=*/true);
    if (failed(threads))
      return failure();
    setKernelRole(threads->loops.front(), kMatmulRole);
    current = threads->tiledOps.front();
  }
  Value kBlock;
  if (tk) {
    auto blocked =
        tile(rewriter, current, sizes(0, 0, 0, tk), /*forall=*/false);
    if (failed(blocked))
      return failure();
    current = blocked->tiledOps.front();
    kBlock = cast<scf::ForOp>(blocked->loops.back().getOperation())
                 .getInductionVar();
  }
  auto registers =
      tile(rewriter, current, sizes(1, rm, rn, 1), /*forall=*/false,
           batched ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{1, 0, 2});
  if (failed(registers))
    return failure();
  if (zeros)
    startTilesFromZero(
        rewriter, zeros,
        dyn_cast<scf::ForOp>(registers->loops.back().getOperation()),
        registers->tiledOps.front());
  if (causal && batched)
    narrowCausalLoops(rewriter, causal.getValue(), registers->loops, kBlock, rm,
                      rn);
  Operation *tileOp = registers->tiledOps.front();
  if (panels) {
    // The tile's B slice at (kk, j) (or (j, kk) transposed) is row kk of
    // panel j / rn, read [k, n].
    auto tiled = cast<linalg::MatmulOp>(tileOp);
    OpOperand &operand = *tiled.getDpsInputOperand(1);
    auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
    rewriter.setInsertionPoint(tileOp);
    auto [origin, offsets] =
        sliceOrigin(rewriter, tileOp->getLoc(), slice, /*root=*/b);
    if (origin != b)
      return failure();
    if (transposedB)
      std::swap(offsets[0], offsets[1]);
    AffineExpr j = getAffineDimExpr(0, rewriter.getContext());
    OpFoldResult panel = affine::makeComposedFoldedAffineApply(
        rewriter, tileOp->getLoc(), j.floorDiv(rn), {offsets[1]});
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    auto row = tensor::ExtractSliceOp::create(
        rewriter, tileOp->getLoc(),
        RankedTensorType::get({1, rn}, slice.getType().getElementType()),
        panels, ArrayRef<OpFoldResult>{panel, offsets[0], zero},
        ArrayRef<OpFoldResult>{one, one, rewriter.getIndexAttr(rn)},
        ArrayRef<OpFoldResult>{one, one, one});
    SmallVector<AffineMap> tileMaps = tiled.getIndexingMapsArray();
    tileMaps[1] =
        linalg::MatmulOp::getDefaultIndexingMaps(rewriter.getContext())[1];
    rewriter.modifyOpInPlace(tileOp, [&] {
      operand.set(row);
      tiled.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(tileMaps));
    });
  }
  rewriter.setInsertionPoint(tileOp);
  auto vectorized = linalg::vectorize(rewriter, tileOp, {}, {}, false, false,
                                      false, /*createNamedContraction=*/true);
  if (failed(vectorized))
    return failure();
  rewriter.replaceOp(tileOp, vectorized->replacements);
  return success();
}

/// A sum over a long axis into a small result (a parameter gradient summed
/// over tokens, e.g. Σ_t g_t x_tᵀ for a [1, d] weight, or a norm gain's
/// Σ_t) runs as one serial loop with the summed axis innermost, striding
/// through memory. Rewrites `op` into S partial sums, each over a contiguous
/// 1/S of the axis, with the summed axis outside the result's axes (the
/// inner loop walks rows contiguously), then adds the S partials to the
/// initial value in order. S is fixed, not the thread count, so the result
/// is the same on any number of threads; scheduleGeneric threads the S
/// partial sums. Returns the partial-sum op, or `op` when it does not apply.
linalg::GenericOp splitLongReduction(RewriterBase &rewriter,
                                     linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ShapedType::isDynamicShape(ranges) ||
      !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0)
    return op;
  // The longest summed axis is split; others (AttnRes's query gradient
  // also sums over the bank's rows) stay summed within each part.
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  unsigned r = *llvm::max_element(reductions, [&](unsigned a, unsigned b) {
    return ranges[a] < ranges[b];
  });
  int64_t k = ranges[r], results = 1;
  SmallVector<utils::IteratorType> oldIterators = op.getIteratorTypesArray();
  for (auto [i, extent] : llvm::enumerate(ranges))
    if (oldIterators[i] == utils::IteratorType::parallel)
      results *= extent;
  int64_t parts = dividing(k, {16, 8, 4, 2});
  if (k < 1024 || k < results || !parts)
    return op;
  // The body must be out + x (x not depending on out), and not read loop
  // indices (the summed axis's index changes meaning).
  Block &body = *op.getBlock();
  if (!body.getOps<linalg::IndexOp>().empty())
    return op;
  Value out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues().front().getDefiningOp<arith::AddFOp>();
  if (!add || out.getNumUses() != 1 ||
      (add.getLhs() != out && add.getRhs() != out))
    return op;

  MLIRContext *ctx = rewriter.getContext();
  Location loc = op.getLoc();
  unsigned rank = ranges.size();
  // New loops: part, the summed axis within the part, then the others.
  SmallVector<AffineExpr> oldToNew(rank);
  AffineExpr part = getAffineDimExpr(0, ctx), within = getAffineDimExpr(1, ctx);
  for (unsigned i = 0, next = 2; i < rank; ++i)
    oldToNew[i] =
        i == r ? part * (k / parts) + within : getAffineDimExpr(next++, ctx);
  auto remap = [&](AffineMap map, bool withPart) {
    SmallVector<AffineExpr> exprs;
    if (withPart)
      exprs.push_back(part);
    for (AffineExpr e : map.getResults())
      exprs.push_back(e.replaceDims(oldToNew));
    return AffineMap::get(rank + 1, 0, exprs, ctx);
  };
  // Linalg infers loop extents from operand shapes, and `within` only
  // occurs inside `part * (k / parts) + within`: a [parts, k / parts] i1
  // operand that the body ignores, read at (part, within), supplies both.
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs = op.getDpsInputs();
  inputs.push_back(tensor::EmptyOp::create(rewriter, loc,
                                           ArrayRef<int64_t>{parts, k / parts},
                                           rewriter.getI1Type()));
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(remap(op.getMatchingIndexingMap(input), false));
  maps.push_back(AffineMap::get(rank + 1, 0, {part, within}, ctx));
  maps.push_back(remap(op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
                       /*withPart=*/true));
  SmallVector<utils::IteratorType> iterators{utils::IteratorType::parallel,
                                             utils::IteratorType::reduction};
  for (auto [i, iterator] : llvm::enumerate(oldIterators))
    if (i != r)
      iterators.push_back(iterator);

  Value init = op.getDpsInitOperand(0)->get();
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> partialShape{parts};
  llvm::append_range(partialShape, initType.getShape());
  Type element = initType.getElementType();
  Value empty = tensor::EmptyOp::create(rewriter, loc, partialShape, element);
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  Value partialInit =
      linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  auto partials =
      linalg::GenericOp::create(rewriter, loc, partialInit.getType(), inputs,
                                ValueRange{partialInit}, maps, iterators);
  rewriter.cloneRegionBefore(op.getRegion(), partials.getRegion(),
                             partials.getRegion().begin());
  partials.getBlock()->insertArgument(op.getNumDpsInputs(),
                                      rewriter.getI1Type(), loc);

  // init + partial_0 + partial_1 + ...: the part axis outermost.
  unsigned outRank = initType.getRank();
  SmallVector<AffineExpr> resultDims;
  for (unsigned i = 0; i < outRank; ++i)
    resultDims.push_back(getAffineDimExpr(i + 1, ctx));
  SmallVector<AffineExpr> partialDims{getAffineDimExpr(0, ctx)};
  llvm::append_range(partialDims, resultDims);
  SmallVector<utils::IteratorType> combineIterators(
      outRank + 1, utils::IteratorType::parallel);
  combineIterators[0] = utils::IteratorType::reduction;
  auto combine = linalg::GenericOp::create(
      rewriter, loc, initType, partials.getResult(0), init,
      ArrayRef<AffineMap>{AffineMap::get(outRank + 1, 0, partialDims, ctx),
                          AffineMap::get(outRank + 1, 0, resultDims, ctx)},
      combineIterators, [](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            b, loc,
            arith::AddFOp::create(b, loc, args[1], args[0]).getResult());
      });
  rewriter.replaceOp(op, combine.getResults());
  return partials;
}

/// A fused region's small elementwise kernels: a tile's Sinkhorn steps on
/// [16, 4, 4], its coefficient squashes on [16, 4]. Their innermost loops run
/// a handful of times, so LLVM leaves them scalar (a divide per element);
/// vectorised whole, each is a few vector instructions per token.
constexpr int64_t kSmallInnerExtent = 8;
constexpr int64_t kSmallElements = 1024;
constexpr int64_t kVectorElements = 16;

bool isSmallElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumReductionLoops() != 0 || !op->getParentOfType<scf::ForallOp>())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges) || ranges.back() > kSmallInnerExtent)
    return false;
  int64_t elements = 1;
  for (int64_t range : ranges)
    elements *= range;
  return elements <= kSmallElements;
}

/// The vector arithmetic of a small elementwise kernel's loop body (a
/// token's [1, 4, 4]) on flat vectors of all its elements: LLVM splits an
/// n-D vector into rows, four 4-lane ops per op on a 4 x 4 matrix; flat,
/// each op is one 16-lane instruction. Reads and writes keep their shape,
/// cast to and from the flat vectors. Built once per pass run, applied to
/// each kernel's loop.
struct FlatArithmetic {
  TypeConverter converter;
  ConversionTarget target;
  FrozenRewritePatternSet patterns;

  explicit FlatArithmetic(MLIRContext *ctx) : target(*ctx) {
    vector::populateForVectorLinearize(converter, target);
    target.addLegalOp<vector::TransferReadOp, vector::TransferWriteOp>();
    RewritePatternSet set(ctx);
    vector::populateVectorLinearizeBasePatterns(converter, target, set);
    patterns = std::move(set);
  }

  void apply(Operation *loop) const {
    // Rolled back where it fails: the kernel keeps its n-D vectors
    // (correct).
    (void)applyPartialConversion(loop, target, patterns);
  }
};

/// A read of one column (or row) of a token's matrix broadcast along the
/// other axis, as a normalize's inline sum reads A[t, i, k] for each k: the
/// vectoriser reads it element by element into the broadcast (four scalar
/// loads and inserts per 4 x 4 matrix). Read instead is the token's whole
/// matrix, flat, once for every such read of it, and each broadcast is a
/// shuffle of that (one in-register permute). `slices`: the constant-index
/// slices vectoriseSmallElementwise made; `loop`: its loop over the tile's
/// tokens, already vectorised.
void shuffleSliceReads(RewriterBase &rewriter, Operation *loop,
                       const llvm::SmallPtrSetImpl<Operation *> &slices) {
  // Each read with its per-token rows of a slice and that slice.
  SmallVector<std::tuple<vector::TransferReadOp, tensor::ExtractSliceOp,
                         tensor::ExtractSliceOp>>
      reads;
  loop->walk([&](vector::TransferReadOp read) {
    auto rows = read.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    auto slice = rows ? rows.getSource().getDefiningOp<tensor::ExtractSliceOp>()
                      : tensor::ExtractSliceOp();
    // The slice spans the first (token) axis: rows of it are rows of the
    // unsliced tensor. (A weight read at a constant row is sliced there.)
    if (rows && !read.getMask() && slice && slices.contains(slice) &&
        slice.getStaticOffsets().front() == 0 && rows.hasUnitStride() &&
        !ShapedType::isDynamicShape(rows.getStaticSizes()) &&
        llvm::all_of(read.getIndices(), isZeroInteger) &&
        llvm::all_of(ArrayRef(rows.getStaticOffsets()).drop_front(),
                     [](int64_t offset) { return offset == 0; }))
      reads.emplace_back(read, rows, slice);
  });
  llvm::DenseMap<std::pair<Value, void *>, Value> flatRows;
  for (auto [read, rows, slice] : reads) {
    Value whole = slice.getSource();
    auto wholeType = cast<RankedTensorType>(whole.getType());
    Location loc = read.getLoc();
    // The same rows of the unsliced tensor, read once per loop iteration
    // (before the first read from them).
    SmallVector<int64_t> shape{rows.getStaticSizes()[0]};
    llvm::append_range(shape, wholeType.getShape().drop_front());
    SmallVector<OpFoldResult> offsets = rows.getMixedOffsets();
    Value &flat = flatRows[{whole, offsets.front().getOpaqueValue()}];
    if (!flat) {
      rewriter.setInsertionPoint(read);
      SmallVector<OpFoldResult> sizes,
          strides(shape.size(), rewriter.getIndexAttr(1));
      for (int64_t size : shape)
        sizes.push_back(rewriter.getIndexAttr(size));
      Type element = wholeType.getElementType();
      Value matrix = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get(shape, element), whole, offsets,
          sizes, strides);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      flat = vector::ShapeCastOp::create(
          rewriter, loc,
          VectorType::get({ShapedType::getNumElements(shape)}, element),
          vector::TransferReadOp::create(
              rewriter, loc, VectorType::get(shape, element), matrix,
              SmallVector<Value>(shape.size(), zero), read.getPadding(),
              SmallVector<bool>(shape.size(), true)));
    }
    // Element q of the read is rows[e] for e given by the permutation map
    // (memory dims absent from it are at index 0), i.e. matrix[e + the
    // slice's offsets].
    VectorType type = read.getVectorType();
    AffineMap map = read.getPermutationMap();
    SmallVector<int64_t> vectorStrides = computeStrides(type.getShape()),
                         matrixStrides = computeStrides(shape), mask;
    for (int64_t q = 0; q < type.getNumElements(); ++q) {
      SmallVector<int64_t> at = delinearize(q, vectorStrides);
      SmallVector<int64_t> e(slice.getStaticOffsets());
      e[0] = 0;
      for (auto [dim, result] : llvm::enumerate(map.getResults()))
        if (auto memory = dyn_cast<AffineDimExpr>(result))
          e[memory.getPosition()] += at[dim];
      mask.push_back(linearize(e, matrixStrides));
    }
    rewriter.setInsertionPoint(read);
    Value shuffled = vector::ShuffleOp::create(rewriter, loc, flat, flat, mask);
    rewriter.replaceOp(
        read, vector::ShapeCastOp::create(rewriter, loc, type, shuffled));
  }
}

/// Vectorises a small elementwise kernel (isSmallElementwise). An input read
/// at a constant index (a short-axis normalize's inline sum reads A[t, i, k]
/// for each k) is first sliced to that index and read through a broadcast
/// map: linalg's vectoriser takes (d0, 0, d2) on a unit dimension, not a
/// constant index into a longer one. A kernel the vectoriser rejects stays
/// a loop nest (correct, scalar).
void vectoriseSmallElementwise(RewriterBase &rewriter, linalg::GenericOp op,
                               const FlatArithmetic &flat) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<std::pair<OpOperand *, Value>> slices;
  OpFoldResult one = rewriter.getIndexAttr(1);
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    AffineMap &map = maps[input->getOperandNumber()];
    if (!type || type.getRank() != map.getNumResults())
      continue;
    SmallVector<AffineExpr> results(map.getResults());
    SmallVector<OpFoldResult> offsets, sizes;
    bool sliced = false;
    for (auto [axis, result] : llvm::enumerate(results)) {
      auto index = dyn_cast<AffineConstantExpr>(result);
      bool slice = index && type.getDimSize(axis) != 1;
      offsets.push_back(rewriter.getIndexAttr(slice ? index.getValue() : 0));
      sizes.push_back(slice ? one
                            : rewriter.getIndexAttr(type.getDimSize(axis)));
      if (slice)
        results[axis] = rewriter.getAffineConstantExpr(0);
      sliced |= slice;
    }
    if (!sliced)
      continue;
    SmallVector<OpFoldResult> strides(type.getRank(), one);
    slices.emplace_back(
        input, tensor::ExtractSliceOp::create(rewriter, loc, input->get(),
                                              offsets, sizes, strides));
    map = AffineMap::get(map.getNumDims(), 0, results, op.getContext());
  }
  if (!slices.empty())
    rewriter.modifyOpInPlace(op, [&] {
      for (auto [operand, slice] : slices)
        operand->set(slice);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
  if (failed(linalg::vectorizeOpPrecondition(op)))
    return;
  // One vector op per kVectorElements elements, in a loop over rows of the
  // token axis: the vectors are unrolled to 1-D ones and their reads to
  // loads and inserts, straight-line code in the loop's block. A whole
  // [16, 4, 4] tile as one vector ran drc-opt out of memory on the d256
  // mHC program, and 64 elements per op on a 4-token tile (one op, no loop)
  // made the fused kernels' blocks so long that scf-to-cf, splitting them
  // at every loop, ran out of memory on a 2-block model. 16 elements
  // (a token's 4 x 4 matrix) compiles mHC at d256 in 17 s.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rowElements = 1;
  for (int64_t range : ArrayRef(ranges).drop_front())
    rowElements *= range;
  int64_t rows = std::max<int64_t>(1, kVectorElements / rowElements);
  while (ranges[0] % rows)
    --rows;
  Operation *kernel = op;
  if (rows < ranges[0]) {
    SmallVector<int64_t> sizes(ranges.size(), 0);
    sizes[0] = rows;
    auto tiled = tile(rewriter, op, sizes, /*forall=*/false);
    if (failed(tiled) || tiled->tiledOps.size() != 1)
      return;
    kernel = tiled->tiledOps.front();
    rewriter.setInsertionPoint(kernel);
  }
  Operation *loop = rows < ranges[0] ? kernel->getParentOp() : nullptr;
  auto vectorized = linalg::vectorize(rewriter, kernel);
  if (failed(vectorized))
    return;
  rewriter.replaceOp(kernel, vectorized->replacements);
  if (!loop)
    return;
  llvm::SmallPtrSet<Operation *, 4> sliceOps;
  for (auto [operand, slice] : slices)
    sliceOps.insert(slice.getDefiningOp());
  shuffleSliceReads(rewriter, loop, sliceOps);
  flat.apply(loop);
}

/// Lets LLVM vectorise the reductions that stay loops (row sums of norms and
/// softmaxes, narrow matmuls whose shape no register tile divides): their
/// float arithmetic may be reassociated and contracted into FMAs. The
/// summation order is then fixed by the compiled code (partial sums per
/// vector lane), the same on every run and thread count. Matmuls left scalar
/// are generics by then, so their bodies carry the flags too. Elementwise
/// bodies may contract a product and a sum into one FMA (HC's stream mix,
/// Σ_i A_ij H_i + β_j f, is a multiply and four FMAs where it was five
/// multiplies and four adds): one rounding less, the order of the
/// operations unchanged. The GPU pipeline does not: its PTX keeps mul.rn
/// and add.rn apart.
void relaxFloatMath(Operation *root) {
  root->walk([&](linalg::GenericOp op) {
    arith::FastMathFlags added = arith::FastMathFlags::contract;
    if (op.getNumReductionLoops())
      added = added | arith::FastMathFlags::reassoc;
    op.getBody()->walk([&](arith::ArithFastMathInterface math) {
      arith::FastMathFlagsAttr had = math.getFastMathFlagsAttr();
      arith::FastMathFlags flags =
          had ? had.getValue() : arith::FastMathFlags::none;
      math->setAttr(
          math.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(op.getContext(), flags | added));
    });
  });
}

/// The longest row that vectoriseRowReduction reads as one vector: 16
/// AVX-512 registers.
constexpr int64_t kMaxVectorRow = 256;

/// A fused region's sum along rows whose length is a multiple of 8 but not
/// of 16, at most kMaxVectorRow (a norm's Σ_c x² or HC's dA = Σ_c h dH' at
/// d_model 56, a DepthBench width): the summed axis is the innermost loop
/// and each operand reads it contiguously or not at all. LLVM unrolls such
/// a short row loop whole and then vectorises across rows instead,
/// gathering every element (HC at d_model 56 spent a quarter of its fused
/// regions' samples in two such sums); rows of a multiple of 16 it
/// vectorises along the row. Other lengths stay LLVM's.
bool isNarrowRowReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !op->getParentOfType<scf::ForallOp>())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned row = ranges.size() - 1;
  int64_t extent = ranges.back();
  if (ShapedType::isDynamicShape(ranges) ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
      extent % 16 == 0 || extent % 8 != 0 || extent > kMaxVectorRow)
    return false;
  return llvm::all_of(op.getIndexingMapsArray(), [&](AffineMap map) {
    if (!map.isProjectedPermutation())
      return false;
    std::optional<unsigned> at =
        map.getResultPosition(getAffineDimExpr(row, op.getContext()));
    return !at || *at == map.getNumResults() - 1;
  });
}

/// Tiles `op` to one row per iteration (every loop but the innermost at
/// 1) and vectorises the row: each operand's row one vector, and with
/// `vectorizeNDExtract` its tensor.extracts contiguous along the row vector
/// reads. Returns the outermost row loop, or null where the vectoriser
/// rejects the row (left a loop nest: correct, slower).
Operation *vectoriseRows(RewriterBase &rewriter, linalg::GenericOp op,
                         bool vectorizeNDExtract) {
  SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  sizes.back() = 0;
  auto rows = tile(rewriter, op, sizes, /*forall=*/false);
  if (failed(rows) || rows->tiledOps.size() != 1)
    return nullptr;
  Operation *row = rows->tiledOps.front();
  rewriter.setInsertionPoint(row);
  if (failed(linalg::vectorizeOpPrecondition(row, {}, {}, vectorizeNDExtract)))
    return nullptr;
  auto vectorized =
      linalg::vectorize(rewriter, row, {}, {}, vectorizeNDExtract);
  if (failed(vectorized))
    return nullptr;
  rewriter.replaceOp(row, vectorized->replacements);
  return rows->loops.front();
}

/// Vectorises a narrow row reduction (isNarrowRowReduction) one row at a
/// time: loops over the other axes, and in each a read of the row as one
/// vector, the body's arithmetic on it and one vector.reduction of its
/// lanes onto the result (`rowSums`: the lowering of the vectoriser's
/// vector.multi_reduction). The lanes are summed as a tree, in an order the
/// compiled code fixes, as in LLVM's vectorised sums (relaxFloatMath). A
/// kernel the vectoriser rejects stays a loop nest (correct, slower).
void vectoriseRowReduction(RewriterBase &rewriter, linalg::GenericOp op,
                           const FrozenRewritePatternSet &rowSums) {
  relaxFloatMath(op);
  Operation *loop = vectoriseRows(rewriter, op, /*vectorizeNDExtract=*/false);
  if (!loop)
    return;
  // Each row's vector.multi_reduction to one vector.reduction, whose lanes
  // may be summed in any order (a tree).
  (void)applyPatternsGreedily(loop, rowSums, withoutRegionSimplification());
  loop->walk([](vector::ReductionOp sum) {
    sum.setFastmathAttr(arith::FastMathFlagsAttr::get(
        sum.getContext(), sum.getFastmath() | arith::FastMathFlags::reassoc));
  });
}

/// An elementwise kernel whose innermost loop is shorter than 16 and not a
/// multiple of 8, reading through tensor.extract at computed indices: RoPE
/// over a view [N, H, 2, d_h/2] reads each element's partner half and its
/// position's cos and sin rows so, and at d_h/2 = 7 (d_model 56 with 4
/// heads) LLVM unrolled the 7-long loop and vectorised across heads, every
/// read a gather (Pre-LN's busiest kernel at d_model 56). vectoriseRows
/// with vectorizeNDExtract takes it one row at a time, those extracts
/// contiguous vector reads.
bool readsShortRowsAtIndices(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return op.hasPureTensorSemantics() && op.getNumReductionLoops() == 0 &&
         !ranges.empty() && !ShapedType::isDynamicShape(ranges) &&
         ranges.back() < 16 && ranges.back() % 8 != 0 &&
         !op.getBody()->getOps<tensor::ExtractOp>().empty();
}

/// A fill of a static tensor of 64 Ki elements or more: worth threads.
bool isLargeTensorFill(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return false;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  return type.hasStaticShape() && type.getNumElements() >= 65536;
}

/// Splits the outer parallel loop of an elementwise or row-reduction kernel
/// into eight (or fewer) equal chunks across threads; each output element is
/// still computed by one iteration, in the same order, on any thread count.
/// Kernels on buffers (AdamW's in-place update of the flat parameter
/// buffers) are split the same way.
LogicalResult scheduleGeneric(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ShapedType::isDynamicShape(ranges) ||
      op.getIteratorTypesArray().front() != utils::IteratorType::parallel ||
      !(op.hasPureTensorSemantics() || op.hasPureBufferSemantics()))
    return success();
  int64_t chunk = 1;
  while (chunk * 2 <= ranges[0] / 8 && ranges[0] % (chunk * 2) == 0)
    chunk *= 2;
  if (ranges[0] / chunk < 2)
    return success();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  sizes[0] = chunk;
  if (failed(tile(rewriter, op, sizes, /*forall=*/true)))
    return failure();
  return success();
}

/// Rows per tile of a causal "rows" kernel (narrowCausalRows): a multiple of
/// every register tile's rows, so the causal products' readers, which
/// visit k up to a row tile's last row ("prefix") or from its first
/// ("suffix"), read only entries the kernel wrote.
constexpr int64_t kCausalRowTile = 16;

/// Whether `op` is a kernel of causal attention's softmax or its adjoint
/// over one block's scores (drc.causal = "rows", loops g, t, s over
/// [G, T, T]) inside a thread's loop, T a multiple of kCausalRowTile.
bool isCausalRows(linalg::GenericOp op) {
  auto causal = op->getAttrOfType<StringAttr>(kCausalAttr);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return causal && causal.getValue() == "rows" && op.hasPureTensorSemantics() &&
         op->getParentOfType<scf::ForallOp>() && ranges.size() == 3 &&
         !ShapedType::isDynamicShape(ranges) && ranges[1] == ranges[2] &&
         ranges[1] % kCausalRowTile == 0;
}

/// Only a causal "rows" kernel's entries s <= t are read afterwards or
/// change its results (drc-lower-to-linalg's causalRows): masked entries
/// enter its max and sums as -inf and 0, and its probabilities' and dS's
/// readers skip them. Tiled to kCausalRowTile rows, each tile visits only
/// the columns up to its last row, its operands and results over those
/// columns sliced from the tile's: about half of the [T, T] passes go, and
/// entries past a tile's columns stay unwritten.
LogicalResult narrowCausalRows(RewriterBase &rewriter, linalg::GenericOp op) {
  auto tiled = tile(rewriter, op, {1, kCausalRowTile, 0}, /*forall=*/false);
  if (failed(tiled))
    return failure();
  auto rows = cast<linalg::GenericOp>(tiled->tiledOps.front());
  auto rowLoop = cast<scf::ForOp>(tiled->loops.back().getOperation());
  Location loc = rows.getLoc();
  rewriter.setInsertionPoint(rows);
  AffineExpr r0 = getAffineDimExpr(0, rewriter.getContext());
  OpFoldResult columns = affine::makeComposedFoldedAffineApply(
      rewriter, loc, r0 + kCausalRowTile, {rowLoop.getInductionVar()});
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  SmallVector<OpFoldResult> offsets(3, zero), strides(3, one);
  // The sizes of a tile operand's first `columns` columns.
  auto narrowSizes = [&](Value v) -> SmallVector<OpFoldResult> {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    return {rewriter.getIndexAttr(shape[0]), rewriter.getIndexAttr(shape[1]),
            columns};
  };
  // An operand indexed by s: its tile's first `columns` columns.
  auto narrowed = [&](OpOperand &operand) -> Value {
    Value v = operand.get();
    if (!rows.getMatchingIndexingMap(&operand).isFunctionOfDim(2))
      return v;
    return tensor::ExtractSliceOp::create(rewriter, loc, v, offsets,
                                          narrowSizes(v), strides);
  };
  SmallVector<Value> inputs, inits;
  for (OpOperand *operand : rows.getDpsInputOperands())
    inputs.push_back(narrowed(*operand));
  for (OpOperand &operand : rows.getDpsInitsMutable())
    inits.push_back(narrowed(operand));
  auto narrow = linalg::GenericOp::create(
      rewriter, loc, TypeRange(ValueRange(inits)), inputs, inits,
      rows.getIndexingMapsArray(), rows.getIteratorTypesArray(),
      /*bodyBuild=*/nullptr);
  rewriter.inlineRegionBefore(rows.getRegion(), narrow.getRegion(),
                              narrow.getRegion().end());
  // Results over s go back into the tile's; row reductions are whole.
  SmallVector<Value> results;
  for (auto [operand, result] :
       llvm::zip(rows.getDpsInitsMutable(), narrow.getResults())) {
    Value init = operand.get();
    if (result.getType() == init.getType()) {
      results.push_back(result);
      continue;
    }
    results.push_back(tensor::InsertSliceOp::create(
        rewriter, loc, result, init, offsets, narrowSizes(init), strides));
  }
  rewriter.replaceOp(rows, results);
  return success();
}

/// Whether `op` is a copy that swaps its last two axes (attention's kᵀ and,
/// in the adjoint, vᵀ of one (sequence, head) block, [1, T, dh] ->
/// [1, dh, T]) inside a thread's loop, both swapped extents multiples of
/// kTransposeSquare, in 32-bit elements.
bool isSquaresTranspose(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      op.getNumLoops() < 2 || !op->getParentOfType<scf::ForallOp>())
    return false;
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (&body.front() != yield.getOperation() ||
      yield.getValues().front() != body.getArgument(0))
    return false;
  unsigned rank = op.getNumLoops();
  SmallVector<unsigned> swapped = llvm::to_vector(llvm::seq(0u, rank));
  std::swap(swapped[rank - 2], swapped[rank - 1]);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Type element = getElementTypeOrSelf(op->getResult(0).getType());
  return maps[0] == AffineMap::getPermutationMap(swapped, op.getContext()) &&
         maps[1].isIdentity() && !ShapedType::isDynamicShape(ranges) &&
         ranges[rank - 2] % kTransposeSquare == 0 &&
         ranges[rank - 1] % kTransposeSquare == 0 &&
         element.getIntOrFloatBitWidth() == 32;
}

/// A transpose vectorised like any copy (along the result's rows) gathers
/// each vector from 16 rows of its source, one element per row: the kᵀ and
/// vᵀ copies were 16% of the attention adjoint's samples. Moved in
/// kTransposeSquare squares instead: each square read as 16 contiguous rows,
/// transposed in registers (vector.transpose lowered to 16 x 16 shuffles)
/// and written as 16 contiguous rows.
LogicalResult scheduleTranspose(RewriterBase &rewriter, linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  SmallVector<int64_t> sizes(rank, 1);
  sizes[rank - 2] = sizes[rank - 1] = kTransposeSquare;
  auto tiled = tile(rewriter, op, sizes, /*forall=*/false);
  if (failed(tiled))
    return failure();
  auto square = cast<linalg::GenericOp>(tiled->tiledOps.front());
  Location loc = square.getLoc();
  rewriter.setInsertionPoint(square);
  Type element = getElementTypeOrSelf(square->getResult(0).getType());
  auto rows = VectorType::get({kTransposeSquare, kTransposeSquare}, element);
  AffineMap minor =
      AffineMap::getMinorIdentityMap(rank, 2, rewriter.getContext());
  SmallVector<Value> origin(rank,
                            arith::ConstantIndexOp::create(rewriter, loc, 0));
  SmallVector<bool> inBounds(2, true);
  Value padding = arith::ConstantOp::create(rewriter, loc, element,
                                            rewriter.getZeroAttr(element));
  Value read = vector::TransferReadOp::create(
      rewriter, loc, rows, square.getDpsInputOperand(0)->get(), origin, padding,
      minor, inBounds);
  auto transposed =
      vector::TransposeOp::create(rewriter, loc, read, ArrayRef<int64_t>{1, 0});
  auto write = vector::TransferWriteOp::create(
      rewriter, loc, transposed, square.getDpsInitOperand(0)->get(), origin,
      minor, inBounds);
  rewriter.replaceOp(square, write.getResult());
  RewritePatternSet shuffles(rewriter.getContext());
  vector::populateVectorTransposeLoweringPatterns(
      shuffles, vector::VectorTransposeLowering::Shuffle16x16);
  return applyOpPatternsGreedily(ArrayRef<Operation *>{transposed},
                                 std::move(shuffles));
}

/// Keeps each C tile in registers across its k loop. Runs after
/// canonicalization has hoisted the transfers' constant indices; the first
/// round hoists the tensor slice, the second the vector transfers on it.
void hoistAccumulators(RewriterBase &rewriter, Operation *root) {
  SmallVector<scf::ForOp> kLoops;
  root->walk([&](vector::ContractionOp contract) {
    if (auto loop = dyn_cast<scf::ForOp>(contract->getParentOp()))
      kLoops.push_back(loop);
  });
  for (scf::ForOp loop : kLoops) {
    LoopLikeOpInterface hoisted = hoistLoopInvariantSubsets(
        rewriter, cast<LoopLikeOpInterface>(loop.getOperation()));
    hoistLoopInvariantSubsets(rewriter, hoisted);
  }
}

struct CpuTileAndVectorizePass
    : mlir::drc::impl::CpuTileAndVectorizeBase<CpuTileAndVectorizePass> {
  using CpuTileAndVectorizeBase::CpuTileAndVectorizeBase;

  /// Runs `schedule` on every generic that `matches`, found before any is
  /// rewritten; on a failure, reports `failure` at that op.
  LogicalResult scheduleEach(
      RewriterBase &rewriter, function_ref<bool(linalg::GenericOp)> matches,
      function_ref<LogicalResult(RewriterBase &, linalg::GenericOp)> schedule,
      StringRef failure) {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (matches(op))
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops)
      if (::mlir::failed(schedule(rewriter, op)))
        return op->emitError("drc-cpu-tile: ") << failure;
    return success();
  }

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    mergeProjections(rewriter, getOperation());
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        matmuls.push_back(cast<linalg::LinalgOp>(op));
    });
    SmallVector<linalg::LinalgOp> split;
    for (linalg::LinalgOp op : matmuls)
      split.append(splitRemainderColumns(rewriter, op, registerColumns));
    for (linalg::LinalgOp op : split)
      if (failed(scheduleMatmul(rewriter, op, registerRows, registerColumns))) {
        op->emitError("drc-cpu-tile: could not tile and vectorise this matmul");
        return signalPassFailure();
      }
    // The matmuls no register tile divides (a [1, d] weight's gradient, or
    // a narrow one inside a fused region) and the large fills outside
    // regions (a matmul's zeroed result, 8 MB for the attention scores)
    // become generics: outside regions they are threaded like the other
    // kernels there, and all reductions get relaxFloatMath's flags.
    SmallVector<linalg::LinalgOp> named;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
          (isa<linalg::FillOp>(op) && isa<func::FuncOp>(op->getParentOp()) &&
           isLargeTensorFill(op)))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }
    if (failed(scheduleEach(rewriter, isCausalRows, narrowCausalRows,
                            "could not narrow this causal kernel")) ||
        failed(scheduleEach(rewriter, isSquaresTranspose, scheduleTranspose,
                            "could not move this transpose in squares")))
      return signalPassFailure();
    SmallVector<linalg::GenericOp> small;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isSmallElementwise(op))
        small.push_back(op);
    });
    FlatArithmetic flat(&getContext());
    for (linalg::GenericOp op : small)
      vectoriseSmallElementwise(rewriter, op, flat);
    // Rows the vectoriser rejects stay loop nests (correct), not failures.
    RewritePatternSet rowSumPatterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        rowSumPatterns, vector::VectorMultiReductionLowering::InnerReduction);
    FrozenRewritePatternSet rowSums(std::move(rowSumPatterns));
    (void)scheduleEach(
        rewriter, isNarrowRowReduction,
        [&](RewriterBase &r, linalg::GenericOp op) {
          vectoriseRowReduction(r, op, rowSums);
          return success();
        },
        "");
    // Kernels outside fused regions.
    SmallVector<linalg::GenericOp> generics;
    for (auto generic : getOperation().getBody().getOps<linalg::GenericOp>())
      generics.push_back(generic);
    for (linalg::GenericOp op : generics) {
      linalg::GenericOp kernel = splitLongReduction(rewriter, op);
      if (failed(scheduleGeneric(rewriter, kernel))) {
        kernel->emitError(
            "drc-cpu-tile: could not split this kernel across threads");
        return signalPassFailure();
      }
    }
    (void)scheduleEach(
        rewriter, readsShortRowsAtIndices,
        [](RewriterBase &r, linalg::GenericOp op) {
          vectoriseRows(r, op, /*vectorizeNDExtract=*/true);
          return success();
        },
        "");
    RewritePatternSet patterns(&getContext());
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, &getContext());
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    // A [N, w] result appended to a bank as [N, 1, w] (an expand_shape
    // inserted into the store) becomes a rank-reducing insert of [N, w]:
    // empty-tensor elimination, which needs equal types, then lets the
    // producer (a sublayer's output projection) write into the bank's row
    // instead of a buffer copied there.
    tensor::populateReassociativeReshapeFoldingPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     withoutRegionSimplification())))
      return signalPassFailure();
    hoistAccumulators(rewriter, getOperation());
    // Register tiles that start from zeros: their accumulators start in
    // registers, and the fills go (the loops' unchanged tile arguments and
    // the slices of them folded away first).
    RewritePatternSet fills(&getContext());
    fills.add<ReadFromFill, OverwriteFill>(&getContext());
    scf::ForOp::getCanonicalizationPatterns(fills, &getContext());
    tensor::ExtractSliceOp::getCanonicalizationPatterns(fills, &getContext());
    tensor::InsertSliceOp::getCanonicalizationPatterns(fills, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(fills),
                                     withoutRegionSimplification())))
      return signalPassFailure();
    relaxFloatMath(getOperation());
  }
};

} // namespace
