//===- CudaGemmTest.cpp - A manifest's products in cuBLAS's terms ---------===//
//
// Every combination of contiguous rows or columns for A, B and C, with and
// without a batch, with unit dimensions and padded leading dimensions: the
// product columnMajor() describes, computed as cuBLAS defines it, must be
// C += A·B computed directly from the views.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudaGemm.h"

#include "ColumnMajorReference.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace {

/// A [batch, rows, cols] view of buffer `buffer` at `offset`, rows
/// contiguous or columns contiguous, each padded by `pad` elements.
drc::CudaOperand view(int64_t buffer, int64_t offset, int64_t batch,
                      int64_t rows, int64_t cols, bool rowMajor, int64_t pad) {
  drc::CudaOperand v;
  v.isView = true;
  v.buffer = buffer;
  v.offset = offset;
  v.sizes = {batch, rows, cols};
  int64_t rowStride = rowMajor ? cols + pad : 1;
  int64_t colStride = rowMajor ? 1 : rows + pad;
  int64_t matrix = rowMajor ? rows * rowStride : cols * colStride;
  v.strides = {batch == 1 ? 0 : matrix + pad, rowStride, colStride};
  return v;
}

int64_t extent(const drc::CudaOperand &v) {
  int64_t last = v.offset;
  for (size_t d = 0; d < 3; ++d)
    last += (v.sizes[d] - 1) * v.strides[d];
  return last + 1;
}

float at(const std::vector<float> &buffer, const drc::CudaOperand &v, int64_t b,
         int64_t r, int64_t c) {
  return buffer[size_t(v.offset + b * v.strides[0] + r * v.strides[1] +
                       c * v.strides[2])];
}

} // namespace

TEST_CASE("a manifest's product in cuBLAS's terms computes C += A·B",
          "[cuda]") {
  struct Shape {
    int64_t batch, m, n, k;
  };
  for (Shape s : {Shape{1, 5, 3, 4}, Shape{3, 2, 7, 5}, Shape{2, 1, 4, 3},
                  Shape{1, 6, 1, 2}, Shape{2, 3, 2, 1}})
    for (int layout = 0; layout < 8; ++layout)
      for (int64_t pad : {0, 2}) {
        bool aRows = layout & 1, bRows = layout & 2, cRows = layout & 4;
        INFO("batch " << s.batch << " m " << s.m << " n " << s.n << " k " << s.k
                      << " layout " << layout << " pad " << pad);
        // A, B and C in one buffer each, at odd offsets.
        drc::CudaGemm gemm{view(0, 3, s.batch, s.m, s.k, aRows, pad),
                           view(1, 1, s.batch, s.k, s.n, bRows, pad),
                           view(2, 5, s.batch, s.m, s.n, cRows, pad)};
        std::vector<float> buffers[3];
        const drc::CudaOperand *views[3] = {&gemm.a, &gemm.b, &gemm.c};
        for (int i = 0; i < 3; ++i) {
          buffers[i].resize(size_t(extent(*views[i])));
          for (size_t e = 0; e < buffers[i].size(); ++e)
            buffers[i][e] = float(std::sin(1.0 + 3.0 * i + 0.7 * e));
        }
        std::vector<float> expected = buffers[2];
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = 0;
              for (int64_t l = 0; l < s.k; ++l)
                sum += double(at(buffers[0], gemm.a, b, i, l)) *
                       at(buffers[1], gemm.b, b, l, j);
              expected[size_t(gemm.c.offset + b * gemm.c.strides[0] +
                              i * gemm.c.strides[1] + j * gemm.c.strides[2])] +=
                  float(sum);
            }

        std::optional<drc::ColumnMajorGemm> g = drc::columnMajor(gemm);
        REQUIRE(g);
        CHECK(g->batch == s.batch);
        // cuBLAS's own requirements on leading dimensions.
        CHECK(g->ldx >= std::max<int64_t>(1, g->rowsX()));
        CHECK(g->ldy >= std::max<int64_t>(1, g->rowsY()));
        CHECK(g->ldd >= std::max<int64_t>(1, g->m));
        // Every matrix starts at a multiple of its stated alignment.
        for (int64_t b = 0; b < s.batch; ++b) {
          CHECK((g->offsetX + b * g->strideX) * 4 % g->alignX == 0);
          CHECK((g->offsetY + b * g->strideY) * 4 % g->alignY == 0);
          CHECK((g->offsetD + b * g->strideD) * 4 % g->alignD == 0);
        }
        std::vector<float> result = buffers[2];
        float *d = result.data();
        const float *x = buffers[g->bufferX].data();
        const float *y = buffers[g->bufferY].data();
        REQUIRE(g->bufferD == 2);
        drc::test::columnMajorGemm(*g, x + g->offsetX, y + g->offsetY,
                                   d + g->offsetD);
        for (size_t e = 0; e < result.size(); ++e)
          CHECK(result[e] == Approx(expected[e]).epsilon(1e-5));
      }
}

TEST_CASE("a product with neither contiguous rows nor columns has no cuBLAS "
          "form",
          "[cuda]") {
  drc::CudaGemm gemm{view(0, 0, 1, 4, 4, true, 0), view(1, 0, 1, 4, 4, true, 0),
                     view(2, 0, 1, 4, 4, true, 0)};
  CHECK(drc::columnMajor(gemm));
  gemm.b.strides = {0, 8, 2}; // every other column
  CHECK_FALSE(drc::columnMajor(gemm));
  gemm.b.strides = {0, 4, 1};
  gemm.c.strides = {0, 2, 1}; // rows overlap
  CHECK_FALSE(drc::columnMajor(gemm));
}
