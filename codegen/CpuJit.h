//===- CpuJit.h - JIT of memref-only functions for the host ----*- C++ -*-===//
//
// Compiles an LLVM-dialect module with LLVM at O3 for the host CPU, in one
// part per core compiled in parallel, links the objects into the process
// with ORC and calls its functions. Every function drc generates takes
// statically shaped memrefs only (drc-bind-buffers), so a call passes one
// data pointer per argument and the descriptors are built here from the
// recorded shapes.
//
// Objects are cached on disk (ObjectCache.h): a program compiled before, by
// any drc tool on this machine, loads in a fraction of a second instead of
// LLVM's several seconds.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_CPUJIT_H
#define DRC_CODEGEN_CPUJIT_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"

namespace mlir::drc {

/// Shapes of each function's memref arguments, recorded before LLVM lowering.
using EntryShapes = llvm::StringMap<SmallVector<SmallVector<int64_t>>>;

/// Records the argument shapes of every public function of `module`, whose
/// arguments must all be statically shaped memrefs.
FailureOr<EntryShapes> recordEntryShapes(ModuleOp module);

class CpuJit {
public:
  /// Lowers a program bound to the runtime buffers (drc-bind-buffers
  /// output) with the CPU codegen pipeline (buildCpuCodegenPipeline) and
  /// JIT-compiles it, or loads its object code from the cache (ObjectCache:
  /// by the program itself, then by its LLVM IR). `program` is lowered in
  /// place unless the program entry hits. Errors go to the diagnostic
  /// handler of its context.
  static FailureOr<std::unique_ptr<CpuJit>>
  create(ModuleOp program, EntryShapes shapes, bool gpuLoops = false);

  /// Calls function `name` with one data pointer per memref argument. An
  /// argument the function writes must not overlap another: the compiled
  /// kernels assume their buffers apart (drc-mark-noalias).
  LogicalResult call(StringRef name, ArrayRef<void *> data);

  /// Whether the object code came from the cache.
  bool cached() const { return fromCache; }

private:
  using Packed = void (*)(void **);
  CpuJit(std::unique_ptr<llvm::orc::LLJIT> jit, EntryShapes shapes,
         llvm::StringMap<Packed> entries, bool fromCache)
      : jit(std::move(jit)), shapes(std::move(shapes)),
        entries(std::move(entries)), fromCache(fromCache) {}
  std::unique_ptr<llvm::orc::LLJIT> jit;
  EntryShapes shapes;
  llvm::StringMap<Packed> entries;
  bool fromCache;
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_CPUJIT_H
