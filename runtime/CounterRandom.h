//===- CounterRandom.h - Counter-based random numbers ----------*- C++ -*-===//
//
// Random numbers that are a pure function of their coordinates (seed, step,
// row, draw): no generator state to save in a checkpoint, so a resumed run
// draws exactly what an uninterrupted one would have drawn.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_COUNTERRANDOM_H
#define DRC_RUNTIME_COUNTERRANDOM_H

#include <cstdint>

namespace drc {

/// The splitmix64 output function (Steele, Lea, Flood 2014): a bijection on
/// 64-bit integers whose outputs for consecutive inputs pass BigCrush.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A 64-bit random number for the coordinates (seed, a, b, c). Chaining the
/// mix makes distinct coordinate tuples map to unrelated outputs.
constexpr uint64_t counterRandom(uint64_t seed, uint64_t a, uint64_t b = 0,
                                 uint64_t c = 0) {
  return splitmix64(splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b) ^ c);
}

/// Maps a 64-bit random number to [0, n) by Lemire's multiply-shift, which
/// avoids the division of `r % n`; its bias is below n / 2^64.
constexpr uint64_t uniformBelow(uint64_t random, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(random) * n) >>
                               64);
}

} // namespace drc

#endif // DRC_RUNTIME_COUNTERRANDOM_H
