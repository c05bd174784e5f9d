//===- ParameterInit.h - Deterministic parameter initialisation -*- C++ -*-===//
//
// Initial values are a pure function of (seed, parameter name, element
// index): each parameter draws from its own counter-based random stream keyed
// by the seed and a hash of its name. So adding, removing or reordering
// parameters never changes another parameter's values (a residual design that
// adds one coefficient matrix keeps Pre-LN's backbone init bit for bit), and
// the values are identical on every run, machine and compiler: the generator
// uses only integer hashing and IEEE-exact operations, never the standard
// library's distributions (whose algorithms are implementation-defined) or
// libm's transcendental functions (which differ in the last bit).
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PARAMETERINIT_H
#define DRC_RUNTIME_PARAMETERINIT_H

#include "runtime/ParameterTable.h"

#include <cstdint>

namespace drc {

/// Fills `params` (table.numElements() floats) with every parameter's initial
/// values; alignment padding between parameters is set to 0.
///
/// TruncNormal(std, clip) draws Normal(0, std) and redraws any value outside
/// [-clip, clip]: a truncated normal, as torch.nn.init.trunc_normal_(mean=0,
/// std, a=-clip, b=clip). The standard deviation of the result is therefore
/// slightly below `std` (0.9866·std at clip = 3·std).
void initParameters(const ParameterTable &table, uint64_t seed, float *params);

/// The initial values of one parameter (p.numElements() floats at `values`);
/// identical to what initParameters writes at params + p.offset.
void initParameter(const ParameterInfo &p, uint64_t seed, float *values);

} // namespace drc

#endif // DRC_RUNTIME_PARAMETERINIT_H
