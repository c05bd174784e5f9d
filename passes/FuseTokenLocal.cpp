//===- FuseTokenLocal.cpp - Residual work between sublayers as regions ----===//
//
// Replaces each token-local region (TokenLocalRegions.h) of two or more ops
// by a drc.fused op at its last op's place; the ops before that place which
// use its results move after it.
//
//===----------------------------------------------------------------------===//
#include "passes/BankAdjoints.h"
#include "passes/EarlySums.h"
#include "passes/TokenLocalRegions.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <map>
#include <optional>
#include <set>

namespace mlir::drc {
#define GEN_PASS_DEF_FUSETOKENLOCAL
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

/// The largest per-tile value of a region stays within this many bytes when
/// the tile is picked automatically: a few such values fit in L2.
constexpr int64_t kTileBytes = 64 * 1024;
constexpr int64_t kMaxTileTokens = 64;
/// A region whose largest value is at most this big runs as one tile: too
/// little work to share across threads.
constexpr int64_t kOneTileBytes = 256 * 1024;

/// The bytes per token of the widest per-token value `ops` read or make.
int64_t widestPerToken(ArrayRef<Operation *> ops, const TokenAnalysis &a) {
  int64_t widest = 1;
  for (Operation *op : ops)
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (a.of(v) == Rows::PerToken)
        widest = std::max(widest, a.bytesPerToken(v));
  return widest;
}

/// A tile of fewer tokens makes each of its steps a short loop that hardly
/// pays for its setup, and a region of many steps (AttnRes's bank regions run
/// dozens per tile) pays that per tile; it also writes more per-tile partial
/// sums. So a tile grows past kTileBytes to this many tokens while its widest
/// value stays within kWideTileBytes, half of a 1 MiB L2: AttnRes's bank
/// regions at d256 went from 2-8 tokens to 16, and their fused kernels took
/// 5-10% fewer samples; HC at d1024 (widest 16 KiB per token, 4 tokens to 16)
/// was unchanged within the noise.
constexpr int64_t kMinTileTokens = 16;
constexpr int64_t kWideTileBytes = 512 * 1024;

/// All tokens for a small region; otherwise the most tokens per tile, a
/// power of two dividing `tokens` and at most kMaxTileTokens, whose largest
/// per-tile value fits kTileBytes (or, up to kMinTileTokens,
/// kWideTileBytes), leaving at least two tiles. `widest`: widestPerToken of
/// the region.
int64_t pickTile(int64_t widest, const TokenAnalysis &a) {
  if (a.tokens * widest <= kOneTileBytes)
    return a.tokens;
  auto fits = [&](int64_t tile) {
    return tile <= kMaxTileTokens && a.tokens % tile == 0 &&
           a.tokens / tile >= 2 &&
           tile * widest <=
               (tile <= kMinTileTokens ? kWideTileBytes : kTileBytes);
  };
  int64_t tile = 1;
  while (fits(tile * 2))
    tile *= 2;
  return tile;
}

/// The tokens per tile of a region whose widest per-token value is
/// `widest` (widestPerToken): the pass's tile-tokens option, or pickTile's
/// when it is 0.
int64_t regionTile(int64_t widest, const TokenAnalysis &a, int64_t tileTokens) {
  return tileTokens ? tileTokens : pickTile(widest, a);
}

/// The per-tile partial sums of a region's parts are at most this fraction
/// of the per-token value they sum: tiles of a few tokens (a GPU's, one
/// token per tile) would write more than the sum over tokens reads.
constexpr int64_t kPartialsPerSummedElement = 8;

/// Whether sum over tokens `sum`, computed by a region with tiles of `tile`
/// tokens, writes few enough partial sums (kPartialsPerSummedElement).
bool partialSumsPay(Operation *sum, const TokenAnalysis &a, int64_t tile) {
  int64_t largest = 0;
  for (Value v : sum->getOperands())
    largest = std::max(largest, a.bytesPerToken(v) * a.tokens);
  auto result = cast<RankedTensorType>(sum->getResult(0).getType());
  int64_t partials = a.tokens / tile * result.getNumElements() *
                     result.getElementTypeBitWidth() / 8;
  return partials * kPartialsPerSummedElement <= largest;
}

/// A normed linear's weight gradient whose per-tile partial sums would not
/// pay (mHC's φ^pre, φ^post, φ^res: [n² + 2n, nC] per state; with tiles of
/// `tileTokens`, the pass option, or at most those of a region reading its
/// widest operand) stays a sum over all tokens after the region that makes its
/// dy, and read x's rows twice there: for their norms, then in the product.
/// Its per-token factor dy / rms(x) becomes a drc.scale_by_inv_rms beside
/// dy, which joins dy's region (that reads or recomputes x's rows and their
/// norms anyway), and the sum reads it `prescaled`: x is read once after
/// the region, by the product.
void prescaleWeightGrads(func::FuncOp fn, const TokenAnalysis &a,
                         int64_t tileTokens) {
  SmallVector<NormedLinearWeightGradOp> wide;
  for (auto op : fn.getBody().front().getOps<NormedLinearWeightGradOp>()) {
    if (op.getPrescaled() || !isTokenSum(op, a))
      continue;
    int64_t widest = std::max(a.bytesPerToken(op.getInput()),
                              a.bytesPerToken(op.getResultGrad()));
    if (!partialSumsPay(op, a, tileTokens ? tileTokens : pickTile(widest, a)))
      wide.push_back(op);
  }
  OpBuilder builder(fn.getContext());
  for (NormedLinearWeightGradOp op : wide) {
    Value dy = op.getResultGrad(), x = op.getInput();
    // Right after the later of the two definitions (before the op when
    // both are arguments).
    builder.setInsertionPoint(op);
    Operation *after = nullptr;
    for (Value v : {dy, x})
      if (Operation *def = v.getDefiningOp();
          def && (!after || after->isBeforeInBlock(def)))
        after = def;
    if (after)
      builder.setInsertionPointAfter(after);
    auto scaled = ScaleByInvRMSOp::create(builder, op.getLoc(), dy.getType(),
                                          dy, x, op.getEpsAttr());
    op.getResultGradMutable().assign(scaled);
    op.setPrescaled(true);
  }
}

/// Sums over the tokens (parameter gradients: drc.sum_leading over tokens, a
/// normed linear's weight gradient) that region `ops` can compute tile by
/// tile, as partial sums added after it: each sums a per-token value the
/// region makes, and reads otherwise only per-token values from before the
/// region (no wider than `widest`, the region's widest, which set its
/// tile). The
/// region then need not write what only they read, and the state a weight
/// gradient reads (a coefficient projection's input) is read once per
/// tile, by the region, instead of twice over all tokens after it (its row
/// norms, then the product).
SmallVector<Operation *> tokenSums(ArrayRef<Operation *> ops,
                                   const TokenAnalysis &a, int64_t widest,
                                   int64_t tile) {
  llvm::SmallPtrSet<Operation *, 16> inRegion(ops.begin(), ops.end());
  llvm::SetVector<Operation *> sums;
  for (Operation *op : ops)
    for (Operation *user : op->getUsers()) {
      if (inRegion.contains(user) || !isTokenSum(user, a))
        continue;
      bool fits = true;
      for (Value v : user->getOperands()) {
        Operation *def = v.getDefiningOp();
        fits &= (def && inRegion.contains(def)) ||
                ((!def || def->isBeforeInBlock(ops.front())) &&
                 a.bytesPerToken(v) <= widest);
      }
      if (fits && partialSumsPay(user, a, tile))
        sums.insert(user);
    }
  return sums.takeVector();
}

/// Replaces `regionOps` (in block order) by one drc.fused op, which also
/// computes the sums over tokens `sums` (tokenSums) as per-tile partial
/// sums, each replaced by a drc.sum_leading of them.
void fuse(ArrayRef<Operation *> regionOps, ArrayRef<Operation *> sums,
          TokenAnalysis &a, int64_t tile, OpBuilder &builder) {
  SmallVector<Operation *> ops(regionOps);
  ops.append(sums.begin(), sums.end());
  llvm::sort(ops,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  llvm::SmallPtrSet<Operation *, 16> inRegion(ops.begin(), ops.end());
  llvm::SmallPtrSet<Operation *, 4> summed(sums.begin(), sums.end());
  // An input is read by tiles or whole; a shared value shaped per token may
  // be both, as two inputs.
  SmallVector<std::pair<Value, unsigned>> inputs;
  SmallVector<Value> outputs;
  llvm::SmallDenseSet<std::pair<Value, unsigned>> seen;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : ops) {
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      Operation *def = v.getDefiningOp();
      if (def && inRegion.contains(def))
        continue;
      if (def && def->hasTrait<OpTrait::ConstantLike>())
        constants.insert(def);
      else if (std::pair<Value, unsigned> input{v, readsRows(op, operand)};
               seen.insert(input).second)
        inputs.push_back(input);
    }
    for (Value v : op->getResults())
      if (llvm::any_of(v.getUsers(), [&](Operation *user) {
            return !inRegion.contains(user);
          }))
        outputs.push_back(v);
  }
  Operation *last = ops.back();
  builder.setInsertionPointAfter(last);
  SmallVector<Value> inputValues;
  for (auto [v, rows] : inputs)
    inputValues.push_back(v);
  SmallVector<Type> resultTypes;
  SmallVector<int64_t> partials;
  for (auto [index, v] : llvm::enumerate(outputs)) {
    bool partial = summed.contains(v.getDefiningOp());
    resultTypes.push_back(
        partial ? FusedOp::stackedPartials(v.getType(), a.tokens, tile)
                : v.getType());
    if (partial)
      partials.push_back(index);
  }
  auto fused = FusedOp::create(builder, last->getLoc(), resultTypes,
                               inputValues, a.tokens, tile, partials);
  Block *body = builder.createBlock(&fused.getBody());
  DenseMap<std::pair<Value, unsigned>, Value> arguments;
  for (auto [v, rows] : inputs)
    arguments[{v, rows}] = body->addArgument(
        rows ? FusedOp::withRows(v.getType(), tile) : v.getType(), v.getLoc());
  IRMapping map;
  for (Operation *c : constants)
    builder.clone(*c, map);
  for (Operation *op : ops) {
    Operation *copy = builder.clone(*op, map);
    for (OpOperand &operand : copy->getOpOperands())
      if (auto it = arguments.find(
              {op->getOperand(operand.getOperandNumber()),
               readsRows(op, op->getOpOperand(operand.getOperandNumber()))});
          it != arguments.end())
        operand.set(it->second);
    if (!summed.contains(op)) // a tile's partial sum has the sum's type
      for (Value result : copy->getResults())
        result.setType(FusedOp::withRows(result.getType(), tile));
  }
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  YieldOp::create(builder, last->getLoc(), yielded);
  builder.setInsertionPointAfter(fused);
  // The fused op and the sums of its partial results: ops that read them
  // from before the fused op's place move after the last.
  llvm::SmallPtrSet<Operation *, 16> moved{fused};
  Operation *after = fused;
  for (auto [index, output, result] :
       llvm::enumerate(outputs, fused.getResults())) {
    Value replacement = result;
    if (fused.isPartial(index)) {
      after = SumLeadingOp::create(builder, output.getLoc(), output.getType(),
                                   result);
      moved.insert(after);
      replacement = after->getResult(0);
    } else {
      a.rows[result] = Rows::PerToken; // a later region may read it
    }
    output.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !inRegion.contains(use.getOwner()) && use.getOwner() != fused;
    });
  }
  // Ops between the region's first and last op that use its results (and
  // their users there) move after it, in order. Nothing between them feeds
  // the region (convexity), and none of them is the AdamW step, which comes
  // after every gradient, so side effects keep their order.
  SmallVector<Operation *> toMove;
  for (Operation *op = ops.front(); op != fused; op = op->getNextNode()) {
    if (inRegion.contains(op))
      continue;
    if (llvm::any_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && moved.contains(def);
        })) {
      moved.insert(op);
      toMove.push_back(op);
    }
  }
  for (Operation *op : toMove) {
    op->moveAfter(after);
    after = op;
  }
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

