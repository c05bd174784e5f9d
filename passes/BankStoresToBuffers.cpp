//===- BankStoresToBuffers.cpp - Depth banks' stores bufferized up front --===//
//
// drc-store-banks grows a depth bank in one store tensor [N, capacity, w]:
// a chain of tensor.insert_slice ops (the appends) and tensor.extract_slice
// reads of the store's versions (the banks, and tiles of them). One-shot
// bufferization then writes every append in place, but its analysis checks
// each in-place write against every read of the store's alias set, and that
// set holds every append and every read of every bank: cubic in depth (Full
// AttnRes at d_model 56: 0.45 s at 8 blocks, 10.7 s at 32, 40.5 s at 48).
// Such a store is made a buffer here instead, before empty-tensor
// elimination: a memref.alloc, each append a
// bufferization.materialize_in_destination into a subview of it, each read
// a bufferization.to_tensor of a subview. The analysis never sees the
// store (0.29, 1.3 and 2.4 s); empty-tensor elimination still lets an
// append's producer write into the store's rows, and the code is the same.
//
// The reads' to_tensor ops are `restrict` (one-shot bufferization requires
// it) though their views overlap: sound here because nothing writes through
// them (they are not writable: a kernel that would write into a bank gets a
// copy) and a chain is converted only when no read may overlap rows that a
// later append writes, so each view reads what the tensors held. A chain
// whose bank a function returns stays tensors: the buffer would escape.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::drc {
#define GEN_PASS_DEF_BANKSTORESTOBUFFERS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A store's chain: its appends in order and the reads of each version
/// (version 0 is the empty tensor, version i the result of append i - 1).
struct StoreChain {
  tensor::EmptyOp empty;
  SmallVector<tensor::InsertSliceOp> appends;
  SmallVector<std::pair<tensor::ExtractSliceOp, size_t>> reads;
};

/// The chain grown from `empty`, or none if a version has another use than
/// one append (in `empty`'s block) and reads, or a read is returned.
std::optional<StoreChain> findChain(tensor::EmptyOp empty) {
  StoreChain chain{empty, {}, {}};
  Value version = empty.getResult();
  for (size_t index = 0; version; ++index) {
    tensor::InsertSliceOp next;
    for (OpOperand &use : version.getUses()) {
      Operation *user = use.getOwner();
      if (auto read = dyn_cast<tensor::ExtractSliceOp>(user)) {
        if (llvm::any_of(read->getUsers(), llvm::IsaPred<func::ReturnOp>))
          return std::nullopt;
        chain.reads.emplace_back(read, index);
        continue;
      }
      auto append = dyn_cast<tensor::InsertSliceOp>(user);
      if (!append || use.get() != append.getDest() || next ||
          append->getBlock() != empty->getBlock())
        return std::nullopt;
      next = append;
    }
    if (next)
      chain.appends.push_back(next);
    version = next ? next.getResult() : Value();
  }
  // Appends at constant rows (drc-store-banks'), so their views can be
  // made where the store is.
  if (chain.appends.empty() ||
      llvm::any_of(chain.appends, [](tensor::InsertSliceOp append) {
        return !append.getOffsets().empty() || !append.getSizes().empty() ||
               !append.getStrides().empty();
      }))
    return std::nullopt;
  return chain;
}

/// Whether every read sees what the tensors held: no append after the
/// version it reads may write an element it reads (MLIR's value bounds
/// prove the slices disjoint).
bool readsStayValid(const StoreChain &chain) {
  for (auto [read, version] : chain.reads)
    for (tensor::InsertSliceOp append :
         ArrayRef(chain.appends).drop_front(version)) {
      FailureOr<bool> overlap = ValueBoundsConstraintSet::areOverlappingSlices(
          read.getContext(), HyperrectangularSlice(read),
          HyperrectangularSlice(append));
      if (failed(overlap) || *overlap)
        return false;
    }
  return true;
}

/// The subview of `store` that `slice` (an insert's destination slice or an
/// extract) takes, with the rank of `sliceType`.
Value subviewOf(OpBuilder &b, Location loc, Value store,
                OffsetSizeAndStrideOpInterface slice,
                RankedTensorType sliceType) {
  auto storeType = cast<MemRefType>(store.getType());
  MemRefType type = memref::SubViewOp::inferRankReducedResultType(
      sliceType.getShape(), storeType, slice.getMixedOffsets(),
      slice.getMixedSizes(), slice.getMixedStrides());
  return memref::SubViewOp::create(b, loc, type, store, slice.getMixedOffsets(),
                                   slice.getMixedSizes(),
                                   slice.getMixedStrides());
}

void toBuffer(StoreChain &chain) {
  // At the start of the block, with the appends' views after it: an
  // append's producer may have started before the store's empty tensor, and
  // empty-tensor elimination makes it write into the store only where the
  // view dominates the producer's empty tensor.
  OpBuilder b = OpBuilder::atBlockBegin(chain.empty->getBlock());
  auto type = cast<RankedTensorType>(chain.empty.getType());
  // Aligned as one-shot bufferization aligns its allocations.
  Value store = memref::AllocOp::create(
      b, chain.empty.getLoc(),
      MemRefType::get(type.getShape(), type.getElementType()),
      b.getI64IntegerAttr(64));
  for (auto [read, version] : chain.reads) {
    b.setInsertionPoint(read);
    Value view = subviewOf(b, read.getLoc(), store, read, read.getType());
    Value rows = bufferization::ToTensorOp::create(
        b, read.getLoc(), read.getType(), view, /*restrict=*/true,
        /*writable=*/false);
    read.replaceAllUsesWith(rows);
    read.erase();
  }
  b.setInsertionPointAfter(store.getDefiningOp());
  for (tensor::InsertSliceOp append : chain.appends) {
    Value view =
        subviewOf(b, append.getLoc(), store, append, append.getSourceType());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(append);
    bufferization::MaterializeInDestinationOp::create(
        b, append.getLoc(), Type(), append.getSource(), view,
        /*restrict=*/true, /*writable=*/true);
  }
  for (tensor::InsertSliceOp append : llvm::reverse(chain.appends))
    append.erase();
  chain.empty.erase();
}

struct BankStoresToBuffersPass
    : mlir::drc::impl::BankStoresToBuffersBase<BankStoresToBuffersPass> {
  void runOnOperation() override {
    SmallVector<StoreChain> chains;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (!empty->hasAttr(mlir::drc::kBankStoreAttr) ||
          !cast<RankedTensorType>(empty.getType()).hasStaticShape())
        return;
      if (std::optional<StoreChain> chain = findChain(empty))
        if (readsStayValid(*chain))
          chains.push_back(std::move(*chain));
    });
    for (StoreChain &chain : chains)
      toBuffer(chain);
  }
};

} // namespace
