//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// drc links nothing from CUDA: the driver library is dlopen()ed when a GPU
// program runs, so the same binaries build and run on machines without a
// GPU. Every call's result is checked; a failure throws drc::Error naming
// the call and the driver's error name and text. One device, its primary
// context, one stream.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUDADRIVER_H
#define DRC_RUNTIME_CUDADRIVER_H

#include <cstdint>
#include <memory>
#include <string>

namespace drc {

class CudaDriver {
public:
  /// Loads libcuda.so.1 (or `library`), initialises it and makes device
  /// `ordinal`'s primary context current. Throws Error when there is no
  /// driver library (no NVIDIA driver installed), no such device, or a
  /// call fails.
  explicit CudaDriver(int ordinal = 0,
                      const std::string &library = "libcuda.so.1");
  ~CudaDriver();
  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  /// "NVIDIA H200, sm_90, 139 GiB".
  std::string deviceDescription() const;

  uint64_t allocate(size_t bytes);
  void free(uint64_t address);
  void copyToDevice(uint64_t address, const void *data, size_t bytes);
  void copyToHost(void *data, uint64_t address, size_t bytes);
  void zero(uint64_t address, size_t bytes);

  /// Loads PTX text (JIT-compiled by the driver); returns a module handle.
  /// A PTX the driver rejects throws with its error log.
  void *loadModule(const std::string &ptx);
  void *function(void *module, const std::string &name);
  void launch(void *function, const uint32_t grid[3], const uint32_t block[3],
              void **parameters);
  /// Waits for everything launched so far; reports a failed kernel.
  void synchronize();

private:
  struct Api;
  std::unique_ptr<Api> api;
  void *library = nullptr;
  int device = 0;
  void *context = nullptr;
  void *stream = nullptr;
};

} // namespace drc

#endif // DRC_RUNTIME_CUDADRIVER_H
