//===- ParameterBufferTest.cpp - Parameter buffers on cache lines ---------===//

#include "runtime/ParameterBuffer.h"

#include <catch2/catch.hpp>

#include <cstdint>

using namespace drc;

TEST_CASE("parameter buffers start on a 64-byte boundary at every size, "
          "zero-filled, and stay aligned when they grow",
          "[ParameterBuffer]") {
  auto aligned = [](const ParameterBuffer &b) {
    return reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0;
  };
  // Several live at once: a 16-byte-aligned allocator passes by chance only
  // for some of them.
  std::vector<ParameterBuffer> buffers;
  for (std::size_t size : {1, 3, 16, 17, 1000, 6484640})
    buffers.emplace_back(size, 0.0f);
  for (const ParameterBuffer &b : buffers) {
    CHECK(aligned(b));
    CHECK(b.front() == 0.0f);
    CHECK(b.back() == 0.0f);
  }
  ParameterBuffer grown(5, 1.0f);
  grown.resize(100001, 2.0f);
  CHECK(aligned(grown));
  CHECK(grown[4] == 1.0f);
  CHECK(grown[100000] == 2.0f);
}
