//===- ObjectCache.h - compiled objects on disk, by program ----*- C++ -*-===//
//
// LLVM's O3 and code generation of a train step take seconds (up to about
// ten for an 8-layer model on 2 cores), and the same program is compiled
// again by every run of the same shape: resumed runs, seeds and learning
// rates of a sweep, drc-eval after drc-train. Two kinds of entry find it
// again:
//
// - a module entry holds the objects, keyed by a 128-bit hash of the
//   unoptimised LLVM IR (as bitcode), the target CPU and features, LLVM's
//   version and the codegen recipe: a hit is the object LLVM would produce
//   again, whichever drc executable made the IR;
// - a program entry links to a module entry, keyed by the program before
//   the MLIR codegen pipeline (its bytes, without locations), this
//   executable's own bytes (a rebuilt compiler never reuses an older one's
//   entry), the target and the recipe. A hit skips the codegen pipeline
//   too, which takes most of a cached start (4.6 s of 4.9 for HC at d256).
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
  /// The module entry of `module` compiled by `machine` in `parts` parts;
  /// call before optimising.
  static ObjectCache forModule(const llvm::Module &module,
                               const llvm::TargetMachine &machine,
                               unsigned parts);
  /// The program entry of `program` (bytes that determine the LLVM IR this
  /// executable lowers it to) for `machine` in `parts` parts; none (a
  /// disabled entry) if `program` is empty.
  static ObjectCache forProgram(llvm::StringRef program,
                                const llvm::TargetMachine &machine,
                                unsigned parts);

  /// The cached objects (through the link of a program entry), or none.
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> load() const;
  /// Stores `objects`; failures only cost the next run a compile.
  void store(llvm::ArrayRef<llvm::SmallVector<char, 0>> objects) const;
  /// Makes this (program) entry load the objects of `module`'s entry.
  void linkTo(const ObjectCache &module) const;

private:
  explicit ObjectCache(std::string path) : path(std::move(path)) {}
  std::string path; // empty: cache disabled
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_OBJECTCACHE_H
