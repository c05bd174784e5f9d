//===- CudaGemm.cpp - A manifest's matrix product as cuBLAS sees it ------===//
#include "runtime/CudaGemm.h"

#include <utility>

namespace drc {

namespace {

/// One batch of matrices of a product, logically [rows, cols].
struct Matrix {
  int64_t buffer, offset, batchStride, rows, cols, rowStride, colStride;

  static Matrix of(const CudaOperand &view) {
    return {view.buffer,   view.offset,     view.strides[0], view.sizes[1],
            view.sizes[2], view.strides[1], view.strides[2]};
  }

  Matrix transposed() const {
    return {buffer, offset, batchStride, cols, rows, colStride, rowStride};
  }

  /// With one row (column), its row (column) stride means nothing: pick
  /// the one that makes the matrix contiguous the way its other stride
  /// allows, so both layouts below see it.
  Matrix normalized() const {
    Matrix m = *this;
    if (m.rows == 1)
      m.rowStride = m.colStride == 1 ? m.cols : 1;
    if (m.cols == 1)
      m.colStride = m.rowStride == 1 ? m.rows : 1;
    return m;
  }

  /// Contiguous rows: stored column-major as its transpose, leading
  /// dimension the row stride.
  bool rowMajor() const { return colStride == 1 && rowStride >= cols; }
  /// Contiguous columns: stored column-major as itself.
  bool columnMajor() const { return rowStride == 1 && colStride >= rows; }
};

/// How cuBLAS reads `mat`'s transpose: a matrix with contiguous rows is
/// stored as its transpose (no op, leading dimension the row stride), one
/// with contiguous columns as itself (transposed, the column stride).
/// False for neither.
bool readTransposed(const Matrix &mat, bool &transposed, int64_t &ld) {
  if (mat.rowMajor()) {
    transposed = false;
    ld = mat.rowStride;
    return true;
  }
  if (mat.columnMajor()) {
    transposed = true;
    ld = mat.colStride;
    return true;
  }
  return false;
}

/// The largest power of two up to 256 that divides the byte offset of
/// every f32 matrix at `offset` + i * `stride` elements.
int64_t alignment(int64_t offset, int64_t stride) {
  int64_t align = 256;
  while (((offset * 4) % align != 0 || (stride * 4) % align != 0) && align > 4)
    align /= 2;
  return align;
}

} // namespace

std::optional<ColumnMajorGemm> columnMajor(const CudaGemm &gemm) {
  for (const CudaOperand *v : {&gemm.a, &gemm.b, &gemm.c})
    if (!v->isView || v->sizes.size() != 3)
      return std::nullopt;
  Matrix a = Matrix::of(gemm.a).normalized(),
         b = Matrix::of(gemm.b).normalized(),
         c = Matrix::of(gemm.c).normalized();
  // C's columns contiguous: C = A·B is Cᵀ = Bᵀ·Aᵀ with contiguous rows.
  if (!c.rowMajor() && c.columnMajor()) {
    Matrix at = a.transposed(), bt = b.transposed();
    a = bt;
    b = at;
    c = c.transposed();
  }
  if (!c.rowMajor())
    return std::nullopt;
  // Column-major D = Cᵀ (n_C x m_C) = Bᵀ·Aᵀ: X holds Bᵀ, Y holds Aᵀ.
  ColumnMajorGemm g;
  g.m = c.cols;
  g.n = c.rows;
  g.k = a.cols;
  g.batch = gemm.c.sizes[0];
  g.bufferD = c.buffer;
  g.offsetD = c.offset;
  g.ldd = c.rowStride;
  g.strideD = c.batchStride;
  // X holds Bᵀ (m x k), Y holds Aᵀ (k x n).
  if (!readTransposed(b, g.transX, g.ldx) ||
      !readTransposed(a, g.transY, g.ldy))
    return std::nullopt;
  g.bufferX = b.buffer;
  g.offsetX = b.offset;
  g.strideX = b.batchStride;
  g.bufferY = a.buffer;
  g.offsetY = a.offset;
  g.strideY = a.batchStride;
  // One matrix: batch strides mean nothing.
  if (g.batch == 1)
    g.strideX = g.strideY = g.strideD = 0;
  g.alignX = alignment(g.offsetX, g.strideX);
  g.alignY = alignment(g.offsetY, g.strideY);
  g.alignD = alignment(g.offsetD, g.strideD);
  g.accumulate = gemm.accumulate;
  return g;
}

} // namespace drc
