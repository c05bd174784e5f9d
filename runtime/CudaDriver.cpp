//===- CudaDriver.cpp - The CUDA driver API, loaded at run time ----------===//
#include "runtime/CudaDriver.h"

#include "runtime/CublasLt.h"
#include "runtime/Error.h"

#include <dlfcn.h>

namespace drc {

/// The driver entry points drc uses, with the driver's C signatures (handles
/// as void*, CUdeviceptr as uint64_t, CUresult as int).
struct CudaDriver::Api {
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int *);
  int (*cuDeviceGet)(int *, int);
  int (*cuDeviceGetName)(char *, int, int);
  int (*cuDeviceGetAttribute)(int *, int, int);
  int (*cuDeviceTotalMem_v2)(size_t *, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuDevicePrimaryCtxRelease_v2)(int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamDestroy_v2)(void *);
  int (*cuStreamSynchronize)(void *);
  int (*cuMemAlloc_v2)(uint64_t *, size_t);
  int (*cuMemFree_v2)(uint64_t);
  int (*cuMemcpyHtoD_v2)(uint64_t, const void *, size_t);
  int (*cuMemcpyDtoH_v2)(void *, uint64_t, size_t);
  int (*cuModuleLoadDataEx)(void **, const void *, unsigned, int *, void **);
  int (*cuModuleGetFunction)(void **, void *, const char *);
  int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **, void **);
  int (*cuStreamBeginCapture_v2)(void *, int);
  int (*cuStreamEndCapture)(void *, void **);
  int (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
  int (*cuGraphLaunch)(void *, void *);
  int (*cuGraphExecDestroy)(void *);
  int (*cuGraphDestroy)(void *);
  int (*cuGetErrorName)(int, const char **);
  int (*cuGetErrorString)(int, const char **);

  /// Throws for a failed call, with the driver's name and text for it.
  void check(int result, const char *call) const {
    if (result == 0)
      return;
    const char *name = nullptr, *text = nullptr;
    cuGetErrorName(result, &name);
    cuGetErrorString(result, &text);
    throw Error(std::string("CUDA ") + call + " failed: " +
                (name ? name : "error " + std::to_string(result)) +
                (text ? std::string(" (") + text + ")" : ""));
  }
};

namespace {

template <typename F> void bind(void *library, F &slot, const char *name) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  if (!slot)
    throw Error(std::string("the CUDA driver library has no ") + name +
                "; it is older than drc needs (CUDA 12 or newer)");
}

constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;

} // namespace

