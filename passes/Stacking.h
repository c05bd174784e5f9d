//===- Stacking.h - Operands stacked into one, results sliced out -*- C++
//-*-===//
//
// Several small operations on one large operand become one (the projections of
// a tile by several weights, the weight gradients of several projections of a
// state): their small operands are stacked along a dimension, and each result
// is a slice of the merged one.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_STACKING_H
#define DRC_PASSES_STACKING_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::drc {

/// `parts` (ranked tensors equal but along `dim`) stacked along `dim`: each
/// inserted into one empty tensor. `starts` receives each part's first index
/// along `dim`.
inline Value stackAlong(OpBuilder &b, Location loc, ValueRange parts,
                        unsigned dim, SmallVectorImpl<int64_t> &starts) {
  auto first = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (Value part : parts) {
    starts.push_back(shape[dim]);
    shape[dim] += cast<RankedTensorType>(part.getType()).getDimSize(dim);
  }
  Value stacked =
      tensor::EmptyOp::create(b, loc, shape, first.getElementType());
  SmallVector<int64_t> offsets(shape.size(), 0), strides(shape.size(), 1);
  for (auto [part, start] : llvm::zip(parts, starts)) {
    offsets[dim] = start;
    stacked = tensor::InsertSliceOp::create(
        b, loc, part, stacked, getAsIndexOpFoldResult(b.getContext(), offsets),
        getAsIndexOpFoldResult(
            b.getContext(), cast<RankedTensorType>(part.getType()).getShape()),
        getAsIndexOpFoldResult(b.getContext(), strides));
  }
  return stacked;
}

/// The part of `whole` of type `type` that starts at `start` along `dim`.
inline Value sliceAlong(OpBuilder &b, Location loc, Value whole,
                        RankedTensorType type, unsigned dim, int64_t start) {
  SmallVector<int64_t> offsets(type.getRank(), 0), strides(type.getRank(), 1);
  offsets[dim] = start;
  return tensor::ExtractSliceOp::create(
      b, loc, type, whole, getAsIndexOpFoldResult(b.getContext(), offsets),
      getAsIndexOpFoldResult(b.getContext(), type.getShape()),
      getAsIndexOpFoldResult(b.getContext(), strides));
}

} // namespace mlir::drc

#endif // DRC_PASSES_STACKING_H
