//===- ObjectCache.h - compiled objects on disk, by program ----*- C++ -*-===//
//
// LLVM's O3 and code generation of a train step take about a minute, and the
// same program is compiled again by every run of the same shape: resumed
// runs, seeds and learning rates of a sweep, drc-eval after drc-train. The
// cache keys an object by a 128-bit hash of the unoptimised LLVM IR (as
// bitcode), the target CPU and features, LLVM's version and the codegen
// recipe, so a hit is the object LLVM would produce again.
//
// A program compiled in parts (one per thread) is one entry holding every
// part's object.
//
// Location: $DRC_CACHE_DIR, else $XDG_CACHE_HOME/drc, else ~/.cache/drc;
// DRC_CACHE_DIR=off disables it. Entries are written atomically (temporary
// file + rename); an unreadable entry is recompiled and replaced.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_OBJECTCACHE_H
#define DRC_CODEGEN_OBJECTCACHE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::drc {

class ObjectCache {
public:
  /// The cache for `module` compiled by `machine` in `parts` parts; call
  /// before optimising.
  ObjectCache(const llvm::Module &module, const llvm::TargetMachine &machine,
              unsigned parts);

  /// The cached objects, or none.
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> load() const;
  /// Stores `objects`; failures only cost the next run a compile.
  void store(llvm::ArrayRef<llvm::SmallVector<char, 0>> objects) const;

private:
  std::string path; // empty: cache disabled
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_OBJECTCACHE_H
