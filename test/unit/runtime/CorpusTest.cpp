//===- CorpusTest.cpp - Corpus loading, batch sampling, validation --------===//
#include "runtime/Corpus.h"

#include "runtime/TokenShard.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <numeric>

using Catch::Matchers::Contains;
using drc::test::inputErrorText;
using drc::test::ScratchDirectory;
namespace fs = std::filesystem;

namespace {

/// Tokens start, start+1, ... modulo `modulus`: a window's position in the
/// stream can be read off its first token.
std::vector<uint16_t> counting(size_t count, uint16_t start = 0,
                               uint32_t modulus = 1000) {
  std::vector<uint16_t> tokens(count);
  for (size_t i = 0; i < count; ++i)
    tokens[i] = static_cast<uint16_t>((start + i) % modulus);
  return tokens;
}

void writeShard(const fs::path &path, const std::vector<uint16_t> &tokens) {
  fs::create_directories(path.parent_path());
  drc::writeTokenShard(path, tokens);
}

/// Two domains: "a" with 3000 train tokens, "b" with 1000; val 500 each.
void writeTwoDomains(const fs::path &root) {
  writeShard(root / "a/train_000000.bin", counting(3000));
  writeShard(root / "a/val_000000.bin", counting(500, 7));
  writeShard(root / "b/train_000000.bin", counting(1000, 500));
  writeShard(root / "b/val_000000.bin", counting(500, 11));
}

} // namespace

TEST_CASE("a corpus loads its domains and shards in name order", "[Corpus]") {
  ScratchDirectory dir;
  // Written out of order; llm.c's names load alongside drc-data's.
  writeShard(dir / "zeta/val_000001.bin", {5, 6});
  writeShard(dir / "zeta/val_000000.bin", {3, 4});
  writeShard(dir / "zeta/fineweb_train_000001.bin", {2});
  writeShard(dir / "zeta/fineweb_train_000000.bin", {0, 1});
  writeShard(dir / "alpha/train_000000.bin", {9, 9, 9});
  writeShard(dir / "alpha/tiny_val.bin", {8});
  std::ofstream(dir / "alpha/SOURCES") << "not a shard\n";
  writeShard(dir / ".building/train_000000.bin", {1});
  std::ofstream(dir / "README") << "not a domain\n";

  drc::Corpus corpus = drc::loadCorpus(dir.path(), 10);
  REQUIRE(corpus.domains.size() == 2);
  CHECK(corpus.domains[0].name == "alpha");
  CHECK(corpus.domains[1].name == "zeta");
  CHECK(corpus.domains[1].train == std::vector<uint16_t>{0, 1, 2});
  CHECK(corpus.domains[1].val == std::vector<uint16_t>{3, 4, 5, 6});
  CHECK(corpus.domains[1].valShards.front().filename() == "val_000000.bin");
  CHECK(corpus.domains[0].val == std::vector<uint16_t>{8});
  CHECK(corpus.trainTokens() == 6);
}

TEST_CASE("a corpus that cannot be used is an input error naming the path",
          "[Corpus]") {
  ScratchDirectory dir;
  SECTION("missing directory") {
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir / "nowhere", 256); });
    CHECK_THAT(text, Contains((dir / "nowhere").string()));
    CHECK_THAT(text, Contains("does not exist"));
  }
  SECTION("no domain") {
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir.path(), 256); });
    CHECK_THAT(text, Contains(dir.path().string()));
    CHECK_THAT(text, Contains("has no domain"));
  }
  SECTION("a domain without val") {
    writeShard(dir / "prose/train_000000.bin", {1, 2});
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir.path(), 256); });
    CHECK_THAT(text, Contains((dir / "prose").string()));
    CHECK_THAT(text, Contains("has no val shard"));
  }
  SECTION("a domain without train") {
    writeShard(dir / "prose/val_000000.bin", {1, 2});
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir.path(), 256); });
    CHECK_THAT(text, Contains("has no train shard"));
  }
  SECTION("a shard name without train or val") {
    writeShard(dir / "prose/shard_000000.bin", {1, 2});
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir.path(), 256); });
    CHECK_THAT(text, Contains("shard_000000.bin"));
    CHECK_THAT(text, Contains("neither"));
  }
  SECTION("a token outside the vocabulary") {
    writeShard(dir / "prose/train_000000.bin", {1, 2});
    writeShard(dir / "prose/val_000000.bin", {1, 2, 3, 300, 4});
    std::string text =
        inputErrorText([&] { drc::loadCorpus(dir.path(), 256); });
    CHECK_THAT(text, Contains((dir / "prose/val_000000.bin").string()));
    CHECK_THAT(text, Contains("token 300 at position 3"));
    CHECK_THAT(text, Contains("vocabulary of 256 tokens"));
  }
}

