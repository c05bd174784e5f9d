//===- CpuJit.cpp - JIT of memref-only functions for the host ------------===//
#include "codegen/CpuJit.h"
#include "codegen/ScratchPool.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/Support/DynamicLibrary.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace mlir::drc;

FailureOr<EntryShapes> mlir::drc::recordEntryShapes(ModuleOp module) {
  EntryShapes shapes;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isPrivate())
      continue;
    auto &entry = shapes[fn.getSymName()];
    for (Type t : fn.getFunctionType().getInputs()) {
      auto memref = dyn_cast<MemRefType>(t);
      if (!memref || !memref.hasStaticShape())
        return fn.emitError() << "drc: entry point arguments must be "
                                 "statically shaped memrefs, found "
                              << t;
      entry.emplace_back(memref.getShape());
    }
  }
  return shapes;
}

FailureOr<std::unique_ptr<CpuJit>> CpuJit::create(ModuleOp llvmModule,
                                                  EntryShapes shapes) {
  static bool initialised = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialised;
  registerBuiltinDialectTranslation(*llvmModule.getContext());
  registerLLVMDialectTranslation(*llvmModule.getContext());
  registerOpenMPDialectTranslation(*llvmModule.getContext());
  // Parallel kernels call the OpenMP runtime; make its symbols resolvable.
  std::string error;
  if (llvm::sys::DynamicLibrary::LoadLibraryPermanently(DRC_LIBOMP_PATH,
                                                        &error))
    return llvmModule.emitError()
           << "drc: cannot load the OpenMP runtime " << DRC_LIBOMP_PATH << ": "
           << error << " (scripts/setup installs libomp-22-dev)";

  // Optimise for this CPU: without its target machine the O3 pipeline has
  // no cost model and leaves loops scalar.
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return llvmModule.emitError() << "drc: cannot describe this CPU: "
                                  << llvm::toString(builder.takeError());
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine)
    return llvmModule.emitError() << "drc: no LLVM target for this CPU: "
                                  << llvm::toString(machine.takeError());
  // The transformer is a function_ref: keep the callable alive here.
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0,
                                machine->get());
  ExecutionEngineOptions options;
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableObjectDump = getenv("DRC_DUMP_OBJECT") != nullptr;
  // `perf record -k 1` + `perf inject --jit` then names the kernels.
  options.enablePerfNotificationListener = getenv("DRC_PERF") != nullptr;
  auto engine =
      ExecutionEngine::create(llvmModule, options, std::move(*machine));
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    return llvmModule.emitError() << "drc: JIT compilation failed: " << message;
  }
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto bind = [&](const char *name, auto *function) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                 llvm::JITSymbolFlags::Exported};
    };
    bind("_mlir_memref_to_llvm_alloc", &scratchAlloc);
    bind("_mlir_memref_to_llvm_aligned_alloc", &scratchAlignedAlloc);
    bind("_mlir_memref_to_llvm_free", &scratchFree);
    return symbols;
  });
  // Materialise every entry point now: ORC compiles lazily, and the first
  // call would otherwise pay for code generation.
  for (const auto &entry : shapes)
    if (auto fn = (*engine)->lookup(("_mlir_ciface_" + entry.getKey()).str());
        !fn) {
      std::string message = llvm::toString(fn.takeError());
      return llvmModule.emitError() << "drc: JIT lookup failed: " << message;
    }
  if (const char *dump = getenv("DRC_DUMP_OBJECT"))
    (*engine)->dumpToObjectFile(dump);
  return std::unique_ptr<CpuJit>(
      new CpuJit(std::move(*engine), std::move(shapes)));
}

LogicalResult CpuJit::call(StringRef name, ArrayRef<void *> data) {
  auto it = shapes.find(name);
  if (it == shapes.end() || it->second.size() != data.size())
    return failure();
  // One descriptor per memref: {allocated, aligned, offset, sizes, strides}.
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPointers;
  for (auto [shape, ptr] : llvm::zip(it->second, data)) {
    std::vector<int64_t> d(3 + 2 * shape.size());
    d[0] = d[1] = reinterpret_cast<int64_t>(ptr);
    d[2] = 0;
    int64_t stride = 1;
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      d[3 + i] = shape[i];
      d[3 + shape.size() + i] = stride;
      stride *= shape[i];
    }
    descriptors.push_back(std::move(d));
  }
  for (auto &d : descriptors)
    descriptorPointers.push_back(d.data());
  SmallVector<void *> args;
  for (void *&p : descriptorPointers)
    args.push_back(&p);
  llvm::Error error =
      engine->invokePacked(("_mlir_ciface_" + name).str(), args);
  if (error) {
    llvm::consumeError(std::move(error));
    return failure();
  }
  return success();
}
