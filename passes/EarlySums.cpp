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
      .Case([](MatmulOp o) {
        return o.getTransposeLhs() ? nullptr : &o.getLhsMutable();
      })
      .Case([](RMSNormGradOp o) { return &o.getResultGradMutable(); })
      .Default([](Operation *) { return nullptr; });
}

/// The rewrite of one function body: `a` classifies the values it creates
/// too, and `depth` (barrier depths as soon as possible, so that a
/// recomputed forward value counts as early) is refreshed after each
/// distribution.
struct Sums {
  Block &block;
  TokenAnalysis a;
  DenseMap<Operation *, int64_t> depth;

  Sums(func::FuncOp fn, const TokenAnalysis &analysis)
      : block(fn.getBody().front()), a(analysis) {}

  void update(func::FuncOp fn) {
    depth = barrierDepths(fn, a, /*lateRecomputed=*/false);
  }

  int64_t depthOf(Value v) const {
    Operation *def = v.getDefiningOp();
    if (!def || a.of(v) == Rows::Shared)
      return 0;
    return depth.lookup(def) + (isTokenLocal(*def, a) ? 0 : 1);
  }

  AddOp perTokenSum(Value v) const {
    auto add = v.getDefiningOp<AddOp>();
    return add && a.of(v) == Rows::PerToken ? add : AddOp();
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
    if (!v.hasOneUse())
      return false;
    OpOperand &use = *v.use_begin();
    Operation *user = use.getOwner();
    if (user->getNumResults() != 1)
      return false;
    if (perTokenSum(user->getResult(0)))
      return true;
    return linearOperand(user) == &use && user->getNumResults() == 1 &&
           isTokenLocal(*user, a) && feedsSum(user->getResult(0));
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
      sum = AddOp::create(builder, loc, sum, t);
      a.rows[sum] = Rows::PerToken;
    }
    return sum;
  }

  /// Applies one token-local op linear in a sum of early and late terms to
  /// each part separately; false when there is no such op left.
  bool distributeOne(OpBuilder &builder) {
    for (Operation &op : block) {
      OpOperand *linear = linearOperand(&op);
      if (!linear || op.getNumResults() != 1 || !isTokenLocal(op, a) ||
          !perTokenSum(linear->get()) || !linear->get().hasOneUse() ||
          !feedsSum(op.getResult(0)))
        continue;
      SmallVector<Value> ts;
      SmallVector<Operation *> adds;
      terms(linear->get(), ts, adds);
      int64_t early = std::numeric_limits<int64_t>::max(), late = 0;
      for (Value t : ts) {
        early = std::min(early, depthOf(t));
        late = std::max(late, depthOf(t));
      }
      bool othersEarly = llvm::all_of(op.getOpOperands(), [&](OpOperand &o) {
        return &o == linear || depthOf(o.get()) <= early;
      });
      if (early == late || !othersEarly)
        continue;
      SmallVector<Value> earlyTerms, lateTerms;
      for (Value t : ts)
        (depthOf(t) == early ? earlyTerms : lateTerms).push_back(t);
      Value parts[2];
      for (auto [part, group] : llvm::zip(
               parts, std::array<ArrayRef<Value>, 2>{earlyTerms, lateTerms})) {
        Value sum = chain(builder, group, op.getLoc());
        IRMapping map;
        map.map(linear->get(), sum);
        SmallVector<Value> operands(op.getOperands());
        llvm::replace(operands, linear->get(), sum);
        after(builder, operands);
        part = builder.clone(op, map)->getResult(0);
        a.rows[part] = Rows::PerToken;
      }
      builder.setInsertionPoint(&op);
      Value sum = AddOp::create(builder, op.getLoc(), parts[0], parts[1]);
      a.rows[sum] = Rows::PerToken;
      op.getResult(0).replaceAllUsesWith(sum);
      op.erase();
      for (Operation *add : adds)
        add->erase();
      return true;
    }
    return false;
  }

  /// Rebuilds each sum of three or more terms of different depths as a
  /// chain over its terms in order of depth.
  void reassociate(OpBuilder &builder) {
    SmallVector<AddOp> roots;
    for (auto add : block.getOps<AddOp>()) {
      Value v = add.getResult();
      Operation *user = v.hasOneUse() ? v.use_begin()->getOwner() : nullptr;
      bool inner =
          user && user->getNumResults() == 1 && perTokenSum(user->getResult(0));
      if (perTokenSum(v) && !inner)
        roots.push_back(add);
    }
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
  do
    sums.update(fn);
  while (sums.distributeOne(builder));
  sums.reassociate(builder);
}
