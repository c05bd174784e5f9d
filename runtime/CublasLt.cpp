//===- CublasLt.cpp - cuBLASLt, loaded at run time -----------------------===//
#include "runtime/CublasLt.h"

#include "runtime/Error.h"

#include <cstdlib>
#include <dlfcn.h>

namespace drc {

namespace {

// cuBLASLt's values (cublasLt.h, cublas_api.h, library_types.h of CUDA 12
// and 13); enums are ints, handles and descriptors opaque pointers.
constexpr int kComputeF32FastBf16 = 75; // CUBLAS_COMPUTE_32F_FAST_16BF
constexpr int kF32 = 0;                 // CUDA_R_32F
constexpr int kDescTransA = 3, kDescTransB = 4;
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
constexpr int kPreferenceMaxWorkspaceBytes = 1;
constexpr int kPreferenceMinAlignmentA = 5, kPreferenceMinAlignmentB = 6,
              kPreferenceMinAlignmentC = 7, kPreferenceMinAlignmentD = 8;

struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

} // namespace

struct CublasLt::Api {
  int (*cublasLtCreate)(void **);
  int (*cublasLtDestroy)(void *);
  size_t (*cublasLtGetVersion)();
  const char *(*cublasLtGetStatusName)(int);
  const char *(*cublasLtGetStatusString)(int);
  int (*cublasLtMatmulDescCreate)(void **, int, int);
  int (*cublasLtMatmulDescDestroy)(void *);
  int (*cublasLtMatmulDescSetAttribute)(void *, int, const void *, size_t);
  int (*cublasLtMatrixLayoutCreate)(void **, int, uint64_t, uint64_t, int64_t);
  int (*cublasLtMatrixLayoutDestroy)(void *);
  int (*cublasLtMatrixLayoutSetAttribute)(void *, int, const void *, size_t);
  int (*cublasLtMatmulPreferenceCreate)(void **);
  int (*cublasLtMatmulPreferenceDestroy)(void *);
  int (*cublasLtMatmulPreferenceSetAttribute)(void *, int, const void *,
                                              size_t);
  int (*cublasLtMatmulAlgoGetHeuristic)(void *, void *, void *, void *, void *,
                                        void *, void *, int, HeuristicResult *,
                                        int *);
  int (*cublasLtMatmul)(void *, void *, const void *, const void *, void *,
                        const void *, void *, const void *, const void *,
                        void *, void *, void *, const Algo *, void *, size_t,
                        void *);

  void check(int status, const char *call) const {
    if (status == 0)
      return;
    const char *name = cublasLtGetStatusName(status);
    const char *text = cublasLtGetStatusString(status);
    throw Error(std::string("cuBLASLt ") + call + " failed: " +
                (name ? name : "status " + std::to_string(status)) +
                (text ? std::string(" (") + text + ")" : ""));
  }
};

/// Descriptors of one product shape and the algorithm chosen for it.
struct CublasLt::Plan {
  const Api &api;
  void *desc = nullptr, *x = nullptr, *y = nullptr, *d = nullptr;
  Algo algo{};

  explicit Plan(const Api &api) : api(api) {}
  ~Plan() {
    for (void *layout : {x, y, d})
      if (layout)
        api.cublasLtMatrixLayoutDestroy(layout);
    if (desc)
      api.cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

template <typename F>
void bind(void *library, F &slot, const char *name, const std::string &file) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  if (!slot)
    throw Error(file + " has no " + name +
                "; drc needs cuBLASLt from CUDA 12 or newer");
}

} // namespace

CublasLt::CublasLt(void *stream, uint64_t workspace, size_t workspaceBytes)
    : api(std::make_unique<Api>()), stream(stream), workspace(workspace),
      workspaceBytes(workspaceBytes) {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("DRC_CUBLASLT"))
    candidates.push_back(path);
  else
    candidates = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  std::string tried;
  for (const std::string &name : candidates) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) {
      libraryName = name;
      break;
    }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (!library)
    throw Error("cannot load cuBLASLt, which runs a GPU program's matrix "
                "products (" +
                tried +
                "); set DRC_CUBLASLT to the library's path (PyTorch's "
                "wheels ship it under site-packages/nvidia)");
#define DRC_BIND(name) bind(library, api->name, #name, libraryName)
  DRC_BIND(cublasLtCreate);
  DRC_BIND(cublasLtDestroy);
  DRC_BIND(cublasLtGetVersion);
  DRC_BIND(cublasLtGetStatusName);
  DRC_BIND(cublasLtGetStatusString);
  DRC_BIND(cublasLtMatmulDescCreate);
  DRC_BIND(cublasLtMatmulDescDestroy);
  DRC_BIND(cublasLtMatmulDescSetAttribute);
  DRC_BIND(cublasLtMatrixLayoutCreate);
  DRC_BIND(cublasLtMatrixLayoutDestroy);
  DRC_BIND(cublasLtMatrixLayoutSetAttribute);
  DRC_BIND(cublasLtMatmulPreferenceCreate);
  DRC_BIND(cublasLtMatmulPreferenceDestroy);
  DRC_BIND(cublasLtMatmulPreferenceSetAttribute);
  DRC_BIND(cublasLtMatmulAlgoGetHeuristic);
  DRC_BIND(cublasLtMatmul);