TEST_CASE("unigram entropy is the entropy of the token frequencies in nats",
          "[Corpus]") {
  CHECK(drc::unigramEntropy({}) == 0);
  CHECK(drc::unigramEntropy(std::vector<uint16_t>(10, 42)) == 0);
  CHECK(drc::unigramEntropy(std::vector<uint16_t>{0, 1, 2, 3}) ==
        Approx(std::log(4.0)).epsilon(1e-12));
  // p = 1/2, 1/4, 1/4: 1.5 bits.
  CHECK(drc::unigramEntropy(std::vector<uint16_t>{7, 7, 65535, 300}) ==
        Approx(1.5 * std::log(2.0)).epsilon(1e-12));

  ScratchDirectory dir;
  writeShard(dir / "d/train_000000.bin", {1});
  writeShard(dir / "d/val_000000.bin", {0, 1, 2, 3});
  CHECK(drc::loadCorpus(dir.path(), 4).domains[0].valUnigramEntropy ==
        Approx(std::log(4.0)).epsilon(1e-12));
}

TEST_CASE("training batches are a pure function of seed and step", "[Corpus]") {
  ScratchDirectory dir;
  writeTwoDomains(dir.path());
  drc::Corpus corpus = drc::loadCorpus(dir.path(), 1000);
  const int batch = 8, seqLen = 16;
  drc::BatchSampler sampler(corpus, batch, seqLen);
  auto draw = [&](const drc::BatchSampler &s, uint64_t seed, uint64_t step) {
    std::vector<int32_t> inputs(batch * seqLen), targets(batch * seqLen);
    s.trainBatch(seed, step, inputs.data(), targets.data());
    return std::pair{inputs, targets};
  };

  auto first = draw(sampler, 1, 5);
  draw(sampler, 1, 6); // no hidden cursor: an interleaved call changes nothing
  CHECK(draw(sampler, 1, 5) == first);
  drc::BatchSampler resumed(corpus, batch, seqLen);
  CHECK(draw(resumed, 1, 5) == first);
  CHECK(draw(sampler, 1, 6).first != first.first);
  CHECK(draw(sampler, 2, 5).first != first.first);
}

TEST_CASE("training targets are the inputs shifted by one token", "[Corpus]") {
  ScratchDirectory dir;
  writeTwoDomains(dir.path());
  drc::Corpus corpus = drc::loadCorpus(dir.path(), 1000);
  const int batch = 4, seqLen = 32;
  drc::BatchSampler sampler(corpus, batch, seqLen);
  std::vector<int32_t> inputs(batch * seqLen), targets(batch * seqLen);
  for (uint64_t step = 0; step < 50; ++step) {
    sampler.trainBatch(3, step, inputs.data(), targets.data());
    for (int row = 0; row < batch; ++row) {
      drc::TrainWindow window = sampler.trainWindow(3, step, row);
      const std::vector<uint16_t> &train = corpus.domains[window.domain].train;
      for (int t = 0; t < seqLen; ++t) {
        REQUIRE(inputs[row * seqLen + t] == train[window.start + t]);
        REQUIRE(targets[row * seqLen + t] == train[window.start + t + 1]);
      }
    }
  }
}

TEST_CASE("training rows pick domains by train size and starts uniformly",
          "[Corpus]") {
  ScratchDirectory dir;
  writeTwoDomains(dir.path());
  drc::Corpus corpus = drc::loadCorpus(dir.path(), 1000);
  const int seqLen = 100;
  drc::BatchSampler sampler(corpus, 10, seqLen);
  const int rows = 40000;
  size_t fromA = 0, maxStartB = 0;
  double sumStartA = 0;
  for (int i = 0; i < rows; ++i) {
    drc::TrainWindow window = sampler.trainWindow(9, i / 10, i % 10);
    size_t size = corpus.domains[window.domain].train.size();
    REQUIRE(window.start + seqLen + 1 <= size);
    if (window.domain == 0) {
      ++fromA;
      sumStartA += static_cast<double>(window.start);
    } else {
      maxStartB = std::max(maxStartB, window.start);
    }
  }
  // "a" holds 3000 of 4000 tokens; the binomial sd is 0.002.
  CHECK(static_cast<double>(fromA) / rows == Approx(0.75).margin(0.01));
  // Starts 0..2899 in "a": mean 1449.5, sd of the mean about 5.6.
  CHECK(sumStartA / static_cast<double>(fromA) == Approx(1449.5).margin(30));
  // The last start of "b", 1000 - 100 - 1, is reachable (1 in 900 per row).
  CHECK(maxStartB == 899);
}

