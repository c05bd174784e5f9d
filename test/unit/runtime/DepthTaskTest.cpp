//===- DepthTaskTest.cpp - Accuracy by k on a constructed model
//------------===//
//
// A plain C++ "model" that knows the answer of a problem from block k on
// (one permutation per block) stands in for a compiled program: its logit
// lens at depth state z_b names the answer when k <= b and a wrong symbol
// otherwise, so accuracy by depth and k is exactly [k <= b].
//
//===----------------------------------------------------------------------===//
#include "runtime/DepthTask.h"

#include "runtime/AtomicFile.h"
#include "runtime/PermutationDomain.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>

#include <set>

using drc::test::ScratchDirectory;

namespace {

constexpr int64_t kSeqLen = 64, kBatch = 3, kVocab = 256, kBlocks = 4;

class HopModel : public drc::ProbeProgram {
public:
  HopModel() { sizes = {kBatch * kSeqLen, kBlocks, 1, kVocab, 0}; }
  const drc::ParameterTable &parameters() const override { return table; }
  const drc::ProbeShape &shape() const override { return sizes; }

  float probe(const float *, const int32_t *inputs, const int32_t *targets,
              float *, float *lens, float *) override {
    const int64_t depths = kBlocks + 1;
    std::fill(lens, lens + sizes.tokens * depths * kVocab, 0.0f);
    for (int64_t t = 0; t < sizes.tokens; ++t) {
      // k: the commas back to the ':' of this row's line, plus one.
      int64_t row = t / kSeqLen, hops = 1, at = t;
      while (at > row * kSeqLen && inputs[at] != ':')
        hops += inputs[at--] == ',';
      bool problem = inputs[t] == '=' && inputs[at] == ':';
      for (int64_t b = 0; b < depths; ++b) {
        int32_t top =
            problem && hops <= b ? targets[t] : (targets[t] == 'a' ? 'b' : 'a');
        lens[(t * depths + b) * kVocab + top] = 1.0f;
      }
    }
    ++calls;
    return 0;
  }
  float skip(int64_t, const float *, const int32_t *, const int32_t *,
             float *) override {
    return 0;
  }
  float loss(const float *, const int32_t *, const int32_t *) override {
    return 0;
  }

  int64_t calls = 0;

private:
  drc::ParameterTable table;
  drc::ProbeShape sizes;
};

drc::CorpusDomain permDomain(const ScratchDirectory &dir, int maxHops) {
  drc::buildPermutationDomain(dir / "perm", 5, maxHops, 4000, 6000);
  return drc::loadCorpus(dir.path(), kVocab).domains.at(0);
}

} // namespace

TEST_CASE("task windows score every short enough line exactly once",
          "[DepthTask]") {
  ScratchDirectory dir;
  drc::CorpusDomain domain = permDomain(dir, 8);
  std::vector<size_t> starts = drc::taskWindows(domain, kSeqLen, SIZE_MAX);
  REQUIRE(starts.size() > 20);
  std::vector<int32_t> inputs(kSeqLen), targets(kSeqLen);
  std::multiset<size_t> scored;
  for (size_t start : starts) {
    CHECK((domain.val[start] == '\n' || domain.val[start] == 0));
    for (int64_t t = 0; t < kSeqLen; ++t) {
      inputs[t] = domain.val[start + t];
      targets[t] = domain.val[start + t + 1];
    }
    for (const drc::TaskAnswer &a : drc::taskAnswers(
             "permutations", inputs.data(), targets.data(), kSeqLen))
      scored.insert(start + size_t(a.position));
  }
  // Every '=' between the first window and the end of the last whose line
  // (from the break before it) fits in a window.
  std::multiset<size_t> expected;
  size_t lineStart = 0;
  for (size_t i = 0; i < starts.back() + kSeqLen; ++i) {
    if (domain.val[i] == '\n' || domain.val[i] == 0)
      lineStart = i;
    else if (domain.val[i] == '=' && lineStart >= starts.front() &&
             i - lineStart < size_t(kSeqLen))
      expected.insert(i);
  }
  CHECK(scored == expected);
  CHECK(drc::taskWindows(domain, kSeqLen, 5).size() == 5);
}

TEST_CASE("accuracy by depth and k of a model that needs k blocks",
          "[DepthTask]") {
  ScratchDirectory dir;
  drc::CorpusDomain domain = permDomain(dir, 6);
  HopModel model;
  int64_t progressCalls = 0;
  drc::DepthTaskResult r = drc::runDepthTask(
      model, nullptr, domain, drc::taskWindows(domain, kSeqLen, 31), kSeqLen,
      [&](int64_t done, int64_t total) {
        ++progressCalls;
        CHECK(total == 11); // ceil(31 / 3)
        CHECK(done == progressCalls);
      });
  CHECK(r.windows == 31);
  CHECK(model.calls == 11);
  CHECK(progressCalls == 11);
  CHECK(r.domain == "perm");
  REQUIRE(r.answers.size() >= 5);
  REQUIRE(r.accuracy.size() == kBlocks + 1);
  for (int64_t b = 0; b <= kBlocks; ++b)
    for (size_t k = 1; k <= r.answers.size(); ++k) {
      INFO("depth " << b << ", k " << k);
      REQUIRE(r.answers[k - 1] > 0);
      CHECK(r.accuracy[b][k - 1] == (int64_t(k) <= b ? 1.0 : 0.0));
    }
  drc::JsonValue json = r.toJson();
  CHECK(json.find("accuracy_by_depth_and_k")->elements().size() == 5);
}

TEST_CASE("a task domain whose text is not the task is refused",
          "[DepthTask]") {
  std::string text = "\nc:bdace=b\n"; // the answer is a
  std::vector<int32_t> inputs(text.begin(), text.end() - 1),
      targets(text.begin() + 1, text.end());
  CHECK_THROWS_WITH(drc::taskAnswers("permutations", inputs.data(),
                                     targets.data(), int64_t(inputs.size())),
                    Catch::Matchers::Contains("'c:bdace=b'"));

  ScratchDirectory dir;
  drc::buildPermutationDomain(dir / "perm", 1, 2, 1000, 1000);
  drc::writeFileAtomically((dir / "perm" / "TASK").string(), "parity\n");
  drc::Corpus corpus = drc::loadCorpus(dir.path(), kVocab);
  CHECK_THAT(drc::test::inputErrorText([&] { drc::taskDomains(corpus); }),
             Catch::Matchers::Contains("names task 'parity'"));
}
