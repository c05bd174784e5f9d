//===- CudaGemm.h - A manifest's matrix product as cuBLAS sees it -*- C++
//-*-===//
//
// cuBLAS multiplies column-major matrices, each optionally transposed; a
// drc product is C += A·B on row-major-or-not strided views. A matrix
// whose rows are contiguous (column stride 1) is, read column-major, its
// own transpose with the row stride as leading dimension; one whose
// columns are contiguous is itself. So C = A·B with contiguous rows of C
// is computed as Cᵀ = Bᵀ·Aᵀ, and with contiguous columns as C = A·B.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUDAGEMM_H
#define DRC_RUNTIME_CUDAGEMM_H

#include "runtime/CudaManifest.h"

#include <optional>
#include <tuple>

namespace drc {

/// D = op(X)·op(Y) (+ D when accumulating) for `batch` column-major matrices,
/// cuBLAS's terms: D is m x n with leading dimension ldd; op(X) is m x k (X
/// stored k x m when transX), op(Y) k x n (Y stored n x k when transY); matrix
/// i of each lies at its offset plus i times its batch stride, in elements of
/// its buffer.
struct ColumnMajorGemm {
  bool transX = false, transY = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t bufferX = 0, bufferY = 0, bufferD = 0;
  int64_t offsetX = 0, offsetY = 0, offsetD = 0;
  int64_t ldx = 0, ldy = 0, ldd = 0;
  int64_t strideX = 0, strideY = 0, strideD = 0;
  /// The bytes every matrix of X, Y and D is aligned to, up to 256 (the
  /// alignment of the buffers themselves): cuBLASLt's algorithms assume
  /// 256 unless told.
  int64_t alignX = 256, alignY = 256, alignD = 256;
  /// D += ... (beta 1), or D = ... (beta 0, D's contents unread).
  bool accumulate = true;

  /// Rows and columns of X and Y as stored.
  int64_t rowsX() const { return transX ? k : m; }
  int64_t colsX() const { return transX ? m : k; }
  int64_t rowsY() const { return transY ? n : k; }
  int64_t colsY() const { return transY ? k : n; }

  /// Everything but the buffers and offsets (beyond their alignment): what
  /// a BLAS plan depends on.
  auto shape() const {
    return std::tuple(transX, transY, m, n, k, batch, ldx, ldy, ldd, strideX,
                      strideY, strideD, alignX, alignY, alignD);
  }
};

/// `gemm` in cuBLAS's terms, or nothing when one of its matrices has
/// neither contiguous rows nor contiguous columns (or overlapping ones).
std::optional<ColumnMajorGemm> columnMajor(const CudaGemm &gemm);

} // namespace drc

#endif // DRC_RUNTIME_CUDAGEMM_H
