//===- DrcDialect.h - The drc dialect --------------------------*- C++ -*-===//
//
// Include this one header to use the drc dialect: dialect, attributes,
// interfaces and ops.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_DIALECT_DRCDIALECT_H
#define DRC_DIALECT_DRCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/DrcDialect.h.inc"
#include "dialect/DrcEnums.h.inc"

namespace mlir::drc {
inline ::llvm::hash_code hash_value(InitKind kind) {
  return ::llvm::hash_value(static_cast<uint32_t>(kind));
}
} // namespace mlir::drc

#define GET_ATTRDEF_CLASSES
#include "dialect/DrcAttrs.h.inc"

#include "dialect/DrcInterfaces.h.inc"

namespace mlir::drc {

/// On a result of the loss function after the first: that auxiliary loss's
/// weight in the training objective (drc-autodiff).
inline constexpr llvm::StringLiteral kObjectiveWeightAttr =
    "drc.objective_weight";

/// The body of #drc.init without its angle brackets, as `drc.weight` writes
/// it: `trunc_normal(s, c)`, `constant(v)`, `zeros`, `ones`, `matrix`,
/// `values(dense<...>)`.
ParseResult parseInitBody(AsmParser &parser, InitAttr &init);
void printInitBody(AsmPrinter &printer, InitAttr init);

/// The runtime-owned parameter (and optimizer-moment) storage.
struct ParameterStateResource
    : public SideEffects::Resource::Base<ParameterStateResource> {
  StringRef getName() final { return "drc.parameters"; }
};

/// The runtime-owned gradient storage of one training step.
struct GradientStateResource
    : public SideEffects::Resource::Base<GradientStateResource> {
  StringRef getName() final { return "drc.gradients"; }
};

} // namespace mlir::drc

#define GET_OP_CLASSES
#include "dialect/DrcOps.h.inc"

#endif // DRC_DIALECT_DRCDIALECT_H
