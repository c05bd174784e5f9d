//===- BankAdjoints.cpp - Depth banks' adjoints summed late ---------------===//
#include "passes/BankAdjoints.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

/// Of the accumulators along a chain, this many are deferred after each one
/// formed. On Full AttnRes at d_model 256, 16 sublayers, the train step's
/// residual traffic (drc-compile --report, KB per token read + written) is
/// 749 with none deferred, 598 with two, 610 with three and 615 with four
/// (the formed region reads more views of the bank's rows).
constexpr int64_t kDeferredPerFormed = 2;

/// A set value's rows per token: dimension 1 of [N, k, w].
int64_t rowCount(Value v) {
  return cast<RankedTensorType>(v.getType()).getDimSize(1);
}

/// `v`'s type with `count` rows.
RankedTensorType withRows(Value v, int64_t count) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[1] = count;
  return type.clone(shape);
}

/// Erases `op`, made by a RowSlicer, and its entry in `a` (a later op could
/// otherwise reuse its result's address, and so its entry).
void eraseMade(Operation *op, TokenAnalysis &a) {
  a.rows.erase(op->getResult(0));
  op->erase();
}

/// Builds rows [offset, offset + count) of per-token sets without forming
/// the sets: through ops whose result's row i depends only on row i of their
/// set operands, down to the rows of narrow values and of formed
/// accumulators (a drc.rows of them) and of drc.append's inputs.
struct RowSlicer {
  OpBuilder &builder;
  TokenAnalysis &a; ///< learns the per-token values made here
  const DenseSet<Value> &formed;
  /// Rows made before by slicers of the same place (early or late), by
  /// value, offset and count: made once.
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> &known;
  /// The values whose rows were had through their defining ops.
  llvm::SetVector<Value> &sliced;
  SmallVector<Operation *> created;

  /// A per-token set whose rows are a few floats (coefficients, dots): its
  /// rows are read rather than computed again.
  bool narrow(Value v) const {
    auto type = cast<RankedTensorType>(v.getType());
    return type.getRank() == 3 && type.getDimSize(2) == 1;
  }

  Value make(Operation *op) {
    created.push_back(op);
    a.rows[op->getResult(0)] = Rows::PerToken;
    return op->getResult(0);
  }

  /// A copy of `op` reading `sliced` for the operands it maps, its result
  /// `count` rows.
  Value copy(Operation *op, IRMapping &sliced, int64_t count) {
    Operation *clone = builder.clone(*op, sliced);
    clone->getResult(0).setType(withRows(op->getResult(0), count));
    return make(clone);
  }

  /// Maps each of `operands` to its rows in `map`; false if one has none.
  bool sliceInto(IRMapping &map, ValueRange operands, int64_t offset,
                 int64_t count) {
    for (Value operand : operands) {
      Value rows = slice(operand, offset, count);
      if (!rows)
        return false;
      map.map(operand, rows);
    }
    return true;
  }

