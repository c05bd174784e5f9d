//===- Autodiff.cpp - Reverse-mode differentiation to a train step -------===//
//
// Generic over DifferentiableOpInterface: the pass knows no op by name except
// the parameter reads it turns into gradient stores. Adjoints reaching one
// value along several paths are summed with drc.add.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::drc {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;
using namespace mlir::drc;

namespace {

struct AutodiffPass : mlir::drc::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto loss = module.lookupSymbol<func::FuncOp>(funcName);
    if (!loss) {
      module.emitError() << "drc-autodiff: no function @" << funcName
                         << " to differentiate (set the pass option func=)";
      return signalPassFailure();
    }
    if (failed(checkDifferentiable(loss)) || failed(buildTrainStep(loss)))
      return signalPassFailure();
  }

  /// The weight of result `i` of the loss function in the training
  /// objective: 1 for the loss itself (result 0), `drc.objective_weight` for
  /// an auxiliary loss after it (VWN's next-2-token head).
  static std::optional<double> objectiveWeight(func::FuncOp loss, unsigned i) {
    if (i == 0)
      return 1.0;
    auto weight = loss.getResultAttrOfType<FloatAttr>(i, kObjectiveWeightAttr);
    if (!weight)
      return std::nullopt;
    return weight.getValueAsDouble();
  }

  LogicalResult checkDifferentiable(func::FuncOp loss) {
    auto results = loss.getFunctionType().getResults();
    bool scalars = !results.empty() && llvm::all_of(results, [&](Type t) {
      auto scalar = dyn_cast<RankedTensorType>(t);
      return scalar && scalar.getRank() == 0 && t == results.front() &&
             isa<FloatType>(scalar.getElementType());
    });
    for (unsigned i = 0; scalars && i < results.size(); ++i)
      scalars = objectiveWeight(loss, i).has_value();
    if (!scalars)
      return loss.emitError()
             << "drc-autodiff: @" << funcName
             << " must return scalar float tensors of one type: the loss, "
                "then any auxiliary losses, each with its weight in the "
                "training objective as {"
             << kObjectiveWeightAttr << " = w : f64}; found "
             << loss.getFunctionType();
    if (!loss.getBody().hasOneBlock())
      return loss.emitError() << "drc-autodiff: @" << funcName
                              << " must be one block of straight-line code";
    if (module().lookupSymbol("train_step"))
      return module().emitError()
             << "drc-autodiff: the module already has a @train_step";
    return success();
  }

  ModuleOp module() { return getOperation(); }

  LogicalResult buildTrainStep(func::FuncOp loss) {
    Location loc = loss.getLoc();
    auto scalarType =
        cast<RankedTensorType>(loss.getFunctionType().getResult(0));
    SmallVector<Type> inputs(loss.getFunctionType().getInputs());
    inputs.append({scalarType, scalarType}); // lr, step
    OpBuilder b(module().getContext());
    b.setInsertionPointAfter(loss);
    auto fn = func::FuncOp::create(
        b, loc, "train_step",
        b.getFunctionType(inputs, {scalarType, scalarType}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);

    // Forward: a copy of the loss function.
    IRMapping mapping;
    for (auto [from, to] :
         llvm::zip(loss.getArguments(), entry->getArguments()))
      mapping.map(from, to);
    SmallVector<Operation *> forward;
    SmallVector<Value> losses;
    for (Operation &op : loss.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          losses.push_back(mapping.lookup(v));
        continue;
      }
      forward.push_back(b.clone(op, mapping));
    }
    Value lossValue = losses.front();

    // Activity: only values that depend on a parameter need adjoints
    // (constants, token ids and what is computed from them alone do not).
    DenseSet<Value> active;
    for (Operation *op : forward)
      if (isa<ParamRefOp>(op) || llvm::any_of(op->getOperands(), [&](Value v) {
            return active.contains(v);
          }))
        active.insert(op->result_begin(), op->result_end());

    // Backward: one reverse sweep over the forward ops.
    DenseMap<Value, Value> adjoints;
    llvm::MapVector<StringAttr, Value> paramGrads;
    auto accumulate = [&](Value into, Value grad, Location at) {
      Value &slot = adjoints[into];
      slot = slot ? AddOp::create(b, at, slot, grad).getResult() : grad;
    };
    // The objective is sum_i w_i losses_i: each loss's adjoint is its weight.
    for (auto [i, value] : llvm::enumerate(losses))
      accumulate(
          value,
          arith::ConstantOp::create(
              b, loc,
              DenseElementsAttr::get(
                  scalarType, b.getFloatAttr(scalarType.getElementType(),
                                             *objectiveWeight(loss, i)))),
          loc);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool needed = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(adjoints.lookup(r));
        needed |= static_cast<bool>(resultGrads.back());
      }
      if (!needed)
        continue;
      if (auto ref = dyn_cast<ParamRefOp>(op)) {
        Value &slot = paramGrads[ref.getParamAttr().getAttr()];
        slot = slot ? AddOp::create(b, op->getLoc(), slot, resultGrads[0])
                          .getResult()
                    : resultGrads[0];
        continue;
      }
      auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
      if (!differentiable)
        return op->emitError()
               << "drc-autodiff: '" << op->getName()
               << "' has no gradient rule; implement "
                  "DifferentiableOpInterface for it or keep it off the path "
                  "from the parameters to the loss";
      SmallVector<Value> operandGrads;
      if (failed(differentiable.buildGradient(b, resultGrads, operandGrads)))
        return failure();
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
        if (grad && active.contains(operand))
          accumulate(operand, grad, op->getLoc());
    }

    // Every parameter gets a gradient, zero when the loss does not use it.
    for (ParamOp param : module().getOps<ParamOp>()) {
      Value grad = paramGrads.lookup(param.getSymNameAttr());
      if (!grad)
        grad = arith::ConstantOp::create(
            b, param.getLoc(),
            DenseElementsAttr::get(
                param.getTensorType(),
                b.getFloatAttr(param.getTensorType().getElementType(), 0.0)));
      GradStoreOp::create(b, param.getLoc(), param.getSymName(), grad);
    }
    auto adamw = AdamWOp::create(
        b, loc, scalarType, entry->getArgument(inputs.size() - 2),
        entry->getArgument(inputs.size() - 1), b.getF64FloatAttr(beta1),
        b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon),
        b.getF64FloatAttr(weightDecay), b.getF64FloatAttr(maxGradNorm));
    func::ReturnOp::create(b, loc, ValueRange{lossValue, adamw.getGradNorm()});

    // Gradient rules build every operand's adjoint; those of inactive
    // operands are unused.
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
    return success();
  }
};

} // namespace
