//===- TokenLocalRegions.cpp - Which ops fuse, and into what --------------===//
#include "passes/TokenLocalRegions.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::drc;

namespace {

/// Whether softmax/normalize (or their adjoints) reduce along a token axis.
bool acrossTokens(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<SoftmaxOp, SoftmaxGradOp, NormalizeOp, NormalizeGradOp>(
          [](auto o) { return o.getAxis() == 0; })
      .Default([](Operation *) { return false; });
}

/// Whether `op`'s results keep the token rows of its per-token operands, so
/// that a tile of them depends on the same tile of those operands only.
/// `narrowOnly` limits matmuls to narrow ones (token-local residual work);
/// otherwise any matmul of per-token rows by a shared matrix counts (its
/// results are per-token values, though it is a boundary).
bool keepsTokenRows(Operation *op, const TokenAnalysis &a, bool narrowOnly) {
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    if (matmul.getTransposeLhs() || a.of(matmul.getLhs()) != Rows::PerToken ||
        a.of(matmul.getRhs()) != Rows::Shared)
      return false;
    auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
    int64_t columns = rhs.getShape().back(),
            rows = rhs.getNumElements() / std::max<int64_t>(columns, 1);
    return !narrowOnly || isNarrowMatrix(rows, columns);
  }
  if (auto projection = dyn_cast<NormedLinearOp>(op))
    return llvm::all_of(projection.getWeights(), [&](Value w) {
      auto type = cast<RankedTensorType>(w.getType());
      return a.of(w) == Rows::Shared &&
             (!narrowOnly ||
              isNarrowMatrix(type.getDimSize(0), type.getDimSize(1)));
    });
  if (auto grad = dyn_cast<MixCoefGradOp>(op))
    return cast<RankedTensorType>(grad.getType()).getRank() == 3;
  if (acrossTokens(op))
    return false;
  return isa<RMSNormOp, RMSNormGradOp, RowDotOp, ScaleByInvRMSOp, CenterOp,
             AddOp, MixOp, AppendOp, RowsOp, RowsGradOp, ViewOp, SquashOp,
             SquashGradOp, ScaleOp, ShiftOp, SoftmaxOp, SoftmaxGradOp,
             NormalizeOp, NormalizeGradOp, DepthAttentionOp,
             DepthAttentionGradOp>(op);
}

/// Sublayer ops whose results are per-token rows (boundaries all the same).
bool isRowwiseSublayer(Operation *op) {
  return isa<RopeOp, CausalAttentionOp, CausalAttentionGradOp, SiluMulOp,
             SiluMulGradOp, EmbedOp, CrossEntropyGradOp, LookaheadOp, FusedOp>(
      op);
}

} // namespace

bool mlir::drc::isNarrowMatrix(int64_t rows, int64_t columns) {
  constexpr int64_t kMaxNarrowWidth = 32, kNarrowAspect = 4;
  int64_t narrow = std::min(rows, columns), wide = std::max(rows, columns);
  return narrow <= kMaxNarrowWidth && narrow * kNarrowAspect <= wide;
}

bool mlir::drc::isTokenSum(Operation *op, const TokenAnalysis &a) {
  return isa<SumLeadingOp, NormedLinearWeightGradOp, RMSNormGainGradOp>(op) &&
         a.of(op->getResult(0)) == Rows::Other &&
         llvm::all_of(op->getOperands(), [&](Value v) {
           return a.of(v) == Rows::PerToken && a.leadingTokens(v);
         });
}

bool mlir::drc::isBankAppend(Operation *op) {
  auto append = dyn_cast<AppendOp>(op);
  if (!append)
    return false;
  return append.getInputs().front().getDefiningOp<AppendOp>() ||
         llvm::any_of(append->getUses(), [](OpOperand &use) {
           return isa<AppendOp>(use.getOwner()) && use.getOperandNumber() == 0;
         });
}

/// Classifies every value of `fn`'s body; tokens = the length of its token
/// arguments (0 when it has none).
TokenAnalysis mlir::drc::analyseTokens(func::FuncOp fn) {
  TokenAnalysis a;
  Block &body = fn.getBody().front();
  auto isTokens = [](BlockArgument arg) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    return type && type.getRank() == 1 && type.getElementType().isInteger(32);
  };
  for (BlockArgument arg : body.getArguments())
    if (isTokens(arg))
      a.tokens = cast<RankedTensorType>(arg.getType()).getDimSize(0);
  // Parameters are drc.param_ref ops, so an argument with a row per token
  // is per-token data: the state a probe program's chain function starts
  // from (its depth bank, its streams).
  for (BlockArgument arg : body.getArguments())
    a.rows[arg] = isTokens(arg) || (a.tokens && a.leadingTokens(arg))
                      ? Rows::PerToken
                      : Rows::Shared;
  for (Operation &op : body) {
    bool shared = llvm::all_of(
        op.getOperands(), [&](Value v) { return a.of(v) == Rows::Shared; });
    bool fromTokens = llvm::all_of(
        op.getOperands(), [&](Value v) { return a.of(v) != Rows::Other; });
    for (Value result : op.getResults()) {
      Rows r = Rows::Other;
      if (shared)
        r = Rows::Shared;
      else if (fromTokens && a.leadingTokens(result) &&
               (keepsTokenRows(&op, a, /*narrowOnly=*/false) ||
                isRowwiseSublayer(&op)))
        r = Rows::PerToken;
      a.rows[result] = r;
    }
  }
  return a;
}