  /// The rows, or null where they cannot be had without forming `v`.
  Value slice(Value v, int64_t offset, int64_t count) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() != 3 || a.of(v) != Rows::PerToken)
      return {};
    if (offset == 0 && count == type.getDimSize(1))
      return v;
    if (Value rows = known.lookup({v, offset, count}))
      return rows;
    Value rows = sliceAnew(v, offset, count);
    if (rows)
      known[{v, offset, count}] = rows;
    return rows;
  }

  Value sliceAnew(Value v, int64_t offset, int64_t count) {
    if (Operation *def = v.getDefiningOp(); def && !formed.contains(v)) {
      size_t before = created.size();
      if (Value rows = sliceThrough(def, offset, count)) {
        sliced.insert(v);
        return rows;
      }
      // Nothing half-made stays behind.
      discardFrom(before);
    }
    if (!narrow(v) && !formed.contains(v))
      return {};
    return make(RowsOp::create(builder, v.getLoc(), withRows(v, count), v,
                               builder.getI64IntegerAttr(offset)));
  }

  /// slice() through `def`, the op defining the value; null if it cannot.
  Value sliceThrough(Operation *def, int64_t offset, int64_t count) {
    IRMapping map;
    return llvm::TypeSwitch<Operation *, Value>(def)
        .Case([&](RowsOp rows) {
          return slice(rows.getInput(), rows.getOffset() + offset, count);
        })
        .Case([&](AppendOp append) -> Value {
          int64_t start = 0;
          for (Value input : append.getInputs()) {
            int64_t rows = rowCount(input);
            if (offset >= start && offset + count <= start + rows)
              return slice(input, offset - start, count);
            start += rows;
          }
          return {};
        })
        .Case([&](AddOp add) -> Value {
          if (!sliceInto(map, {add.getLhs(), add.getRhs()}, offset, count))
            return {};
          return copy(add, map, count);
        })
        .Case([&](MixOp mix) -> Value {
          // Row i of C X is row i of C (its i-th coefficients) times X.
          if (!mix.getTransposeCoef() ||
              !sliceInto(map, mix.getCoef(), offset, count))
            return {};
          return copy(mix, map, count);
        })
        .Case([&](MixCoefGradOp grad) -> Value {
          // Row i is row i of x dotted with each of dy's rows.
          if (grad.getTransposeCoef() ||
              !sliceInto(map, grad.getInput(), offset, count))
            return {};
          return copy(grad, map, count);
        })
        .Case([&](MatmulOp matmul) -> Value {
          if (matmul.getTransposeLhs() ||
              a.of(matmul.getRhs()) != Rows::Shared ||
              !sliceInto(map, matmul.getLhs(), offset, count))
            return {};
          return copy(matmul, map, count);
        })
        .Case([&](RowDotOp dot) -> Value {
          if (!sliceInto(map, {dot.getLhs(), dot.getRhs()}, offset, count))
            return {};
          return copy(dot, map, count);
        })
        .Case([&](RMSNormGradOp grad) -> Value {
          SmallVector<Value, 3> rowwise = {grad.getInput(),
                                           grad.getResultGrad()};
          if (Value dot = grad.getDot())
            rowwise.push_back(dot);
          if (!sliceInto(map, rowwise, offset, count))
            return {};
          return copy(grad, map, count);
        })
        .Case([&](SoftmaxGradOp grad) -> Value {
          // Row i is y_i (dy_i - s), s the sum over all rows: given, or
          // had from the mix y makes (mixSum).
          Value sum = grad.getDot();
          if (grad.getAxis() != 1 || (!sum && !(sum = mixSum(grad))) ||
              !sliceInto(map, {grad.getResult(), grad.getResultGrad()}, offset,
                         count))
            return {};
          Value rows = copy(grad, map, count);
          cast<SoftmaxGradOp>(rows.getDefiningOp()).getDotMutable().assign(sum);
          return rows;
        })
        .Default([](Operation *) { return Value(); });
  }

  /// For softmax_grad(y, dy) along the rows of a set x with
  /// dy = mix_coef_grad(x, dm) and m = mix(x by y) (one output row): the
  /// softmax's sum of y_i dy_i = sum_i y_i (x_i . dm) = dm . m, one dot per
  /// token instead of a pass over x's rows. Null if `grad` is not such.
  Value mixSum(SoftmaxGradOp grad) {
    auto dy = grad.getResultGrad().getDefiningOp<MixCoefGradOp>();
    if (!dy || dy.getTransposeCoef() ||
        cast<RankedTensorType>(grad.getType()).getDimSize(2) != 1)
      return {};
    for (Operation *user : grad.getResult().getUsers()) {
      auto mix = dyn_cast<MixOp>(user);
      if (!mix || mix.getTransposeCoef() || mix.getCoef() != grad.getResult() ||
          mix.getInput() != dy.getInput() ||
          mix.getType() != dy.getResultGrad().getType())
        continue;
      auto type = cast<RankedTensorType>(grad.getType());
      return make(RowDotOp::create(builder, grad.getLoc(),
                                   type.clone({type.getDimSize(0), 1, 1}),
                                   dy.getResultGrad(), mix.getResult()));
    }
    return {};
  }

  /// Erases what this slicer made from the `first`-th op on (a failed
  /// slice's partial work), and forgets it.
  void discardFrom(size_t first) {
    DenseSet<Operation *> gone(created.begin() + first, created.end());
    SmallVector<std::tuple<Value, int64_t, int64_t>> stale;
    for (auto &[key, rows] : known)
      if (gone.contains(rows.getDefiningOp()))
        stale.push_back(key);
    for (auto &key : stale)
      known.erase(key);
    while (created.size() > first)
      eraseMade(created.pop_back_val(), a);
  }
};

/// Whether `v` is a bank adjoint: a per-token drc.add's [N, s, w] result
/// (s > 1) read only by drc.rows.
bool isBankAdjoint(Value v, const TokenAnalysis &a) {
  if (!v.getDefiningOp<AddOp>() || a.of(v) != Rows::PerToken ||
      rowCount(v) < 2 || v.use_empty())
    return false;
  return llvm::all_of(v.getUsers(),
                      [](Operation *user) { return isa<RowsOp>(user); });
}

