//===- CudaTarget.cpp - Programs as PTX and a launch manifest ------------===//
#include "codegen/CudaTarget.h"

#include "codegen/ModelCompiler.h"
#include "passes/LibraryGemm.h"
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

using namespace mlir;
using ::drc::JsonValue;

namespace {

/// Bufferization as for the CPU, then every linalg op as parallel loops and
/// the host's serial work as one-iteration parallel loops: the loop form
/// whose every top-level nest becomes one kernel, tiled into thread blocks
/// (drc-gpu-map-threads). A kernel's temporaries up
/// to 64 KiB go on its thread's stack (device malloc would be slow and its
/// heap small), larger ones in a slice per iteration of a host buffer
/// (drc-gpu-privatize-buffers); the host's become buffers again
/// (drc-gpu-wrap-serial).
constexpr const char *kGpuLoops =
    "func.func(drc-gpu-scalar-operands),canonicalize,"
    "func.func(drc-bank-stores-to-buffers,eliminate-empty-tensors),"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,"
    "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=65536 "
    "max-rank-of-allocated-memref=4}),"
    "func.func(drc-free-buffers,cse,canonicalize),"
    "func.func(drc-gpu-scalar-operands),canonicalize,"
    "drc-copies-to-linalg,"
    "func.func(drc-gpu-parallel-reductions,drc-gpu-vectorize-rows),"
    "func.func(drc-gpu-linalg-to-loops,drc-gpu-block-regions),"
    "scf-forall-to-parallel,canonicalize,"
    "func.func(drc-gpu-privatize-buffers,drc-gpu-wrap-serial),"
    "func.func(drc-gpu-map-threads)";

/// Each top-level nest onto blocks and threads, outlined into one
/// gpu.module.
constexpr const char *kToKernels =
    "func.func(drc-gpu-align-vectors,drc-gpu-sink-constants,"
    "drc-gpu-launch-block-regions,gpu-map-parallel-loops),"
    "func.func(convert-parallel-loops-to-gpu),gpu-kernel-outlining,"
    "drc-gpu-merge-modules,canonicalize";

void registerPassesOnce() {
  // The textual pipelines need the passes registered; again is harmless.
  static std::once_flag registered;
  std::call_once(registered, [] {
    registerAllPasses();
    mlir::drc::registerDrcPasses();
  });
}

std::string lowerToPtx(const mlir::drc::CudaOptions &options,
                       const std::string &libdevice) {
  return "nvvm-attach-target{chip=" + options.chip + " O=3 l=" + libdevice +
         "},gpu.module(expand-strided-metadata,lower-affine,"
         "convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse,"
         "reconcile-unrealized-casts),gpu-module-to-binary{format=isa}";
}

/// The names of the PTX's `.extern .func` declarations, comma-separated:
/// `.extern .func (.param .b64 retval) name(...)` or without the return.
std::string externalFunctions(StringRef ptx) {
  std::string names;
  for (size_t at = ptx.find(".extern .func"); at != StringRef::npos;
       at = ptx.find(".extern .func", at + 1)) {
    StringRef rest = ptx.substr(at + strlen(".extern .func")).ltrim();
    if (rest.starts_with("("))
      rest = rest.substr(rest.find(')') + 1).ltrim();
    StringRef name =
        rest.take_until([](char c) { return c == '(' || isspace(c); });
    names += (names.empty() ? "" : ", ") + name.str();
  }
  return names;
}

JsonValue integers(ArrayRef<int64_t> values) {
  JsonValue out = JsonValue::array();
  for (int64_t v : values)
    out.push(v);
  return out;
}

/// A scratch buffer's place in time (the first and last launches that use
/// it; its contents are undefined before the first) and in the function's
/// arena.
struct ScratchLife {
  int64_t entry, bytes, begin = INT64_MAX, end = -1, offset = 0;
};

/// Offsets for `lives` in one arena (256-byte aligned, first fit in the
/// order of first use): two buffers share bytes only when no launch from
/// the first use to the last of one uses the other. Returns the size.
int64_t placeInArena(std::vector<ScratchLife> &lives) {
  constexpr int64_t kAlign = 256;
  int64_t arena = 0;
  std::vector<ScratchLife *> order;
  for (ScratchLife &life : lives)
    order.push_back(&life);
  llvm::stable_sort(order, [](const ScratchLife *a, const ScratchLife *b) {
    return a->begin < b->begin;
  });
  std::vector<const ScratchLife *> live; // sorted by offset
  for (ScratchLife *next : order) {
    ScratchLife &life = *next;
    llvm::erase_if(live,
                   [&](const ScratchLife *l) { return l->end < life.begin; });
    int64_t at = 0;
    for (const ScratchLife *l : live) {
      if (at + life.bytes <= l->offset)
        break;
      at = std::max(at, (l->offset + l->bytes + kAlign - 1) / kAlign * kAlign);
    }
    life.offset = at;
    arena = std::max(arena, at + life.bytes);
    live.insert(
        llvm::upper_bound(live, &life,
                          [](const ScratchLife *a, const ScratchLife *b) {
                            return a->offset < b->offset;
                          }),
        &life);
  }
  return arena;
}

/// The buffer a view is a view of.
Value baseOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// The manifest of one host function: its buffers and launches.
class LaunchPlan {
public:
  explicit LaunchPlan(func::FuncOp func) : func(func) {}

