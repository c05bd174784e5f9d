//===- RowSlice.h - Rows of a set as slice parameters ----------*- C++ -*-===//
#ifndef DRC_PASSES_ROWSLICE_H
#define DRC_PASSES_ROWSLICE_H

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::drc {

/// Static slice parameters of a set tensor<N x k x w>: rows
/// [row, row + shape[1]) of all tokens, at unit strides (`shape` is the
/// slice's).
struct RowSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RowSlice(OpBuilder &b, int64_t row, ArrayRef<int64_t> shape)
      : offsets(getAsIndexOpFoldResult(b.getContext(), {0, row, 0})),
        sizes(getAsIndexOpFoldResult(b.getContext(), shape)),
        strides(getAsIndexOpFoldResult(b.getContext(), {1, 1, 1})) {}
};

} // namespace mlir::drc

#endif // DRC_PASSES_ROWSLICE_H
