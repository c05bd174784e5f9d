//===- SafetensorsTest.cpp - safetensors round trip, validation, atomicity ===//

#include "runtime/Safetensors.h"

#include "runtime/Error.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>

using namespace drc;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;
namespace fs = std::filesystem;

namespace {

std::string readBytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeBytes(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// A file with the given JSON header (padded) and `dataSize` zero bytes.
std::string craft(std::string header, size_t dataSize) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  return bytes + header + std::string(dataSize, '\0');
}

/// Lowers RLIMIT_FSIZE for the test's lifetime, so that writes past `bytes`
/// fail with EFBIG: a disk that fills up in the middle of a checkpoint.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved);
    oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, oldHandler);
  }

private:
  rlimit saved;
  void (*oldHandler)(int);
};

} // namespace

TEST_CASE("safetensors round trip", "[Safetensors]") {
  ScratchDirectory dir;
  std::string path = dir / "t.safetensors";
  float w[6] = {1.5f, -2, 3, 0.1f, 1e-30f, -0.0f};
  int64_t steps[4] = {1, -2, INT64_MAX, 4};
  double pi = 3.141592653589793;
  int32_t none[1] = {0};
  writeSafetensors(path,
                   {{"w", DType::F32, {2, 3}, w},
                    {"b.steps", DType::I64, {4}, steps},
                    {"pi", DType::F64, {}, &pi},
                    {"empty", DType::I32, {0, 5}, none}},
                   {{"step", "12"}, {"note", "quotes \" and\nnewlines"}});

  SafetensorsFile file(path);
  REQUIRE(file.tensors().size() == 4);
  CHECK(file.tensors()[0].name == "b.steps");
  CHECK(file.tensors()[1].name == "empty");
  CHECK(file.tensors()[2].name == "pi");
  CHECK(file.tensors()[3].name == "w");
  CHECK(file.metadata() ==
        std::map<std::string, std::string>{
            {"step", "12"}, {"note", "quotes \" and\nnewlines"}});

  const TensorEntry *t = file.find("w");
  REQUIRE(t);
  CHECK(t->dtype == DType::F32);
  CHECK(t->shape == std::vector<int64_t>{2, 3});
  float wBack[6];
  file.read(*t, wBack);
  CHECK(std::memcmp(w, wBack, sizeof w) == 0);

  int64_t stepsBack[4];
  file.read(*file.find("b.steps"), stepsBack);
  CHECK(std::memcmp(steps, stepsBack, sizeof steps) == 0);
  double piBack;
  REQUIRE(file.find("pi")->shape.empty());
  file.read(*file.find("pi"), &piBack);
  CHECK(piBack == pi);
  CHECK(file.find("empty")->byteSize() == 0);
  // 8-byte elements come first and stay 8-byte aligned.
  CHECK(file.find("b.steps")->begin == 0);
  CHECK(file.find("pi")->begin == 32);
  CHECK(file.find("w")->begin == 40);
  CHECK(file.find("missing") == nullptr);
}