  FailureOr<JsonValue> build() {
    JsonValue arguments = JsonValue::array();
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || !type.getLayout().isIdentity() || !type.hasStaticShape())
        return func.emitError("a GPU entry point takes static, contiguous "
                              "buffers only");
      buffers[arg] = int64_t(buffers.size());
      JsonValue a = JsonValue::object();
      a.set("shape", integers(type.getShape()));
      a.set("dtype", dtype(type.getElementType()));
      arguments.push(std::move(a));
    }
    std::vector<JsonValue> scratch;
    JsonValue launches = JsonValue::array();
    for (Operation &op : func.getBody().front()) {
      if (op.hasTrait<OpTrait::ConstantLike>() || isa<func::ReturnOp>(op) ||
          isa<ViewLikeOpInterface, memref::DeallocOp>(op))
        continue;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        MemRefType type = alloc.getType();
        if (!type.hasStaticShape() || !type.getLayout().isIdentity())
          return alloc.emitError("GPU scratch buffers must be static");
        buffers[alloc] = int64_t(buffers.size());
        lives.try_emplace(buffers[alloc],
                          ScratchLife{int64_t(scratch.size()), bytes(type)});
        JsonValue s = JsonValue::object();
        s.set("buffer", buffers[alloc]);
        s.set("bytes", bytes(type));
        scratch.push_back(std::move(s));
        continue;
      }
      if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        FailureOr<JsonValue> c = constant(global);
        if (failed(c))
          return failure();
        scratch.push_back(std::move(*c));
        continue;
      }
      if (op.hasAttr(mlir::drc::kFoldedFill))
        continue; // the product after it overwrites C
      if (isa<linalg::LinalgOp, gpu::LaunchFuncOp>(op)) {
        auto kernel = dyn_cast<gpu::LaunchFuncOp>(op);
        FailureOr<JsonValue> l =
            kernel ? launchOf(kernel) : gemmOf(cast<linalg::LinalgOp>(op));
        if (failed(l))
          return failure();
        launches.push(std::move(*l));
        ++launchCount;
        continue;
      }
      return op.emitError("'")
             << op.getName()
             << "' would run on the host of a GPU program, which only "
                "launches kernels and matrix products";
    }
    std::vector<ScratchLife> placed;
    for (auto &[buffer, life] : lives)
      placed.push_back(life);
    int64_t arena = placeInArena(placed);
    JsonValue scratchList = JsonValue::array();
    for (const ScratchLife &life : placed)
      scratch[size_t(life.entry)].set("offset", life.offset);
    for (JsonValue &s : scratch)
      scratchList.push(std::move(s));
    JsonValue out = JsonValue::object();
    out.set("arguments", std::move(arguments));
    out.set("arena_bytes", arena);
    out.set("buffers", std::move(scratchList));
    out.set("launches", std::move(launches));
    return out;
  }

