//===- CudaManifestTest.cpp - Reading a GPU program's manifest
//-------------===//
#include "runtime/CudaManifest.h"
#include "runtime/CublasLt.h"
#include "runtime/CudaDriver.h"
#include "runtime/CudaGemm.h"

#include "InputErrorText.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <dlfcn.h>

namespace {

/// A function of two arguments (8 floats, 4 ints), one scratch buffer and
/// one constant, and one launch with a view and three scalars.
std::string manifest(
    const std::string &operand =
        R"j({"buffer": 2, "dtype": "f32", "offset": 2, "sizes": [2, 3], "strides": [4, 1]})j",
    const std::string &init = "trunc_normal(0.02,0.06)") {
  return R"j({"format": "drc-cuda-1", "chip": "sm_90", "spec": "s;tokens=4", "ptx": "kernels.ptx",
  "memref_abi": "descriptor",
  "functions": {"f": {
    "arguments": [{"shape": [8], "dtype": "f32"}, {"shape": [2, 2], "dtype": "i32"}],
    "arena_bytes": 304,
    "buffers": [{"buffer": 2, "bytes": 48, "offset": 256}, {"buffer": 3, "bytes": 8, "f32": [1.5, -2]}],
    "launches": [{"kernel": "f_kernel", "grid": [4, 2, 1], "block": [128, 1, 1],
      "operands": [)j" +
         operand + R"j(, {"i64": 7}, {"f32": 0.5}, {"i32": -3}]}]}},
  "parameters": "param w shape=4x4 offset=0 init=)j" +
         init +
         R"j( decay=1\nparam g shape=4 offset=16 init=constant(1) decay=0\n"
})j";
}

/// The manifest above with a product launched after the kernel: views
/// `a` and `b` of the parameters (buffer 0, 8 floats), `c` of the scratch
/// buffer (12 floats).
std::string gemmManifest(const std::string &a, const std::string &b,
                         const std::string &c, const std::string &more = "") {
  std::string text = manifest();
  std::string gemm = R"j(, {"gemm": {"a": )j" + a + R"j(, "b": )j" + b +
                     R"j(, "c": )j" + c + more + "}}";
  text.insert(text.find("]}}"), gemm);
  return text;
}

std::string view(int buffer, const std::string &sizes,
                 const std::string &strides, int offset = 0) {
  return R"j({"buffer": )j" + std::to_string(buffer) +
         R"j(, "dtype": "f32", "offset": )j" + std::to_string(offset) +
         R"j(, "sizes": )j" + sizes + R"j(, "strides": )j" + strides + "}";
}

} // namespace

TEST_CASE("a CUDA manifest's products read into cuBLAS's terms", "[cuda]") {
  // C [2, 3] (rows of 4) += A [2, 2] · B, B [2, 3] read from a row-major
  // [3, 2] (contiguous columns).
  drc::CudaManifest m =
      drc::parseCudaManifest(gemmManifest(view(0, "[1, 2, 2]", "[0, 2, 1]"),
                                          view(0, "[1, 2, 3]", "[0, 1, 2]", 2),
                                          view(2, "[1, 2, 3]", "[0, 4, 1]", 1)),
                             "/d");
  const drc::CudaFunction &f = m.functions.at("f");
  REQUIRE(f.launches.size() == 2);
  CHECK_FALSE(f.launches[0].gemm);
  REQUIRE(f.launches[1].gemm);
  CHECK(f.launches[1].kernel.empty());
  std::optional<drc::ColumnMajorGemm> g = drc::columnMajor(*f.launches[1].gemm);
  REQUIRE(g);
  // Cᵀ (3 x 2, ld 4) = Bᵀ (stored as B: 2 x 3, transposed) · Aᵀ.
  CHECK(g->m == 3);
  CHECK(g->n == 2);
  CHECK(g->k == 2);
  CHECK(g->ldd == 4);
  CHECK(g->transX);
  CHECK(g->ldx == 2);
  CHECK_FALSE(g->transY);
  CHECK(g->ldy == 2);
  CHECK(g->offsetX == 2);
  CHECK(g->offsetD == 1);
  // Byte alignment of each matrix for cuBLASLt's algorithms.
  CHECK(g->alignX == 8);
  CHECK(g->alignY == 256);
  CHECK(g->alignD == 4);
  CHECK(g->accumulate);
  // A product after a zero fill overwrites C instead.
  m = drc::parseCudaManifest(gemmManifest(view(0, "[1, 2, 2]", "[0, 2, 1]"),
                                          view(0, "[1, 2, 3]", "[0, 1, 2]", 2),
                                          view(2, "[1, 2, 3]", "[0, 4, 1]", 1),
                                          R"j(, "accumulate": false)j"),
                             "/d");
  CHECK_FALSE(
      drc::columnMajor(*m.functions.at("f").launches[1].gemm)->accumulate);
}

TEST_CASE("a CUDA manifest reads into functions, buffers and launches",
          "[cuda]") {
  drc::CudaManifest m = drc::parseCudaManifest(manifest(), "/tmp/x");
  CHECK(m.chip == "sm_90");
  CHECK(m.spec == "s;tokens=4");
  CHECK(m.ptx == "/tmp/x/kernels.ptx");
  const drc::CudaFunction &f = m.functions.at("f");
  REQUIRE(f.arguments.size() == 2);
  CHECK(f.arguments[1].first == 4);
  CHECK(f.arguments[1].second == drc::CudaType::I32);
  REQUIRE(f.buffers.size() == 2);
  CHECK(f.buffers[0].bytes == 48);
  CHECK(f.buffers[0].values.empty());
  CHECK(f.buffers[0].offset == 256);
  CHECK(f.arenaBytes == 304);
  CHECK(f.buffers[1].values == std::vector<float>{1.5f, -2.0f});
  REQUIRE(f.launches.size() == 1);
  const drc::CudaLaunch &l = f.launches[0];
  CHECK(l.kernel == "f_kernel");
  CHECK(l.grid == std::array<uint32_t, 3>{4, 2, 1});
  CHECK(l.block == std::array<uint32_t, 3>{128, 1, 1});
  REQUIRE(m.parameters.parameters().size() == 2);
  CHECK(m.parameters.parameters()[0].init ==
        drc::Init::truncNormal(0.02, 0.06));
  CHECK(m.parameters.parameters()[1].offset == 16);
  CHECK_FALSE(m.parameters.parameters()[1].decay);
}

TEST_CASE("a launch's kernel parameters follow the memref descriptor",
          "[cuda]") {
  drc::CudaManifest m = drc::parseCudaManifest(manifest(), "/tmp/x");
  std::vector<uint64_t> addresses = {0x1000, 0x2000, 0x3000, 0x4000};
  drc::KernelArguments args(m.functions.at("f").launches[0], addresses);
  // base, base, offset, 2 sizes, 2 strides; then i64, f32, i32.
  REQUIRE(args.count() == 10);
  auto u64 = [&](size_t i) {
    return *static_cast<const uint64_t *>(args.parameter(i));
  };
  CHECK(u64(0) == 0x3000);
  CHECK(u64(1) == 0x3000);
  CHECK(u64(2) == 2);
  CHECK(u64(3) == 2);
  CHECK(u64(4) == 3);
  CHECK(u64(5) == 4);
  CHECK(u64(6) == 1);
  CHECK(u64(7) == 7);
  CHECK(*static_cast<const float *>(args.parameter(8)) == 0.5f);
  CHECK(*static_cast<const int32_t *>(args.parameter(9)) == -3);
  CHECK(args.pointers()[0] == args.parameter(0));

  // JSON has no infinities: a max-reduction's start is written as text.
  drc::CudaManifest inf =
      drc::parseCudaManifest(manifest(R"j({"f32": "-inf"})j"), "/d");
  double start = inf.functions.at("f").launches[0].operands[0].real;
  CHECK((std::isinf(start) && start < 0));
}

TEST_CASE("a CUDA manifest's mistakes are errors naming the file", "[cuda]") {
  auto error = [](const std::string &text) {
    return drc::test::inputErrorText(
        [&] { drc::parseCudaManifest(text, "/d"); });
  };
  CHECK_THAT(
      error(manifest(
          R"j({"buffer": 2, "dtype": "f32", "offset": 8, "sizes": [2, 3], "strides": [4, 1]})j")),
      Catch::Matchers::Contains("/d/manifest.json: f: launch of f_kernel: an "
                                "operand view reaches outside buffer 2"));
  CHECK_THAT(
      error(manifest(
          R"j({"buffer": 9, "dtype": "f32", "offset": 0, "sizes": [1], "strides": [1]})j")),
      Catch::Matchers::Contains("operand buffer 9 does not exist"));
  std::string outside = manifest();
  outside.replace(outside.find("304"), 3, "300");
  CHECK_THAT(error(outside),
             Catch::Matchers::Contains(
                 "scratch buffer 2 lies outside the arena (arena_bytes 300)"));
  CHECK_THAT(error(manifest(R"j({"f16": 1})j")),
             Catch::Matchers::Contains("unknown type 'f16'"));
  CHECK_THAT(
      error(manifest(
          R"j({"buffer": 2, "dtype": "f32", "offset": 0, "sizes": [1], "strides": [1]})j",
          "uniform(1)")),
      Catch::Matchers::Contains(
          "parameters:1: parameter 'w': bad init 'uniform(1)'"));
  std::string a = view(0, "[1, 2, 2]", "[0, 2, 1]");
  CHECK_THAT(error(gemmManifest(a, view(0, "[1, 3, 2]", "[0, 2, 1]"),
                                view(2, "[1, 2, 2]", "[0, 2, 1]"))),
             Catch::Matchers::Contains(
                 "f: a gemm: a, b and c must be [batch, M, K], [batch, K, N] "
                 "and [batch, M, N]"));
  CHECK_THAT(error(gemmManifest(a, view(0, "[1, 2, 2]", "[0, 4, 2]"),
                                view(2, "[1, 2, 2]", "[0, 2, 1]"))),
             Catch::Matchers::Contains(
                 "a matrix has neither contiguous rows nor contiguous "
                 "columns, which cuBLASLt needs"));
  CHECK_THAT(error(gemmManifest(a, a, view(2, "[1, 2, 2]", "[0, 2, 1]", 9))),
             Catch::Matchers::Contains(
                 "f: a gemm: an operand view reaches outside buffer 2"));
  CHECK_THAT(error(gemmManifest(a, a, view(2, "[1, 2, 2]", "[0, 2, 1]"),
                                R"j(, "accumulate": 0)j")),
             Catch::Matchers::Contains(
                 "f: a gemm: \"accumulate\" must be true or false"));
  CHECK_THAT(error(gemmManifest(a, a, view(2, "[2, 2]", "[2, 1]"))),
             Catch::Matchers::Contains("c must be an f32 view of rank 3"));
  CHECK_THAT(error(R"j({"format": "onnx"})j"),
             Catch::Matchers::Contains("not a drc-cuda-1 manifest"));
  CHECK_THAT(error(R"j({"format": "drc-cuda-1"})j"),
             Catch::Matchers::Contains("missing \"memref_abi\""));
}

TEST_CASE("the CUDA driver loads, or says why not", "[cuda]") {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library) {
    // A machine with an NVIDIA driver: it describes its device.
    dlclose(library);
    drc::CudaDriver driver;
    CHECK(driver.deviceDescription().find("sm_") != std::string::npos);
    uint64_t a = driver.allocate(16);
    float in[4] = {1, 2, 3, 4}, out[4] = {};
    driver.copyToDevice(a, in, sizeof in);
    driver.copyToHost(out, a, sizeof out);
    CHECK(std::memcmp(in, out, sizeof in) == 0);
    driver.free(a);
  } else {
    CHECK_THROWS_WITH(drc::CudaDriver(),
                      Catch::Matchers::Contains(
                          "cannot load the CUDA driver (libcuda.so.1)") &&
                          Catch::Matchers::Contains("needs an NVIDIA GPU"));
  }
}

TEST_CASE("cuBLASLt loads, or says why not", "[cuda]") {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) {
    dlclose(driver);
    SUCCEED("a GPU machine: scripts/gpu-check runs the products there");
    return;
  }
  // Without a driver: either there is no cuBLASLt, or (CUDA's toolkit on
  // the loader's path) every entry point binds and the handle cannot be
  // made.
  CHECK_THROWS_WITH(
      drc::CublasLt(nullptr, 0, 0),
      Catch::Matchers::Contains("cannot load cuBLASLt") ||
          Catch::Matchers::Contains("cuBLASLt cublasLtCreate failed"));
}