/// Whether rows read back from an accumulator go on into another sum (the
/// shorter bank's adjoint), rather than to a sublayer's backward.
bool feedsAccumulator(RowsOp rows) {
  return !rows->use_empty() && llvm::all_of(rows->getUsers(), [](Operation *u) {
    return isa<AddOp>(u);
  });
}

/// The bank adjoint whose rows are a term of `v`'s sum, if any: a drc.rows
/// of it under `v`'s per-token drc.add ops.
Value previousAdjoint(Value v, const DenseSet<Value> &adjoints) {
  if (auto rows = v.getDefiningOp<RowsOp>())
    return adjoints.contains(rows.getInput()) ? rows.getInput() : Value();
  if (auto add = v.getDefiningOp<AddOp>())
    for (Value operand : {add.getLhs(), add.getRhs()})
      if (Value previous = previousAdjoint(operand, adjoints))
        return previous;
  return {};
}

/// Erases `op` and, through its operands, the pure ops left unused.
void eraseUnused(Operation *op) {
  llvm::SetVector<Operation *> work;
  work.insert(op);
  while (!work.empty()) {
    Operation *next = work.pop_back_val();
    if (!next->use_empty() || !isPure(next))
      continue;
    for (Value operand : next->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.insert(def);
    next->erase();
  }
}

} // namespace