private:
  func::FuncOp func;
  llvm::DenseMap<Value, int64_t> buffers;
  std::map<int64_t, ScratchLife> lives; ///< of the scratch buffers
  int64_t launchCount = 0;

  static std::string dtype(Type type) {
    if (type.isF32())
      return "f32";
    if (type.isInteger(32))
      return "i32";
    if (type.isF64())
      return "f64";
    if (type.isInteger(64) || type.isIndex())
      return "i64";
    if (type.isInteger(8))
      return "i8";
    return "unknown";
  }

  static int64_t bytes(MemRefType type) {
    return type.getNumElements() *
           int64_t(type.getElementType().isIntOrFloat()
                       ? type.getElementTypeBitWidth() / 8
                       : 8);
  }

  FailureOr<JsonValue> constant(memref::GetGlobalOp get) {
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    auto values =
        global
            ? dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr())
            : DenseElementsAttr();
    if (!values || !values.getElementType().isF32())
      return get.emitError("GPU constants must be dense f32 globals");
    buffers[get] = int64_t(buffers.size());
    JsonValue c = JsonValue::object(), data = JsonValue::array();
    c.set("buffer", buffers[get]);
    c.set("bytes", bytes(get.getType()));
    for (float v : values.getValues<float>())
      data.push(v);
    c.set("f32", std::move(data));
    return c;
  }

  /// A static view of an argument, scratch or constant buffer, which this
  /// launch uses (its buffer's life includes it); nothing for another value.
  std::optional<::drc::CudaOperand> viewOf(Value value) {
    // A kernel's argument takes the view with a dynamic offset
    // (drc-gpu-merge-modules); its place is the view's before the cast.
    while (auto cast = value.getDefiningOp<memref::CastOp>())
      value = cast.getSource();
    std::optional<::drc::CudaOperand> view = mlir::drc::typeView(value);
    auto it = buffers.find(baseOf(value));
    if (!view || it == buffers.end())
      return std::nullopt;
    if (auto life = lives.find(it->second); life != lives.end()) {
      life->second.begin = std::min(life->second.begin, launchCount);
      life->second.end = std::max(life->second.end, launchCount);
    }
    view->buffer = it->second;
    return view;
  }

  static JsonValue viewJson(const ::drc::CudaOperand &view, Type element) {
    JsonValue out = JsonValue::object();
    out.set("buffer", view.buffer);
    out.set("dtype", dtype(element));
    out.set("offset", view.offset);
    out.set("sizes", integers(view.sizes));
    out.set("strides", integers(view.strides));
    return out;
  }

  /// A matrix product the runtime hands to cuBLASLt
  /// (drc-gpu-linalg-to-loops left it).
  FailureOr<JsonValue> gemmOf(linalg::LinalgOp op) {
    std::optional<::drc::CudaGemm> gemm =
        mlir::drc::libraryGemm(op, [&](Value v) { return viewOf(v); });
    if (!gemm)
      return op.emitError("a product left to cuBLASLt must be a matmul of "
                          "static f32 views with contiguous rows or columns");
    Type f32 = Float32Type::get(op.getContext());
    JsonValue product = JsonValue::object();
    product.set("a", viewJson(gemm->a, f32));
    product.set("b", viewJson(gemm->b, f32));
    product.set("c", viewJson(gemm->c, f32));
    if (op->hasAttr(mlir::drc::kOverwrites))
      product.set("accumulate", false);
    JsonValue out = JsonValue::object();
    out.set("gemm", std::move(product));
    return out;
  }

  /// A kernel operand: a view of a buffer, or a constant scalar.
  FailureOr<JsonValue> operand(gpu::LaunchFuncOp launch, Value value) {
    JsonValue out = JsonValue::object();
    if (auto type = dyn_cast<MemRefType>(value.getType())) {
      std::optional<::drc::CudaOperand> view = viewOf(value);
      if (!view)
        return launch.emitError("a kernel operand must be a static view of "
                                "an argument, scratch or constant buffer");
      return viewJson(*view, type.getElementType());
    }
    Attribute attr;
    if (!matchPattern(value, m_Constant(&attr)))
      return launch.emitError("a scalar kernel operand must be a constant");
    if (auto i = dyn_cast<IntegerAttr>(attr))
      out.set(dtype(value.getType()), i.getInt());
    else if (auto f = dyn_cast<FloatAttr>(attr)) {
      // JSON has no infinities: those (a max-reduction's start) are text.
      double v = f.getValueAsDouble();
      out.set(dtype(value.getType()), std::isfinite(v) ? JsonValue(v)
                                      : std::isnan(v)
                                          ? JsonValue("nan")
                                          : JsonValue(v > 0 ? "inf" : "-inf"));
    } else
      return launch.emitError("unsupported scalar kernel operand");
    return out;
  }

  FailureOr<JsonValue> launchOf(gpu::LaunchFuncOp launch) {
    auto dims = [&](gpu::KernelDim3 d) -> FailureOr<JsonValue> {
      JsonValue out = JsonValue::array();
      for (Value v : {d.x, d.y, d.z}) {
        APInt c;
        if (!matchPattern(v, m_ConstantInt(&c)))
          return launch.emitError("launch sizes must be constants");
        out.push(c.getSExtValue());
      }
      return out;
    };
    FailureOr<JsonValue> grid = dims(launch.getGridSizeOperandValues());
    FailureOr<JsonValue> block = dims(launch.getBlockSizeOperandValues());
    if (failed(grid) || failed(block))
      return failure();
    if (launch.getDynamicSharedMemorySize() || launch.getClusterSizeX())
      return launch.emitError("launches with dynamic shared memory or "
                              "clusters are not supported yet");
    JsonValue out = JsonValue::object(), operands = JsonValue::array();
    out.set("kernel", launch.getKernelName().str());
    out.set("grid", std::move(*grid));
    out.set("block", std::move(*block));
    for (Value v : launch.getKernelOperands()) {
      FailureOr<JsonValue> o = operand(launch, v);
      if (failed(o))
        return failure();
      operands.push(std::move(*o));
    }
    out.set("operands", std::move(operands));
    return out;
  }
};

} // namespace

