//===- LibraryGemm.h - Matrix products the GPU's BLAS runs ------*- C++ -*-===//
//
// A GPU program's top-level linalg.matmul and linalg.batch_matmul on f32
// buffers of static shape run in cuBLASLt (runtime/CublasLt.h) instead of a
// generated kernel when each of A, B and C has contiguous rows or
// contiguous columns (runtime/CudaGemm.h). These helpers say which, and
// describe one as the manifest's CudaGemm.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_LIBRARYGEMM_H
#define DRC_PASSES_LIBRARYGEMM_H

#include "runtime/CudaManifest.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::drc {

/// Attributes of drc-gpu-linalg-to-loops: a product whose C was zero-filled
/// just before overwrites C (cuBLAS's beta = 0), and the fill, kept as an
/// op so that a CPU lowering of the same loop form still runs it, launches
/// nothing on the GPU.
inline constexpr llvm::StringLiteral kOverwrites = "drc.overwrites";
inline constexpr llvm::StringLiteral kFoldedFill = "drc.folded_fill";

/// The view of a memref value: its buffer, offset, sizes and strides
/// (nothing when they are not static).
using ViewOf = llvm::function_ref<std::optional<::drc::CudaOperand>(Value)>;

/// `op`'s A, B and C as [batch, rows, cols] views (A [batch, M, K], B
/// [batch, K, N], C [batch, M, N]; a batch of 1 for linalg.matmul), read
/// through its indexing maps, when `op` is a linalg.matmul or
/// linalg.batch_matmul on f32 memrefs, every map a projected permutation,
/// and cuBLAS can run it (drc::columnMajor).
std::optional<::drc::CudaGemm> libraryGemm(linalg::LinalgOp op, ViewOf viewOf);

/// The view of a memref of static shape, strides and offset as its type
/// gives it (buffer 0); nothing for another memref.
std::optional<::drc::CudaOperand> typeView(Value memref);

} // namespace mlir::drc

#endif // DRC_PASSES_LIBRARYGEMM_H