/// The ops of the backward pass: those that depend on the loss's adjoint
/// (the results of cross_entropy_grad).
llvm::DenseSet<Operation *> backwardOps(Block &block) {
  llvm::DenseSet<Operation *> backward;
  for (Operation &op : block) {
    bool isBackward = isa<CrossEntropyGradOp>(op) ||
                      llvm::any_of(op.getOperands(), [&](Value v) {
                        Operation *def = v.getDefiningOp();
                        return def && backward.contains(def);
                      });
    if (isBackward)
      backward.insert(&op);
  }
  return backward;
}

/// The per-token values each region reads from outside itself, the regions
/// given by `regionOf` (an op's region, if it is in one).
DenseMap<size_t, llvm::DenseSet<Value>>
outsideReads(Block &block, const TokenAnalysis &a,
             function_ref<std::optional<size_t>(Operation *)> regionOf) {
  DenseMap<size_t, llvm::DenseSet<Value>> reads;
  for (Operation &op : block)
    if (std::optional<size_t> region = regionOf(&op))
      for (Value v : op.getOperands())
        if (a.of(v) == Rows::PerToken && regionOf(v.getDefiningOp()) != region)
          reads[*region].insert(v);
  return reads;
}

/// What the rematerialisation rules below look at: the function's token-local
/// regions, its backward ops, and the per-token values each region reads
/// from outside itself.
struct RegionView {
  llvm::DenseSet<Operation *> backward;
  DenseMap<Operation *, size_t> regionOf;
  DenseMap<size_t, llvm::DenseSet<Value>> reads;

