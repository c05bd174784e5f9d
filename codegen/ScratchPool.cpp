//===- ScratchPool.cpp - memory for a compiled program's temporaries ------===//
#include "codegen/ScratchPool.h"

#include "llvm/Support/ErrorHandling.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/// (alignment, size) of a block: blocks are reused only for the same key.
using Key = std::pair<uint64_t, uint64_t>;
struct KeyHash {
  size_t operator()(const Key &k) const {
    return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
  }
};
using FreeLists = std::unordered_map<Key, std::vector<void *>, KeyHash>;

/// What precedes every block handed out: its key and the free lists of the
/// thread that allocated it.
struct Header {
  Key key;
  FreeLists *owner;
};

/// The calling thread's free blocks. A fused region allocates its per-tile
/// temporaries inside the parallel loop and frees them in the same
/// iteration, on the same thread, so the common path takes no lock.
/// Leaked on purpose: generated code may free during static destruction,
/// and OpenMP's worker threads live as long as the process.
FreeLists &threadFreeLists() {
  thread_local FreeLists *lists = new FreeLists;
  return *lists;
}

/// Blocks freed by a thread other than the one that allocated them; any
/// thread may take them. Empty with drc's generated code, which frees
/// every temporary in the scope (and so on the thread) that allocated it.
struct SharedFreeLists {
  std::mutex mutex;
  FreeLists lists;
  std::atomic<size_t> count{0};
};
SharedFreeLists &shared() {
  static SharedFreeLists *instance = new SharedFreeLists;
  return *instance;
}

void *take(FreeLists &lists, const Key &key) {
  auto it = lists.find(key);
  if (it == lists.end() || it->second.empty())
    return nullptr;
  void *block = it->second.back();
  it->second.pop_back();
  return block;
}

/// Blocks are never returned to the system: the pool's high-water mark is
/// one step's peak of live temporaries.
void *allocate(uint64_t alignment, uint64_t size) {
  alignment = alignment < 64 ? 64 : alignment;
  size = (size + alignment - 1) / alignment * alignment;
  Key key{alignment, size};
  FreeLists &mine = threadFreeLists();
  void *block = take(mine, key);
  if (!block && shared().count.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(shared().mutex);
    if ((block = take(shared().lists, key)))
      shared().count.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!block) {
    // The header sits in the `alignment` bytes before the block.
    static_assert(sizeof(Header) <= 64, "the header must fit the alignment");
    char *raw =
        static_cast<char *>(std::aligned_alloc(alignment, alignment + size));
    if (!raw)
      llvm::report_bad_alloc_error("drc: out of memory for a temporary");
    block = raw + alignment;
  }
  auto *header = reinterpret_cast<Header *>(block) - 1;
  *header = Header{key, &mine};
  return block;
}

void release(void *block) {
  if (!block)
    return;
  const Header &header = *(reinterpret_cast<Header *>(block) - 1);
  FreeLists &mine = threadFreeLists();
  if (header.owner == &mine) {
    mine[header.key].push_back(block);
    return;
  }
  std::lock_guard<std::mutex> lock(shared().mutex);
  shared().lists[header.key].push_back(block);
  shared().count.fetch_add(1, std::memory_order_relaxed);
}

} // namespace

void *mlir::drc::scratchAlloc(uint64_t size) { return allocate(64, size); }

void *mlir::drc::scratchAlignedAlloc(uint64_t alignment, uint64_t size) {
  return allocate(alignment, size);
}

void mlir::drc::scratchFree(void *block) { release(block); }
