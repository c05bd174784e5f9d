//===- ModelImport.h - Model spec -> drc IR ---------------------*- C++ -*-===//
//
// Builds the drc module of a model spec: every parameter declared with its
// init and optimizer group, and a `@loss` function from (tokens, targets) of
// one batch to the mean next-token cross-entropy. The backbone (embedding,
// attention, SwiGLU, final norm, LM head) is built here; everything between
// the sublayers comes from the residual scheme (dialect/SchemeInstantiation.h).
//
//===----------------------------------------------------------------------===//
#ifndef DRC_DIALECT_MODELIMPORT_H
#define DRC_DIALECT_MODELIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/ModelSpec.h"

namespace mlir::drc {

/// Options of the import that are not part of the spec.
struct ImportOptions {
  /// Element type of parameters and activations: f32 to train, f64 for
  /// gradient checks against finite differences.
  bool useF64 = false;
  /// Tokens per call of the generated functions; 0 means batch x seq_len.
  int64_t tokens = 0;
};

/// Marks the drc.param ops a residual scheme adds to the backbone.
inline constexpr llvm::StringLiteral kResidualAttr = "drc.residual";

/// Imports `spec` into a new module, its residual scheme instantiated over
/// every sublayer. Fails, with located diagnostics, on a scheme that is
/// missing, malformed or does not fit the model.
FailureOr<OwningOpRef<ModuleOp>>
importModelSpec(MLIRContext &context, const ::drc::ModelSpec &spec,
                const ImportOptions &options = {});

} // namespace mlir::drc

#endif // DRC_DIALECT_MODELIMPORT_H
