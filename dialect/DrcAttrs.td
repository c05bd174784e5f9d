//===- DrcAttrs.td - drc attributes ------------------------*- tablegen -*-===//
#ifndef DRC_ATTRS_TD
#define DRC_ATTRS_TD

include "dialect/DrcDialect.td"
include "mlir/IR/EnumAttr.td"

def Drc_InitKind : I32EnumAttr<"InitKind", "parameter initialiser", [
    I32EnumAttrCase<"TruncNormal", 0, "trunc_normal">,
    I32EnumAttrCase<"Constant", 1, "constant">,
    I32EnumAttrCase<"Values", 2, "values">,
    I32EnumAttrCase<"Matrix", 3, "matrix">]> {
  let cppNamespace = "::mlir::drc";
  let genSpecializedAttr = 0;
}

def Drc_InitAttr : AttrDef<Drc_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "how the runtime initialises a parameter";
  let description = [{
    `#drc.init<trunc_normal(0.02, 0.06)>`: normal with the given std, values
    beyond +-clip resampled. `#drc.init<constant(1.0)>`: every element equal.
    `#drc.init<values(dense<...> : tensor<...>)>`: the given values (a
    scheme's static coefficients). In a scheme's `drc.weight`, `matrix`
    stands for the spec's dense-matrix init, TruncNormal(init_std, 3 std),
    and is resolved when the scheme is instantiated.
  }];
  let parameters = (ins "InitKind":$kind, APFloatParameter<"">:$first,
                        APFloatParameter<"">:$second,
                        OptionalParameter<"::mlir::DenseElementsAttr">:$values);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static InitAttr truncNormal(::mlir::MLIRContext *ctx, double std, double clip) {
      return get(ctx, InitKind::TruncNormal, ::llvm::APFloat(std),
                 ::llvm::APFloat(clip), {});
    }
    static InitAttr constant(::mlir::MLIRContext *ctx, double value) {
      return get(ctx, InitKind::Constant, ::llvm::APFloat(value),
                 ::llvm::APFloat(0.0), {});
    }
    static InitAttr fromValues(::mlir::DenseElementsAttr values) {
      return get(values.getContext(), InitKind::Values, ::llvm::APFloat(0.0),
                 ::llvm::APFloat(0.0), values);
    }
    static InitAttr matrix(::mlir::MLIRContext *ctx) {
      return get(ctx, InitKind::Matrix, ::llvm::APFloat(0.0),
                 ::llvm::APFloat(0.0), {});
    }
    double getFirstValue() const { return getFirst().convertToDouble(); }
    double getSecondValue() const { return getSecond().convertToDouble(); }
  }];
}

#endif // DRC_ATTRS_TD
