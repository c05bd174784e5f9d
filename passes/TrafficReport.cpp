//===- TrafficReport.cpp - Residual memory traffic, unfused and fused ----===//
//
// Counts, per token, the bytes each token-local region moves to and from
// memory: unfused, every op is a kernel reading its per-token operands and
// writing its results; fused, the region reads each per-token input once and
// writes each value used after it once. Shared operands (parameters) are
// read once per tile, not per token, and are left out, as ARCHITECTURES.md
// §2's counts leave them out; so are views, which lower to reshapes. The
// sums over tokens that make the residual parameters' gradients count by
// their per-token reads, or, taken into a region, by their per-tile partial
// sums' writes spread over the tokens.
//
//===----------------------------------------------------------------------===//
#include "passes/TokenLocalRegions.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::drc;

namespace {

struct Traffic {
  int64_t read = 0, written = 0;
  Traffic &operator+=(const Traffic &t) {
    read += t.read;
    written += t.written;
    return *this;
  }
};

struct RegionTraffic {
  int64_t ops = 0;
  Traffic unfused, fused, minimum;
  RegionTraffic &operator+=(const RegionTraffic &t) {
    ops += t.ops;
    unfused += t.unfused;
    fused += t.fused;
    minimum += t.minimum;
    return *this;
  }
};

/// A value a sublayer makes or takes (f, u), as opposed to one the residual
/// part carries from region to region (the state, the embedding).
bool isSublayerOp(Operation *op) {
  return op && !isa<EmbedOp, func::ReturnOp>(op);
}

/// `regionOf` holds every token-local op of the function.
RegionTraffic measure(ArrayRef<Operation *> ops, const TokenAnalysis &a,
                      const DenseMap<Operation *, size_t> &regionOf) {
  llvm::SmallPtrSet<Operation *, 16> inRegion(ops.begin(), ops.end());
  RegionTraffic t;
  t.ops = ops.size();
  llvm::SmallDenseSet<Value> inputs;
  int64_t carriedIn = 0, sublayerIn = 0, carriedOut = 0, sublayerOut = 0;
  for (Operation *op : ops) {
    bool moves = !isa<ViewOp>(op);
    for (Value v : op->getOperands()) {
      if (a.of(v) != Rows::PerToken)
        continue;
      int64_t bytes = a.bytesPerToken(v);
      t.unfused.read += moves ? bytes : 0;
      Operation *def = v.getDefiningOp();
      if ((def && inRegion.contains(def)) || !inputs.insert(v).second)
        continue;
      t.fused.read += bytes;
      if (isSublayerOp(def) && !regionOf.count(def))
        sublayerIn += bytes;
      else
        carriedIn = std::max(carriedIn, bytes);
    }
    for (Value v : op->getResults()) {
      int64_t bytes = a.bytesPerToken(v);
      t.unfused.written += moves ? bytes : 0;
      bool toSublayer = false, used = false;
      for (Operation *user : v.getUsers()) {
        if (inRegion.contains(user))
          continue;
        used = true;
        toSublayer |= isSublayerOp(user) && !regionOf.count(user);
      }
      if (!used)
        continue;
      t.fused.written += bytes;
      if (toSublayer)
        sublayerOut += bytes;
      else
        carriedOut = std::max(carriedOut, bytes);
    }
  }
  t.minimum = {carriedIn + sublayerIn, carriedOut + sublayerOut};
  return t;
}

/// A bank append (isBankAppend): unfused it copies the old bank and its new
/// rows into a new bank; stored in place (drc-store-banks) it reads and
/// writes the new rows only, the least any design that keeps them can move.
RegionTraffic measureBankAppend(AppendOp op, const TokenAnalysis &a) {
  RegionTraffic t;
  t.ops = 1;
  int64_t added = 0;
  for (auto [index, input] : llvm::enumerate(op.getInputs())) {
    t.unfused.read += a.bytesPerToken(input);
    added += index ? a.bytesPerToken(input) : 0;
  }
  t.unfused.written = a.bytesPerToken(op.getResult());
  t.fused = {added, added};
  t.minimum = {0, added};
  return t;
}

/// The per-token reads of the sums over tokens (isTokenSum) on `fn`'s top
/// level: each a kernel of its own, reading its operands.
int64_t tokenSumReads(func::FuncOp fn, const TokenAnalysis &a) {
  int64_t bytes = 0;
  for (Operation &op : fn.getBody().front())
    if (isTokenSum(&op, a))
      for (Value v : op.getOperands())
        bytes += a.bytesPerToken(v);
  return bytes;
}

/// What `fn`, after drc-fuse-token-local, moves: each drc.fused op its
/// per-token inputs and its results (partial sums per tile spread over the
/// tokens), each token-local op left outside a region its own operands and
/// results.
Traffic fusedProgram(func::FuncOp fn) {
  TokenAnalysis a = analyseTokens(fn);
  Traffic t;
  SmallVector<SmallVector<Operation *>> regions = tokenLocalRegions(fn, a);
  DenseMap<Operation *, size_t> regionOf = regionIndex(regions);
  for (ArrayRef<Operation *> ops : regions)
    t += measure(ops, a, regionOf).unfused;
  fn.walk([&](FusedOp fused) {
    for (Value input : fused.getInputs())
      if (a.of(input) == Rows::PerToken)
        t.read += a.bytesPerToken(input);
    for (auto [index, result] : llvm::enumerate(fused.getResults())) {
      if (!fused.isPartial(index)) {
        t.written += a.bytesPerToken(result);
        continue;
      }
      auto type = cast<RankedTensorType>(result.getType());
      t.written += llvm::divideCeil(
          type.getNumElements() * type.getElementTypeBitWidth() / 8, a.tokens);
    }
  });
  fn.walk([&](AppendOp append) {
    if (isBankAppend(append))
      t += measureBankAppend(append, a).fused;
  });
  t.read += tokenSumReads(fn, a);
  return t;
}

} // namespace

