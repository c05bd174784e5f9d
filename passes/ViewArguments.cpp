//===- ViewArguments.cpp - Kernels that take their views' offsets --------===//
#include "passes/ViewArguments.h"

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;

namespace {

/// Memref type `type` with its strides and a dynamic offset, or null if its
/// offset is dynamic already.
MemRefType withDynamicOffset(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return nullptr;
  return MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides),
      type.getMemorySpace());
}

/// A kernel argument made a view with a dynamic offset: one with a strided
/// layout and a static offset (a view of a parameter, or of rows of a
/// buffer, at a fixed place). Buffers of their own (the identity layout)
/// stay as they are.
MemRefType generalArgument(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !isa<StridedLayoutAttr>(memref.getLayout()))
    return nullptr;
  return withDynamicOffset(memref);
}

/// Views whose result lies at the source's offset plus a part that does not
/// depend on it, with the source's strides: a dynamic source offset makes
/// theirs dynamic and changes nothing else.
bool offsetFollowsSource(Operation *op) {
  return isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::CastOp, memref::TransposeOp>(op);
}

/// The uses of `value` and of the views offsetFollowsSource makes of it, in
/// `views` (in order, each after its source), unless a use would need its
/// type as it is: it is passed on (a call, a loop's carried value, a
/// terminator) or another op makes a memref from it.
bool viewsFollowing(Value value, SmallVectorImpl<Operation *> &views) {
  for (Operation *user : value.getUsers()) {
    if (offsetFollowsSource(user)) {
      views.push_back(user);
      if (!viewsFollowing(user->getResult(0), views))
        return false;
      continue;
    }
    if (user->hasTrait<OpTrait::IsTerminator>() ||
        isa<CallOpInterface, LoopLikeOpInterface>(user) ||
        llvm::any_of(user->getResultTypes(), llvm::IsaPred<MemRefType>))
      return false;
  }
  return true;
}

} // namespace

void mlir::drc::makeOffsetsArguments(
    FunctionOpInterface kernel,
    llvm::function_ref<SmallVector<OpOperand *>(unsigned)> operandsOf) {
  OpBuilder builder(kernel.getContext());
  Block &entry = kernel.getFunctionBody().front();
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  // Only the inputs: a gpu.func's workgroup and private buffers follow
  // them among the entry block's arguments.
  for (BlockArgument arg :
       entry.getArguments().take_front(kernel.getNumArguments())) {
    MemRefType general = generalArgument(arg.getType());
    SmallVector<Operation *> views;
    if (!general || !viewsFollowing(arg, views))
      continue;
    arg.setType(general);
    for (Operation *view : views)
      if (MemRefType viewType =
              withDynamicOffset(cast<MemRefType>(view->getResult(0).getType())))
        view->getResult(0).setType(viewType);
    inputs[arg.getArgNumber()] = general;
    for (OpOperand *operand : operandsOf(arg.getArgNumber())) {
      builder.setInsertionPoint(operand->getOwner());
      operand->set(memref::CastOp::create(
          builder, operand->getOwner()->getLoc(), general, operand->get()));
    }
  }
  kernel.setType(
      FunctionType::get(kernel.getContext(), inputs, kernel.getResultTypes()));
}
