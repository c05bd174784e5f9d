//===- EarlySums.cpp - Adjoint contributions summed early ----------------===//
#include "passes/EarlySums.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::drc;

namespace {

/// The operand `op` is linear in, with its other operands fixed: f(a + b) =
/// f(a) + f(b). Null for other ops.
OpOperand *linearOperand(Operation *op) {
  return llvm::TypeSwitch<Operation *, OpOperand *>(op)
      .Case([](ViewOp o) {
        return o.getSizes().empty() ? &o.getInputMutable() : nullptr;
      })
      .Case([](ScaleOp o) { return &o.getInputMutable(); })
      .Case([](MixOp o) { return &o.getInputMutable(); })
      .Case([](RowDotOp o) { return &o.getLhsMutable(); })
      .Case([](MatmulOp o) {
        return o.getTransposeLhs() ? nullptr : &o.getLhsMutable();
      })
      .Case([](RMSNormGradOp o) { return &o.getResultGradMutable(); })
      .Default([](Operation *) { return nullptr; });
}

/// The operands `op` is linear in together: linearOperand's, and with it
/// rms_norm_grad's given dot (f(a + b) = f(a) + f(b) for a and b pairs of
/// adjoint and dot). Empty for other ops.
SmallVector<OpOperand *, 2> linearOperands(Operation *op) {
  SmallVector<OpOperand *, 2> operands;
  if (OpOperand *first = linearOperand(op))
    operands.push_back(first);
  if (auto grad = dyn_cast<RMSNormGradOp>(op); grad && grad.getDot())
    operands.push_back(&grad.getDotMutable()[0]);
  return operands;
}

/// The rewrite of one function body: `a` classifies the values it creates
/// too, and `depth` holds each per-token value's barrier depth (as soon as
/// possible, so that a recomputed forward value counts as early), computed
/// once and extended to the values the rewrite creates: a distribution
/// leaves every other value's depth as it was.
struct Sums {
  Block &block;
  TokenAnalysis a;
  DenseMap<Value, int64_t> depth;

  Sums(func::FuncOp fn, const TokenAnalysis &analysis)
      : block(fn.getBody().front()), a(analysis) {
    DenseMap<Operation *, int64_t> ops =
        barrierDepths(fn, a, /*lateRecomputed=*/false);
    for (Operation &op : block) {
      int64_t past = isTokenLocal(op, a) ? 0 : 1;
      for (Value r : op.getResults())
        if (a.of(r) != Rows::Shared)
          depth[r] = ops.lookup(&op) + past;
    }
  }

  int64_t depthOf(Value v) const { return depth.lookup(v); }

  /// Records `op`'s token-local, per-token result: as deep as its operands.
  Value created(Operation *op) {
    Value result = op->getResult(0);
    a.rows[result] = Rows::PerToken;
    int64_t deepest = 0;
    for (Value operand : op->getOperands())
      deepest = std::max(deepest, depthOf(operand));
    depth[result] = deepest;
    return result;
  }

  AddOp perTokenSum(Value v) const {
    auto add = v.getDefiningOp<AddOp>();
    return add && a.of(v) == Rows::PerToken ? add : AddOp();
  }

  /// Whether `v`'s one use is an operand of a per-token sum.
  bool isTerm(Value v) const {
    if (!v.hasOneUse())
      return false;
    Operation *user = v.use_begin()->getOwner();
    return user->getNumResults() == 1 && perTokenSum(user->getResult(0));
  }

  /// The terms of the sum `v` (v itself unless it is a per-token drc.add),
  /// through the single-use adds under it; `adds` gets those adds, each
  /// before its operands.
  void terms(Value v, SmallVectorImpl<Value> &out,
             SmallVectorImpl<Operation *> &adds) const {
    AddOp add = perTokenSum(v);
    if (!add) {
      out.push_back(v);
      return;
    }
    adds.push_back(add);
    for (Value operand : {add.getLhs(), add.getRhs()}) {
      if (perTokenSum(operand) && operand.hasOneUse())
        terms(operand, out, adds);
      else
        out.push_back(operand);
    }
  }

  /// Whether `v`, through single-use ops linear in it, is a term of a sum.
  bool feedsSum(Value v) const {
    if (isTerm(v))
      return true;
    if (!v.hasOneUse())
      return false;
    OpOperand &use = *v.use_begin();
    Operation *user = use.getOwner();
    return llvm::is_contained(linearOperands(user), &use) &&
           user->getNumResults() == 1 && isTokenLocal(*user, a) &&
           feedsSum(user->getResult(0));
  }

  /// Places `builder` after the ops defining `values`.
  void after(OpBuilder &builder, ValueRange values) {
    Operation *last = nullptr;
    for (Value v : values)
      if (Operation *def = v.getDefiningOp())
        if (!last || last->isBeforeInBlock(def))
          last = def;
    if (last)
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPointToStart(&block);
  }

