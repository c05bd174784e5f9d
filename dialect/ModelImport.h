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
  /// Also build the forward functions the layer probes run (below).
  bool probes = false;
};

/// A probe module (ImportOptions::probes) has, besides `@loss`, the
/// functions of ARCHITECTURES.md §4.3 over the depth states z_0 ... z_L:
///
///   @probe(tokens, targets) -> (states, lens[, transports], loss, S_0...,
///                               ..., S_{L-1}...)
///   @chain_<b>_<i>(tokens, targets, S...) -> (z_b, S after block b)
///   @end_<i>(tokens, targets, S...) -> (z_L, loss)
///
/// `states` is tensor<N x (L+1) x Z>: z_b is the scheme's @depth_state of
/// the state entering block b (z_L: @readout of the final state), or by
/// default the first state value flattened. `lens` is tensor<N x (L+1) x
/// vocab>: the logit lens of each z_b through the final norm and W_U (after
/// @readout when z_b is the state itself). `transports` (when @read marks a
/// result {drc.transport}) is tensor<N x 2L x n*n>: each sublayer's stream
/// map T_k, row-major, new stream i = sum_j T_k[i][j] old stream j. S_b...
/// are the state values entering block b.
///
/// The model without block s runs from S_s: the state passes block s
/// unchanged (an AttnRes bank gets no rows from it, later reads are
/// recomputed), then blocks s+1 ... L-1 and the end, each a function of the
/// state types it receives: one @chain_<b>_<i> per block b and distinct
/// types (i counts them), one @end_<i> per distinct final types. The
/// module's kSkipChainsAttr lists, for each s, the functions to call in
/// turn, each taking the state the one before it returned.
inline constexpr llvm::StringLiteral kSkipChainsAttr = "drc.skip_chains";

inline constexpr llvm::StringLiteral kTransportAttr = "drc.transport";

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
