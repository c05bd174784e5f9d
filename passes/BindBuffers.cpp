//===- BindBuffers.cpp - Parameter state -> the runtime's flat buffers ---===//
//
// After this pass every function takes only memrefs and returns nothing:
//   loss(params, tokens, targets, out)
//   train_step(params, grads, adam_m, adam_v, tokens, targets, lr, step, out)
//   probe(params, tokens, targets, states, lens, [transports,] out)
// A result with dimensions gets a buffer of its own, in order, before `out`,
// which receives the scalar results.
// Parameters are views of the flat buffers laid out by ParameterLayout; AdamW
// (with global-norm clipping) runs in place over the decay and no-decay
// ranges. Tensor code reads the buffers through restrict to_tensor views.
//
//===----------------------------------------------------------------------===//
#include "passes/ParameterLayout.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::drc {
#define GEN_PASS_DEF_BINDBUFFERS
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;
using utils::IteratorType;

namespace {

/// The flat buffers one function reads and writes.
struct Buffers {
  Value params, grads, adamM, adamV;
};

/// A view of `slot` in `flat`, shaped like the parameter.
Value parameterView(OpBuilder &b, Location loc, Value flat,
                    const ParameterSlot &slot) {
  RankedTensorType type = ParamOp(slot.param).getTensorType();
  auto flatType = cast<MemRefType>(flat.getType());
  auto layout1d = StridedLayoutAttr::get(b.getContext(), slot.offset, {1});
  auto viewType =
      MemRefType::get({slot.numElements}, flatType.getElementType(), layout1d);
  Value view = memref::SubViewOp::create(
      b, loc, viewType, flat,
      ArrayRef<OpFoldResult>{b.getIndexAttr(slot.offset)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(slot.numElements)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (type.getRank() == 1)
    return view;
  if (type.getRank() == 0) // a scalar: memref<1xf32> collapsed to memref<f32>
    return memref::CollapseShapeOp::create(b, loc, view,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  FailureOr<MemRefType> shapedType = memref::ExpandShapeOp::computeExpandedType(
      viewType, type.getShape(), ArrayRef<ReassociationIndices>{all});
  return memref::ExpandShapeOp::create(b, loc, *shapedType, view,
                                       ArrayRef<ReassociationIndices>{all});
}

Value readOnlyTensor(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto tensorType =
      RankedTensorType::get(type.getShape(), type.getElementType());
  auto op = bufferization::ToTensorOp::create(b, loc, tensorType, memref);
  op.setRestrict(true);
  return op;
}

/// A contiguous range [begin, end) of a flat buffer.
Value range(OpBuilder &b, Location loc, Value flat, int64_t begin,
            int64_t end) {
  auto flatType = cast<MemRefType>(flat.getType());
  auto type =
      MemRefType::get({end - begin}, flatType.getElementType(),
                      StridedLayoutAttr::get(b.getContext(), begin, {1}));
  return memref::SubViewOp::create(
      b, loc, type, flat, ArrayRef<OpFoldResult>{b.getIndexAttr(begin)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(end - begin)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

/// Global-norm clipping and AdamW with decoupled weight decay, in place.
void lowerAdamW(OpBuilder &b, AdamWOp op, const ParameterLayout &layout,
                const Buffers &buf, Value lr, Value step, Value gradNormOut) {
  Location loc = op.getLoc();
  Type e = cast<MemRefType>(buf.params.getType()).getElementType();
  auto c = [&](double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(e, v)).getResult();
  };
  auto map1 = AffineMap::getMultiDimIdentityMap(1, b.getContext());
  auto map0 = AffineMap::get(1, 0, {}, b.getContext());

  // ||g||^2 over the whole buffer; padding is zero.
  Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({}, e));
  linalg::FillOp::create(b, loc, c(0.0), acc);
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{buf.grads}, ValueRange{acc},
      ArrayRef<AffineMap>{map1, map0},
      ArrayRef<IteratorType>{IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value sq = arith::MulFOp::create(nb, nl, a[0], a[0]);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a[1], sq)});
      });
  Value norm =
      math::SqrtOp::create(b, loc, memref::LoadOp::create(b, loc, acc));
  memref::StoreOp::create(b, loc, norm, gradNormOut);
  Value maxNorm = c(op.getMaxGradNorm().convertToDouble());
  Value clip = arith::MinimumFOp::create(
      b, loc, c(1.0),
      arith::DivFOp::create(b, loc, maxNorm,
                            arith::AddFOp::create(b, loc, norm, c(1e-6))));

  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  Value bc1 = arith::SubFOp::create(
      b, loc, c(1.0), math::PowFOp::create(b, loc, c(beta1), step));
  Value bc2 = arith::SubFOp::create(
      b, loc, c(1.0), math::PowFOp::create(b, loc, c(beta2), step));
  auto update = [&](int64_t begin, int64_t end, double decay) {
    if (begin == end)
      return;
    Value shrink = arith::SubFOp::create(
        b, loc, c(1.0), arith::MulFOp::create(b, loc, lr, c(decay)));
    linalg::GenericOp::create(
        b, loc, TypeRange{}, ValueRange{range(b, loc, buf.grads, begin, end)},
        ValueRange{range(b, loc, buf.params, begin, end),
                   range(b, loc, buf.adamM, begin, end),
                   range(b, loc, buf.adamV, begin, end)},
        ArrayRef<AffineMap>{map1, map1, map1, map1},
        ArrayRef<IteratorType>{IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          auto mul = [&](Value x, Value y) {
            return arith::MulFOp::create(nb, nl, x, y).getResult();
          };
          auto add = [&](Value x, Value y) {
            return arith::AddFOp::create(nb, nl, x, y).getResult();
          };
          auto div = [&](Value x, Value y) {
            return arith::DivFOp::create(nb, nl, x, y).getResult();
          };
          Value g = mul(a[0], clip);
          Value m = add(mul(c(beta1), a[2]), mul(c(1.0 - beta1), g));
          Value v = add(mul(c(beta2), a[3]), mul(c(1.0 - beta2), mul(g, g)));
          Value mhat = div(m, bc1);
          Value vhat = div(v, bc2);
          Value stepSize = div(mhat, add(math::SqrtOp::create(nb, nl, vhat),
                                         c(op.getEpsilon().convertToDouble())));
          Value p = arith::SubFOp::create(nb, nl, mul(a[1], shrink),
                                          mul(lr, stepSize));
          linalg::YieldOp::create(nb, nl, ValueRange{p, m, v});
        });
  };
  update(0, layout.decayEnd, op.getWeightDecay().convertToDouble());
  update(layout.decayEnd, layout.size, 0.0);
}

LogicalResult bindFunction(func::FuncOp fn, const ParameterLayout &layout,
                           Type element) {
  MLIRContext *ctx = fn.getContext();
  Location loc = fn.getLoc();
  bool training = false;
  fn.walk([&](Operation *op) { training |= isa<GradStoreOp, AdamWOp>(op); });
  auto flatType = MemRefType::get({layout.size}, element);
  Block &entry = fn.getBody().front();
  unsigned numOriginal = entry.getNumArguments();
  auto resultTypes = fn.getFunctionType().getResults();

  // New leading buffer arguments.
  Buffers buf;
  unsigned pos = 0;
  auto addArg = [&](Type type) {
    return entry.insertArgument(pos++, type, loc);
  };
  buf.params = addArg(flatType);
  if (training) {
    buf.grads = addArg(flatType);
    buf.adamM = addArg(flatType);
    buf.adamV = addArg(flatType);
  }
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  // Original tensor arguments become memrefs of the same shape.
  for (unsigned i = 0; i < numOriginal; ++i) {
    BlockArgument old = entry.getArgument(pos);
    auto type = dyn_cast<RankedTensorType>(old.getType());
    if (!type)
      return fn.emitError()
             << "drc-bind-buffers: argument " << i
             << " must be a ranked tensor, found " << old.getType();
    BlockArgument replacement = entry.insertArgument(
        pos, MemRefType::get(type.getShape(), type.getElementType()), loc);
    old.replaceAllUsesWith(readOnlyTensor(b, loc, replacement));
    entry.eraseArgument(pos + 1);
    ++pos;
  }
  // Each result with dimensions (a probe's depth states) is written to a
  // buffer of its own; the out buffer, last, receives the scalar results.
  SmallVector<Value> resultBuffers;
  int64_t scalars = 0;
  for (Type t : resultTypes) {
    auto type = cast<RankedTensorType>(t);
    if (type.getRank() == 0) {
      resultBuffers.push_back(Value());
      ++scalars;
    } else {
      resultBuffers.push_back(entry.addArgument(
          MemRefType::get(type.getShape(), type.getElementType()), loc));
    }
  }
  BlockArgument out =
      entry.addArgument(MemRefType::get({scalars}, element), loc);

  SmallVector<Operation *> stateOps;
  fn.walk([&](Operation *op) {
    if (isa<ParamRefOp, GradStoreOp, AdamWOp, func::ReturnOp>(op))
      stateOps.push_back(op);
  });
  for (Operation *op : stateOps) {
    b.setInsertionPoint(op);
    Location l = op->getLoc();
    if (auto ref = dyn_cast<ParamRefOp>(op)) {
      Value view =
          parameterView(b, l, buf.params, layout.lookup(ref.getParam()));
      ref.replaceAllUsesWith(readOnlyTensor(b, l, view));
    } else if (auto store = dyn_cast<GradStoreOp>(op)) {
      Value view =
          parameterView(b, l, buf.grads, layout.lookup(store.getParam()));
      auto m = bufferization::MaterializeInDestinationOp::create(
          b, l, TypeRange{}, store.getGrad(), view);
      m.setRestrict(true);
      m.setWritable(true);
    } else if (auto adamw = dyn_cast<AdamWOp>(op)) {
      Value lr = tensor::ExtractOp::create(b, l, adamw.getLr(), ValueRange{});
      Value step =
          tensor::ExtractOp::create(b, l, adamw.getStep(), ValueRange{});
      Value normSlot =
          memref::SubViewOp::create(b, l, out, ArrayRef<int64_t>{scalars - 1},
                                    ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
      Value normScalar = memref::CollapseShapeOp::create(
          b, l, normSlot, ArrayRef<ReassociationIndices>{});
      lowerAdamW(b, adamw, layout, buf, lr, step, normScalar);
      // The norm is returned through `out` directly.
      for (OpOperand &use :
           llvm::make_early_inc_range(adamw.getGradNorm().getUses()))
        if (!isa<func::ReturnOp>(use.getOwner()))
          return adamw.emitError(
              "drc-bind-buffers: the gradient norm may only be returned");
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      int64_t slot = 0;
      for (auto [v, buffer] : llvm::zip(ret.getOperands(), resultBuffers)) {
        if (buffer) {
          auto m = bufferization::MaterializeInDestinationOp::create(
              b, l, TypeRange{}, v, buffer);
          m.setRestrict(true);
          m.setWritable(true);
          continue;
        }
        int64_t i = slot++;
        if (v.getDefiningOp<AdamWOp>())
          continue;
        Value scalar = tensor::ExtractOp::create(b, l, v, ValueRange{});
        Value idx = arith::ConstantIndexOp::create(b, l, i);
        memref::StoreOp::create(b, l, scalar, out, idx);
      }
      func::ReturnOp::create(b, l);
    }
  }
  for (Operation *op : llvm::reverse(stateOps))
    op->erase();
  SmallVector<Type> argTypes(entry.getArgumentTypes());
  fn.setFunctionType(FunctionType::get(ctx, argTypes, {}));
  fn.removeResAttrsAttr(); // the results are the out buffer now
  fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  return success();
}

struct BindBuffersPass : mlir::drc::impl::BindBuffersBase<BindBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    ParameterLayout layout = computeParameterLayout(module);
    if (layout.slots.empty()) {
      module.emitError("drc-bind-buffers: the module declares no drc.param");
      return signalPassFailure();
    }
    Type element = layout.slots.front().param.getTensorType().getElementType();
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!fn.isExternal() && failed(bindFunction(fn, layout, element)))
        return signalPassFailure();
    for (auto param : llvm::to_vector(module.getOps<ParamOp>()))
      param.erase();
  }
};

} // namespace