  /// ((t0 + t1) + t2) + ..., each add right after its operands.
  Value chain(OpBuilder &builder, ArrayRef<Value> ts, Location loc) {
    Value sum = ts.front();
    for (Value t : ts.drop_front()) {
      after(builder, {sum, t});
      sum = created(AddOp::create(builder, loc, sum, t));
    }
    return sum;
  }

  /// Applies `op`, if it is a token-local op linear in a sum of early and
  /// late terms whose result feeds another sum, to each part separately
  /// (an op linear in several operands together, to each one's early and
  /// late terms). Returns the application to the late terms (which may mix
  /// depths again), or null when `op` is left as it is.
  Operation *distribute(OpBuilder &builder, Operation &op) {
    SmallVector<OpOperand *, 2> linear = linearOperands(&op);
    if (linear.empty() || op.getNumResults() != 1 || !isTokenLocal(op, a) ||
        !perTokenSum(linear.front()->get()) || !feedsSum(op.getResult(0)) ||
        !llvm::all_of(linear,
                      [](OpOperand *l) { return l->get().hasOneUse(); }))
      return nullptr;
    SmallVector<SmallVector<Value>> ts(linear.size());
    SmallVector<Operation *> adds;
    int64_t early = std::numeric_limits<int64_t>::max(), late = 0;
    for (auto [l, lts] : llvm::zip(linear, ts)) {
      terms(l->get(), lts, adds);
      for (Value t : lts) {
        early = std::min(early, depthOf(t));
        late = std::max(late, depthOf(t));
      }
    }
    bool othersEarly = llvm::all_of(op.getOpOperands(), [&](OpOperand &o) {
      return llvm::is_contained(linear, &o) || depthOf(o.get()) <= early;
    });
    if (early == late || !othersEarly)
      return nullptr;
    // Per linear operand, its early and its late terms; each group must
    // have some of every operand's.
    SmallVector<std::array<SmallVector<Value>, 2>> groups(linear.size());
    for (auto [lts, group] : llvm::zip(ts, groups))
      for (Value t : lts)
        group[depthOf(t) == early ? 0 : 1].push_back(t);
    if (llvm::any_of(groups,
                     [](auto &g) { return g[0].empty() || g[1].empty(); }))
      return nullptr;
    Operation *parts[2];
    for (int part = 0; part < 2; ++part) {
      SmallVector<Value> operands(op.getOperands());
      IRMapping map;
      for (auto [l, group] : llvm::zip(linear, groups)) {
        Value sum = chain(builder, group[part], op.getLoc());
        map.map(l->get(), sum);
        operands[l->getOperandNumber()] = sum;
      }
      after(builder, operands);
      parts[part] = builder.clone(op, map);
      created(parts[part]);
    }
    builder.setInsertionPoint(&op);
    Value sum = created(AddOp::create(
        builder, op.getLoc(), parts[0]->getResult(0), parts[1]->getResult(0)));
    op.getResult(0).replaceAllUsesWith(sum);
    op.erase();
    for (Operation *add : adds)
      add->erase();
    return parts[1];
  }

  /// Distributes every op that distribute() applies to, and again the late
  /// applications it makes.
  void distributeAll(OpBuilder &builder) {
    SmallVector<Operation *> work;
    for (Operation &op : llvm::reverse(block))
      work.push_back(&op);
    while (!work.empty())
      if (Operation *late = distribute(builder, *work.pop_back_val()))
        work.push_back(late);
  }

  /// Rebuilds each sum of three or more terms of different depths as a
  /// chain over its terms in order of depth.
  void reassociate(OpBuilder &builder) {
    SmallVector<AddOp> roots;
    for (auto add : block.getOps<AddOp>())
      if (perTokenSum(add.getResult()) && !isTerm(add.getResult()))
        roots.push_back(add);
    for (AddOp root : roots) {
      SmallVector<Value> ts;
      SmallVector<Operation *> adds;
      terms(root.getResult(), ts, adds);
      if (ts.size() < 3)
        continue;
      llvm::stable_sort(
          ts, [&](Value x, Value y) { return depthOf(x) < depthOf(y); });
      if (depthOf(ts.front()) == depthOf(ts.back()))
        continue;
      Value sum = chain(builder, ts, root.getLoc());
      root.getResult().replaceAllUsesWith(sum);
      for (Operation *add : adds)
        add->erase();
    }
  }
};

} // namespace

void mlir::drc::sumContributionsEarly(func::FuncOp fn,
                                      const TokenAnalysis &analysis) {
  if (!fn.getBody().hasOneBlock() || analysis.tokens == 0)
    return;
  Sums sums(fn, analysis);
  OpBuilder builder(fn.getContext());
  sums.distributeAll(builder);
  sums.reassociate(builder);
}