/// Whether a token-local op reads `operand` row by row (row t for token t)
/// rather than whole: not a norm's gain, a matmul's right-hand matrix, shared
/// mixing coefficients or a scale/shift broadcast over the tokens.
bool mlir::drc::readsRows(Operation *op, OpOperand &operand) {
  Value v = operand.get();
  auto rank = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getRank();
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([&](RMSNormOp o) { return v == o.getInput(); })
      .Case([&](RMSNormGradOp o) { return v != o.getGain(); })
      .Case([&](MatmulOp o) { return v == o.getLhs(); })
      .Case([&](NormedLinearOp o) { return v == o.getInput(); })
      .Case([&](MixOp o) { return v == o.getInput() || rank(v) == 3; })
      .Case<ScaleOp, ShiftOp>([&](auto o) {
        return operand.getOperandNumber() == 0 || rank(v) == rank(o.getInput());
      })
      .Default([](Operation *) { return true; });
}

bool mlir::drc::isTokenLocal(Operation &op, const TokenAnalysis &a) {
  if (op.getNumResults() == 0 || !keepsTokenRows(&op, a, /*narrowOnly=*/true) ||
      isBankAppend(&op))
    return false;
  bool perTokenOperand = false;
  for (OpOperand &operand : op.getOpOperands()) {
    Rows r = a.of(operand.get());
    bool rows = readsRows(&op, operand);
    if (r == Rows::Other || (!rows && r != Rows::Shared) ||
        (rows && !a.leadingTokens(operand.get())))
      return false;
    perTokenOperand |= r == Rows::PerToken;
  }
  return perTokenOperand && llvm::all_of(op.getResults(), [&](Value v) {
           return a.of(v) == Rows::PerToken;
         });
}

DenseMap<Operation *, int64_t> mlir::drc::barrierDepths(func::FuncOp fn,
                                                        const TokenAnalysis &a,
                                                        bool lateRecomputed) {
  Block &block = fn.getBody().front();
  // As soon as possible.
  DenseMap<Operation *, int64_t> depth;
  DenseMap<Value, int64_t> valueDepth;
  for (Operation &op : block) {
    int64_t in = 0;
    for (Value v : op.getOperands())
      in = std::max(in, valueDepth.lookup(v));
    depth[&op] = in;
    bool local = isTokenLocal(op, a);
    for (Value r : op.getResults())
      valueDepth[r] = a.of(r) == Rows::Shared ? 0 : in + (local ? 0 : 1);
  }
  // Recomputed ops (drc-fuse-token-local's rematerialisation) go as late as
  // their users allow, into the region that needs them.
  for (Operation &op : llvm::reverse(block)) {
    if (!lateRecomputed || !op.hasAttr(kRecomputedAttr) || !isTokenLocal(op, a))
      continue;
    int64_t late = std::numeric_limits<int64_t>::max();
    for (Operation *user : op.getUsers())
      late = std::min(late, depth[user]);
    if (late != std::numeric_limits<int64_t>::max())
      depth[&op] = std::max(depth[&op], late);
  }
  if (!lateRecomputed)
    return depth;
  DenseMap<int64_t, int64_t> groupDepth;
  for (Operation &op : block)
    if (auto group = op.getAttrOfType<IntegerAttr>(kLateGroupAttr)) {
      int64_t &latest = groupDepth[group.getInt()];
      latest = std::max(latest, depth[&op]);
    }
  // No later than a token-local user (a region reading it must not come
  // first); a sum over tokens reading it moves after its region.
  for (Operation &op : llvm::reverse(block)) {
    auto group = op.getAttrOfType<IntegerAttr>(kLateGroupAttr);
    if (!group)
      continue;
    int64_t late = groupDepth[group.getInt()];
    for (Operation *user : op.getUsers())
      if (isTokenLocal(*user, a))
        late = std::min(late, depth[user]);
    depth[&op] = std::max(depth[&op], late);
  }
  return depth;
}

SmallVector<SmallVector<Operation *>>
mlir::drc::tokenLocalRegions(func::FuncOp fn, const TokenAnalysis &a) {
  if (!fn.getBody().hasOneBlock() || a.tokens == 0)
    return {};
  Block &block = fn.getBody().front();
  DenseMap<Operation *, int64_t> depth = barrierDepths(fn, a);
  llvm::EquivalenceClasses<Operation *> regions;
  DenseMap<std::pair<Value, int64_t>, Operation *> readers;
  SmallVector<Operation *> members;
  for (Operation &op : block) {
    if (!isTokenLocal(op, a))
      continue;
    int64_t in = depth[&op];
    members.push_back(&op);
    regions.insert(&op);
    for (Value v : op.getOperands()) {
      if (Operation *def = v.getDefiningOp();
          def && regions.contains(def) && depth[def] == in)
        regions.unionSets(def, &op);
      // Readers of one per-token value at one depth share a region, which
      // then reads it once.
      if (a.of(v) == Rows::PerToken) {
        auto [reader, first] = readers.try_emplace({v, in}, &op);
        if (!first)
          regions.unionSets(reader->second, &op);
      }
    }
  }
  // Regions in the block order of their first op; ops in block order.
  llvm::MapVector<Operation *, SmallVector<Operation *>> byLeader;
  for (Operation *op : members)
    byLeader[regions.getLeaderValue(op)].push_back(op);
  SmallVector<SmallVector<Operation *>> out;
  for (auto &entry : byLeader)
    out.push_back(std::move(entry.second));
  return out;
}

DenseMap<Operation *, size_t>
mlir::drc::regionIndex(ArrayRef<SmallVector<Operation *>> regions) {
  DenseMap<Operation *, size_t> index;
  for (auto [i, ops] : llvm::enumerate(regions))
    for (Operation *op : ops)
      index[op] = i;
  return index;
}
