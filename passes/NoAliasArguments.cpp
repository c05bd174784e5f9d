//===- NoAliasArguments.cpp - Kernel arguments that alias nothing written -===//
//
// A fused region's step reads a tile of the state and writes a tile of its
// result through separate pointer arguments. Without knowing that they do
// not overlap, LLVM must reload every value after each store (HC's backward
// step recomputes rsqrt(ss / C + eps) per element of [16, 4, 256] although
// it depends on the row only). The outliner knows where each argument
// points: the buffer it is a view of, and where its layout is static, the
// elements it spans. drc-mark-noalias proves, for every private function,
// which memref arguments no other argument overlaps where either is
// written, at every call, and records their pointers; drc-noalias-to-llvm
// puts LLVM's `noalias` on them after the conversion to the LLVM dialect
// (which drops `llvm.noalias` on memref arguments).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::drc {
#define GEN_PASS_DEF_MARKNOALIAS
#define GEN_PASS_DEF_NOALIASTOLLVM
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

/// On a private func.func: the positions of its LLVM arguments (after
/// convert-func-to-llvm) that may be `noalias`.
constexpr llvm::StringLiteral kNoAliasPointersAttr = "drc.noalias_pointers";

/// Where a memref value points: the value whose memory it views, and the
/// elements of that memory it spans from its aligned pointer, when its
/// layout says so.
struct Place {
  Value root;
  std::optional<std::pair<int64_t, int64_t>> span; ///< [begin, end)
};

/// The elements a memref of `type` spans from its aligned pointer: a static
/// shape, strides and offset give [offset, offset + sum (size-1) stride].
std::optional<std::pair<int64_t, int64_t>> spanOf(MemRefType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  int64_t begin = offset, end = offset + 1;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides)) {
    if (size == 0)
      return std::make_pair(offset, offset);
    (stride < 0 ? begin : end) += (size - 1) * stride;
  }
  return std::make_pair(begin, end);
}

/// The memref `op` makes a view of, if it is a view.
Value viewSource(Operation *op) {
  auto view = dyn_cast<ViewLikeOpInterface>(op);
  return view ? view.getViewSource() : Value();
}

/// The elements `view` spans: its type's, or where a cast or reshape made
/// that dynamic, its source's (the same elements).
std::optional<std::pair<int64_t, int64_t>> spanOfView(Value view) {
  if (auto span = spanOf(cast<MemRefType>(view.getType())))
    return span;
  Operation *def = view.getDefiningOp();
  if (isa_and_nonnull<memref::CastOp, memref::ExpandShapeOp,
                      memref::CollapseShapeOp, memref::TransposeOp>(def))
    return spanOfView(viewSource(def));
  return std::nullopt;
}

/// `value` traced through views to the memory they view.
Place placeOf(Value value) {
  Value root = value;
  bool sameBase = true;
  while (Operation *def = root.getDefiningOp()) {
    Value source = viewSource(def);
    if (!source)
      break;
    // memref.view moves the aligned pointer, and a view of another element
    // type counts other elements: offsets in the view are not the root's.
    sameBase &= !isa<memref::ViewOp>(def) &&
                cast<MemRefType>(source.getType()).getElementType() ==
                    cast<MemRefType>(root.getType()).getElementType();
    root = source;
  }
  Place place{root, std::nullopt};
  if (sameBase)
    place.span = spanOfView(value);
  return place;
}

bool isAllocation(Value root) {
  return root.getDefiningOp<memref::AllocOp>() ||
         root.getDefiningOp<memref::AllocaOp>();
}

/// The memref arguments of a function, by position.
SmallVector<unsigned> memrefArguments(func::FuncOp fn) {
  SmallVector<unsigned> positions;
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes()))
    if (isa<MemRefType>(type))
      positions.push_back(i);
  return positions;
}

/// What the program's functions do to their memref arguments, and what
/// their callers pass them.
class AliasFacts {
public:
  explicit AliasFacts(ModuleOp module) {
    for (auto fn : module.getOps<func::FuncOp>())
      functions[fn.getSymName()] = fn;
    module.walk([&](func::CallOp call) {
      if (func::FuncOp callee = functions.lookup(call.getCallee()))
        callsTo[callee].push_back(call);
    });
  }

  /// Whether `fn` may write memory through argument `index`. Unknown uses
  /// (and calls to functions without a body) count as writes.
  bool writes(func::FuncOp fn, unsigned index) {
    return writtenArguments(fn)[index];
  }

  /// Whether arguments `a` and `b` of `fn` may overlap at some call: a
  /// public function's arguments never do (the caller's contract,
  /// CpuJit::call), a private one's where some call passes overlapping
  /// places.
  bool mayOverlap(func::FuncOp fn, unsigned a, unsigned b) {
    if (a == b)
      return true;
    return overlappingArguments(fn).contains({std::min(a, b), std::max(a, b)});
  }