void mlir::drc::deferBankAdjoints(func::FuncOp fn,
                                  const TokenAnalysis &analysis) {
  TokenAnalysis a = analysis;
  Block &block = fn.getBody().front();
  // The chains, in block order (the reverse sweep's: the readout's adjoint
  // first), and each adjoint's place along its chain.
  SmallVector<Value> adjoints;
  DenseSet<Value> seen;
  DenseMap<Value, int64_t> place;
  for (Operation &op : block)
    for (Value v : op.getResults())
      if (isBankAdjoint(v, a)) {
        Value previous = previousAdjoint(v, seen);
        place[v] = previous ? place[previous] + 1 : 0;
        adjoints.push_back(v);
        seen.insert(v);
      }

  DenseSet<Value> formed;
  for (Value sum : adjoints)
    if (place[sum] % (kDeferredPerFormed + 1) == 0)
      formed.insert(sum);

  // A run of deferred accumulators and the formed one after it: the late
  // parts of the run's consumers all join that one's region.
  DenseMap<Value, int64_t> run;
  for (Value sum : adjoints) {
    Value previous = previousAdjoint(sum, seen);
    int64_t id = previous && !formed.contains(previous)
                     ? run.lookup(previous)
                     : static_cast<int64_t>(run.size());
    run[sum] = id;
  }

  OpBuilder builder(fn.getContext());
  UnitAttr late = builder.getUnitAttr();
  // Marks what a slicer made for rows that go on into another accumulator
  // as late, in `group`, but the rows of a formed accumulator: those stay
  // where it is made, a view of the buffer it is written to, which the next
  // accumulator can then be written over in place.
  auto placeLate = [&](RowSlicer &slicer, int64_t group) {
    for (Operation *op : slicer.created)
      if (auto read = dyn_cast<RowsOp>(op);
          !read || !formed.contains(read.getInput())) {
        op->setAttr(kRecomputedAttr, late);
        op->setAttr(kLateGroupAttr, builder.getI64IntegerAttr(group));
      }
  };
  using Known = DenseMap<std::tuple<Value, int64_t, int64_t>, Value>;
  struct Read {
    RowsOp rows;
    Value value;
    int64_t offset, count;
    bool late;
  };
  for (Value sum : adjoints) {
    if (formed.contains(sum))
      continue;
    int64_t group = run[sum];
    Known early, later;
    llvm::SetVector<Value> sliced;
    auto slicerFor = [&](bool isLate) {
      return RowSlicer{builder, a, formed, isLate ? later : early, sliced, {}};
    };
    SmallVector<Read> reads;
    for (Operation *user : sum.getUsers()) {
      auto rows = cast<RowsOp>(user);
      reads.push_back({rows, Value(), static_cast<int64_t>(rows.getOffset()),
                       rowCount(rows.getResult()), feedsAccumulator(rows)});
    }
    // In block order: a slicer may reuse the rows an earlier one made.
    if (llvm::any_of(
            reads, [&](const Read &r) { return r.rows->getBlock() != &block; }))
      continue;
    llvm::sort(reads, [](const Read &l, const Read &r) {
      return l.rows->isBeforeInBlock(r.rows);
    });
    // Slices every read of the accumulator's rows from its terms, each at
    // the read, the ops made into `made`; false if one cannot be.
    auto sliceReads = [&](SmallVector<Operation *> &made) {
      for (Read &read : reads) {
        builder.setInsertionPoint(read.rows);
        RowSlicer slicer = slicerFor(read.late);
        read.value = slicer.slice(sum, read.offset, read.count);
        made.append(slicer.created);
        if (!read.value || read.value == sum)
          return false;
        if (read.late)
          placeLate(slicer, group);
      }
      return true;
    };
    // A first pass finds the values the reads are sliced through, and is
    // undone: a normed linear's weight gradient over one of them is split
    // first (below), so that the reads reuse its parts' rows.
    SmallVector<Operation *> probe;
    bool complete = sliceReads(probe);
    for (Operation *op : llvm::reverse(probe))
      eraseMade(op, a);
    early.clear();
    later.clear();
    if (!complete)
      continue;

    // Such a gradient sums over the rows of a sliced value (the consumer's
    // logits' adjoint): it becomes the sum of its parts over the reads' row
    // ranges, each computed where those rows are, so that no region makes
    // all of that value's rows. Only where the reads cover the rows once,
    // as the parts must. The parts are made at the gradient's place, from
    // its operands' defining ops.
    SmallVector<Read> ranges(reads);
    llvm::sort(ranges, [](const Read &l, const Read &r) {
      return l.offset < r.offset;
    });
    int64_t covered = 0;
    for (Read &read : ranges)
      covered = read.offset == covered ? covered + read.count : -1;
    SmallVector<NormedLinearWeightGradOp> grads;
    if (covered == rowCount(sum))
      for (Value v : sliced)
        for (Operation *user : v.getUsers())
          if (auto grad = dyn_cast<NormedLinearWeightGradOp>(user);
              grad && grad->getBlock() == &block && grad.getResultGrad() == v &&
              rowCount(v) == rowCount(sum))
            grads.push_back(grad);
    llvm::sort(grads,
               [](NormedLinearWeightGradOp l, NormedLinearWeightGradOp r) {
                 return l->isBeforeInBlock(r);
               });
    grads.erase(std::unique(grads.begin(), grads.end()), grads.end());
    // The reads reuse the parts' rows where every gradient comes before
    // them in the block; otherwise the parts have rows of their own.
    Known ownEarly, ownLater;
    bool first = llvm::all_of(grads, [&](NormedLinearWeightGradOp grad) {
      return grad->isBeforeInBlock(reads.front().rows);
    });
    Known &partEarly = first ? early : ownEarly;
    Known &partLater = first ? later : ownLater;
    for (NormedLinearWeightGradOp grad : grads) {
      builder.setInsertionPoint(grad);
      SmallVector<Value> parts;
      SmallVector<RowSlicer> slicers;
      for (Read &read : ranges) {
        RowSlicer &slicer = slicers.emplace_back(RowSlicer{
            builder, a, formed, read.late ? partLater : partEarly, sliced, {}});
        Value x = slicer.slice(grad.getInput(), read.offset, read.count);
        Value dy =
            x ? slicer.slice(grad.getResultGrad(), read.offset, read.count)
              : Value();
        if (!x || !dy)
          break;
        IRMapping map;
        map.map(grad.getInput(), x);
        map.map(grad.getResultGrad(), dy);
        parts.push_back(builder.clone(*grad, map)->getResult(0));
      }
      if (parts.size() != ranges.size()) {
        for (Value part : parts)
          part.getDefiningOp()->erase();
        for (RowSlicer &slicer : llvm::reverse(slicers))
          slicer.discardFrom(0);
        continue;
      }
      for (auto [read, slicer] : llvm::zip(ranges, slicers))
        if (read.late)
          placeLate(slicer, group);
      Value total = parts.front();
      for (Value part : ArrayRef(parts).drop_front())
        total = AddOp::create(builder, grad.getLoc(), total, part);
      grad.getResult().replaceAllUsesWith(total);
      grad->erase();
    }

    // The probe sliced them; the memos only spare work.
    SmallVector<Operation *> made;
    if (!sliceReads(made))
      llvm::report_fatal_error(
          "drc: a bank adjoint's reads, sliced once, could not be again");
    for (Read &read : reads) {
      read.rows.getResult().replaceAllUsesWith(read.value);
      read.rows->erase();
    }
    eraseUnused(sum.getDefiningOp());
  }
}
