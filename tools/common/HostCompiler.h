//===- HostCompiler.h - Compile a spec for the CPU in a tool ----*- C++ -*-===//
//
// What drc-train, drc-eval and drc-compile share: an MLIR context with every
// dialect drc needs, and compilation that turns diagnostics into an error
// a tool reports: drc::InputError (exit status 2) where the spec and its
// scheme do not make a model, drc::Error (1) where compiling fails after.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TOOLS_COMMON_HOSTCOMPILER_H
#define DRC_TOOLS_COMMON_HOSTCOMPILER_H

#include "codegen/CpuProbeModel.h"
#include "codegen/CudaTarget.h"
#include "codegen/ModelCompiler.h"
#include "runtime/ModelSpec.h"

#include "mlir/IR/MLIRContext.h"

#include <memory>
#include <string>

namespace drc {

class HostCompiler {
public:
  HostCompiler();

  /// Compiles `spec` for the host CPU (token-local work fused unless
  /// `fuseTokenLocal` is off). Each of these throws InputError with the
  /// diagnostics where the model cannot be built from the spec and its
  /// scheme, and Error where compiling it fails after that.
  std::unique_ptr<mlir::drc::CpuModel> compile(const ModelSpec &spec,
                                               bool fuseTokenLocal = true);

  /// Compiles the forward functions the layer probes run (ImportOptions::
  /// probes).
  std::unique_ptr<mlir::drc::CpuProbeModel>
  compileProbes(const ModelSpec &spec);

  /// Lowers `spec` through `stage` (token-local work fused unless
  /// `fuseTokenLocal` is off).
  mlir::OwningOpRef<mlir::ModuleOp>
  lower(const ModelSpec &spec, mlir::drc::CompileStage stage,
        bool fuseTokenLocal = true,
        const mlir::drc::ImportOptions &options = {});

  /// Compiles `spec`'s loss and train step for an NVIDIA GPU: PTX and its
  /// launch manifest (codegen/CudaTarget.h).
  mlir::drc::CudaArtifacts compileForCuda(const ModelSpec &spec,
                                          bool fuseTokenLocal = true);

  /// compileForCuda, written to DIR/kernels.ptx and DIR/manifest.json
  /// (each atomically; DIR is created).
  void compileForCuda(const ModelSpec &spec, const std::string &directory,
                      bool fuseTokenLocal = true);

  mlir::MLIRContext &context() { return ctx; }

private:
  /// The model module of `spec`; an InputError with the diagnostics where
  /// it cannot be built (a scheme's or an option's mistake).
  mlir::OwningOpRef<mlir::ModuleOp>
  import(const ModelSpec &spec, const mlir::drc::ImportOptions &options = {});
  /// Throws Error with the diagnostics: compiling a built model failed.
  [[noreturn]] void fail(const std::string &what);
  /// `what`, then the diagnostics reported so far, one per line.
  std::string withDiagnostics(const std::string &what) const;
  mlir::MLIRContext ctx;
  std::string diagnostics;
};

} // namespace drc

#endif // DRC_TOOLS_COMMON_HOSTCOMPILER_H