  RegionView(func::FuncOp fn, const TokenAnalysis &a)
      : backward(backwardOps(fn.getBody().front())),
        regionOf(regionIndex(tokenLocalRegions(fn, a))),
        reads(outsideReads(fn.getBody().front(), a,
                           [&](Operation *op) -> std::optional<size_t> {
                             if (auto at = regionOf.find(op);
                                 at != regionOf.end())
                               return at->second;
                             return std::nullopt;
                           })) {}
};

/// Sinking: a forward value that only a later forward region reads is
/// computed by that region instead, and never written, when that region
/// reading the op's per-token operands (written for it where nothing else
/// writes them) moves fewer bytes than writing and reading the value. In a
/// train step HC's width mix A_r^T H is such a value: H is saved for the
/// coefficient projections' weight gradients, so the next region reads H (and
/// A_r, a few floats) instead of the mixed state, and the forward pass writes
/// one state per boundary instead of two. Where H is not saved (the
/// forward-only loss) the mixed state stays the one written. The clone is
/// marked like a recomputed op, so it joins its readers' region.
void sinkIntoReaders(func::FuncOp fn, const TokenAnalysis &a) {
  Block &block = fn.getBody().front();
  RegionView regions(fn, a);
  auto &[backward, regionOf, reads] = regions;
  // A value written whatever this does, as itself or as a view of it (mHC
  // saves its state as [N, n C] rows): a function argument, a boundary op's
  // result, or a region's value that a boundary op (a weight gradient)
  // reads. Null if none.
  std::function<Value(Value)> written = [&](Value x) -> Value {
    if (!regionOf.count(x.getDefiningOp()))
      return x;
    for (Operation *user : x.getUsers()) {
      if (!regionOf.count(user))
        return x;
      if (auto view = dyn_cast<ViewOp>(user))
        if (Value viewed = written(view.getResult()))
          return viewed;
    }
    return {};
  };
  OpBuilder builder(fn.getContext());
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto home = regionOf.find(&op);
    if (home == regionOf.end() || backward.contains(&op) ||
        op.getNumResults() != 1 || !isPure(&op))
      continue;
    Value v = op.getResult(0);
    std::optional<size_t> reader;
    Operation *firstUser = nullptr;
    bool oneReader = !v.use_empty();
    for (Operation *user : v.getUsers()) {
      auto at = regionOf.find(user);
      oneReader &= at != regionOf.end() && at->second != home->second &&
                   !backward.contains(user) &&
                   (!reader || *reader == at->second);
      if (!oneReader)
        break;
      reader = at->second;
      if (!firstUser || user->isBeforeInBlock(firstUser))
        firstUser = user;
    }
    if (!oneReader)
      continue;
    // The reader stops reading v; it reads the operands instead, and those
    // not in memory anyway are written for it.
    // Each per-token operand with where it is in memory (null: nowhere yet).
    SmallVector<std::pair<Value, Value>> operands;
    for (Value x : op.getOperands())
      if (a.of(x) == Rows::PerToken)
        operands.push_back({x, written(x)});
    int64_t added = -a.bytesPerToken(v);
    for (auto [x, stored] : operands)
      if (!reads[*reader].contains(stored ? stored : x))
        added += a.bytesPerToken(x) * (stored ? 1 : 2);
    if (added >= a.bytesPerToken(v))
      continue;
    builder.setInsertionPoint(firstUser);
    UnitAttr recomputed = builder.getUnitAttr();
    IRMapping map;
    for (auto [x, stored] : operands) {
      reads[*reader].insert(stored ? stored : x);
      if (stored && stored != x) {
        auto view = ViewOp::create(builder, op.getLoc(), x.getType(), stored,
                                   ValueRange());
        view->setAttr(kRecomputedAttr, recomputed);
        map.map(x, view.getResult());
      }
    }
    Operation *copy = builder.clone(op, map);
    copy->setAttr(kRecomputedAttr, recomputed);
    v.replaceAllUsesWith(copy->getResult(0));
    regionOf.erase(&op); // a new op may take its address
    op.erase();
  }
}

