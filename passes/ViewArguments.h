//===- ViewArguments.h - Kernels that take their views' offsets -*- C++ -*-===//
//
// A kernel outlined from a program reads each layer's parameters (and bank
// rows) through views at fixed places of a larger buffer, and those offsets
// are part of its argument types: every layer's copy of a kernel is then a
// different function. Making them arguments (dynamic offsets) lets the
// outliners keep one function per distinct piece of work.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_VIEWARGUMENTS_H
#define DRC_PASSES_VIEWARGUMENTS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::drc {

/// Gives `kernel`'s arguments that are views at a static place (a strided
/// layout with a static offset) a dynamic offset, and so the views the
/// kernel makes of them (subview, expand_shape, collapse_shape, cast,
/// transpose). An argument the kernel passes on, or makes a memref of in
/// another way, keeps its type. `operandsOf(index)` gives the operands that
/// pass argument `index` at the kernel's call sites; each changed one is
/// cast there.
void makeOffsetsArguments(
    FunctionOpInterface kernel,
    llvm::function_ref<SmallVector<OpOperand *>(unsigned)> operandsOf);

} // namespace mlir::drc

#endif // DRC_PASSES_VIEWARGUMENTS_H
