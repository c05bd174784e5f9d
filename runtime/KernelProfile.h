//===- KernelProfile.h - Time per GPU kernel --------------------*- C++ -*-===//
//
// Where a GPU program's step time goes: the wall time of each launch, taken
// with the device synchronized after it, summed by kernel name. Profiling
// serialises the launches, so its total exceeds an unprofiled step's time;
// the shares are what it is for.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_KERNELPROFILE_H
#define DRC_RUNTIME_KERNELPROFILE_H

#include <cstdint>
#include <map>
#include <string>

namespace drc {

class KernelProfile {
public:
  void record(const std::string &kernel, double seconds);

  /// The `top` kernels by total time: launches, total ms, mean µs and share
  /// of all kernels' time, one per line under a header; then the total.
  std::string report(size_t top) const;

private:
  struct Total {
    int64_t launches = 0;
    double seconds = 0;
  };
  std::map<std::string, Total> totals;
};

} // namespace drc

#endif // DRC_RUNTIME_KERNELPROFILE_H