  /// Whether the places `x` and `y` in `fn` may share memory.
  bool mayOverlap(func::FuncOp fn, const Place &x, const Place &y) {
    if (x.root == y.root)
      return !x.span || !y.span ||
             (x.span->first < y.span->second && y.span->first < x.span->second);
    auto ax = dyn_cast<BlockArgument>(x.root),
         ay = dyn_cast<BlockArgument>(y.root);
    Block *entry = &fn.getBody().front();
    bool argX = ax && ax.getOwner() == entry,
         argY = ay && ay.getOwner() == entry;
    // A fresh allocation shares memory with no other root.
    if ((isAllocation(x.root) && (isAllocation(y.root) || argY)) ||
        (isAllocation(y.root) && argX))
      return false;
    if (argX && argY)
      return mayOverlap(fn, ax.getArgNumber(), ay.getArgNumber());
    return true; // some other root (a loop-carried memref, a global): unknown
  }

private:
  const llvm::BitVector &writtenArguments(func::FuncOp fn) {
    auto it = written.find(fn);
    if (it != written.end())
      return it->second;
    llvm::BitVector bits(fn.getNumArguments(), fn.isExternal());
    if (!fn.isExternal())
      for (unsigned i : memrefArguments(fn))
        bits[i] = writesThrough(fn.getArgument(i));
    return written[fn] = std::move(bits);
  }

  /// Whether some use of `value` or of a view of it may write memory.
  bool writesThrough(Value value) {
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (viewSource(user) == use.get()) {
        if (writesThrough(user->getResult(0)))
          return true;
        continue;
      }
      if (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp,
              memref::DimOp, memref::ExtractStridedMetadataOp>(user))
        continue;
      if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        if (use.get() == copy.getTarget())
          return true;
        continue;
      }
      if (auto linalg = dyn_cast<linalg::LinalgOp>(user)) {
        if (linalg.isDpsInit(&use))
          return true;
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(user)) {
        auto callee = functions.lookup(call.getCallee());
        if (!callee || writes(callee, use.getOperandNumber()))
          return true;
        continue;
      }
      return true;
    }
    return false;
  }

  const llvm::DenseSet<std::pair<unsigned, unsigned>> &
  overlappingArguments(func::FuncOp fn) {
    auto it = overlapping.find(fn);
    if (it != overlapping.end())
      return it->second;
    llvm::DenseSet<std::pair<unsigned, unsigned>> pairs;
    if (fn.isPrivate()) {
      SmallVector<unsigned> memrefs = memrefArguments(fn);
      for (func::CallOp call : callsTo.lookup(fn)) {
        auto caller = call->getParentOfType<func::FuncOp>();
        SmallVector<Place> places;
        for (unsigned i : memrefs)
          places.push_back(placeOf(call.getOperand(i)));
        for (unsigned x = 0; x < memrefs.size(); ++x)
          for (unsigned y = x + 1; y < memrefs.size(); ++y)
            if (mayOverlap(caller, places[x], places[y]))
              pairs.insert({memrefs[x], memrefs[y]});
      }
    }
    return overlapping[fn] = std::move(pairs);
  }

  llvm::DenseMap<func::FuncOp, SmallVector<func::CallOp>> callsTo;
  llvm::StringMap<func::FuncOp> functions;
  llvm::DenseMap<func::FuncOp, llvm::BitVector> written;
  llvm::DenseMap<func::FuncOp, llvm::DenseSet<std::pair<unsigned, unsigned>>>
      overlapping;
};

/// The LLVM argument that carries memref argument `index`'s aligned
/// pointer: convert-func-to-llvm passes a ranked memref as its descriptor's
/// fields (allocated and aligned pointers, offset, sizes, strides) and any
/// other argument as one value.
unsigned alignedPointerPosition(func::FuncOp fn, unsigned index) {
  unsigned position = 0;
  for (Type type : fn.getArgumentTypes().take_front(index))
    position +=
        isa<MemRefType>(type) ? 3 + 2 * cast<MemRefType>(type).getRank() : 1;
  return position + 1;
}

struct MarkNoAliasPass : mlir::drc::impl::MarkNoAliasBase<MarkNoAliasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    AliasFacts facts(module);
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.isPrivate() || fn.isExternal())
        continue;
      SmallVector<unsigned> memrefs = memrefArguments(fn);
      SmallVector<int64_t> pointers;
      for (unsigned a : memrefs) {
        bool alone = llvm::none_of(memrefs, [&](unsigned b) {
          return b != a && facts.mayOverlap(fn, a, b) &&
                 (facts.writes(fn, a) || facts.writes(fn, b));
        });
        if (alone)
          pointers.push_back(alignedPointerPosition(fn, a));
      }
      if (!pointers.empty())
        fn->setAttr(kNoAliasPointersAttr,
                    DenseI64ArrayAttr::get(&getContext(), pointers));
    }
  }
};

struct NoAliasToLLVMPass
    : mlir::drc::impl::NoAliasToLLVMBase<NoAliasToLLVMPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      auto pointers =
          fn->getAttrOfType<DenseI64ArrayAttr>(kNoAliasPointersAttr);
      if (!pointers)
        continue;
      fn->removeAttr(kNoAliasPointersAttr);
      for (int64_t position : pointers.asArrayRef()) {
        if (position >= fn.getNumArguments() ||
            !isa<LLVM::LLVMPointerType>(fn.getArgument(position).getType())) {
          fn.emitError() << "drc-noalias-to-llvm: argument " << position
                         << " is not a pointer: drc-mark-noalias and "
                            "convert-func-to-llvm disagree on the calling "
                            "convention";
          return signalPassFailure();
        }
        fn.setArgAttr(position, LLVM::LLVMDialect::getNoAliasAttrName(),
                      UnitAttr::get(&getContext()));
      }
    }
  }
};

} // namespace
