//===- KernelRole.h - What a CPU kernel computes, in its name --*- C++ -*-===//
//
// The thread-parallel loops that become CPU kernels carry the part of the
// model they compute, and drc-outline-kernels appends it to the kernel's
// name (`train_step_kernel12_fused`): profiles (bench/cpu-profile, perf)
// then say where a step's time goes by part, and two models' kernels can be
// compared by part even though their numbering differs.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_PASSES_KERNELROLE_H
#define DRC_PASSES_KERNELROLE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::drc {

/// The discardable attribute naming a loop's part (a string).
inline constexpr llvm::StringLiteral kKernelRoleAttr = "drc.kernel_role";

/// A drc.fused region's tiles (drc-lower-to-linalg).
inline constexpr llvm::StringLiteral kFusedRole = "fused";
/// Causal attention's (sequence, head) blocks (drc-lower-to-linalg).
inline constexpr llvm::StringLiteral kAttentionRole = "attention";
/// A matrix product's row blocks or batch entries (drc-cpu-tile).
inline constexpr llvm::StringLiteral kMatmulRole = "matmul";

inline void setKernelRole(Operation *loop, llvm::StringRef role) {
  loop->setAttr(kKernelRoleAttr,
                Builder(loop->getContext()).getStringAttr(role));
}

} // namespace mlir::drc

#endif // DRC_PASSES_KERNELROLE_H
