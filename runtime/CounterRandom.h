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

/// The draws of one generated document (a worksheet of a synthetic domain):
/// draw k is counterRandom(seed, stream, index, k), so every document is a
/// pure function of its coordinates, the same on every machine.
class DocumentRandom {
public:
  DocumentRandom(uint64_t seed, uint64_t stream, uint64_t index)
      : seed(seed), stream(stream), index(index) {}

  /// Uniform in [low, high].
  int64_t between(int64_t low, int64_t high) {
    auto span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(uniformBelow(next(), span));
  }

  /// A number of 1..maxDigits digits, the digit count uniform first, so
  /// short and long numbers are equally common.
  int64_t number(int maxDigits) {
    int digits = static_cast<int>(between(1, maxDigits));
    int64_t low = 1;
    for (int i = 1; i < digits; ++i)
      low *= 10;
    return between(digits == 1 ? 0 : low, low * 10 - 1);
  }

private:
  uint64_t seed, stream, index, draws = 0;
  uint64_t next() { return counterRandom(seed, stream, index, draws++); }
};

} // namespace drc

#endif // DRC_RUNTIME_COUNTERRANDOM_H