#undef DRC_BIND
  api->check(api->cublasLtCreate(&handle), "cublasLtCreate");
}

CublasLt::~CublasLt() {
  plans.clear();
  if (handle)
    api->cublasLtDestroy(handle);
  if (library)
    dlclose(library);
}

std::string CublasLt::description() const {
  return libraryName + " (" + std::to_string(api->cublasLtGetVersion()) + ")";
}

CublasLt::Plan &CublasLt::plan(const ColumnMajorGemm &g) {
  std::unique_ptr<Plan> &slot = plans[g.shape()];
  if (slot)
    return *slot;
  auto p = std::make_unique<Plan>(*api);
  const Api &a = *api;
  a.check(a.cublasLtMatmulDescCreate(&p->desc, kComputeF32FastBf16, kF32),
          "cublasLtMatmulDescCreate");
  int32_t transX = g.transX ? 1 : 0, transY = g.transY ? 1 : 0;
  a.check(a.cublasLtMatmulDescSetAttribute(p->desc, kDescTransA, &transX,
                                           sizeof transX),
          "cublasLtMatmulDescSetAttribute(TRANSA)");
  a.check(a.cublasLtMatmulDescSetAttribute(p->desc, kDescTransB, &transY,
                                           sizeof transY),
          "cublasLtMatmulDescSetAttribute(TRANSB)");
  auto layout = [&](void *&out, int64_t rows, int64_t cols, int64_t ld,
                    int64_t stride) {
    a.check(a.cublasLtMatrixLayoutCreate(&out, kF32, uint64_t(rows),
                                         uint64_t(cols), ld),
            "cublasLtMatrixLayoutCreate");
    if (g.batch == 1)
      return;
    int32_t count = int32_t(g.batch);
    a.check(a.cublasLtMatrixLayoutSetAttribute(out, kLayoutBatchCount, &count,
                                               sizeof count),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    a.check(a.cublasLtMatrixLayoutSetAttribute(out, kLayoutStridedBatchOffset,
                                               &stride, sizeof stride),
            "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  };
  layout(p->x, g.rowsX(), g.colsX(), g.ldx, g.strideX);
  layout(p->y, g.rowsY(), g.colsY(), g.ldy, g.strideY);
  layout(p->d, g.m, g.n, g.ldd, g.strideD);
  void *preference = nullptr;
  a.check(a.cublasLtMatmulPreferenceCreate(&preference),
          "cublasLtMatmulPreferenceCreate");
  uint64_t bytes = workspaceBytes;
  int returned = 0;
  HeuristicResult best{};
  int status = a.cublasLtMatmulPreferenceSetAttribute(
      preference, kPreferenceMaxWorkspaceBytes, &bytes, sizeof bytes);
  // Algorithms that work at the matrices' own alignment (X is cuBLAS's A).
  for (auto [attribute, align] :
       {std::pair{kPreferenceMinAlignmentA, g.alignX},
        std::pair{kPreferenceMinAlignmentB, g.alignY},
        std::pair{kPreferenceMinAlignmentC, g.alignD},
        std::pair{kPreferenceMinAlignmentD, g.alignD}}) {
    uint32_t value = uint32_t(align);
    if (status == 0)
      status = a.cublasLtMatmulPreferenceSetAttribute(preference, attribute,
                                                      &value, sizeof value);
  }
  if (status == 0)
    status =
        a.cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->x, p->y, p->d,
                                         p->d, preference, 1, &best, &returned);
  a.cublasLtMatmulPreferenceDestroy(preference);
  a.check(status, "cublasLtMatmulAlgoGetHeuristic");
  if (returned < 1)
    throw Error("cuBLASLt has no algorithm for a " + std::to_string(g.m) + "x" +
                std::to_string(g.n) + "x" + std::to_string(g.k) +
                " product (batch " + std::to_string(g.batch) + ")");
  p->algo = best.algo;
  slot = std::move(p);
  return *slot;
}

void CublasLt::prepare(const ColumnMajorGemm &gemm) { (void)plan(gemm); }

void CublasLt::run(const ColumnMajorGemm &g, uint64_t x, uint64_t y,
                   uint64_t d) {
  Plan &p = plan(g);
  const float one = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  auto pointer = [](uint64_t address) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
  };
  api->check(api->cublasLtMatmul(handle, p.desc, &one, pointer(x), p.x,
                                 pointer(y), p.y, &beta, pointer(d), p.d,
                                 pointer(d), p.d, &p.algo, pointer(workspace),
                                 workspaceBytes, stream),
             "cublasLtMatmul");
}

} // namespace drc
