//===- CudaManifest.h - What a GPU program launches, and how ----*- C++ -*-===//
//
// The manifest.json that drc-compile --target=cuda writes beside its PTX
// (docs/cuda.md), read without MLIR: each entry point's arguments, scratch
// and constant buffers, and kernel launches in order. packKernelArguments
// turns one launch's operands into the parameter list cuLaunchKernel takes,
// with memref views passed as MLIR's memref descriptor.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUDAMANIFEST_H
#define DRC_RUNTIME_CUDAMANIFEST_H

#include "runtime/ParameterTable.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace drc {

/// Element and scalar types of the manifest.
enum class CudaType { F32, I32, I64, F64, I8 };

/// Bytes of one element of `type`.
int64_t cudaTypeBytes(CudaType type);

/// A kernel operand: a static view of a buffer, or a scalar.
struct CudaOperand {
  bool isView = false;
  CudaType type = CudaType::F32;
  // A view: elements from the buffer's start.
  int64_t buffer = 0, offset = 0;
  std::vector<int64_t> sizes, strides;
  // A scalar: integers exactly, floats as double.
  int64_t integer = 0;
  double real = 0;
};

/// A matrix product C += A·B (or C = A·B) of f32 views, each [batch, rows,
/// cols] (A [batch, M, K], B [batch, K, N], C [batch, M, N]), that the device's
/// BLAS runs (cuBLASLt: inputs rounded to bf16, sums in f32) instead of a
/// kernel.
struct CudaGemm {
  CudaOperand a, b, c;
  bool accumulate = true; ///< false: C = A·B, C's contents unread
};

/// A kernel launch, or a product (`gemm` set, no kernel).
struct CudaLaunch {
  std::string kernel;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::vector<CudaOperand> operands;
  std::optional<CudaGemm> gemm;
};

/// A buffer the function needs besides its arguments.
struct CudaBuffer {
  int64_t index = 0; ///< its number: after the arguments'
  int64_t bytes = 0;
  std::vector<float> values; ///< a constant's contents; empty for scratch
  /// Scratch: where it lies in the function's arena (buffers whose lives do
  /// not overlap share bytes); -1 for a constant.
  int64_t offset = -1;
};

struct CudaFunction {
  /// Element count and type of each argument buffer, in order.
  std::vector<std::pair<int64_t, CudaType>> arguments;
  std::vector<CudaBuffer> buffers;
  std::vector<CudaLaunch> launches;
  int64_t arenaBytes = 0; ///< one allocation holds every scratch buffer
};

struct CudaManifest {
  std::string chip;
  /// programFingerprint of the spec compiled (ModelSpec.h).
  std::string spec;
  std::filesystem::path ptx; ///< absolute
  std::map<std::string, CudaFunction> functions;
  ParameterTable parameters;
};

/// Reads DIR/manifest.json. Throws InputError naming the file and what is
/// wrong: a missing file, another format, a field of the wrong kind, an
/// operand view outside its buffer or a buffer number out of range.
CudaManifest loadCudaManifest(const std::filesystem::path &directory);

/// Parses manifest text (for tests); `directory` resolves the PTX file.
CudaManifest parseCudaManifest(const std::string &text,
                               const std::filesystem::path &directory);

/// One launch's kernel parameters: `values` holds each parameter's bytes,
/// `pointers` one pointer per parameter into it, as cuLaunchKernel wants.
/// A view becomes base, base, offset, sizes..., strides... (memref
/// descriptor; pointers and i64); a scalar its own type.
class KernelArguments {
public:
  KernelArguments(const CudaLaunch &launch,
                  const std::vector<uint64_t> &bufferAddresses);
  void **pointers() { return pointers_.data(); }
  size_t count() const { return pointers_.size(); }
  /// Parameter i's bytes, for tests.
  const void *parameter(size_t i) const { return pointers_[i]; }

private:
  std::vector<uint64_t> values_; ///< 8 bytes per parameter
  std::vector<void *> pointers_;
};

} // namespace drc

#endif // DRC_RUNTIME_CUDAMANIFEST_H
