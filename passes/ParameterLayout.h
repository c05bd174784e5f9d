//===- ParameterLayout.h - Where each parameter lives -----------*- C++ -*-===//
//
// The one definition of the flat parameter buffer's layout, shared by
// drc-bind-buffers and the driver that hands the runtime its parameter
// table: the weight-decay group first, then the rest, each group in
// declaration order, every parameter starting on a 64-byte (16-float)
// boundary so that AdamW runs over two contiguous ranges.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_PARAMETERLAYOUT_H
#define DRC_PASSES_PARAMETERLAYOUT_H

#include "dialect/DrcDialect.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::drc {

struct ParameterSlot {
  ParamOp param;
  int64_t offset = 0; ///< in elements
  int64_t numElements = 0;
};

struct ParameterLayout {
  SmallVector<ParameterSlot> slots; ///< in buffer order
  llvm::StringMap<size_t> index;    ///< symbol name -> slot
  int64_t decayEnd = 0;             ///< [0, decayEnd) is the decay group
  int64_t size = 0;                 ///< total elements, padding included

  const ParameterSlot &lookup(StringRef name) const {
    return slots[index.lookup(name)];
  }
};

/// Elements every parameter's offset is a multiple of.
constexpr int64_t kParameterAlignment = 16;

ParameterLayout computeParameterLayout(ModuleOp module);

} // namespace mlir::drc

#endif // DRC_PASSES_PARAMETERLAYOUT_H
