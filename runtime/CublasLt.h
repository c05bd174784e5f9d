//===- CublasLt.h - cuBLASLt, loaded at run time -----------------*- C++
//-*-===//
//
// The products of a GPU program (CudaGemm) run in NVIDIA's cuBLASLt with
// compute type CUBLAS_COMPUTE_32F_FAST_16BF: f32 matrices in memory, their
// inputs rounded to bf16 for the tensor cores, products summed in f32. Like
// the driver, the library is dlopen()ed, so nothing CUDA is linked. Each
// product's shape gets a plan once (descriptors and the heuristic's best
// algorithm), reused by every later call.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUBLASLT_H
#define DRC_RUNTIME_CUBLASLT_H

#include "runtime/CudaGemm.h"

#include <map>
#include <memory>
#include <string>

namespace drc {

class CublasLt {
public:
  /// Loads cuBLASLt ($DRC_CUBLASLT when set, else libcublasLt.so.13, .12,
  /// then libcublasLt.so from the loader's path) for launches on `stream`,
  /// with `workspace` (device memory of `workspaceBytes`) for its
  /// algorithms. Throws Error naming what it tried.
  CublasLt(void *stream, uint64_t workspace, size_t workspaceBytes);
  ~CublasLt();
  CublasLt(const CublasLt &) = delete;
  CublasLt &operator=(const CublasLt &) = delete;

  /// The library's file and version, e.g. "libcublasLt.so.13 (130100)".
  std::string description() const;

  /// Makes the plan for `gemm`'s shape if there is none yet.
  void prepare(const ColumnMajorGemm &gemm);
  /// D = op(X)·op(Y) (+ D when accumulating) at device addresses x, y, d (each
  /// matrix's first element), queued on the stream.
  void run(const ColumnMajorGemm &gemm, uint64_t x, uint64_t y, uint64_t d);

private:
  struct Api;
  struct Plan;
  std::unique_ptr<Api> api;
  void *library = nullptr;
  std::string libraryName;
  void *handle = nullptr;
  void *stream;
  uint64_t workspace;
  size_t workspaceBytes;
  std::map<decltype(ColumnMajorGemm{}.shape()), std::unique_ptr<Plan>> plans;

  Plan &plan(const ColumnMajorGemm &gemm);
};

} // namespace drc

#endif // DRC_RUNTIME_CUBLASLT_H
