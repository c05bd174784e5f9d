//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// drc links nothing from CUDA: the driver library is dlopen()ed when a GPU
// program runs, so the same binaries build and run on machines without a
// GPU. Every call's result is checked; a failure throws drc::Error naming
// the call and the driver's error name and text. One device, its primary
// context, one stream, whose work can be captured as a graph and replayed.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_CUDADRIVER_H
#define DRC_RUNTIME_CUDADRIVER_H

#include "runtime/CudaGemm.h"

#include <cstdint>
#include <memory>
#include <string>

namespace drc {

/// What a GPU program needs from a device: memory, PTX modules, launches
/// on one stream. CudaDriver is the real one; tests substitute a recorder.
class CudaDevice {
public:
  virtual ~CudaDevice() = default;
  virtual uint64_t allocate(size_t bytes) = 0;
  virtual void free(uint64_t address) = 0;
  virtual void copyToDevice(uint64_t address, const void *data,
                            size_t bytes) = 0;
  virtual void copyToHost(void *data, uint64_t address, size_t bytes) = 0;
  /// Loads PTX text or a cubin image; returns a module handle.
  virtual void *loadModule(const std::string &image) = 0;
  virtual void *function(void *module, const std::string &name) = 0;
  virtual void launch(void *function, const uint32_t grid[3],
                      const uint32_t block[3], void **parameters) = 0;
  /// Readies the BLAS for products of `gemm`'s shape: a program calls it
  /// for each of its products before running any.
  virtual void prepareGemm(const ColumnMajorGemm &gemm) = 0;
  /// D = op(X)·op(Y) (+ D when accumulating) (inputs rounded to bf16, sums in
  /// f32) queued on the stream; x, y and d are the device addresses of each
  /// matrix's first element.
  virtual void gemm(const ColumnMajorGemm &gemm, uint64_t x, uint64_t y,
                    uint64_t d) = 0;
  /// Stream capture: after beginCapture, launches and products are
  /// recorded into a graph instead of running. endCapture stops recording
  /// and returns the graph made executable, or throws Error; either way
  /// the stream records no more. launchGraph queues a graph's work on the
  /// stream as its launches would have queued it, each kernel with the
  /// parameters it had when it was recorded.
  virtual void beginCapture() = 0;
  virtual void *endCapture() = 0;
  virtual void launchGraph(void *graph) = 0;
  virtual void destroyGraph(void *graph) = 0;
  /// Waits for everything launched so far; reports a failed kernel.
  virtual void synchronize() = 0;
};

class CublasLt;

class CudaDriver : public CudaDevice {
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

  uint64_t allocate(size_t bytes) override;
  void free(uint64_t address) override;
  void copyToDevice(uint64_t address, const void *data, size_t bytes) override;
  void copyToHost(void *data, uint64_t address, size_t bytes) override;

  /// PTX is JIT-compiled by the driver, a cubin loaded as it is; one it
  /// rejects throws with the driver's error log.
  void *loadModule(const std::string &image) override;
  void *function(void *module, const std::string &name) override;
  void launch(void *function, const uint32_t grid[3], const uint32_t block[3],
              void **parameters) override;
  /// Loads cuBLASLt (CublasLt.h) the first time, with a 32 MiB workspace.
  void prepareGemm(const ColumnMajorGemm &gemm) override;
  void gemm(const ColumnMajorGemm &gemm, uint64_t x, uint64_t y,
            uint64_t d) override;
  void beginCapture() override;
  void *endCapture() override;
  void launchGraph(void *graph) override;
  void destroyGraph(void *graph) override;
  void synchronize() override;

private:
  struct Api;
  std::unique_ptr<Api> api;
  void *library = nullptr;
  int device = 0;
  void *context = nullptr;
  void *stream = nullptr;
  uint64_t blasWorkspace = 0;
  std::unique_ptr<CublasLt> blas;
};

} // namespace drc

#endif // DRC_RUNTIME_CUDADRIVER_H
