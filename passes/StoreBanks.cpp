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
#include "passes/RowSlice.h"
#include "passes/TokenLocalRegions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace mlir::drc {
#define GEN_PASS_DEF_STOREBANKS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

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
  // The rows a chain's store needs: the longest bank grown from it. An
  // append's extenders come after it and are bank appends too.
  DenseMap<Operation *, int64_t> capacity;
  for (AppendOp op : llvm::reverse(appends)) {
    int64_t &rows = capacity[op];
    rows = cast<RankedTensorType>(op.getType()).getDimSize(1);
    for (OpOperand &use : op->getUses())
      if (isa<AppendOp>(use.getOwner()) && use.getOperandNumber() == 0)
        rows = std::max(rows, capacity.lookup(use.getOwner()));
  }

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
      auto store =
          tensor::EmptyOp::create(b, loc, shape, type.getElementType());
      store->setAttr(kBankStoreAttr, b.getUnitAttr());
      next.store = store;
    }
    for (Value input : inputs) {
      auto shape = cast<RankedTensorType>(input.getType()).getShape();
      RowSlice at(b, next.rows, shape);
      next.store = tensor::InsertSliceOp::create(
          b, loc, input, next.store, at.offsets, at.sizes, at.strides);
      next.rows += shape[1];
    }
    versions.push_back(next);
    RowSlice bank(b, 0, type.getShape());
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
        RowSlice at(b, 0, type.getShape());
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
