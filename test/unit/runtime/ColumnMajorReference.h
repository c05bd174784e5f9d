//===- ColumnMajorReference.h - What cuBLAS computes, on the host -*- C++
//-*-===//
//
// cuBLAS's definition of D = op(X)·op(Y) + beta D (beta 1 or 0) on
// column-major matrices (element
// (r, c) of a matrix with leading dimension ld at r + c * ld), written
// from that definition and nothing of drc's: the tests map a manifest's
// product with columnMajor() and require this to compute C += A·B.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TEST_COLUMNMAJORREFERENCE_H
#define DRC_TEST_COLUMNMAJORREFERENCE_H

#include "runtime/CudaGemm.h"

namespace drc::test {

inline void columnMajorGemm(const ColumnMajorGemm &g, const float *x,
                            const float *y, float *d) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const float *xb = x + b * g.strideX, *yb = y + b * g.strideY;
    float *db = d + b * g.strideD;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          float opX = g.transX ? xb[l + i * g.ldx] : xb[i + l * g.ldx];
          float opY = g.transY ? yb[j + l * g.ldy] : yb[l + j * g.ldy];
          sum += double(opX) * opY;
        }
        float &out = db[i + j * g.ldd];
        out = (g.accumulate ? out : 0.0f) + float(sum);
      }
  }
}

} // namespace drc::test

#endif // DRC_TEST_COLUMNMAJORREFERENCE_H
