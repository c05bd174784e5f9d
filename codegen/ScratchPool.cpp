//===- ScratchPool.cpp - memory for a compiled program's temporaries ------===//
#include "codegen/ScratchPool.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/// Free blocks by (alignment, size), and the key of every block handed out.
/// Blocks are never returned to the system: the pool's high-water mark is
/// one step's peak of live temporaries.
struct Pool {
  using Key = std::pair<uint64_t, uint64_t>;
  struct KeyHash {
    size_t operator()(const Key &k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::mutex mutex;
  std::unordered_map<Key, std::vector<void *>, KeyHash> free;
  std::unordered_map<void *, Key> live;

  void *allocate(uint64_t alignment, uint64_t size) {
    alignment = alignment < 64 ? 64 : alignment;
    size = (size + alignment - 1) / alignment * alignment;
    Key key{alignment, size};
    std::lock_guard<std::mutex> lock(mutex);
    void *block;
    if (auto it = free.find(key); it != free.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
    } else {
      block = std::aligned_alloc(alignment, size);
      if (!block)
        llvm::report_bad_alloc_error("drc: out of memory for a temporary");
    }
    live.emplace(block, key);
    return block;
  }

  void release(void *block) {
    if (!block)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(block);
    free[it->second].push_back(block);
    live.erase(it);
  }
};

Pool &pool() {
  // Leaked on purpose: generated code may free during static destruction.
  static Pool *instance = new Pool;
  return *instance;
}

} // namespace

void *mlir::drc::scratchAlloc(uint64_t size) {
  return pool().allocate(64, size);
}

void *mlir::drc::scratchAlignedAlloc(uint64_t alignment, uint64_t size) {
  return pool().allocate(alignment, size);
}

void mlir::drc::scratchFree(void *block) { pool().release(block); }