mlir::drc::TrainPipelineOptions
mlir::drc::gpuTrainOptions(TrainPipelineOptions train) {
  if (train.fuseTileTokens == 0)
    train.fuseTileTokens = 1;
  train.denseEmbeddingGrad = true;
  train.headBlocks = false;
  return train;
}

void mlir::drc::buildGpuLoopsPipeline(OpPassManager &pm) {
  registerPassesOnce();
  if (failed(parsePassPipeline(kGpuLoops, pm)))
    llvm::report_fatal_error("drc: the built-in GPU pipeline does not parse");
}

std::string mlir::drc::findLibdevice(const CudaOptions &options) {
  namespace fs = std::filesystem;
  if (!options.libdevice.empty())
    return fs::exists(options.libdevice) ? options.libdevice : "";
  for (const char *root : {static_cast<const char *>(std::getenv("CUDA_HOME")),
                           "/usr/local/cuda"}) {
    if (!root)
      continue;
    fs::path file = fs::path(root) / "nvvm" / "libdevice" / "libdevice.10.bc";
    if (fs::exists(file))
      return file.string();
  }
  return "";
}

FailureOr<mlir::drc::CudaArtifacts>
mlir::drc::compileForCuda(ModuleOp module,
                          const TrainPipelineOptions &trainOptions,
                          const CudaOptions &options) {
  TrainPipelineOptions train = gpuTrainOptions(trainOptions);
  std::string libdevice = findLibdevice(options);
  if (libdevice.empty())
    return module.emitError(
        "no CUDA libdevice (nvvm/libdevice/libdevice.10.bc under $CUDA_HOME "
        "or /usr/local/cuda): the GPU kernels' math needs it");
  PassManager toLinalg(module.getContext());
  buildTrainStepPipeline(toLinalg, train);
  if (failed(toLinalg.run(module)))
    return failure();
  ::drc::ParameterTable table = parameterTable(module);
  toLinalg.clear();
  buildLowerToLinalgPipeline(toLinalg, train);
  if (failed(toLinalg.run(module)))
    return failure();
  PassManager toKernels(module.getContext());
  buildGpuLoopsPipeline(toKernels);
  if (failed(parsePassPipeline(kToKernels, toKernels)))
    return module.emitError("drc: the built-in GPU pipeline does not parse");
  if (failed(toKernels.run(module)))
    return failure();

  CudaArtifacts artifacts;
  artifacts.manifest = JsonValue::object();
  artifacts.manifest.set("format", "drc-cuda-1");
  artifacts.manifest.set("chip", options.chip);
  artifacts.manifest.set("spec", options.spec);
  artifacts.manifest.set("ptx", "kernels.ptx");
  artifacts.manifest.set("memref_abi", "descriptor");
  JsonValue functions = JsonValue::object();
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func.isPrivate())
      continue;
    FailureOr<JsonValue> plan = LaunchPlan(func).build();
    if (failed(plan))
      return failure();
    functions.set(func.getSymName().str(), std::move(*plan));
  }
  artifacts.manifest.set("functions", std::move(functions));
  artifacts.manifest.set("parameters", table.toText());

  PassManager toPtx(module.getContext());
  if (failed(parsePassPipeline(lowerToPtx(options, libdevice), toPtx)))
    return module.emitError("drc: the built-in PTX pipeline does not parse");
  if (failed(toPtx.run(module)))
    return failure();
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      artifacts.ptx += cast<gpu::ObjectAttr>(object).getObject().str();
  if (artifacts.ptx.empty())
    return module.emitError("the GPU pipeline produced no PTX");
  if (std::string missing = externalFunctions(artifacts.ptx); !missing.empty())
    return module.emitError("the PTX calls functions it does not define "
                            "(.extern .func): " +
                            missing + "; libdevice did not resolve them");
  return artifacts;
}