/// Recomputing a saved value is worth it while it costs at most this many
/// flops per byte of the value: saving costs a write in the forward pass
/// and a read in the backward one, a few flops' time per byte on a CPU core
/// running token-local work (far below its GEMM rate).
constexpr int64_t kRecomputeFlopsPerByte = 8;

/// About how many flops per token token-local `op` does: per element it
/// produces, two per term of a contraction (projections, matmuls, mixes,
/// depth attention's logits and mix), a transcendental's handful for a
/// squash, two otherwise.
int64_t flopsPerToken(Operation *op, const TokenAnalysis &a) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  int64_t perElement = 2;
  if (auto linear = dyn_cast<NormedLinearOp>(op)) {
    perElement = 2 * shape(linear.getInput()).back() + 1;
  } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
    ArrayRef<int64_t> lhs = shape(matmul.getLhs());
    perElement = 2 * (matmul.getTransposeLhs() ? lhs.front() : lhs.back());
  } else if (auto mix = dyn_cast<MixOp>(op)) {
    perElement = 2 * shape(mix.getInput())[1];
  } else if (auto depth = dyn_cast<DepthAttentionOp>(op)) {
    perElement = 4 * shape(depth.getKeys())[1];
  } else if (isa<SquashOp>(op)) {
    perElement = 10;
  }
  int64_t elements = 0; // a token-local op's results are all per token
  for (Value r : op->getResults())
    elements += cast<RankedTensorType>(r.getType()).getNumElements() / a.tokens;
  return elements * perElement;
}

