//===- FuseTokenLocal.cpp - Residual work between sublayers as regions ----===//
//
// Replaces each token-local region (TokenLocalRegions.h) of two or more ops
// by a drc.fused op at its last op's place; the ops before that place which
// use its results move after it.
//
//===----------------------------------------------------------------------===//
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

/// All tokens for a small region; otherwise the most tokens per tile, a
/// power of two dividing `tokens` and at most kMaxTileTokens, whose largest
/// per-tile value fits kTileBytes, leaving at least two tiles.
int64_t pickTile(ArrayRef<Operation *> ops, const TokenAnalysis &a) {
  int64_t widest = 1;
  for (Operation *op : ops)
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (a.of(v) == Rows::PerToken)
        widest = std::max(widest, a.bytesPerToken(v));
  if (a.tokens * widest <= kOneTileBytes)
    return a.tokens;
  int64_t tile = 1;
  while (tile * 2 <= kMaxTileTokens && a.tokens % (tile * 2) == 0 &&
         tile * 2 * widest <= kTileBytes && a.tokens / (tile * 2) >= 2)
    tile *= 2;
  return tile;
}

/// Replaces `ops` (in block order) by one drc.fused op.
void fuse(ArrayRef<Operation *> ops, TokenAnalysis &a, int64_t tile,
          OpBuilder &builder) {
  llvm::SmallPtrSet<Operation *, 16> inRegion(ops.begin(), ops.end());
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
  auto fused =
      FusedOp::create(builder, last->getLoc(), ValueRange(outputs).getTypes(),
                      inputValues, a.tokens, tile);
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
    for (Value result : copy->getResults())
      result.setType(FusedOp::withRows(result.getType(), tile));
  }
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  YieldOp::create(builder, last->getLoc(), yielded);
  for (auto [output, result] : llvm::zip(outputs, fused.getResults())) {
    a.rows[result] = Rows::PerToken; // a later region may read it
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !inRegion.contains(use.getOwner()) && use.getOwner() != fused;
    });
  }
  // Ops between the region's first and last op that use its results (and
  // their users there) move after it, in order. Nothing between them feeds
  // the region (convexity), and none of them is the AdamW step, which comes
  // after every gradient, so side effects keep their order.
  llvm::SmallPtrSet<Operation *, 16> moved;
  SmallVector<Operation *> toMove;
  for (Operation *op = ops.front(); op != fused; op = op->getNextNode()) {
    if (inRegion.contains(op))
      continue;
    if (llvm::any_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def == fused || (def && moved.contains(def));
        })) {
      moved.insert(op);
      toMove.push_back(op);
    }
  }
  Operation *after = fused;
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

/// Rematerialisation: a backward region that reads a value a forward region
/// computed (an activation saved for the backward pass) recomputes it from
/// that region's own inputs instead. Token-local work costs a few flops per
/// element moved, so reading the forward region's inputs again (which the
/// backward region mostly reads anyway: the state) beats writing and
/// reading every intermediate; the forward region then writes only what
/// the forward pass itself needs. The clones repeat the same ops on the
/// same inputs.
void recomputeSavedValues(func::FuncOp fn, const TokenAnalysis &a) {
  Block &block = fn.getBody().front();
  llvm::DenseSet<Operation *> backward = backwardOps(block);
  DenseMap<Operation *, size_t> regionOf =
      regionIndex(tokenLocalRegions(fn, a));
  // What each backward region reads from outside itself: recomputing from
  // values it reads anyway costs no traffic.
  DenseMap<size_t, llvm::DenseSet<Value>> reads;
  for (auto [op, region] : regionOf)
    if (backward.contains(op))
      for (Value v : op->getOperands())
        if (auto at = regionOf.find(v.getDefiningOp());
            a.of(v) == Rows::PerToken &&
            (at == regionOf.end() || at->second != region))
          reads[region].insert(v);
  auto inForward = [&](Value v) -> std::optional<size_t> {
    Operation *def = v.getDefiningOp();
    auto it = regionOf.find(def);
    if (!def || it == regionOf.end() || backward.contains(def))
      return std::nullopt;
    return it->second;
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
  // Forward values now read by nobody.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (regionOf.count(&op) && op.use_empty() && isPure(&op))
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
    if (recompute) {
      recomputeSavedValues(fn, a);
      a = analyseTokens(fn);
    }
    OpBuilder builder(fn.getContext());
    for (SmallVector<Operation *> &ops : tokenLocalRegions(fn, a)) {
      if (ops.size() < 2)
        continue;
      int64_t tile = tileTokens ? tileTokens : pickTile(ops, a);
      fuse(ops, a, tile, builder);
    }
    return success();
  }
};

} // namespace
