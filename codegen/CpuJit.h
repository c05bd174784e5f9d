//===- CpuJit.h - JIT of memref-only functions for the host ----*- C++ -*-===//
//
// Compiles an LLVM-dialect module with LLVM at O3 for the host CPU and calls
// its functions. Every function drc generates takes statically shaped
// memrefs only (drc-bind-buffers), so a call passes one data pointer per
// argument and the descriptors are built here from the recorded shapes.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_CODEGEN_CPUJIT_H
#define DRC_CODEGEN_CPUJIT_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::drc {

/// Shapes of each function's memref arguments, recorded before LLVM lowering.
using EntryShapes = llvm::StringMap<SmallVector<SmallVector<int64_t>>>;

/// Records the argument shapes of every public function of `module`, whose
/// arguments must all be statically shaped memrefs.
FailureOr<EntryShapes> recordEntryShapes(ModuleOp module);

class CpuJit {
public:
  /// JIT-compiles an LLVM-dialect module; errors go to the diagnostic
  /// handler of its context.
  static FailureOr<std::unique_ptr<CpuJit>> create(ModuleOp llvmModule,
                                                   EntryShapes shapes);

  /// Calls function `name` with one data pointer per memref argument.
  LogicalResult call(StringRef name, ArrayRef<void *> data);

private:
  CpuJit(std::unique_ptr<ExecutionEngine> engine, EntryShapes shapes)
      : engine(std::move(engine)), shapes(std::move(shapes)) {}
  std::unique_ptr<ExecutionEngine> engine;
  EntryShapes shapes;
};

} // namespace mlir::drc

#endif // DRC_CODEGEN_CPUJIT_H
