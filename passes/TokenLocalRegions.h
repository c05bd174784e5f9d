//===- TokenLocalRegions.h - Which ops fuse, and into what -----*- C++ -*-===//
//
// The analysis behind drc-fuse-token-local and drc-compile --report. Every
// value of a function's body is shared (computed from parameters and
// constants alone), per-token (leading dimension = the tokens, row t
// depending only on token t's rows of per-token operands and on shared
// values) or other (reductions over tokens: parameter gradients, losses).
// A token-local op has per-token results and reads per-token values by
// rows and shared ones whole (see the pass description for which ops).
//
// Grouping: each op gets a barrier depth, the largest number of boundary
// ops (non-token-local ops on per-token or other values) on any def-use
// path into it. Token-local ops of one depth joined by def-use edges, or
// reading the same per-token value, form a region. A path between two ops
// of a region never passes a boundary op (it would raise the depth) nor a
// token-local op outside the region (that op would have the same depth and
// be joined to it), so a region can become one op.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_TOKENLOCALREGIONS_H
#define DRC_PASSES_TOKENLOCALREGIONS_H

#include "passes/Passes.h"

namespace mlir::drc {

enum class Rows { Shared, PerToken, Other };

/// Marks an op drc-fuse-token-local cloned into the backward pass to
/// recompute a forward value, or moved to where its result is read (a
/// forward value sunk into its reader, a deferred bank adjoint's rows):
/// grouped as late as its users allow.
inline constexpr llvm::StringLiteral kRecomputedAttr = "drc.recomputed";

/// On late ops (kRecomputedAttr) that belong together, the group's number:
/// each goes as late as the latest of its group. A deferred bank adjoint's
/// rows (BankAdjoints.h) join the region that forms the next accumulator,
/// and so do the parts of its weight gradient, which only a sum over tokens
/// reads.
inline constexpr llvm::StringLiteral kLateGroupAttr = "drc.late_group";

/// Whether a parameter matrix [rows, columns] is narrow: one side at most 32
/// and at most a quarter of the other (a coefficient projection or its
/// adjoint). Multiplying by it does ~2 x 32 flops per element moved, far
/// below any CPU's or GPU's flop/byte balance: memory-bound residual work,
/// not GEMM work.
bool isNarrowMatrix(int64_t rows, int64_t columns);

/// Whether `op` is an append that grows a depth bank: it extends another
/// append's result, or another append extends its result (AttnRes's
/// c_{k+1} = [c_k ; f_k]). Such appends are boundaries, not token-local
/// work: drc-store-banks writes each into one store in place.
bool isBankAppend(Operation *op);

struct TokenAnalysis;

/// Whether `op` is a sum over the tokens of per-token values that a fused
/// region can compute as per-tile partial sums: a drc.sum_leading over
/// tokens (a coefficient's bias gradient), a normed linear's weight
/// gradient (a coefficient projection's) or an RMSNorm gain's gradient, its
/// result a parameter gradient.
bool isTokenSum(Operation *op, const TokenAnalysis &analysis);

/// The class of every value of a function body, and its token count.
struct TokenAnalysis {
  int64_t tokens = 0; ///< 0 when the function takes no tokens
  DenseMap<Value, Rows> rows;

  Rows of(Value v) const {
    auto it = rows.find(v);
    return it == rows.end() ? Rows::Other : it->second;
  }
  bool leadingTokens(Value v) const {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() > 0 && type.getDimSize(0) == tokens;
  }
  /// The bytes of one token's rows of the per-token value `v`.
  int64_t bytesPerToken(Value v) const {
    auto type = cast<RankedTensorType>(v.getType());
    return type.getNumElements() / tokens *
           type.getElementType().getIntOrFloatBitWidth() / 8;
  }
};

/// Classifies the values of `fn`'s (single-block) body.
TokenAnalysis analyseTokens(func::FuncOp fn);

/// Whether token-local `op` reads `operand` row by row (row t for token t)
/// rather than whole.
bool readsRows(Operation *op, OpOperand &operand);

/// Token-local residual work: keeps token rows, reads a per-token operand,
/// reads rows only of per-token values (or of shared ones shaped per
/// token), and everything else whole from shared values.
bool isTokenLocal(Operation &op, const TokenAnalysis &analysis);

/// Each op's barrier depth (see above), as soon as possible; with
/// `lateRecomputed`, ops marked kRecomputedAttr as late as their users
/// allow (the depth that groups them with the region that needs them).
DenseMap<Operation *, int64_t> barrierDepths(func::FuncOp fn,
                                             const TokenAnalysis &analysis,
                                             bool lateRecomputed = true);

/// The token-local regions of `fn`, in block order of their first op, each
/// in block order; regions of one op included.
SmallVector<SmallVector<Operation *>>
tokenLocalRegions(func::FuncOp fn, const TokenAnalysis &analysis);

/// The index of each op's region in `regions`.
DenseMap<Operation *, size_t>
regionIndex(ArrayRef<SmallVector<Operation *>> regions);

/// Per sublayer boundary of the forward function `loss` and in total for
/// `train_step`: bytes per token the residual part reads and writes when
/// every op is its own kernel, when each region is one fused kernel, and
/// the minimum (the state read once and written once, plus the sublayer's
/// output read and its next input written). `module` is at the train-step
/// stage; `fusedModule` is the same after drc-fuse-token-local, whose
/// totals are measured on it.
std::string residualTrafficReport(ModuleOp module, ModuleOp fusedModule);

} // namespace mlir::drc

#endif // DRC_PASSES_TOKENLOCALREGIONS_H