TEST_CASE("the header is what the format specifies", "[Safetensors]") {
  ScratchDirectory dir;
  std::string path = dir / "t.safetensors";
  float b[2] = {1, 2}, a[1] = {3};
  writeSafetensors(path, {{"b", DType::F32, {2}, b}, {"a", DType::F32, {1}, a}},
                   {{"k", "v"}});
  std::string bytes = readBytes(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  std::string json =
      "{\"__metadata__\":{\"k\":\"v\"},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  CHECK(n % 8 == 0);
  CHECK(n == (json.size() + 7) / 8 * 8);
  CHECK(bytes.substr(8, n) == json + std::string(n - json.size(), ' '));
  CHECK(bytes.size() == 8 + n + 12);
  CHECK(std::memcmp(bytes.data() + 8 + n, a, 4) == 0);
  CHECK(std::memcmp(bytes.data() + 8 + n + 4, b, 8) == 0);
}

TEST_CASE("damaged and foreign files are InputErrors naming the file",
          "[Safetensors]") {
  ScratchDirectory dir;
  std::string path = dir / "x.safetensors";
  auto errorFor = [&](const std::string &bytes) {
    writeBytes(path, bytes);
    return inputErrorText([&] { SafetensorsFile file(path); });
  };
  std::string prefix = "safetensors file " + path + ": ";

  SECTION("truncated data") {
    float w[4] = {1, 2, 3, 4};
    writeSafetensors(path, {{"w", DType::F32, {4}, w}}, {});
    fs::resize_file(path, fs::file_size(path) - 3);
    CHECK(inputErrorText([&] { SafetensorsFile file(path); }) ==
          prefix +
              "the data section should hold 16 bytes but the file has only 13 "
              "after the header; the file is truncated (an interrupted "
              "copy?)");
  }
  SECTION("truncated header") {
    CHECK(errorFor(std::string("\x40\0\0\0\0\0\0\0{}", 10)) ==
          prefix + "header length 64 runs past the end of the 10-byte file; "
                   "the file is truncated");
    CHECK(errorFor("abc") ==
          prefix + "file is 3 bytes, too short for the 8-byte header length; "
                   "it is truncated or not a safetensors file");
  }
  SECTION("absurd header length") {
    CHECK(errorFor(std::string("\0\0\0\0\0\0\0\x01", 8)) ==
          prefix + "header length 72057594037927936 exceeds the format's "
                   "limit of 100000000 bytes; this is not a safetensors file");
  }
  SECTION("overlapping tensors") {
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                         "\"data_offsets\":[0,8]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
                         "\"data_offsets\":[4,12]}}",
                         12)) ==
          prefix + "tensor 'b' (bytes 4..12) overlaps the tensor before it");
  }
  SECTION("a gap, and bytes past the last tensor") {
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                         "\"data_offsets\":[4,8]}}",
                         8)) ==
          prefix + "bytes 0..4 of the data section belong to no tensor");
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                         "\"data_offsets\":[0,4]}}",
                         8)) ==
          prefix + "4 bytes after the last tensor belong to no tensor");
  }
  SECTION("offsets out of range") {
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                         "\"data_offsets\":[8,4]}}",
                         8)) ==
          prefix + "tensor 'a' has data_offsets [8,4]; expected [begin, end] "
                   "with 0 <= begin <= end");
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                         "\"data_offsets\":[0,4]}}",
                         4)) ==
          prefix + "tensor 'a' spans 4 bytes but its shape [2] of F32 needs "
                   "8");
  }
  SECTION("unknown dtype") {
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"BF16\",\"shape\":[1],"
                         "\"data_offsets\":[0,2]}}",
                         2)) ==
          prefix + "tensor 'a' has dtype \"BF16\", which drc does not read "
                   "(it reads F32, F64, I32, I64)");
  }
  SECTION("bad metadata and bad JSON") {
    CHECK(errorFor(craft("{\"__metadata__\":{\"step\":12}}", 0)) ==
          prefix + "__metadata__ value of 'step' is not a string (the format "
                   "allows only strings)");
    CHECK(errorFor(craft("{\"a\":", 0)) ==
          path + " (safetensors header):1:9: invalid JSON: expected a value "
                 "but the text ended");
    CHECK(errorFor(craft("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],"
                         "\"data_offsets\":[0,0]}}",
                         0)) ==
          prefix + "tensor 'a' has shape [-1]; dimensions must be "
                   "non-negative integers");
  }
  SECTION("missing file") {
    CHECK(
        inputErrorText(
            [&] { SafetensorsFile file((dir / "nope.safetensors").string()); })
            .starts_with("cannot open " + (dir / "nope.safetensors").string() +
                         ": No such file or directory"));
  }
}

TEST_CASE("a failed write leaves the old file intact", "[Safetensors]") {
  ScratchDirectory dir;
  std::string path = dir / "ckpt.safetensors";
  float old[4] = {1, 2, 3, 4};
  writeSafetensors(path, {{"w", DType::F32, {4}, old}}, {{"v", "old"}});
  const std::string oldBytes = readBytes(path);
  std::vector<float> big(1 << 18, 7.0f);
  auto onlyTheOldFileRemains = [&] {
    CHECK(readBytes(path) == oldBytes);
    auto entries = fs::directory_iterator(dir.path());
    CHECK(std::distance(fs::begin(entries), fs::end(entries)) == 1);
  };

  SECTION("the disk fills up halfway through") {
    {
      FileSizeLimit limit(64 * 1024);
      // 64 KiB of the 1 MiB tensor reach the disk, then write() fails.
      CHECK_THROWS_WITH(
          writeSafetensors(
              path, {{"w", DType::F32, {int64_t(big.size())}, big.data()}},
              {{"v", "new"}}),
          Catch::Contains("cannot write " + path + ".tmp.") &&
              Catch::Contains("File too large"));
    }
    onlyTheOldFileRemains();
  }
  SECTION("the temporary cannot be created") {
    // A directory squatting on the temporary's name makes open() fail.
    fs::create_directory(path + ".tmp." + std::to_string(::getpid()));
    CHECK(inputErrorText([&] {
            writeSafetensors(path, {{"w", DType::F32, {4}, old}}, {});
          }).starts_with("cannot create " + path + ".tmp."));
    CHECK(readBytes(path) == oldBytes);
  }
  SECTION("the directory does not exist") {
    std::string elsewhere = dir / "no-such-dir" / "ckpt.safetensors";
    CHECK(inputErrorText([&] {
            writeSafetensors(elsewhere, {{"w", DType::F32, {4}, old}}, {});
          }) == "cannot create " + elsewhere + ".tmp." +
                    std::to_string(::getpid()) +
                    ": No such file or directory; check the path and its "
                    "permissions");
    onlyTheOldFileRemains();
  }
  SECTION("a successful write replaces the file") {
    writeSafetensors(path, {{"w", DType::F32, {4}, big.data()}}, {});
    SafetensorsFile file(path);
    float back[4];
    file.read(*file.find("w"), back);
    CHECK(back[3] == 7.0f);
    CHECK(file.metadata().empty());
  }
}
