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
#include "llvm/ADT/StringExtras.h"

#include <string>

namespace mlir::drc {

/// The discardable attribute naming a loop's part (a string).
inline constexpr llvm::StringLiteral kKernelRoleAttr = "drc.kernel_role";

/// A drc.fused region's tiles (drc-lower-to-linalg).
inline constexpr llvm::StringLiteral kFusedRole = "fused";
/// Causal attention's (sequence, head) blocks (drc-lower-to-linalg).
inline constexpr llvm::StringLiteral kAttentionRole = "attention";
/// A matrix product's row blocks or batch entries (drc-cpu-tile).
inline constexpr llvm::StringLiteral kMatmulRole = "matmul";

/// The name of step `index` of `kernel` (drc-outline-kernels outlines each
/// loop nest of a parallel loop's iteration as a step: kernelN_PART_stepM).
inline std::string kernelStepName(llvm::StringRef kernel, size_t index) {
  return (kernel + "_step" + llvm::Twine(index)).str();
}

/// Whether `name` is a kernel step's (kernelStepName).
inline bool isKernelStepName(llvm::StringRef name) {
  size_t at = name.rfind("_step");
  return at != llvm::StringRef::npos && at + 5 < name.size() &&
         llvm::all_of(name.substr(at + 5), llvm::isDigit);
}

/// The name drc-outline-kernels gives kernel `kernel` whose loop computes
/// `role`: `train_step_kernel12` + `fused` -> `train_step_kernel12_fused`.
inline std::string kernelRoleName(llvm::StringRef kernel,
                                  llvm::StringRef role) {
  return (kernel + "_" + role).str();
}

/// Whether a kernel named `name` (kernelRoleName) computes `role`.
inline bool isKernelOfRole(llvm::StringRef name, llvm::StringRef role) {
  return name.consume_back(role) && name.ends_with("_");
}

inline void setKernelRole(Operation *loop, llvm::StringRef role) {
  loop->setAttr(kKernelRoleAttr,
                Builder(loop->getContext()).getStringAttr(role));
}

} // namespace mlir::drc

#endif // DRC_PASSES_KERNELROLE_H
