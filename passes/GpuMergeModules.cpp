//===- GpuMergeModules.cpp - One gpu.module for all kernels --------------===//
#include "passes/Passes.h"
#include "passes/ViewArguments.h"

namespace mlir::drc {
#define GEN_PASS_DEF_GPUMERGEMODULES
#include "passes/Passes.h.inc"
} // namespace mlir::drc

using namespace mlir;

namespace {

/// The text of `symbol` under a fixed name: equal for kernels that do the
/// same work on the same shapes (one per layer, in loss and train_step).
std::string bodyText(SymbolOpInterface symbol) {
  StringAttr name = symbol.getNameAttr();
  symbol.setName("kernel");
  std::string text;
  llvm::raw_string_ostream os(text);
  symbol->print(os, OpPrintingFlags().useLocalScope());
  symbol.setName(name);
  return text;
}

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
    // A kernel's text under a fixed name -> the merged kernel doing that.
    llvm::StringMap<StringAttr> byBody;
    // Each kernel's launches, where its views' offsets are cast away.
    DenseMap<std::pair<StringAttr, StringAttr>, SmallVector<gpu::LaunchFuncOp>>
        launches;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      launches[{kernel.getRootReference(), kernel.getLeafReference()}]
          .push_back(launch);
    });
    for (gpu::GPUModuleOp old : modules) {
      for (Operation &op : llvm::make_early_inc_range(*old.getBody())) {
        if (op.hasTrait<OpTrait::IsTerminator>())
          continue;
        if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op))
          drc::makeOffsetsArguments(kernel, [&](unsigned index) {
            SmallVector<OpOperand *> operands;
            for (gpu::LaunchFuncOp launch :
                 launches.lookup({old.getNameAttr(), kernel.getNameAttr()}))
              operands.push_back(&launch.getKernelOperandsMutable()[index]);
            return operands;
          });
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        StringAttr oldName = symbol ? symbol.getNameAttr() : StringAttr();
        std::string body = symbol ? bodyText(symbol) : std::string();
        if (auto same = byBody.find(body); symbol && same != byBody.end()) {
          renamed[{old.getNameAttr(), oldName}] = same->second;
          continue; // erased with its module
        }
        op.remove();
        // insert() renames the op when its name is taken.
        StringAttr newName = mergedSymbols.insert(&op);
        if (oldName) {
          renamed[{old.getNameAttr(), oldName}] = newName;
          byBody[body] = newName;
        }
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
