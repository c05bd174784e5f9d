//===- CpuJit.cpp - JIT of memref-only functions for the host ------------===//
#include "codegen/CpuJit.h"
#include "codegen/CpuPipeline.h"
#include "codegen/ObjectCache.h"
#include "codegen/ScratchPool.h"
#include "passes/KernelRole.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/SmallVectorMemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Scalar/DCE.h"
#include "llvm/Transforms/Scalar/InstSimplifyPass.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <algorithm>
#include <thread>

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

/// Name of the packed entry of `name`: void(void **descriptors).
static std::string packedName(StringRef name) {
  return ("drc_packed_" + name).str();
}

/// Adds, for each entry point, `drc_packed_<name>(ptr *descriptors)` calling
/// its C interface `_mlir_ciface_<name>(ptr, ptr, ...)` with the descriptor
/// pointers of the array, so that any entry can be called through one C type.
static LogicalResult addPackedEntries(llvm::Module &module,
                                      const EntryShapes &shapes,
                                      ModuleOp where) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  for (const auto &entry : shapes) {
    llvm::Function *target =
        module.getFunction(("_mlir_ciface_" + entry.getKey()).str());
    if (!target || target->arg_size() != entry.getValue().size() ||
        llvm::any_of(target->args(),
                     [&](llvm::Argument &a) { return a.getType() != ptr; }))
      return where.emitError() << "drc: entry point " << entry.getKey()
                               << " has no C interface taking one memref "
                                  "descriptor pointer per argument";
    auto *packed = llvm::Function::Create(
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false),
        llvm::GlobalValue::ExternalLinkage, packedName(entry.getKey()), module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    SmallVector<llvm::Value *> args;
    for (unsigned i = 0; i < target->arg_size(); ++i)
      args.push_back(
          b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, packed->getArg(0), i)));
    b.CreateCall(target, args);
    b.CreateRetVoid();
  }
  return success();
}

/// Turns off LLVM's post-register-allocation list scheduler, as llc's
/// -post-RA-scheduler=false does: the option is process-wide, and must be
/// given (not just false) to override the subtarget. x86 runs it for Zen
/// cores; quadratic in a block's length, it took a third of the code
/// generation of Full AttnRes's unrolled kernels for no step time an
/// out-of-order core could tell apart (docs/compiler.md).
static void disablePostRaScheduler() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("post-RA-scheduler");
  if (it == options.end()) {
    llvm::errs() << "drc: warning: this LLVM has no post-RA-scheduler option; "
                    "compiles take longer\n";
    return;
  }
  (void)it->second->addOccurrence(/*pos=*/1, "post-RA-scheduler", "false");
}

/// Clears `reassoc` from the float additions and subtractions of an
/// optimised module, for the code generator. The loop vectoriser has used
/// it: a sum along a row (a norm's Σx², a fused tile's Σ_c h·dH') runs as
/// 4 partial sums of 16 lanes, 4 independent chains of FMAs. Left on, the
/// code generator's FMA combine folds each partial sum into the next
/// ((a·b + c) + s -> a·b + (c + s)), one chain of 16 dependent FMAs per 256
/// floats where the loop was unrolled, each waiting 4 cycles for the one
/// before (HC's dA = Σ_c h dH' step took 19% fewer samples without it).
/// Calls (the vectoriser's final reductions across lanes) keep their
/// flags.
static void keepPartialSumsApart(llvm::Module &module) {
  for (llvm::Function &fn : module)
    for (llvm::Instruction &inst : llvm::instructions(fn))
      if (inst.getOpcode() == llvm::Instruction::FAdd ||
          inst.getOpcode() == llvm::Instruction::FSub)
        inst.setHasAllowReassoc(false);
}

/// `machine`'s code generator on an optimised module, to an object.
static llvm::Error emitObject(llvm::Module &module,
                              llvm::TargetMachine &machine,
                              SmallVectorImpl<char> &object) {
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(module);
  return llvm::Error::success();
}

/// Whether `fn` is an entry point, its C interface or its packed entry.
static bool isEntryFunction(const llvm::Function &fn,
                            const EntryShapes &shapes) {
  StringRef name = fn.getName();
  return shapes.count(name) ||
         (name.consume_front("_mlir_ciface_") && shapes.count(name)) ||
         (name.consume_front("drc_packed_") && shapes.count(name));
}

