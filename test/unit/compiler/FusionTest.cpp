//===- FusionTest.cpp - Fused and unfused programs compute the same ------===//
//
// drc-fuse-token-local only regroups ops (and recomputes forward values in
// the backward pass with the same ops, and adds adjoint contributions in
// another order, EarlySums.h and BankAdjoints.h): each element of each value is
// computed by the same arithmetic up to the order of additions, tile by tile
// instead of all tokens at once. So for every scheme the fused program (4 tiles
// of 4 tokens, run in parallel) and the unfused one give the same losses and
// gradients in double precision, up to the order of reassociated sums: the
// adjoint sums, and LLVM may vectorise a row sum differently in a fused
// kernel than alone (partial sums per lane, drc-cpu-tile; a row of a length
// not a multiple of 16 is summed as a tree of its lanes), and up to a
// product and a sum contracted into one FMA in a fused kernel that are two
// kernels unfused. Measured (relative to |g| + 1e-12): losses at most
// 4e-16; gradients 8e-13 to 4e-11 for most schemes, 5e-8 for mHC (tiny
// gradient entries through 20 Sinkhorn normalisations); the check allows
// 1e-7.
//
//===----------------------------------------------------------------------===//
#include "CompilerTestSupport.h"

using namespace drc::test;

namespace {

F64Program compileAt(CompilerContext &ctx, const drc::ModelSpec &spec,
                     bool fuse) {
  mlir::drc::TrainPipelineOptions pipeline =
      mlir::drc::trainPipelineOptions(spec);
  pipeline.fuseTokenLocal = fuse;
  pipeline.fuseTileTokens = 4;
  return compileWithTestData(ctx, spec, pipeline);
}

void checkFusedMatchesUnfused(const drc::ModelSpec &spec) {
  CompilerContext ctx;
  F64Program fused = compileAt(ctx, spec, true);
  F64Program unfused = compileAt(ctx, spec, false);
  checkRelativelyClose(fused.losses(), unfused.losses(), 1e-7);
  checkRelativelyClose(fused.gradients(), unfused.gradients(), 1e-7);
}

} // namespace

TEST_CASE("fused and unfused programs give the same losses and gradients",
          "[fusion]") {
  std::string residual = GENERATE(from_range(libraryResiduals()));
  INFO(residual);
  checkFusedMatchesUnfused(tinySpec(residual));
}

TEST_CASE("fused and unfused programs agree at a width that is not a multiple "
          "of 16",
          "[fusion]") {
  // d_model 40: the fused tiles' row sums over 40 channels are vectorised
  // by drc-cpu-tile one row at a time (LLVM unrolls such short rows and
  // gathers across them otherwise), and the coefficient projections run as
  // dot products of 8 lanes.
  std::string residual =
      GENERATE(as<std::string>{}, "scheme = \"preln\"", "scheme = \"hc\"",
               "scheme = \"mhc\"", "scheme = \"attnres\"",
               "scheme = \"vwn\"\nn = 4\nmtp = true");
  INFO(residual);
  checkFusedMatchesUnfused(tinySpec(residual, 1e-6, 40));
}
