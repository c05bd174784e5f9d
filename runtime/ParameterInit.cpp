//===- ParameterInit.cpp - Deterministic parameter initialisation ---------===//
//
// Element i of a TruncNormal parameter draws its uniforms from
// counterRandom(seed, fnv1a64(name), i, draw): every element is independent
// of every other and could be drawn in any order or in parallel. Normals come
// from Marsaglia's polar method with a log computed here from + - * / only.
//
//===----------------------------------------------------------------------===//

#include "runtime/ParameterInit.h"

#include "runtime/CounterRandom.h"
#include "runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <thread>
#include <vector>

// A fused multiply-add rounds once instead of twice; letting the compiler
// contract some expressions on one target (aarch64, x86 with -march=native)
// and not on another would change the last bit of the log, and occasionally
// of a float value.
#pragma STDC FP_CONTRACT OFF

namespace drc {

namespace {

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// Uniform in [-1, 1) from the top 53 bits; exact in double.
double uniformSigned(uint64_t bits) {
  return double(bits >> 11) * 0x1p-52 - 1.0;
}

/// ln(x) for x in (0, 1], from IEEE-exact operations only (libm's log may
/// differ by an ulp between implementations). x = m * 2^e with m in
/// [sqrt(1/2), sqrt(2)); ln m = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172, and
/// the atanh series to t^21 is accurate to ~1e-17.
double portableLog(double x) {
  int e;
  double m = std::frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m *= 2;
    e -= 1;
  }
  double t = (m - 1) / (m + 1);
  double t2 = t * t;
  double series = 1.0 / 21;
  for (int k = 19; k >= 1; k -= 2)
    series = series * t2 + 1.0 / k;
  return double(e) * 0.69314718055994530942 + 2 * t * series;
}

/// A TruncNormal value for element `index`: Normal(0, stddev) by the polar
/// method, redrawn until |value| <= clip.
float truncatedNormal(uint64_t seed, uint64_t nameHash, uint64_t index,
                      double stddev, double clip) {
  for (uint64_t draw = 0;; draw += 2) {
    double v1 = uniformSigned(counterRandom(seed, nameHash, index, draw));
    double v2 = uniformSigned(counterRandom(seed, nameHash, index, draw + 1));
    double s = v1 * v1 + v2 * v2;
    if (s >= 1 || s == 0)
      continue;
    double x = stddev * (v1 * std::sqrt(-2 * portableLog(s) / s));
    // |x| <= clip implies |float(x)| <= float(clip): rounding is monotonic.
    if (std::fabs(x) <= clip)
      return float(x);
  }
}

} // namespace

void initParameter(const ParameterInfo &p, uint64_t seed, float *values) {
  int64_t n = p.numElements();
  switch (p.init.kind) {
  case Init::Kind::Zeros:
    std::fill_n(values, n, 0.0f);
    return;
  case Init::Kind::Constant:
    for (int64_t i = 0; i < n; ++i)
      values[i] = float(p.init.value);
    return;
  case Init::Kind::Values:
    std::copy(p.init.values.begin(), p.init.values.end(), values);
    return;
  case Init::Kind::TruncNormal: {
    // ParameterTable::add guarantees clip >= stddev/2, so at least 30% of
    // attempts succeed (pi/4 for the polar method times P(|Z| <= 1/2)) and
    // the loop in truncatedNormal ends quickly.
    uint64_t nameHash = fnv1a64(p.name);
    auto fill = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        values[i] = truncatedNormal(seed, nameHash, uint64_t(i), p.init.stddev,
                                    p.init.clip);
    };
    // About 16M values/s per core: worth threads for large matrices, and
    // harmless since no element depends on another.
    int64_t threads = std::min<int64_t>(
        std::max(1u, std::thread::hardware_concurrency()), n >> 20);
    if (threads <= 1) {
      fill(0, n);
      return;
    }
    std::vector<std::jthread> workers;
    for (int64_t t = 0; t < threads; ++t)
      workers.emplace_back(fill, n * t / threads, n * (t + 1) / threads);
    return;
  }
  }
  throw Error("unknown Init kind for parameter '" + p.name + "'");
}

void initParameters(const ParameterTable &table, uint64_t seed, float *params) {
  std::fill_n(params, table.numElements(), 0.0f);
  for (const ParameterInfo &p : table.parameters())
    initParameter(p, seed, params + p.offset);
}

} // namespace drc
