//===- ScratchPool.h - memory for a compiled program's temporaries -*- C++
//-*-===//
//
// A train step allocates the same temporaries, with the same sizes, on every
// call. Served by malloc, the large ones are fresh mmap'd or brk'd pages each
// time, and the kernel spends a quarter of the step zeroing and unmapping
// them. The generated code therefore allocates through these functions
// (finalize-memref-to-llvm's generic allocation functions), which keep freed
// blocks by size and hand them back on the next request: after the first step
// every temporary is a page already mapped. Free blocks are kept per
// thread (a fused region's per-tile temporaries are allocated and freed on
// one OpenMP thread, with no lock); a block freed on another thread than
// its own goes to a shared, locked list.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_SCRATCHPOOL_H
#define DRC_CODEGEN_SCRATCHPOOL_H

#include <cstdint>

namespace mlir::drc {

/// The `_mlir_memref_to_llvm_{alloc,aligned_alloc,free}` of generated code.
/// Thread-safe; blocks are 64-byte aligned or more.
void *scratchAlloc(uint64_t size);
void *scratchAlignedAlloc(uint64_t alignment, uint64_t size);
void scratchFree(void *block);

} // namespace mlir::drc

#endif // DRC_CODEGEN_SCRATCHPOOL_H
