//===- TokenShardTest.cpp - llm.c token shard reading and writing ---------===//
#include "runtime/TokenShard.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>

using Catch::Matchers::Contains;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;
namespace fs = std::filesystem;

namespace {

/// Writes a shard by hand: `header` over the first int32s of a zeroed
/// 1024-byte header, then `tokens`, then `trailing` extra bytes.
void writeRawShard(const fs::path &path, std::vector<int32_t> header,
                   const std::vector<uint16_t> &tokens, size_t trailing = 0) {
  std::vector<int32_t> fullHeader(256, 0);
  std::copy(header.begin(), header.end(), fullHeader.begin());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(fullHeader.data()), 1024);
  out.write(reinterpret_cast<const char *>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * 2));
  std::string extra(trailing, 'x');
  out.write(extra.data(), static_cast<std::streamsize>(extra.size()));
}

} // namespace

TEST_CASE("token shards round-trip every uint16 value", "[TokenShard]") {
  ScratchDirectory dir;
  std::vector<uint16_t> tokens = {0, 1, 255, 256, 50256, 65535, 7};
  drc::writeTokenShard(dir / "a.bin", tokens);
  CHECK(drc::readTokenShard(dir / "a.bin") == tokens);

  drc::writeTokenShard(dir / "empty.bin", {});
  CHECK(drc::readTokenShard(dir / "empty.bin").empty());
}

TEST_CASE("token shards have llm.c's layout", "[TokenShard]") {
  ScratchDirectory dir;
  drc::writeTokenShard(dir / "a.bin", std::vector<uint16_t>{0x0102, 0x0304});
  REQUIRE(fs::file_size(dir / "a.bin") == 1024 + 4);
  std::ifstream in(dir / "a.bin", std::ios::binary);
  std::vector<char> bytes(1028);
  in.read(bytes.data(), 1028);
  int32_t header[256];
  std::memcpy(header, bytes.data(), 1024);
  CHECK(header[0] == 20240520);
  CHECK(header[1] == 1);
  CHECK(header[2] == 2);
  CHECK(
      std::all_of(header + 3, header + 256, [](int32_t v) { return v == 0; }));
  // Little-endian tokens.
  CHECK(bytes[1024] == 0x02);
  CHECK(bytes[1025] == 0x01);
  CHECK(bytes[1026] == 0x04);
}

TEST_CASE("writing a token shard replaces the old one and leaves no temporary",
          "[TokenShard]") {
  ScratchDirectory dir;
  drc::writeTokenShard(dir / "a.bin", std::vector<uint16_t>(100, 3));
  drc::writeTokenShard(dir / "a.bin", std::vector<uint16_t>{9});
  CHECK(drc::readTokenShard(dir / "a.bin") == std::vector<uint16_t>{9});
  size_t files = std::distance(fs::directory_iterator(dir.path()),
                               fs::directory_iterator());
  CHECK(files == 1);
}

TEST_CASE("writing into a missing directory is an input error",
          "[TokenShard]") {
  ScratchDirectory dir;
  std::string text = inputErrorText([&] {
    drc::writeTokenShard(dir / "missing/a.bin", std::vector<uint16_t>{1});
  });
  CHECK_THAT(text, Contains("missing/a.bin"));
}

TEST_CASE("malformed token shards are input errors naming the file",
          "[TokenShard]") {
  ScratchDirectory dir;
  fs::path path = dir / "bad.bin";
  std::vector<uint16_t> tokens = {1, 2, 3, 4};

  SECTION("missing file") {
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("No such file"));
  }
  SECTION("shorter than the header") {
    std::ofstream(path, std::ios::binary) << "tiny";
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("has 4 bytes, fewer than the 1024-byte header"));
  }
  SECTION("wrong magic") {
    writeRawShard(path, {12345, 1, 4}, tokens);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("magic 12345, expected 20240520"));
  }
  SECTION("wrong version") {
    writeRawShard(path, {20240520, 2, 4}, tokens);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("version 2, expected 1"));
  }
  SECTION("negative token count") {
    writeRawShard(path, {20240520, 1, -4}, tokens);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("negative token count -4"));
  }
  SECTION("truncated") {
    writeRawShard(path, {20240520, 1, 10}, tokens);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("header says 10 tokens (1044 bytes"));
    CHECK_THAT(text, Contains("the file has 1032 bytes"));
    CHECK_THAT(text, Contains("truncated"));
  }
  SECTION("trailing bytes") {
    writeRawShard(path, {20240520, 1, 4}, tokens, 3);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
    CHECK_THAT(text, Contains("header says 4 tokens (1032 bytes"));
    CHECK_THAT(text, Contains("the file has 1035 bytes"));
    CHECK_THAT(text, Contains("trailing bytes"));
  }
  SECTION("a directory") {
    fs::create_directory(path);
    std::string text = inputErrorText([&] { drc::readTokenShard(path); });
    CHECK_THAT(text, Contains(path.string()));
  }
}
