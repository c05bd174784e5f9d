//===- ScratchPoolTest.cpp - the allocator of generated code's temporaries ===//
#include "codegen/ScratchPool.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

using namespace mlir::drc;

TEST_CASE("scratch blocks are aligned and a freed block serves the next "
          "request of its size",
          "[scratch]") {
  void *a = scratchAlignedAlloc(128, 1000);
  REQUIRE(reinterpret_cast<uintptr_t>(a) % 128 == 0);
  void *b = scratchAlloc(1000);
  REQUIRE(reinterpret_cast<uintptr_t>(b) % 64 == 0);
  REQUIRE(a != b);
  scratchFree(a);
  scratchFree(b);
  CHECK(scratchAlignedAlloc(128, 1000) == a);
  CHECK(scratchAlloc(1000) == b);
  void *other = scratchAlloc(2000);
  CHECK(other != a);
  CHECK(other != b);
  scratchFree(other);
  scratchFree(a);
  scratchFree(b);
  scratchFree(nullptr);
}

TEST_CASE("a block freed by another thread is reused, and live blocks never "
          "alias across threads",
          "[scratch]") {
  void *block = scratchAlloc(4096);
  std::thread([&] { scratchFree(block); }).join();
  void *again = nullptr;
  std::thread([&] { again = scratchAlloc(4096); }).join();
  CHECK(again == block);
  scratchFree(again);

  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::vector<void *>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        auto *p = static_cast<int *>(scratchAlloc(256));
        p[0] = t;
        p[63] = round;
        std::this_thread::yield();
        if (p[0] != t || p[63] != round)
          seen[t].push_back(nullptr); // another thread wrote into our block
        scratchFree(p);
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const auto &errors : seen)
    CHECK(errors.empty());
}
