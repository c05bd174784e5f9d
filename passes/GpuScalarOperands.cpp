//===- GpuScalarOperands.cpp - Host scalars become kernel operands -------===//
#include "passes/Passes.h"

#include "mlir/Transforms/RegionUtils.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUSCALAROPERANDS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// A read of a 0-d tensor or buffer: what a kernel takes as an operand.
bool isScalarSource(Operation *op) {
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return extract.getTensor().getType().getRank() == 0;
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRefType().getRank() == 0;
  return false;
}

/// The 0-d tensor or buffer a scalar source reads.
Value sourceOf(Operation *op) {
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return extract.getTensor();
  return cast<memref::LoadOp>(op).getMemRef();
}

/// The ops computing `value` from scalar sources through pure scalar ops,
/// defs first, or failure when something else feeds it.
LogicalResult scalarSlice(Value value, SetVector<Operation *> &slice) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || slice.contains(def))
    return success(def && slice.contains(def));
  if (isScalarSource(def)) {
    slice.insert(def);
    return success();
  }
  if (isa<tensor::ExtractOp, memref::LoadOp>(def))
    return failure();
  if (!isPure(def) || def->getNumResults() != 1 ||
      !def->getResult(0).getType().isIntOrIndexOrFloat())
    return failure();
  for (Value operand : def->getOperands())
    if (failed(scalarSlice(operand, slice)))
      return failure();
  slice.insert(def);
  return success();
}

struct GpuScalarOperandsPass
    : mlir::drc::impl::GpuScalarOperandsBase<GpuScalarOperandsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    for (linalg::GenericOp generic : generics)
      rewrite(generic);
  }

  void rewrite(linalg::GenericOp generic) {
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(generic.getRegion(), captured);
    SetVector<Operation *> slice;
    SmallVector<Value> scalars;
    for (Value v : captured) {
      Operation *def = v.getDefiningOp();
      if (!def || def->hasTrait<OpTrait::ConstantLike>() ||
          !v.getType().isIntOrIndexOrFloat())
        continue;
      SetVector<Operation *> own;
      if (failed(scalarSlice(v, own)))
        continue;
      // A generic on tensors cannot take a buffer operand.
      if (!generic.hasPureBufferSemantics() &&
          llvm::any_of(own,
                       [](Operation *op) { return isa<memref::LoadOp>(op); }))
        continue;
      slice.insert(own.begin(), own.end());
      scalars.push_back(v);
    }
    if (scalars.empty())
      return;
    // The 0-d tensors become inputs, read through `(d...) -> ()`.
    SmallVector<Operation *> sources;
    for (Operation *op : slice)
      if (isScalarSource(op))
        sources.push_back(op);
    OpBuilder builder(generic);
    SmallVector<Value> inputs(generic.getInputs());
    SmallVector<AffineMap> maps(generic.getIndexingMapsArray());
    unsigned numInputs = inputs.size();
    AffineMap scalarMap =
        AffineMap::get(generic.getNumLoops(), 0, {}, &getContext());
    // A generic on buffers (the optimizer's in-place update) reads the
    // tensor's buffer.
    bool onBuffers = generic.hasPureBufferSemantics();
    for (Operation *source : sources) {
      Value input = sourceOf(source);
      if (onBuffers && isa<TensorType>(input.getType()))
        input = bufferization::ToBufferOp::create(
            builder, source->getLoc(),
            MemRefType::get({}, source->getResult(0).getType()), input,
            /*readOnly=*/true);
      inputs.push_back(input);
      maps.insert(maps.begin() + inputs.size() - 1, scalarMap);
    }
    auto replacement = linalg::GenericOp::create(
        builder, generic.getLoc(), generic.getResultTypes(), inputs,
        generic.getOutputs(), maps, generic.getIteratorTypesArray());
    replacement->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    replacement.getRegion().takeBody(generic.getRegion());
    Block &body = replacement.getRegion().front();
    IRMapping mapping;
    for (auto [i, source] : llvm::enumerate(sources))
      mapping.map(source->getResult(0),
                  body.insertArgument(numInputs + i,
                                      source->getResult(0).getType(),
                                      source->getLoc()));
    // Clone the rest of the slice into the body, defs first.
    OpBuilder inside = OpBuilder::atBlockBegin(&body);
    for (Operation *op : slice)
      if (!isScalarSource(op))
        inside.clone(*op, mapping);
    for (Value v : scalars)
      replaceAllUsesInRegionWith(v, mapping.lookup(v), replacement.getRegion());
    generic->replaceAllUsesWith(replacement->getResults());
    generic->erase();
  }
};

} // namespace