/// Rematerialisation: a backward region that reads a value a forward region
/// computed (an activation saved for the backward pass) recomputes it from
/// that region's own inputs instead. Token-local work costs a few flops per
/// element moved, so reading the forward region's inputs again (which the
/// backward region mostly reads anyway: the state) beats writing and
/// reading every intermediate; the forward region then writes only what
/// the forward pass itself needs. Values that are costly for their size
/// stay saved and are read where the recomputation meets them: the results
/// of contractions over a row (HC's and mHC's coefficient projections, a
/// few floats per token from a few thousand flops) and a long chain's
/// checkpoints (mHC's Sinkhorn iterations). The clones repeat the same ops
/// on the same inputs.
/// `tileTokens`: the pass's tile-tokens option (regionTile).
void recomputeSavedValues(func::FuncOp fn, const TokenAnalysis &a,
                          int64_t tileTokens) {
  Block &block = fn.getBody().front();
  // What each backward region reads from outside itself (`reads`):
  // recomputing from values it reads anyway costs no traffic.
  RegionView regions(fn, a);
  auto &[backward, regionOf, reads] = regions;
  auto computedInForward = [&](Value v) -> std::optional<size_t> {
    Operation *def = v.getDefiningOp();
    auto it = regionOf.find(def);
    if (!def || it == regionOf.end() || backward.contains(def))
      return std::nullopt;
    return it->second;
  };
  // The flops per token of recomputing a forward value from its region's
  // inputs and saved values, and whether it is saved itself: memoised, a
  // value's cone without the saved values below it. An operand bigger than
  // the value (the state a coefficient is computed from) counts as there:
  // the backward region recomputes it for its own uses anyway, so only
  // chains of values no bigger than the result add up (mHC's Sinkhorn
  // iterations).
  DenseMap<Value, int64_t> coneFlops;
  llvm::DenseSet<Value> kept;
  std::function<int64_t(Value)> cone = [&](Value v) -> int64_t {
    if (auto known = coneFlops.find(v); known != coneFlops.end())
      return known->second;
    Operation *def = v.getDefiningOp();
    std::optional<size_t> home = computedInForward(v);
    int64_t flops = flopsPerToken(def, a);
    for (Value operand : def->getOperands())
      if (std::optional<size_t> at = computedInForward(operand);
          at && *at == *home) {
        int64_t below = cone(operand); // decides whether it is kept
        if (!kept.contains(operand) &&
            a.bytesPerToken(operand) <= a.bytesPerToken(v))
          flops += below;
      }
    if (flops > kRecomputeFlopsPerByte * a.bytesPerToken(v))
      kept.insert(v);
    return coneFlops[v] = flops;
  };
  /// The home region of a forward value the backward pass would recompute
  /// rather than read.
  auto inForward = [&](Value v) -> std::optional<size_t> {
    std::optional<size_t> home = computedInForward(v);
    if (!home)
      return std::nullopt;
    cone(v);
    if (kept.contains(v))
      return std::nullopt;
    return home;
  };
  /// The per-token inputs of `v`'s forward region that recomputing `v`
  /// reads, added to `out`; `visited` keeps a shared subexpression from
  /// being walked once per path to it.
  std::function<void(Value, size_t, llvm::SetVector<Value> &,
                     llvm::DenseSet<Value> &)>
      leaves = [&](Value v, size_t home, llvm::SetVector<Value> &out,
                   llvm::DenseSet<Value> &visited) {
        if (!visited.insert(v).second)
          return;
        std::optional<size_t> at = inForward(v);
        if (!at || *at != home) {
          if (a.of(v) == Rows::PerToken)
            out.insert(v);
          return;
        }
        for (Value operand : v.getDefiningOp()->getOperands())
          leaves(operand, home, out, visited);
      };
  OpBuilder builder(fn.getContext());
  // Clones per (value, backward region), made before that region's first
  // reader.
  DenseMap<std::pair<Value, size_t>, Value> clones;
  std::function<Value(Value, size_t, Operation *)> recompute =
      [&](Value v, size_t region, Operation *before) -> Value {
    std::optional<size_t> home = inForward(v);
    if (!home)
      return v;
    if (Value known = clones.lookup({v, region}))
      return known;
    Operation *def = v.getDefiningOp();
    IRMapping map;
    for (Value operand : def->getOperands())
      if (std::optional<size_t> at = inForward(operand); at && *at == *home)
        map.map(operand, recompute(operand, region, before));
    builder.setInsertionPoint(before);
    Operation *copy = builder.clone(*def, map);
    copy->setAttr(kRecomputedAttr, builder.getUnitAttr());
    for (auto [result, copied] :
         llvm::zip(def->getResults(), copy->getResults()))
      clones[{result, region}] = copied;
    return clones.lookup({v, region});
  };
  // Per (backward region, forward region): recompute everything the one
  // reads of the other when the inputs that adds to its reads are no bigger
  // than the traffic of the saved values: read by the backward region, and
  // written by the forward one unless the forward pass reads them too.
  struct Pair {
    llvm::SetVector<Value> saved, needed;
    llvm::DenseSet<Value> visited;
  };
  std::map<std::pair<size_t, size_t>, Pair> pairs;
  for (Operation &op : block) {
    auto at = regionOf.find(&op);
    if (at == regionOf.end() || !backward.contains(&op))
      continue;
    for (Value v : op.getOperands())
      if (std::optional<size_t> home = inForward(v)) {
        Pair &pair = pairs[{at->second, *home}];
        pair.saved.insert(v);
        leaves(v, *home, pair.needed, pair.visited);
      }
  }
  std::set<std::pair<size_t, size_t>> approved;
  for (auto &[key, pair] : pairs) {
    int64_t saved = 0, added = 0;
    for (Value v : pair.saved) {
      // Read no more; and written no more when only the backward reads it.
      bool onlyBackward = llvm::all_of(v.getUsers(), [&](Operation *user) {
        return backward.contains(user) || regionOf.lookup(user) == key.second;
      });
      saved += a.bytesPerToken(v) * (onlyBackward ? 2 : 1);
    }
    for (Value leaf : pair.needed)
      added += reads[key.first].contains(leaf) ? 0 : a.bytesPerToken(leaf);
    if (added <= saved)
      approved.insert(key);
  }
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto at = regionOf.find(&op);
    if (at == regionOf.end() || !backward.contains(&op) ||
        op.hasAttr(kRecomputedAttr))
      continue;
    for (OpOperand &operand : op.getOpOperands())
      if (std::optional<size_t> home = inForward(operand.get());
          home && approved.count({at->second, *home}))
        operand.set(recompute(operand.get(), at->second, &op));
  }
  // A sum over tokens that will join a backward region as partial sums (a
  // weight gradient; tokenSums) reads the values that region recomputes
  // there, not their saved copies: HC's coefficient projections' weight
  // gradient reads the state the region recomputes for the norm's gradient
  // anyway, and the gain gradient of the sublayer's pre-norm its input.
  // (A sum that stays outside, its partial sums too many, reads the saved
  // value: the region would otherwise write the recomputed one for it.)
  DenseMap<size_t, int64_t> tiles;
  auto tileOf = [&](size_t region) {
    auto [at, added] = tiles.try_emplace(region, 0);
    if (added) {
      SmallVector<Operation *> ops;
      for (auto [op, home] : regionOf)
        if (home == region)
          ops.push_back(op);
      at->second = regionTile(widestPerToken(ops, a), a, tileTokens);
    }
    return at->second;
  };
  for (Operation &op : block) {
    if (regionOf.count(&op) || !isTokenSum(&op, a))
      continue;
    // The backward region it reads from; none if it reads two.
    std::optional<size_t> region;
    bool oneRegion = true;
    for (Value v : op.getOperands())
      if (auto at = regionOf.find(v.getDefiningOp());
          at != regionOf.end() && backward.contains(at->first)) {
        oneRegion &= !region || *region == at->second;
        region = at->second;
      }
    if (!region || !oneRegion || !partialSumsPay(&op, a, tileOf(*region)))
      continue;
    for (OpOperand &operand : op.getOpOperands())
      if (Value clone = clones.lookup({operand.get(), *region});
          clone && clone.getDefiningOp()->isBeforeInBlock(&op))
        operand.set(clone);
  }
  // A recomputed value whose data the backward region reads anyway as
  // another shape is that read, viewed: mHC's backward region reads the
  // [N, n C] rows of a state as an input of the next state's recomputation,
  // and recomputed the same state as [N, n, C] from the boundary before it
  // (a stream mix, and a state and a sublayer output read for nothing).
  DenseMap<Operation *, size_t> cloneOf;
  for (auto &[key, clone] : clones)
    cloneOf[clone.getDefiningOp()] = key.second;
  auto backwardRegion = [&](Operation *op) -> std::optional<size_t> {
    if (auto at = cloneOf.find(op); at != cloneOf.end())
      return at->second;
    if (auto at = regionOf.find(op);
        at != regionOf.end() && backward.contains(op))
      return at->second;
    return std::nullopt;
  };
  DenseMap<size_t, llvm::DenseSet<Value>> readAfter =
      outsideReads(block, a, backwardRegion);
  for (auto &[key, clone] : clones) {
    auto [v, region] = key;
    for (Operation *user : v.getUsers()) {
      auto at = regionOf.find(user);
      if (!isa<ViewOp>(user) || at == regionOf.end() ||
          at->second != *inForward(v) ||
          !readAfter[region].contains(user->getResult(0)))
        continue;
      builder.setInsertionPoint(clone.getDefiningOp());
      auto view = ViewOp::create(builder, clone.getLoc(), v.getType(),
                                 user->getResult(0), ValueRange());
      view->setAttr(kRecomputedAttr, builder.getUnitAttr());
      clone.replaceAllUsesWith(view.getResult());
      break;
    }
  }
  // Forward values now read by nobody, and clones made redundant above.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if ((regionOf.count(&op) || op.hasAttr(kRecomputedAttr)) &&
        op.use_empty() && isPure(&op))
      op.erase();
}

