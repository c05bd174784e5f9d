//===- BankAdjoints.h - Depth banks' adjoints summed late -------*- C++ -*-===//
//
// A depth bank grows by appends (AttnRes's c_{k+1} = [c_k ; f_k]) and each
// consumer k reads all of its rows. In reverse mode the bank's adjoint is an
// accumulator that shrinks by a row per consumer:
//
//   S_k = rows(S_{k+1}, 0, s) + C_k     (C_k: consumer k's contribution)
//   dc_k = rows(S_k, 0, s - 1)          (the shorter bank's: a term of S_{k-1})
//   df   = rows(S_k, s - 1, 1)          (the appended row's: f_{k-1}'s adjoint)
//
// so each backward region reads the bank's s rows (for C_k's dots) and reads
// and writes S's s rows: three rows of traffic per row of the bank, against
// the forward pass's one.
//
// Deferring S_k: it is never formed. Each rows(S_k, o, n) becomes the sum
// of its terms' rows, sliced through the ops that compute each row of their
// result from the same rows of their set operands (add; mix with transposed
// coefficients; mix_coef_grad; a matmul of rows by a shared matrix;
// row_dot; rms_norm_grad; softmax_grad given its sums), down to the rows of
// narrow values (a few floats per row), of the bank itself and of the last
// accumulator formed. A softmax over the bank's rows whose weights y mix
// them (m = sum_i y_i c_i) has as its adjoint's sum sum_i y_i (c_i . dm) =
// dm . m: one dot per token (softmax_grad's `dot`), so its rows need no
// pass over the bank. The consumer's query-weight gradient (a normed
// linear's weight gradient, a sum over the rows) becomes the sum of its
// parts over the same row ranges.
//
// The appended row's adjoint is computed where S_k was, from the one bank
// row the sublayer appended. The rest is marked late (kRecomputedAttr) in
// one group per run of deferred accumulators (kLateGroupAttr), so that it
// joins the region that forms the next accumulator, weight-gradient parts
// included, which reads those bank rows anyway. Two of every three
// accumulators along a chain are deferred: the third consumer's region
// adds three contributions in one read-modify-write of the accumulator,
// which it writes over the last one formed in place. Per three consumers
// the bank's rows are read once and S's read and written once where they
// were read three times and S's read and written three times. The deferred
// consumers' regions write their contributions' ingredients instead: one
// row (the mix's adjoint dm) and a few floats per bank row.
//
// Works on the IR's structure: any accumulator that is a sum of per-token
// sets read back only by drc.rows, one of those rows a term of the adjoint
// of a shorter set, whatever scheme made it.
//
// Only the order of floating-point additions changes.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_BANKADJOINTS_H
#define DRC_PASSES_BANKADJOINTS_H

#include "passes/TokenLocalRegions.h"

namespace mlir::drc {

/// Defers two of every three bank adjoints along each chain in `fn`'s body,
/// as above.
void deferBankAdjoints(func::FuncOp fn, const TokenAnalysis &analysis);

} // namespace mlir::drc

#endif // DRC_PASSES_BANKADJOINTS_H
