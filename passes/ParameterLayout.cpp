//===- ParameterLayout.cpp - Where each parameter lives ------------------===//
#include "passes/ParameterLayout.h"

using namespace mlir;
using namespace mlir::drc;

ParameterLayout mlir::drc::computeParameterLayout(ModuleOp module) {
  ParameterLayout layout;
  auto place = [&](bool decay) {
    for (ParamOp param : module.getOps<ParamOp>()) {
      if (param.getDecay() != decay)
        continue;
      ParameterSlot slot{param, layout.size,
                         param.getTensorType().getNumElements()};
      layout.index[param.getSymName()] = layout.slots.size();
      layout.slots.push_back(slot);
      layout.size += (slot.numElements + kParameterAlignment - 1) /
                     kParameterAlignment * kParameterAlignment;
    }
  };
  place(/*decay=*/true);
  layout.decayEnd = layout.size;
  place(/*decay=*/false);
  return layout;
}
