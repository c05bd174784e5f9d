//===- LibraryGemm.cpp - Matrix products the GPU's BLAS runs -------------===//
#include "passes/LibraryGemm.h"

#include "runtime/CudaGemm.h"

using namespace mlir;

std::optional<::drc::CudaOperand> mlir::drc::typeView(Value memref) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (!type || !type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  ::drc::CudaOperand view;
  view.isView = true;
  view.offset = offset;
  view.sizes.assign(type.getShape().begin(), type.getShape().end());
  view.strides.assign(strides.begin(), strides.end());
  return view;
}

std::optional<::drc::CudaGemm> mlir::drc::libraryGemm(linalg::LinalgOp op,
                                                      ViewOf viewOf) {
  // Loop dimensions: (batch,) m, n, k; A reads (batch, m, k), B (batch, k,
  // n), C (batch, m, n).
  bool batched = isa<linalg::BatchMatmulOp>(op);
  if (!batched && !isa<linalg::MatmulOp>(op))
    return std::nullopt;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic))
    return std::nullopt;
  unsigned first = batched ? 1 : 0;
  unsigned m = first, n = first + 1, k = first + 2;
  auto logical = [&](OpOperand &operand, unsigned rows,
                     unsigned cols) -> std::optional<::drc::CudaOperand> {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.getElementType().isF32())
      return std::nullopt;
    std::optional<::drc::CudaOperand> view = viewOf(operand.get());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!view || !map.isProjectedPermutation())
      return std::nullopt;
    // The stride of each loop dimension (0: the operand does not vary).
    SmallVector<int64_t> strides(extents.size(), 0);
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      strides[cast<AffineDimExpr>(e).getPosition()] = view->strides[i];
    ::drc::CudaOperand out = *view;
    out.sizes = {batched ? extents[0] : 1, extents[rows], extents[cols]};
    out.strides = {batched ? strides[0] : 0, strides[rows], strides[cols]};
    return out;
  };
  std::optional<::drc::CudaOperand> a = logical(op->getOpOperand(0), m, k);
  std::optional<::drc::CudaOperand> b = logical(op->getOpOperand(1), k, n);
  std::optional<::drc::CudaOperand> c = logical(op->getOpOperand(2), m, n);
  if (!a || !b || !c)
    return std::nullopt;
  ::drc::CudaGemm gemm{*a, *b, *c};
  if (!::drc::columnMajor(gemm))
    return std::nullopt;
  return gemm;
}
