//===- DrcDialect.td - The drc dialect ---------------------*- tablegen -*-===//
//
// The depth-residual compiler's dialect: parameters declared in IR, the
// backbone's sublayer ops at coarse grain, the kernel-level ops they decompose
// into, and the gradient/optimizer ops autodiff emits.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_DIALECT_TD
#define DRC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Drc_Dialect : Dialect {
  let name = "drc";
  let cppNamespace = "::mlir::drc";
  let summary = "Depth-residual compiler: Transformer backbones and residual topologies";
  let description = [{
    Ops of the drc dialect work on builtin tensors whose leading dimension is
    the token (N = batch x sequence); the hidden state is `tensor<N x d x f32>`.
    Element types are f32 (training) or f64 (gradient checks).
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Drc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Drc_Dialect, mnemonic, traits>;

#endif // DRC_DIALECT_TD
