//===- BankAdjoints.cpp - Depth banks' adjoints summed late ---------------===//
#include "passes/BankAdjoints.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

/// Of the accumulators along a chain, this many are deferred after each one
/// formed. Measured on Full AttnRes at d_model 256, 16 sublayers
/// (bench/ab-profile, fused regions' samples over the busiest GEMM's): one
/// cut them by 7-9%, two by 9-15%, three by 10-16%. Two and three move
/// about the same bytes (drc-compile --report: 618 and 613 KB per token,
/// one 664, none 749); two carries fewer ingredients into each region.
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

/// Builds rows [offset, offset + count) of per-token sets without forming
/// the sets: through ops whose result's row i depends only on row i of their
/// set operands, down to the rows of narrow values and of formed
/// accumulators (a drc.rows of them) and of drc.append's inputs.
struct RowSlicer {
  OpBuilder &builder;
  TokenAnalysis &a; ///< learns the per-token values made here
  const DenseSet<Value> &formed;
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
    Operation *def = v.getDefiningOp();
    auto rowsOf = [&](Value x) {
      return make(RowsOp::create(builder, v.getLoc(), withRows(x, count), x,
                                 builder.getI64IntegerAttr(offset)));
    };
    if (!def || formed.contains(v))
      return narrow(v) || formed.contains(v) ? rowsOf(v) : Value();
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
            return narrow(v) ? rowsOf(v) : Value();
          return copy(mix, map, count);
        })
        .Case([&](MatmulOp matmul) -> Value {
          if (matmul.getTransposeLhs() ||
              a.of(matmul.getRhs()) != Rows::Shared ||
              !sliceInto(map, matmul.getLhs(), offset, count))
            return narrow(v) ? rowsOf(v) : Value();
          return copy(matmul, map, count);
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
        .Default([&](Operation *) { return narrow(v) ? rowsOf(v) : Value(); });
  }

  /// Erases what this slicer made (a failed slice's partial work).
  void discard() {
    for (Operation *op : llvm::reverse(created))
      op->erase();
    created.clear();
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
  DenseSet<Value> known;
  DenseMap<Value, int64_t> place;
  for (Operation &op : block)
    for (Value v : op.getResults())
      if (isBankAdjoint(v, a)) {
        Value previous = previousAdjoint(v, known);
        place[v] = previous ? place[previous] + 1 : 0;
        adjoints.push_back(v);
        known.insert(v);
      }

  DenseSet<Value> formed;
  for (Value sum : adjoints)
    if (place[sum] % (kDeferredPerFormed + 1) == 0)
      formed.insert(sum);

  OpBuilder builder(fn.getContext());
  UnitAttr late = builder.getUnitAttr();
  for (Value sum : adjoints) {
    if (formed.contains(sum))
      continue;
    // Every read of the accumulator's rows must be had from its terms.
    SmallVector<std::pair<RowsOp, Value>> replaced;
    SmallVector<Operation *> made;
    bool sliced = true;
    for (Operation *user : sum.getUsers()) {
      auto rows = cast<RowsOp>(user);
      builder.setInsertionPoint(rows);
      RowSlicer slicer{builder, a, formed, {}};
      Value value =
          slicer.slice(sum, rows.getOffset(), rowCount(rows.getResult()));
      if (!value || value == sum) {
        slicer.discard();
        sliced = false;
        break;
      }
      // The rows of a formed accumulator stay where it is made: a view of
      // the buffer it is written to, which the next accumulator can then
      // be written over in place.
      if (feedsAccumulator(rows))
        for (Operation *op : slicer.created)
          if (auto read = dyn_cast<RowsOp>(op);
              !read || !formed.contains(read.getInput()))
            op->setAttr(kRecomputedAttr, late);
      made.append(slicer.created);
      replaced.push_back({rows, value});
    }
    if (!sliced) {
      for (Operation *op : llvm::reverse(made))
        op->erase();
      continue;
    }
    for (auto [rows, value] : replaced) {
      rows.getResult().replaceAllUsesWith(value);
      rows->erase();
    }
    eraseUnused(sum.getDefiningOp());
  }
}