/// Whether `value` refers to a global of local linkage other than an entry
/// function (which a module of the entries alone could not see).
static bool refersToLocal(const llvm::Value *value, const EntryShapes &shapes) {
  if (auto *fn = dyn_cast<llvm::Function>(value))
    return fn->hasLocalLinkage() && !isEntryFunction(*fn, shapes);
  if (auto *global = dyn_cast<llvm::GlobalValue>(value))
    return global->hasLocalLinkage();
  if (auto *constant = dyn_cast<llvm::ConstantExpr>(value))
    return llvm::any_of(constant->operands(), [&](const llvm::Use &op) {
      return refersToLocal(op.get(), shapes);
    });
  return false;
}

/// Moves the entry points (with their C interfaces and packed entries) out
/// of `module` into a module of their own, compiled without optimisation
/// (compileObjects): an entry point is one basic block of thousands of
/// kernel calls, each argument a memref descriptor built and taken apart
/// field by field, and runs once per step. There InstSimplify reads every
/// field straight from where it was set, and fast instruction selection
/// and register allocation do the rest: the entries of HC at d_model 56 took
/// 1.35 s of code generation at O3 with `optnone` and take 0.36 s so.
/// Returns null, moving nothing, where an entry calls or reads something
/// local to `module`.
static std::unique_ptr<llvm::Module>
splitOffEntries(llvm::Module &module, const EntryShapes &shapes) {
  SmallVector<llvm::Function *> entries;
  for (llvm::Function &fn : module)
    if (!fn.isDeclaration() && isEntryFunction(fn, shapes))
      entries.push_back(&fn);
  for (llvm::Function *fn : entries)
    for (const llvm::Instruction &inst : llvm::instructions(*fn))
      for (const llvm::Use &op : inst.operands())
        if (refersToLocal(op.get(), shapes))
          return nullptr;
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> split =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue *global) {
        auto *fn = dyn_cast<llvm::Function>(global);
        return fn && isEntryFunction(*fn, shapes);
      });
  for (llvm::Function *fn : entries)
    fn->dropAllReferences();
  for (llvm::Function *fn : entries)
    fn->eraseFromParent();

  llvm::PassBuilder builder;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::FunctionPassManager simplify;
  simplify.addPass(llvm::InstSimplifyPass());
  simplify.addPass(llvm::DCEPass());
  for (llvm::Function &fn : *split)
    if (!fn.isDeclaration()) {
      fn.removeFnAttr(llvm::Attribute::OptimizeNone);
      simplify.run(fn, functions);
    }
  return split;
}

