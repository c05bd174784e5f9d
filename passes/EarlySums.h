//===- EarlySums.h - Adjoint contributions summed early ---------*- C++ -*-===//
//
// A state's adjoint is a sum of contributions, one per use in the forward
// pass, and drc-autodiff adds them in its reverse sweep's order. Some are
// ready before the next sublayer's backward (HC's width mix, mHC's
// H_res path) and some only after it (the pre-mix's path through the
// sublayer). In that order the early region writes each early contribution
// as its own state-sized tensor for the late region to add. drc-fuse-token-
// local first rewrites these sums so that the early region writes one:
//
// - sums of per-token values (trees of single-use drc.add) are rebuilt as
//   chains that add their terms in order of barrier depth, the earliest
//   first, so the early terms' partial sum is computed where they are;
// - a token-local op linear in an operand (view, scale's and mix's input,
//   a narrow matmul's left side, rms_norm_grad's adjoint) whose operand is
//   such a sum of early and late terms, and whose result is a term of
//   another sum, is applied to the early and the late terms separately
//   (f(a + b) = f(a) + f(b)), so that the early part joins the outer sum's
//   early terms. The early application repeats the op's work on the early
//   terms: a few flops per element, against a state-sized tensor written
//   and read.
//
// Both change the order of floating-point additions only.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_EARLYSUMS_H
#define DRC_PASSES_EARLYSUMS_H

#include "passes/TokenLocalRegions.h"

namespace mlir::drc {

/// Rewrites `fn`'s sums of per-token values as above.
void sumContributionsEarly(func::FuncOp fn, const TokenAnalysis &analysis);

} // namespace mlir::drc

#endif // DRC_PASSES_EARLYSUMS_H
