//===- StoreBanks.cpp - Depth banks grown in place ------------------------===//
//
// A depth bank grows by one append per sublayer (AttnRes's c_{k+1} =
// [c_k ; f_k]). As values, each append is a new tensor holding the old bank
// and the new rows, so a forward pass copies 1 + 2 + ... + 2L banks. Here a
// chain of appends writes into one store tensor [N, capacity, w] instead:
// each append inserts its new rows after the rows already there, and each
// bank is the store's first rows. A bank read after later appends reads
// those rows from the latest store, which holds them unchanged, so one-shot
// bufferization writes every append in place and copies no bank.
//
//===----------------------------------------------------------------------===//
#include "passes/TokenLocalRegions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <map>

namespace mlir::drc {
#define GEN_PASS_DEF_STOREBANKS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

int64_t rowsOf(Value set) {
  return cast<RankedTensorType>(set.getType()).getDimSize(1);
}

/// Offsets, sizes and strides of rows [row, row + rows) of a set shaped like
/// `shape` in its other dimensions.
struct RowBlock {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RowBlock(OpBuilder &b, ArrayRef<int64_t> shape, int64_t row, int64_t rows) {
    for (auto [d, size] : llvm::enumerate(shape)) {
      offsets.push_back(b.getIndexAttr(d == 1 ? row : 0));
      sizes.push_back(b.getIndexAttr(d == 1 ? rows : size));
      strides.push_back(b.getIndexAttr(1));
    }
  }
};

/// The store after an append: its tensor, the rows it holds, and the
/// version it extends (-1 for a chain's first append).
struct Version {
  Value store;
  int64_t rows;
  int parent;
};

void storeBanks(func::FuncOp fn) {
  Block &block = fn.getBody().front();
  SmallVector<AppendOp> appends;
  for (AppendOp op : block.getOps<AppendOp>())
    if (isBankAppend(op))
      appends.push_back(op);
  if (appends.empty())
    return;
  // The rows a chain's store needs: the longest bank grown from it.
  DenseMap<Operation *, int64_t> capacity;
  std::function<int64_t(AppendOp)> capacityOf = [&](AppendOp op) {
    if (auto it = capacity.find(op); it != capacity.end())
      return it->second;
    int64_t rows = rowsOf(op.getResult());
    for (OpOperand &use : op->getUses())
      if (auto next = dyn_cast<AppendOp>(use.getOwner());
          next && use.getOperandNumber() == 0)
        rows = std::max(rows, capacityOf(next));
    return capacity[op] = rows;
  };
  for (AppendOp op : appends)
    capacityOf(op);

  SmallVector<Version> versions;
  DenseMap<Value, int> versionOf; // a bank -> the version it is the rows of
  SmallVector<Value> banks;       // in block order
  OpBuilder b(fn.getContext());
  for (AppendOp op : appends) {
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ValueRange inputs = op.getInputs();
    Version next{Value(), 0, -1};
    if (auto it = versionOf.find(inputs.front()); it != versionOf.end()) {
      next = versions[it->second];
      next.parent = it->second;
      inputs = inputs.drop_front();
    } else {
      SmallVector<int64_t> shape(type.getShape());
      shape[1] = capacity[op];
      next.store =
          tensor::EmptyOp::create(b, loc, shape, type.getElementType());
    }
    for (Value input : inputs) {
      auto shape = cast<RankedTensorType>(input.getType()).getShape();
      RowBlock at(b, shape, next.rows, shape[1]);
      next.store = tensor::InsertSliceOp::create(
          b, loc, input, next.store, at.offsets, at.sizes, at.strides);
      next.rows += shape[1];
    }
    versions.push_back(next);
    RowBlock bank(b, type.getShape(), 0, next.rows);
    Value rows = tensor::ExtractSliceOp::create(
        b, loc, type, next.store, bank.offsets, bank.sizes, bank.strides);
    op.replaceAllUsesWith(rows);
    op.erase();
    versionOf[rows] = static_cast<int>(versions.size()) - 1;
    banks.push_back(rows);
  }

  // A bank read after a later append of its chain reads its rows from the
  // latest store before the read: bufferization may then write each append
  // into the buffer of the store it extends.
  auto descends = [&](int version, int from) {
    for (; version >= 0; version = versions[version].parent)
      if (version == from)
        return true;
    return false;
  };
  std::map<std::pair<int, int>, Value> reread; // (store version, bank version)
  for (Value bank : banks) {
    int own = versionOf.lookup(bank);
    auto type = cast<RankedTensorType>(bank.getType());
    for (OpOperand &use : llvm::make_early_inc_range(bank.getUses())) {
      Operation *reader = block.findAncestorOpInBlock(*use.getOwner());
      int latest = own;
      for (int v = static_cast<int>(versions.size()) - 1; v > own; --v)
        if (versions[v].store.getDefiningOp()->isBeforeInBlock(reader) &&
            descends(v, own)) {
          latest = v;
          break;
        }
      if (latest == own)
        continue;
      Value &rows = reread[{latest, own}];
      if (!rows) {
        b.setInsertionPointAfter(versions[latest].store.getDefiningOp());
        RowBlock at(b, type.getShape(), 0, type.getDimSize(1));
        rows = tensor::ExtractSliceOp::create(b, bank.getLoc(), type,
                                              versions[latest].store,
                                              at.offsets, at.sizes, at.strides);
      }
      use.set(rows);
    }
  }
}

struct StoreBanksPass : mlir::drc::impl::StoreBanksBase<StoreBanksPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        storeBanks(fn);
  }
};

} // namespace
