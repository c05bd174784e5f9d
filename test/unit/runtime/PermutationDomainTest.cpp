//===- PermutationDomainTest.cpp - The synthetic depth task domain
//---------===//
#include "runtime/PermutationDomain.h"

#include "runtime/Corpus.h"

#include "InputErrorText.h"
#include "ScratchDirectory.h"

#include <catch2/catch.hpp>
#include <map>
#include <sstream>

using drc::test::ScratchDirectory;

namespace {

/// An independent check of a generated line: compose the permutations into
/// one map first (as functions, right to left), then apply it once.
char composedAnswer(const std::string &line, int &hops) {
  std::string start = line.substr(0, 1);
  std::string body = line.substr(2, line.find('=') - 2);
  std::map<char, char> total; // x -> x
  for (char c = 'a'; c <= 'e'; ++c)
    total[c] = c;
  hops = 0;
  std::istringstream blocks(body);
  for (std::string block; std::getline(blocks, block, ','); ++hops) {
    REQUIRE(block.size() == 5);
    std::map<char, char> next;
    for (char c = 'a'; c <= 'e'; ++c)
      next[c] = block[total[c] - 'a']; // apply this block after the others
    total = next;
  }
  return total[start[0]];
}

} // namespace

TEST_CASE("perm worksheets are deterministic and split train from val",
          "[PermutationDomain]") {
  std::string sheet = drc::permutationWorksheet(7, false, 3, 8);
  CHECK(drc::permutationWorksheet(7, false, 3, 8) == sheet);
  CHECK(drc::permutationWorksheet(7, true, 3, 8) != sheet);
  CHECK(drc::permutationWorksheet(7, false, 4, 8) != sheet);
  CHECK(drc::permutationWorksheet(8, false, 3, 8) != sheet);
}

TEST_CASE("every perm line composes its permutations, k uniform in 1..K",
          "[PermutationDomain]") {
  std::map<int, int> byHops;
  std::map<char, int> answers;
  int lines = 0;
  for (uint64_t index = 0; index < 100; ++index) {
    std::istringstream sheet(drc::permutationWorksheet(1, false, index, 6));
    for (std::string line; std::getline(sheet, line); ++lines) {
      INFO(line);
      int hops = 0;
      char answer = composedAnswer(line, hops);
      CHECK(line.back() == answer);
      ++byHops[hops];
      ++answers[answer];
      // The parser agrees, from the text up to '='.
      auto parsed =
          drc::parsePermutationProblem(line.substr(0, line.size() - 1));
      REQUIRE(parsed);
      CHECK(parsed->hops == hops);
      CHECK(parsed->answer == answer);
    }
  }
  REQUIRE(byHops.size() == 6);
  CHECK(byHops.begin()->first == 1);
  for (auto [k, n] : byHops)
    CHECK(std::abs(n - lines / 6) < lines / 24); // within 25% of uniform
  for (auto [symbol, n] : answers)
    CHECK(std::abs(n - lines / 5) < lines / 20);
}

TEST_CASE("the perm parser rejects text that is not a problem",
          "[PermutationDomain]") {
  for (const char *text :
       {"", "c:", "c:abcde", "c:abcde,", "f:abcde=", "c;abcde=", "c:abcdd=",
        "c:abcde,abce=", "c:abcde;abcde=", "c:abcdef=", "3+4="})
    CHECK_FALSE(drc::parsePermutationProblem(text));
  CHECK(drc::parsePermutationProblem("c:bdace=")->answer == 'a');
  auto two = drc::parsePermutationProblem("c:bdace,eacbd=");
  REQUIRE(two);
  CHECK(two->hops == 2);
  CHECK(two->answer == 'e');
}

TEST_CASE("the perm domain loads with its task", "[PermutationDomain]") {
  ScratchDirectory dir;
  drc::DomainSizes sizes =
      drc::buildPermutationDomain(dir / "perm", 1, 4, 20000, 3000);
  CHECK(sizes.train.tokens >= 20000);
  CHECK(sizes.val.tokens >= 3000);
  drc::Corpus corpus = drc::loadCorpus(dir.path(), drc::kByteVocabSize);
  REQUIRE(corpus.domains.size() == 1);
  CHECK(corpus.domains[0].task == "permutations");

  CHECK_THAT(drc::test::inputErrorText([&] {
               drc::buildPermutationDomain(dir / "x", 1, 0, 100, 10);
             }),
             Catch::Matchers::Contains("1..32, got 0"));
  CHECK_THAT(drc::test::inputErrorText(
                 [&] { drc::buildPermutationDomain(dir / "x", 1, 4, 0, 10); }),
             Catch::Matchers::Contains("perm domain needs a positive"));
}