CudaDriver::CudaDriver(int ordinal, const std::string &libraryName)
    : api(std::make_unique<Api>()) {
  library = dlopen(libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw Error("cannot load the CUDA driver (" + libraryName +
                "): " + dlerror() +
                "; this machine needs an NVIDIA GPU and its driver for "
                "--device cuda");
#define DRC_BIND(name) bind(library, api->name, #name)
  DRC_BIND(cuInit);
  DRC_BIND(cuDeviceGetCount);
  DRC_BIND(cuDeviceGet);
  DRC_BIND(cuDeviceGetName);
  DRC_BIND(cuDeviceGetAttribute);
  DRC_BIND(cuDeviceTotalMem_v2);
  DRC_BIND(cuDevicePrimaryCtxRetain);
  DRC_BIND(cuDevicePrimaryCtxRelease_v2);
  DRC_BIND(cuCtxSetCurrent);
  DRC_BIND(cuStreamCreate);
  DRC_BIND(cuStreamDestroy_v2);
  DRC_BIND(cuStreamSynchronize);
  DRC_BIND(cuMemAlloc_v2);
  DRC_BIND(cuMemFree_v2);
  DRC_BIND(cuMemcpyHtoD_v2);
  DRC_BIND(cuMemcpyDtoH_v2);
  DRC_BIND(cuModuleLoadDataEx);
  DRC_BIND(cuModuleGetFunction);
  DRC_BIND(cuLaunchKernel);
  DRC_BIND(cuStreamBeginCapture_v2);
  DRC_BIND(cuStreamEndCapture);
  DRC_BIND(cuGraphInstantiateWithFlags);
  DRC_BIND(cuGraphLaunch);
  DRC_BIND(cuGraphExecDestroy);
  DRC_BIND(cuGraphDestroy);
  DRC_BIND(cuGetErrorName);
  DRC_BIND(cuGetErrorString);
#undef DRC_BIND
  api->check(api->cuInit(0), "cuInit");
  int count = 0;
  api->check(api->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw Error("CUDA device " + std::to_string(ordinal) +
                " does not exist; this machine has " + std::to_string(count));
  api->check(api->cuDeviceGet(&device, ordinal), "cuDeviceGet");
  api->check(api->cuDevicePrimaryCtxRetain(&context, device),
             "cuDevicePrimaryCtxRetain");
  api->check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent");
  api->check(api->cuStreamCreate(&stream, 0), "cuStreamCreate");
}

CudaDriver::~CudaDriver() {
  blas.reset();
  if (blasWorkspace)
    api->cuMemFree_v2(blasWorkspace);
  if (stream)
    api->cuStreamDestroy_v2(stream);
  if (context)
    api->cuDevicePrimaryCtxRelease_v2(device);
  if (library)
    dlclose(library);
}

std::string CudaDriver::deviceDescription() const {
  char name[256] = {};
  int major = 0, minor = 0;
  size_t bytes = 0;
  api->check(api->cuDeviceGetName(name, sizeof name, device),
             "cuDeviceGetName");
  api->check(api->cuDeviceGetAttribute(&major, kComputeCapabilityMajor, device),
             "cuDeviceGetAttribute");
  api->check(api->cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, device),
             "cuDeviceGetAttribute");
  api->check(api->cuDeviceTotalMem_v2(&bytes, device), "cuDeviceTotalMem");
  return std::string(name) + ", sm_" + std::to_string(major) +
         std::to_string(minor) + ", " + std::to_string(bytes >> 30) + " GiB";
}

uint64_t CudaDriver::allocate(size_t bytes) {
  uint64_t address = 0;
  api->check(api->cuMemAlloc_v2(&address, bytes ? bytes : 1), "cuMemAlloc");
  return address;
}

void CudaDriver::free(uint64_t address) {
  api->check(api->cuMemFree_v2(address), "cuMemFree");
}

void CudaDriver::copyToDevice(uint64_t address, const void *data,
                              size_t bytes) {
  api->check(api->cuMemcpyHtoD_v2(address, data, bytes), "cuMemcpyHtoD");
}

void CudaDriver::copyToHost(void *data, uint64_t address, size_t bytes) {
  api->check(api->cuMemcpyDtoH_v2(data, address, bytes), "cuMemcpyDtoH");
}

void *CudaDriver::loadModule(const std::string &image) {
  constexpr int kErrorLog = 5, kErrorLogBytes = 6; // CU_JIT_ERROR_LOG_*
  char log[8192] = {};
  int options[] = {kErrorLog, kErrorLogBytes};
  void *values[] = {log, reinterpret_cast<void *>(sizeof log)};
  void *module = nullptr;
  int result =
      api->cuModuleLoadDataEx(&module, image.c_str(), 2, options, values);
  if (result != 0 && log[0])
    throw Error(std::string("the CUDA driver rejected the module: ") + log);
  api->check(result, "cuModuleLoadDataEx");
  return module;
}

void *CudaDriver::function(void *module, const std::string &name) {
  void *f = nullptr;
  api->check(api->cuModuleGetFunction(&f, module, name.c_str()),
             ("cuModuleGetFunction(" + name + ")").c_str());
  return f;
}

void CudaDriver::launch(void *function, const uint32_t grid[3],
                        const uint32_t block[3], void **parameters) {
  api->check(api->cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0],
                                 block[1], block[2], 0, stream, parameters,
                                 nullptr),
             "cuLaunchKernel");
}

void CudaDriver::prepareGemm(const ColumnMajorGemm &gemm) {
  if (!blas) {
    constexpr size_t kWorkspaceBytes = size_t(32) << 20;
    blasWorkspace = allocate(kWorkspaceBytes);
    blas = std::make_unique<CublasLt>(stream, blasWorkspace, kWorkspaceBytes);
  }
  blas->prepare(gemm);
}

void CudaDriver::gemm(const ColumnMajorGemm &gemm, uint64_t x, uint64_t y,
                      uint64_t d) {
  if (!blas)
    prepareGemm(gemm);
  blas->run(gemm, x, y, d); // finds the plan, or makes it
}

void CudaDriver::beginCapture() {
  // Relaxed: cuBLASLt may make calls a stricter capture mode refuses.
  constexpr int kCaptureModeRelaxed = 2; // CU_STREAM_CAPTURE_MODE_RELAXED
  api->check(api->cuStreamBeginCapture_v2(stream, kCaptureModeRelaxed),
             "cuStreamBeginCapture");
}

void *CudaDriver::endCapture() {
  void *graph = nullptr, *executable = nullptr;
  api->check(api->cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  int result = api->cuGraphInstantiateWithFlags(&executable, graph, 0);
  api->cuGraphDestroy(graph); // the executable graph is a copy
  api->check(result, "cuGraphInstantiate");
  return executable;
}

void CudaDriver::launchGraph(void *graph) {
  api->check(api->cuGraphLaunch(graph, stream), "cuGraphLaunch");
}

void CudaDriver::destroyGraph(void *graph) {
  api->check(api->cuGraphExecDestroy(graph), "cuGraphExecDestroy");
}

void CudaDriver::synchronize() {
  api->check(api->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

} // namespace drc
