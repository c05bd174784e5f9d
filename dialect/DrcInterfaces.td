//===- DrcInterfaces.td - drc op interfaces ----------------*- tablegen -*-===//
#ifndef DRC_INTERFACES_TD
#define DRC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Drc_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::drc";
  let description = [{
    An op that reverse-mode autodiff can differentiate. Given the adjoints of
    the op's results, it emits ops computing the adjoints of its operands.
    drc-autodiff is generic over this interface and knows no op by name.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the vector-Jacobian product at the builder's insertion point.
        `resultGrads[i]` is the adjoint of result i, or null when nothing
        downstream depends on it. On success `operandGrads` holds one value
        per operand: its adjoint, or null for an operand that has none
        (integer token ids, for example).
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // DRC_INTERFACES_TD