std::string mlir::drc::residualTrafficReport(ModuleOp module,
                                             ModuleOp fusedModule) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto row = [&](StringRef label, int64_t ops, const Traffic &unfused,
                 const Traffic &fused, const Traffic *minimum) {
    os << llvm::format("%-12s %5lld %9lld %9lld %9lld %9lld", label.data(),
                       static_cast<long long>(ops),
                       static_cast<long long>(unfused.read),
                       static_cast<long long>(unfused.written),
                       static_cast<long long>(fused.read),
                       static_cast<long long>(fused.written));
    if (minimum)
      os << llvm::format(" %9lld %9lld", static_cast<long long>(minimum->read),
                         static_cast<long long>(minimum->written));
    os << "\n";
  };
  for (StringRef name : {"loss", "train_step"}) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      continue;
    TokenAnalysis a = analyseTokens(fn);
    SmallVector<SmallVector<Operation *>> regions = tokenLocalRegions(fn, a);
    DenseMap<Operation *, size_t> regionOf = regionIndex(regions);
    bool forward = name == "loss";
    os << (forward ? "residual traffic per boundary between sublayers, "
                     "forward (loss), bytes per token:\n"
                   : "forward and backward (train_step), bytes per token:\n");
    os << llvm::format("%-12s %5s %9s %9s %9s %9s", "region", "ops",
                       "unfused R", "unfused W", "fused R", "fused W");
    if (forward)
      os << llvm::format(" %9s %9s", "min R", "min W");
    os << "\n";
    RegionTraffic total;
    int64_t boundary = 0;
    for (ArrayRef<Operation *> ops : regions) {
      // A region of views alone (a sublayer output viewed as a bank's new
      // row) lowers to reshapes: it moves nothing.
      if (llvm::all_of(ops, [](Operation *op) { return isa<ViewOp>(op); }))
        continue;
      RegionTraffic t = measure(ops, a, regionOf);
      total += t;
      if (forward)
        row(("boundary " + std::to_string(boundary++)), t.ops, t.unfused,
            t.fused, &t.minimum);
    }
    RegionTraffic banks;
    fn.walk([&](AppendOp append) {
      if (!isBankAppend(append))
        return;
      banks += measureBankAppend(append, a);
    });
    if (banks.ops) {
      total += banks;
      if (forward)
        row("bank appends", banks.ops, banks.unfused, banks.fused,
            &banks.minimum);
    }
    total.unfused.read += tokenSumReads(fn, a);
    // The backward pass recomputes forward values (drc-fuse-token-local's
    // rematerialisation): measured on the fused program itself.
    if (auto fused = fusedModule.lookupSymbol<func::FuncOp>(name))
      total.fused = fusedProgram(fused);
    row("total", total.ops, total.unfused, total.fused,
        forward ? &total.minimum : nullptr);
  }
  os << "unfused: every op a kernel; fused: one kernel per region "
        "(drc-fuse-token-local); min: the state read and written once, plus "
        "the sublayer output read and its next input written. Bank appends "
        "grow a depth bank in place (drc-store-banks). Parameters are not "
        "counted; the sums over tokens that make the residual parameters' "
        "gradients (coefficients' weights and biases, norm gains) are: their "
        "per-token reads, or, computed in a region as partial sums per "
        "tile, those sums' writes spread over the tokens.\n";
  return text;
}