struct FuseTokenLocalPass
    : mlir::drc::impl::FuseTokenLocalBase<FuseTokenLocalPass> {
  using FuseTokenLocalBase::FuseTokenLocalBase;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(fuseFunction(fn)))
        return signalPassFailure();
  }

  LogicalResult fuseFunction(func::FuncOp fn) {
    if (!fn.getBody().hasOneBlock())
      return success();
    TokenAnalysis a = analyseTokens(fn);
    if (a.tokens == 0)
      return success();
    if (tileTokens < 0 || (tileTokens > 0 && a.tokens % tileTokens != 0))
      return fn.emitError()
             << "drc-fuse-token-local: tile-tokens=" << tileTokens.getValue()
             << " does not divide the " << a.tokens
             << " tokens of this function";
    sumContributionsEarly(fn, a);
    a = analyseTokens(fn);
    deferBankAdjoints(fn, a);
    a = analyseTokens(fn);
    prescaleWeightGrads(fn, a, tileTokens);
    a = analyseTokens(fn);
    if (recompute) {
      sinkIntoReaders(fn, a);
      a = analyseTokens(fn);
      recomputeSavedValues(fn, a, tileTokens);
      a = analyseTokens(fn);
    }
    OpBuilder builder(fn.getContext());
    for (SmallVector<Operation *> &ops : tokenLocalRegions(fn, a)) {
      if (ops.size() < 2)
        continue;
      int64_t widest = widestPerToken(ops, a);
      int64_t tile = regionTile(widest, a, tileTokens);
      fuse(ops, tokenSums(ops, a, widest, tile), a, tile, builder);
    }
    return success();
  }
};

} // namespace
