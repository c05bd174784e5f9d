//===- ParameterBuffer.h - Flat fp32 buffers on cache lines ---*- C++ -*-===//
//
// The storage of a model's flat parameter, gradient and AdamW-moment buffers
// on the host. The parameter table starts every parameter on a 64-byte
// boundary (kParameterAlignment floats) *within* the buffer; this allocator
// puts the buffer itself on one, so that a generated kernel's 512-bit loads
// and stores of a weight, its gradient or its moments never straddle two
// cache lines (std::vector<float> gives 16 bytes: every vector access then
// touches two lines). Correctness does not depend on it; speed does.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PARAMETERBUFFER_H
#define DRC_RUNTIME_PARAMETERBUFFER_H

#include "runtime/ParameterTable.h"

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace drc {

template <class T> struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U> CacheLineAllocator(const CacheLineAllocator<U> &) {}

  T *allocate(std::size_t n) {
    constexpr std::size_t alignment = kParameterAlignment * sizeof(float);
    // aligned_alloc wants a size that is a multiple of the alignment.
    std::size_t bytes = (n * sizeof(T) + alignment - 1) / alignment * alignment;
    void *p = std::aligned_alloc(alignment, bytes);
    if (!p)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, std::size_t) { std::free(p); }

  template <class U> bool operator==(const CacheLineAllocator<U> &) const {
    return true;
  }
};

/// A flat fp32 buffer of a model's parameter table (parameters, gradients,
/// AdamW moments) whose first element is 64-byte aligned.
using ParameterBuffer = std::vector<float, CacheLineAllocator<float>>;

} // namespace drc

#endif // DRC_RUNTIME_PARAMETERBUFFER_H
