//===- GpuAlignVectors.cpp - Vector accesses proven aligned --------------===//
//
// NVPTX makes one ld.global.v4.f32 of a vector<4xf32> load only when the
// address is known to be a multiple of 16 bytes; otherwise it splits the
// load into four. A drc GPU program's buffers all start at multiples of
// `buffer-alignment` bytes (the driver's allocations at 256, arena slots at
// 256, parameters at 64, kernel temporaries at 64), so an access is that
// aligned when its element offset from the buffer's start is a multiple of
// the vector's length: the view's offset and every index times its stride.
// This pass follows each vector load's and store's view back to its buffer
// and, where that proves the offset, records the alignment on the op.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

#include <numeric>

namespace mlir::drc {
#define GEN_PASS_DEF_GPUALIGNVECTORS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A number `value` is known to be a multiple of (1 when nothing is known,
/// 0 for zero).
int64_t knownFactor(Value value) {
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return std::abs(*c);
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto loop = dyn_cast<LoopLikeOpInterface>(arg.getOwner()->getParentOp());
    if (!loop || !loop.getSingleInductionVar() ||
        *loop.getSingleInductionVar() != value)
      return 1;
    std::optional<OpFoldResult> lower = loop.getSingleLowerBound(),
                                step = loop.getSingleStep();
    std::optional<int64_t> l = lower ? getConstantIntValue(*lower)
                                     : std::nullopt,
                           s = step ? getConstantIntValue(*step) : std::nullopt;
    return l && s ? std::gcd(std::abs(*l), std::abs(*s)) : 1;
  }
  Operation *op = value.getDefiningOp();
  if (isa<arith::MulIOp>(op))
    return knownFactor(op->getOperand(0)) * knownFactor(op->getOperand(1));
  if (isa<arith::AddIOp, arith::SubIOp>(op))
    return std::gcd(knownFactor(op->getOperand(0)),
                    knownFactor(op->getOperand(1)));
  return 1;
}

/// What the element offset of `view`'s first element from its buffer's
/// start is known to be a multiple of, following views back to the buffer.
int64_t offsetFactor(Value view) {
  auto type = dyn_cast<MemRefType>(view.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || failed(type.getStridesAndOffset(strides, offset)))
    return 1;
  if (!ShapedType::isDynamic(offset))
    return std::abs(offset);
  Operation *op = view.getDefiningOp();
  if (isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp,
                      memref::CastOp>(op))
    return offsetFactor(op->getOperand(0));
  auto subview = dyn_cast_or_null<memref::SubViewOp>(op);
  if (!subview)
    return 1;
  SmallVector<int64_t> sourceStrides;
  int64_t sourceOffset;
  if (failed(subview.getSourceType().getStridesAndOffset(sourceStrides,
                                                         sourceOffset)))
    return 1;
  int64_t factor = offsetFactor(subview.getSource());
  for (auto [at, stride] :
       llvm::zip(subview.getMixedOffsets(), sourceStrides)) {
    if (ShapedType::isDynamic(stride))
      return 1;
    int64_t term = std::abs(stride);
    if (auto value = dyn_cast<Value>(at))
      term *= knownFactor(value);
    else
      term *= std::abs(*getConstantIntValue(at));
    factor = std::gcd(factor, term);
  }
  return factor;
}

/// Whether the buffer `view` is a view of starts at a multiple of
/// `alignment` bytes, and so does every memref.view on the way (they shift
/// the start).
bool startsAligned(Value view, int64_t alignment) {
  while (true) {
    Operation *op = view.getDefiningOp();
    if (!op)
      return isa<func::FuncOp>(
          cast<BlockArgument>(view).getOwner()->getParentOp());
    if (auto shifted = dyn_cast<memref::ViewOp>(op)) {
      if (knownFactor(shifted.getByteShift()) % alignment != 0)
        return false;
      view = shifted.getSource();
      continue;
    }
    if (auto viewLike = dyn_cast<ViewLikeOpInterface>(op)) {
      view = viewLike.getViewSource();
      continue;
    }
    if (auto alloca = dyn_cast<memref::AllocaOp>(op))
      return alloca.getAlignment().value_or(0) >= uint64_t(alignment);
    return isa<memref::AllocOp, memref::GetGlobalOp>(op);
  }
}

/// What the element offset of `memref[indices]` from the buffer's start is
/// known to be a multiple of.
int64_t accessFactor(Value memref, ValueRange indices) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(cast<MemRefType>(memref.getType())
                 .getStridesAndOffset(strides, offset)))
    return 1;
  int64_t factor = offsetFactor(memref);
  for (auto [index, stride] : llvm::zip(indices, strides)) {
    if (ShapedType::isDynamic(stride))
      return 1;
    factor = std::gcd(factor, std::abs(stride) * knownFactor(index));
  }
  return factor;
}

struct GpuAlignVectorsPass
    : mlir::drc::impl::GpuAlignVectorsBase<GpuAlignVectorsPass> {
  using GpuAlignVectorsBase::GpuAlignVectorsBase;

  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      if (auto load = dyn_cast<vector::LoadOp>(op))
        align(load, load.getBase(), load.getIndices(), load.getVectorType());
      else if (auto store = dyn_cast<vector::StoreOp>(op))
        align(store, store.getBase(), store.getIndices(),
              store.getVectorType());
    });
  }

  /// Records on `op` the alignment of the whole vector when its element
  /// offset is a multiple of the vector's length and the vector is no
  /// larger than a buffer's alignment.
  template <typename Access>
  void align(Access op, Value memref, ValueRange indices, VectorType type) {
    if (type.getRank() != 1 || !type.getElementType().isIntOrFloat())
      return;
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    if (!llvm::isPowerOf2_64(bytes) || bytes > bufferAlignment)
      return;
    if (!startsAligned(memref, bufferAlignment))
      return;
    int64_t factor = accessFactor(memref, indices);
    if (factor % type.getNumElements() == 0)
      op.setAlignment(bytes);
  }
};

} // namespace
