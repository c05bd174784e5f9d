//===- GpuMergeModules.cpp - One gpu.module for all kernels --------------===//
#include "passes/Passes.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUMERGEMODULES
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

struct GpuMergeModulesPass
    : mlir::drc::impl::GpuMergeModulesBase<GpuMergeModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    OpBuilder builder(&getContext());
    builder.setInsertionPoint(modules.front());
    auto merged = gpu::GPUModuleOp::create(builder, module.getLoc(), "kernels");
    SymbolTable mergedSymbols(merged);
    // Old (module, kernel) -> the kernel's name in the merged module.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp old : modules) {
      for (Operation &op : llvm::make_early_inc_range(*old.getBody())) {
        if (op.hasTrait<OpTrait::IsTerminator>())
          continue;
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        StringAttr oldName = symbol ? symbol.getNameAttr() : StringAttr();
        op.remove();
        // insert() renames the op when its name is taken.
        StringAttr newName = mergedSymbols.insert(&op);
        if (oldName)
          renamed[{old.getNameAttr(), oldName}] = newName;
      }
      old.erase();
    }
    StringAttr mergedName = merged.getNameAttr();
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it =
          renamed.find({kernel.getRootReference(), kernel.getLeafReference()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(
          SymbolRefAttr::get(mergedName, {FlatSymbolRefAttr::get(it->second)}));
    });
  }
};

} // namespace
