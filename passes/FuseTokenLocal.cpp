//===- FuseTokenLocal.cpp - Residual work between sublayers as regions ----===//
//
// Replaces each token-local region (TokenLocalRegions.h) of two or more ops
// by a drc.fused op at its last op's place; the ops before that place which
// use its results move after it.
//
//===----------------------------------------------------------------------===//
#include "passes/TokenLocalRegions.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

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

RankedTensorType tileType(Type type, int64_t tile) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[0] = tile;
  return tensor.clone(shape);
}

int64_t bytesPerToken(Type type, int64_t tokens) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() / tokens *
         tensor.getElementType().getIntOrFloatBitWidth() / 8;
}

/// All tokens for a small region; otherwise the most tokens per tile, a
/// power of two dividing `tokens` and at most kMaxTileTokens, whose largest
/// per-tile value fits kTileBytes, leaving at least two tiles.
int64_t pickTile(ArrayRef<Operation *> ops, const TokenAnalysis &a) {
  int64_t widest = 1;
  for (Operation *op : ops)
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (a.of(v) == Rows::PerToken)
        widest = std::max(widest, bytesPerToken(v.getType(), a.tokens));
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
        rows ? Type(tileType(v.getType(), tile)) : v.getType(), v.getLoc());
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
      result.setType(tileType(result.getType(), tile));
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