/// The module split into `parts` parts (llvm::SplitModule), then O3 and
/// code generation of each on its own thread and LLVM context. Kernels are
/// already vectorised and every call passes a kernel its views, so the
/// optimiser gains nothing from seeing a kernel's callers (the same step
/// times as O3 on the whole module first, measured with bench/ab-train),
/// and the optimiser's time is split across cores too (docs/compiler.md).
/// `entries` (splitOffEntries), if given, is one more part, compiled at O0.
static llvm::Expected<std::vector<SmallVector<char, 0>>>
compileObjects(llvm::Module &module, const llvm::Module *entries,
               const llvm::orc::JITTargetMachineBuilder &builder,
               unsigned parts) {
  std::vector<SmallVector<char, 0>> bitcode;
  llvm::SplitModule(
      module, parts,
      [&](std::unique_ptr<llvm::Module> part) {
        SmallVector<char, 0> code;
        llvm::raw_svector_ostream os(code);
        llvm::WriteBitcodeToFile(*part, os);
        bitcode.push_back(std::move(code));
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  // The entries' part, if any, is the last: code generation only, at O0.
  size_t entryPart = entries ? bitcode.size() : SIZE_MAX;
  if (entries) {
    SmallVector<char, 0> code;
    llvm::raw_svector_ostream os(code);
    llvm::WriteBitcodeToFile(*entries, os);
    bitcode.push_back(std::move(code));
  }
  std::vector<SmallVector<char, 0>> objects(bitcode.size());
  std::vector<std::string> errors(bitcode.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bitcode.size(); ++i)
    threads.emplace_back([&, i] {
      llvm::LLVMContext context;
      auto part = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(
              llvm::StringRef(bitcode[i].data(), bitcode[i].size()), "part"),
          context);
      if (!part) {
        errors[i] = llvm::toString(part.takeError());
        return;
      }
      llvm::orc::JITTargetMachineBuilder own = builder;
      if (i == entryPart)
        own.setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
      auto partMachine = own.createTargetMachine();
      if (!partMachine) {
        errors[i] = llvm::toString(partMachine.takeError());
        return;
      }
      if (i == entryPart) {
        if (llvm::Error e = emitObject(**part, **partMachine, objects[i]))
          errors[i] = llvm::toString(std::move(e));
        return;
      }
      if (llvm::Error e = makeOptimizingTransformer(
              /*optLevel=*/3, /*sizeLevel=*/0,
              partMachine->get())(part->get())) {
        errors[i] = llvm::toString(std::move(e));
        return;
      }
      keepPartialSumsApart(**part);
      if (llvm::Error e = emitObject(**part, **partMachine, objects[i]))
        errors[i] = llvm::toString(std::move(e));
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty())
      return llvm::createStringError(e);
  return objects;
}

/// The bytes of `program` that its lowering depends on: MLIR bytecode
/// without locations (the spec's path does not change the code).
static std::string programBytes(ModuleOp program) {
  OwningOpRef<ModuleOp> copy = program.clone();
  PassManager strip(program.getContext());
  strip.addPass(createStripDebugInfoPass());
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  if (failed(strip.run(*copy)) || failed(writeBytecodeToFile(*copy, os)))
    return "";
  return bytes;
}

FailureOr<std::unique_ptr<CpuJit>>
CpuJit::create(ModuleOp program, EntryShapes shapes, bool gpuLoops) {
  static bool initialised = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    disablePostRaScheduler();
    return true;
  }();
  (void)initialised;
  // Parallel kernels call the OpenMP runtime; make its symbols resolvable.
  std::string error;
  if (llvm::sys::DynamicLibrary::LoadLibraryPermanently(DRC_LIBOMP_PATH,
                                                        &error))
    return program.emitError()
           << "drc: cannot load the OpenMP runtime " << DRC_LIBOMP_PATH << ": "
           << error << " (scripts/setup installs libomp-22-dev)";

  // Optimise for this CPU: without its target machine the O3 pipeline has
  // no cost model and leaves loops scalar.
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return program.emitError() << "drc: cannot describe this CPU: "
                               << llvm::toString(builder.takeError());
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine)
    return program.emitError() << "drc: no LLVM target for this CPU: "
                               << llvm::toString(machine.takeError());

  // One part per core, at most 8.
  unsigned parts = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  // DRC_PERF_STEPS keeps a fused region's steps out of the loops that call
  // them (LLVM inlines the small ones), so that a profile names each step.
  bool separateSteps = getenv("DRC_PERF_STEPS") != nullptr;
  // The program is the key's first part; what else changes the objects
  // follows it, after a NUL.
  std::string key = programBytes(program); // empty: no program entry
  if (!key.empty()) {
    key += '\0';
    key += gpuLoops ? "gpu-loops" : "cpu";
    if (separateSteps)
      key += " separate-steps";
  }
  ObjectCache programCache = ObjectCache::forProgram(key, **machine, parts);
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects =
      programCache.load();
  bool fromCache = !objects.empty();
  if (!fromCache) {
    // Verified once, at the end: verifying the whole module after each of
    // the pipeline's passes took a quarter of its time (HC L8 at d_model 56:
    // 4.0 s against 3.0 s). drc-opt --drc-cpu-codegen, which the lit tests
    // run, still verifies after every pass.
    PassManager codegen(program.getContext());
    codegen.enableVerifier(false);
    buildCpuCodegenPipeline(codegen, gpuLoops);
    if (failed(codegen.run(program)) || failed(verify(program)))
      return failure();
    registerBuiltinDialectTranslation(*program.getContext());
    registerLLVMDialectTranslation(*program.getContext());
    registerOpenMPDialectTranslation(*program.getContext());
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> module =
        translateModuleToLLVMIR(program, llvmContext);
    if (!module)
      return program.emitError() << "drc: translation to LLVM IR failed";
    module->setTargetTriple((*machine)->getTargetTriple());
    module->setDataLayout((*machine)->createDataLayout());
    if (failed(addPackedEntries(*module, shapes, program)))
      return failure();
    // An entry point is one basic block of thousands of kernel calls, buffer
    // allocations and descriptor updates; LLVM's instruction schedulers are
    // quadratic in block size and spent most of a minute on it. It runs
    // once per step, so it is compiled without optimisation (in a module of
    // its own, splitOffEntries; optnone where that cannot be); the kernels
    // are not.
    for (const auto &entry : shapes)
      if (llvm::Function *fn = module->getFunction(entry.getKey())) {
        fn->addFnAttr(llvm::Attribute::OptimizeNone);
        fn->addFnAttr(llvm::Attribute::NoInline);
      }
    if (separateSteps)
      for (llvm::Function &fn : *module)
        if (!fn.isDeclaration() && isKernelStepName(fn.getName()))
          fn.addFnAttr(llvm::Attribute::NoInline);
    ObjectCache moduleCache = ObjectCache::forModule(*module, **machine, parts);
    objects = moduleCache.load();
    fromCache = !objects.empty();
    if (!fromCache) {
      std::unique_ptr<llvm::Module> entries = splitOffEntries(*module, shapes);
      auto code = compileObjects(*module, entries.get(), *builder, parts);
      if (!code)
        return program.emitError() << "drc: LLVM compilation failed: "
                                   << llvm::toString(code.takeError());
      moduleCache.store(*code);
      for (SmallVector<char, 0> &object : *code)
        objects.push_back(std::make_unique<llvm::SmallVectorMemoryBuffer>(
            std::move(object), "drc-program.o",
            /*RequiresNullTerminator=*/false));
    }
    programCache.linkTo(moduleCache);
  }
  if (const char *dump = getenv("DRC_DUMP_OBJECT"))
    for (size_t i = 0; i < objects.size(); ++i) {
      std::error_code ec;
      llvm::raw_fd_ostream out(std::string(dump) + "." + std::to_string(i), ec);
      if (!ec)
        out << objects[i]->getBuffer();
    }

  // Link the object into this process. `perf record -k 1` + `perf inject
  // --jit` name the kernels when DRC_PERF is set.
  bool perf = getenv("DRC_PERF") != nullptr;
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(*builder)
          .setObjectLinkingLayerCreator(
              [perf](llvm::orc::ExecutionSession &es)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                auto layer =
                    std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                        es, [](const llvm::MemoryBuffer &) {
                          return std::make_unique<llvm::SectionMemoryManager>();
                        });
                if (perf)
                  if (auto *listener =
                          llvm::JITEventListener::createPerfJITEventListener())
                    layer->registerJITEventListener(*listener);
                return layer;
              })
          .create();
  if (!jit)
    return program.emitError()
           << "drc: cannot create the JIT: " << llvm::toString(jit.takeError());
  llvm::orc::JITDylib &lib = (*jit)->getMainJITDylib();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return program.emitError()
           << "drc: " << llvm::toString(process.takeError());
  lib.addGenerator(std::move(*process));
  // Temporaries come from the scratch pool (ScratchPool.h).
  llvm::orc::MangleAndInterner mangle((*jit)->getExecutionSession(),
                                      (*jit)->getDataLayout());
  llvm::orc::SymbolMap pool;
  auto bind = [&](const char *name, auto *function) {
    pool[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                          llvm::JITSymbolFlags::Exported};
  };
  bind("_mlir_memref_to_llvm_alloc", &scratchAlloc);
  bind("_mlir_memref_to_llvm_aligned_alloc", &scratchAlignedAlloc);
  bind("_mlir_memref_to_llvm_free", &scratchFree);
  if (llvm::Error e = lib.define(llvm::orc::absoluteSymbols(std::move(pool))))
    return program.emitError() << "drc: " << llvm::toString(std::move(e));
  for (std::unique_ptr<llvm::MemoryBuffer> &object : objects)
    if (llvm::Error e = (*jit)->addObjectFile(std::move(object)))
      return program.emitError()
             << "drc: cannot load the program's object code: "
             << llvm::toString(std::move(e));

  // Resolve every entry point now: linking happens on first lookup.
  llvm::StringMap<Packed> entries;
  for (const auto &entry : shapes) {
    auto address = (*jit)->lookup(packedName(entry.getKey()));
    if (!address)
      return program.emitError() << "drc: JIT lookup failed: "
                                 << llvm::toString(address.takeError());
    entries[entry.getKey()] = address->toPtr<Packed>();
  }
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(*jit), std::move(shapes),
                                            std::move(entries), fromCache));
}

LogicalResult CpuJit::call(StringRef name, ArrayRef<void *> data) {
  auto it = shapes.find(name);
  if (it == shapes.end() || it->second.size() != data.size())
    return failure();
  // One descriptor per memref: {allocated, aligned, offset, sizes, strides}.
  SmallVector<SmallVector<int64_t, 8>> descriptors;
  SmallVector<void *> pointers;
  for (auto [shape, ptr] : llvm::zip(it->second, data)) {
    SmallVector<int64_t, 8> d(3 + 2 * shape.size());
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
    pointers.push_back(d.data());
  entries.lookup(name)(pointers.data());
  return success();
}
