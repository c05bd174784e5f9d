//===- SchemeInstantiation.h - Residual scheme templates --------*- C++ -*-===//
//
// A residual scheme (models/schemes/*.mlir, docs/schemes.md) is a module of
// template functions written once for every width, depth and sublayer:
//
//   @embed(h0) -> S             the state S (one or more values) from the
//                               embedding; optional, default S = h0
//   @read(S) -> (u, R...)       sublayer k's input u, and what its write
//                               needs (R)
//   @write(R..., f) -> S        folds the sublayer's output f back in
//   @readout(S) -> h_out        the hidden state the final norm and LM head
//                               read; optional, default h_out = S
//
// Sizes, indices and options are compile-time values (drc.static), tensors
// have dynamic dimensions and parameters are drc.weight. Instantiation is a
// partial evaluation: it inlines a function at a call site of the model,
// folds every compile-time value (arith, math, scf.if, tensor.generate,
// func.call of helpers), gives each op its static result type, declares the
// weights as drc.param and verifies every op it creates, so a mistake in a
// scheme is reported at its line in the scheme file, with the sublayer.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_DIALECT_SCHEMEINSTANTIATION_H
#define DRC_DIALECT_SCHEMEINSTANTIATION_H

#include "dialect/DrcDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
#include <string>

namespace mlir::drc {

/// Compile-time values visible to drc.static: IntegerAttr (index), FloatAttr
/// (f64) or BoolAttr.
using StaticValues = llvm::MapVector<StringAttr, Attribute>;

/// A parsed scheme: its template functions and declared options.
struct Scheme {
  OwningOpRef<ModuleOp> module;
  /// `drc.options` of the module: each option's default value.
  DictionaryAttr options;
  /// `drc.option_min` of the module: the least value of some integer
  /// options (a spec's smaller value is an error at its line).
  DictionaryAttr optionMin;
  /// Name or path, for messages.
  std::string name;

  /// Parses the scheme at `path` (templates are checked when instantiated,
  /// not at parse time). Errors go to the context's diagnostics.
  static FailureOr<Scheme> load(MLIRContext &context, StringRef path,
                                StringRef name);
};

/// Declares (or finds) the parameter `name` and returns a read of it at the
/// builder's insertion point; fails with a diagnostic on a conflicting
/// redeclaration.
using DeclareParam = std::function<FailureOr<Value>(
    Location, StringRef name, RankedTensorType, InitAttr, bool decay)>;

class SchemeInstantiator {
public:
  /// `element` is the model's float type; `matrix` resolves `init matrix`;
  /// `normEps` (the spec's norm_eps) is the ε of every drc.rms_norm.
  SchemeInstantiator(const Scheme &scheme, Type element, InitAttr matrix,
                     FloatAttr normEps, DeclareParam declare);

  /// Whether the scheme defines `function`.
  bool has(StringRef function) const;

  /// Inlines `function` at `b`'s insertion point with `args`, its weights
  /// named `prefix + name`. `context` ("sublayer 3 (block 1, FFN)") is
  /// attached as a note to every error.
  FailureOr<SmallVector<Value>> call(OpBuilder &b, StringRef function,
                                     ValueRange args,
                                     const StaticValues &statics,
                                     StringRef prefix, StringRef context);

private:
  struct Frame;
  FailureOr<SmallVector<Value>> inlineFunction(Frame &frame, Operation *caller,
                                               StringRef name, ValueRange args);
  LogicalResult cloneBlock(Frame &frame, Block &block, IRMapping &map,
                           SmallVectorImpl<Value> &yielded);
  LogicalResult visit(Frame &frame, Operation &op, IRMapping &map);
  LogicalResult evaluate(Frame &frame, Operation &op, IRMapping &map);
  LogicalResult generate(Frame &frame, Operation &op, IRMapping &map);
  LogicalResult declareWeight(Frame &frame, WeightOp op, IRMapping &map);

  const Scheme &scheme;
  Type element;
  InitAttr matrix;
  FloatAttr normEps;
  DeclareParam declare;
};

} // namespace mlir::drc

#endif // DRC_DIALECT_SCHEMEINSTANTIATION_H