TEST_CASE("validation windows are fixed, non-overlapping, served in batches",
          "[Corpus]") {
  ScratchDirectory dir;
  writeShard(dir / "d/train_000000.bin", counting(100));
  writeShard(dir / "d/val_000000.bin", counting(42, 100));
  drc::Corpus corpus = drc::loadCorpus(dir.path(), 1000);
  const int batch = 3, seqLen = 8;

  // (42 - 1) / 8 = 5 windows starting at 0, 8, 16, 24, 32: two batches.
  drc::BatchSampler sampler(corpus, batch, seqLen);
  REQUIRE(sampler.valWindowCount(0) == 5);
  REQUIRE(sampler.valBatchCount(0) == 2);
  std::vector<int32_t> inputs(batch * seqLen), targets(batch * seqLen);

  CHECK(sampler.valBatch(0, 0, inputs.data(), targets.data()) == 3);
  for (int row = 0; row < 3; ++row)
    for (int t = 0; t < seqLen; ++t) {
      CHECK(inputs[row * seqLen + t] == 100 + row * seqLen + t);
      CHECK(targets[row * seqLen + t] == 100 + row * seqLen + t + 1);
    }
  auto firstBatch = inputs;
  sampler.valBatch(0, 0, inputs.data(), targets.data());
  CHECK(inputs == firstBatch);

  // The last batch has windows 3 and 4, then window 0 again as padding.
  CHECK(sampler.valBatch(0, 1, inputs.data(), targets.data()) == 2);
  CHECK(inputs[0] == 124);
  CHECK(inputs[seqLen] == 132);
  CHECK(targets[2 * seqLen - 1] == 140); // the last token scored: val[40]
  CHECK(inputs[2 * seqLen] == 100);
  CHECK_THROWS_AS(sampler.valBatch(0, 2, inputs.data(), targets.data()),
                  drc::Error);

  // A cap of 20 tokens keeps the first 20 / 8 = 2 windows.
  drc::BatchSampler capped(corpus, batch, seqLen, 20);
  CHECK(capped.valWindowCount(0) == 2);
  CHECK(capped.valBatchCount(0) == 1);
  CHECK(capped.valBatch(0, 0, inputs.data(), targets.data()) == 2);
  CHECK(inputs[seqLen] == 108);
}

TEST_CASE("a sampler rejects shapes the corpus cannot serve", "[Corpus]") {
  ScratchDirectory dir;
  writeShard(dir / "d/train_000000.bin", counting(100));
  writeShard(dir / "d/val_000000.bin", counting(20));
  drc::Corpus corpus = drc::loadCorpus(dir.path(), 1000);

  std::string train =
      inputErrorText([&] { drc::BatchSampler(corpus, 1, 100); });
  CHECK_THAT(train, Contains((dir / "d").string()));
  CHECK_THAT(train, Contains("100 train tokens"));

  std::string val = inputErrorText([&] { drc::BatchSampler(corpus, 1, 20); });
  CHECK_THAT(val, Contains("20 val tokens"));
  CHECK_THAT(val, Contains("not one validation window"));

  std::string capped =
      inputErrorText([&] { drc::BatchSampler(corpus, 1, 8, 4); });
  CHECK_THAT(capped, Contains("a cap of 4 tokens"));

  CHECK_THAT(inputErrorText([&] { drc::BatchSampler(corpus, 0, 8); }),
             Contains("must both be positive"));

  // Two validation windows of 8 serve a batch of 2, not one of 3: a run
  // learns that before it trains (evaluation scores full batches only).
  CHECK_NOTHROW(drc::BatchSampler(corpus, 2, 8).requireValidationBatch());
  std::string batch = inputErrorText(
      [&] { drc::BatchSampler(corpus, 3, 8).requireValidationBatch(); });
  CHECK_THAT(batch, Contains("domain 'd' has 2 validation windows, fewer "
                             "than one batch of 3"));
}
