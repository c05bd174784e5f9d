//===- TextDomainTest.cpp - Text files to byte-level corpus domains -------===//
#include "runtime/TextDomain.h"

#include "runtime/Corpus.h"
#include "runtime/TokenShard.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <fstream>

using Catch::Matchers::Contains;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;
namespace fs = std::filesystem;

namespace {

fs::path writeText(const fs::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The byte-level tokens of `documents`, each preceded by the separator.
std::vector<uint16_t> tokensOf(const std::vector<std::string> &documents) {
  std::vector<uint16_t> tokens;
  for (const std::string &document : documents) {
    tokens.push_back(drc::kDocumentSeparator);
    for (char byte : document)
      tokens.push_back(static_cast<uint8_t>(byte));
  }
  return tokens;
}

} // namespace

TEST_CASE("text files become separator-prefixed byte tokens, val spread evenly",
          "[TextDomain]") {
  ScratchDirectory dir;
  std::vector<fs::path> files;
  std::vector<std::string> texts;
  for (int i = 0; i < 20; ++i) {
    // 100 bytes each, including a non-ASCII byte.
    texts.push_back(std::string(98, char('a' + i)) + "\xe9\n");
    files.push_back(writeText(dir / ("doc" + std::to_string(i)), texts.back()));
  }
  drc::TextDomainOptions options;
  options.valFraction = 0.1;
  drc::DomainSizes sizes = drc::buildTextDomain(files, dir / "out", options);

  // Val takes the documents at positions 0.5 / 0.1 and 1.5 / 0.1.
  std::vector<std::string> train = texts, val = {texts[5], texts[15]};
  train.erase(train.begin() + 15);
  train.erase(train.begin() + 5);
  CHECK(drc::readTokenShard(dir / "out/train_000000.bin") == tokensOf(train));
  CHECK(drc::readTokenShard(dir / "out/val_000000.bin") == tokensOf(val));
  CHECK(sizes.train.documents == 18);
  CHECK(sizes.train.tokens == 18 * 101);
  CHECK(sizes.val.documents == 2);
  CHECK(sizes.val.shards == 1);

  // --val-bytes 200 of 2000 is the same split.
  drc::TextDomainOptions byBytes;
  byBytes.valBytes = 200;
  drc::buildTextDomain(files, dir / "bytes", byBytes);
  CHECK(drc::readTokenShard(dir / "bytes/val_000000.bin") == tokensOf(val));

  CHECK(drc::loadCorpus(dir.path(), 256).domains.size() == 2);
}

TEST_CASE("a single text file is split at a line for val", "[TextDomain]") {
  ScratchDirectory dir;
  std::string text = "line one\nline two\nline three\nline four\n";
  fs::path file = writeText(dir / "one.txt", text);
  drc::TextDomainOptions options;
  options.valFraction = 0.3;
  drc::buildTextDomain(std::vector{file}, dir / "out", options);
  // 30% of 39 bytes is 11: the cut at byte 28 moves to the next line start.
  CHECK(drc::readTokenShard(dir / "out/train_000000.bin") ==
        tokensOf({"line one\nline two\nline three\n"}));
  CHECK(drc::readTokenShard(dir / "out/val_000000.bin") ==
        tokensOf({"line four\n"}));
}

TEST_CASE("shards split the token stream and a rebuild replaces old shards",
          "[TextDomain]") {
  ScratchDirectory dir;
  std::vector<fs::path> files = {writeText(dir / "a", std::string(30, 'a')),
                                 writeText(dir / "b", std::string(30, 'b')),
                                 writeText(dir / "c", std::string(5, 'c'))};
  drc::TextDomainOptions options;
  options.valFraction = 0.2; // val is document 0.5 / 0.2 = 2, "c"
  options.shardTokens = 25;
  drc::DomainSizes sizes = drc::buildTextDomain(files, dir / "out", options);
  // Train is 31 + 31 tokens: shards of 25, 25, 12.
  CHECK(sizes.train.shards == 3);
  CHECK(fs::file_size(dir / "out/train_000002.bin") == 1024 + 2 * 12);
  std::vector<uint16_t> stream;
  for (int i = 0; i < 3; ++i) {
    std::vector<uint16_t> shard =
        drc::readTokenShard(dir / "out" / drc::shardFileName("train", i));
    stream.insert(stream.end(), shard.begin(), shard.end());
  }
  CHECK(stream == tokensOf({std::string(30, 'a'), std::string(30, 'b')}));

  options.shardTokens = 1000;
  sizes = drc::buildTextDomain(files, dir / "out", options);
  CHECK(sizes.train.shards == 1);
  CHECK_FALSE(fs::exists(dir / "out/train_000001.bin"));
  CHECK(drc::loadCorpus(dir.path(), 256).domains.size() == 1);
}

TEST_CASE("unusable text input is an input error naming the file",
          "[TextDomain]") {
  ScratchDirectory dir;
  fs::path good = writeText(dir / "good.txt", "hello\nworld\n");
  drc::TextDomainOptions options;

  SECTION("a NUL byte") {
    fs::path binary = writeText(dir / "binary", std::string("ab\0cd", 5));
    std::string text = inputErrorText([&] {
      drc::buildTextDomain(std::vector{good, binary}, dir / "out", options);
    });
    CHECK_THAT(text, Contains(binary.string()));
    CHECK_THAT(text, Contains("NUL byte at offset 2"));
  }
  SECTION("a missing file") {
    std::string text = inputErrorText([&] {
      drc::buildTextDomain(std::vector{good, dir / "gone"}, dir / "out",
                           options);
    });
    CHECK_THAT(text, Contains((dir / "gone").string()));
  }
  SECTION("a val fraction out of range") {
    options.valFraction = 1;
    CHECK_THAT(inputErrorText([&] {
                 drc::buildTextDomain(std::vector{good}, dir / "out", options);
               }),
               Contains("strictly between 0 and 1"));
  }
  SECTION("more val bytes than input") {
    options.valBytes = 12;
    CHECK_THAT(inputErrorText([&] {
                 drc::buildTextDomain(std::vector{good}, dir / "out", options);
               }),
               Contains("the 12 input bytes"));
  }
  SECTION("a split that leaves val empty") {
    // One line: there is no line start to cut at.
    fs::path line = writeText(dir / "line", "no newline here");
    CHECK_THAT(inputErrorText([&] {
                 drc::buildTextDomain(std::vector{line}, dir / "out", options);
               }),
               Contains("no val document"));
  }
}
