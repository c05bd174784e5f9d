//===- HostCompiler.cpp - Compile a spec for the CPU in a tool -----------===//
#include "tools/common/HostCompiler.h"

#include "codegen/Registration.h"
#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include <filesystem>

namespace drc {

static mlir::DialectRegistry compilerRegistry() {
  mlir::DialectRegistry registry;
  mlir::drc::registerCompilerDialects(registry);
  return registry;
}

HostCompiler::HostCompiler() : ctx(compilerRegistry()) {
  // The location says where; the generic form of the op adds nothing.
  ctx.printOpOnDiagnostic(false);
  ctx.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
    // file:line:col: as compilers print it, so editors can jump there.
    auto report = [this](mlir::Diagnostic &diag, const char *kind) {
      std::string location;
      llvm::raw_string_ostream os(location);
      if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation()))
        os << file.getFilename().getValue() << ":" << file.getLine() << ":"
           << file.getColumn();
      else
        diag.getLocation().print(os);
      diagnostics += location + ": " + kind + diag.str() + "\n";
    };
    report(d, "");
    for (mlir::Diagnostic &note : d.getNotes())
      report(note, "note: ");
    return mlir::success();
  });
}

std::string HostCompiler::withDiagnostics(const std::string &what) const {
  return what + (diagnostics.empty() ? "" : ":\n" + diagnostics);
}

void HostCompiler::fail(const std::string &what) {
  throw Error(withDiagnostics(what));
}

mlir::OwningOpRef<mlir::ModuleOp>
HostCompiler::import(const ModelSpec &spec,
                     const mlir::drc::ImportOptions &options) {
  auto module = mlir::drc::importModelSpec(ctx, spec, options);
  if (mlir::failed(module))
    throw InputError(withDiagnostics("compiling " + spec.path + " failed"));
  return std::move(*module);
}

std::unique_ptr<mlir::drc::CpuModel>
HostCompiler::compile(const ModelSpec &spec, bool fuseTokenLocal) {
  auto module = import(spec);
  mlir::drc::TrainPipelineOptions train = mlir::drc::trainPipelineOptions(spec);
  train.fuseTokenLocal = fuseTokenLocal;
  auto model =
      mlir::drc::CpuModel::compileModule(*module, spec.tokensPerStep(), train);
  if (mlir::failed(model))
    fail("compiling " + spec.path + " failed");
  return std::move(*model);
}

std::unique_ptr<mlir::drc::CpuProbeModel>
HostCompiler::compileProbes(const ModelSpec &spec) {
  mlir::drc::ImportOptions options;
  options.probes = true;
  auto module = import(spec, options);
  auto model = mlir::drc::CpuProbeModel::compileModule(*module, spec);
  if (mlir::failed(model))
    fail("compiling the probes of " + spec.path + " failed");
  return std::move(*model);
}

mlir::OwningOpRef<mlir::ModuleOp>
HostCompiler::lower(const ModelSpec &spec, mlir::drc::CompileStage stage,
                    bool fuseTokenLocal,
                    const mlir::drc::ImportOptions &options) {
  auto module = import(spec, options);
  if (mlir::failed(mlir::drc::lowerToStage(*module, spec, stage, options,
                                           fuseTokenLocal)))
    fail("compiling " + spec.path + " failed");
  return module;
}

mlir::drc::CudaArtifacts HostCompiler::compileForCuda(const ModelSpec &spec,
                                                      bool fuseTokenLocal) {
  auto module = import(spec);
  mlir::drc::TrainPipelineOptions train = mlir::drc::trainPipelineOptions(spec);
  train.fuseTokenLocal = fuseTokenLocal;
  mlir::drc::CudaOptions cuda;
  cuda.spec = programFingerprint(spec);
  auto artifacts = mlir::drc::compileForCuda(*module, train, cuda);
  if (mlir::failed(artifacts))
    fail("compiling " + spec.path + " for CUDA failed");
  return std::move(*artifacts);
}

void HostCompiler::compileForCuda(const ModelSpec &spec,
                                  const std::string &directory,
                                  bool fuseTokenLocal) {
  mlir::drc::CudaArtifacts artifacts = compileForCuda(spec, fuseTokenLocal);
  std::filesystem::path dir = directory;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error("cannot create " + dir.string() + ": " + ec.message());
  writeFileAtomically((dir / "kernels.ptx").string(), artifacts.ptx);
  writeFileAtomically((dir / "manifest.json").string(),
                      toJson(artifacts.manifest) + "\n");
}

} // namespace drc
