//===- DrcFolders.cpp - Folds of drc ops ---------------------------------===//
//
// Folds that make an instantiated scheme as lean as a hand-written model:
// the instantiator applies them to every op it creates, and the greedy
// pattern drivers apply them again.
//
//===----------------------------------------------------------------------===//
#include "dialect/DrcDialect.h"

using namespace mlir;
using namespace mlir::drc;

OpFoldResult ScaleOp::fold(FoldAdaptor adaptor) {
  // A constant scalar scale (LNS's 1/sqrt(l), DeepNorm's c) becomes the
  // factor: no operand to bind, nothing to differentiate.
  if (auto s = dyn_cast_if_present<DenseElementsAttr>(adaptor.getScale());
      s && s.isSplat() && s.getType().getRank() == 0) {
    double factor = getFactor().convertToDouble() *
                    s.getSplatValue<APFloat>().convertToDouble();
    setFactorAttr(FloatAttr::get(Float64Type::get(getContext()), factor));
    getScaleMutable().clear();
    return getResult();
  }
  if (!getScale() && getFactor().isExactlyValue(1.0))
    return getInput(); // LNS's block 0, KEEL's sublayer 1
  return {};
}

OpFoldResult AppendOp::fold(FoldAdaptor) {
  // An empty set (a depth cache before its first entry) adds no rows.
  auto nonEmpty = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(1) != 0;
  };
  if (llvm::all_of(getInputs(), nonEmpty))
    return {};
  SmallVector<Value> kept(llvm::make_filter_range(getInputs(), nonEmpty));
  if (kept.empty())
    return {};
  if (kept.size() == 1 && kept.front().getType() == getType())
    return kept.front();
  getInputsMutable().assign(kept);
  return getResult();
}
