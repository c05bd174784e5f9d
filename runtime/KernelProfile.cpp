//===- KernelProfile.cpp - Time per GPU kernel ---------------------------===//
#include "runtime/KernelProfile.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace drc {

void KernelProfile::record(const std::string &kernel, double seconds) {
  Total &t = totals[kernel];
  ++t.launches;
  t.seconds += seconds;
}

std::string KernelProfile::report(size_t top) const {
  std::vector<std::pair<std::string, Total>> sorted(totals.begin(),
                                                    totals.end());
  std::sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) {
    return a.second.seconds != b.second.seconds
               ? a.second.seconds > b.second.seconds
               : a.first < b.first;
  });
  double all = 0;
  int64_t launches = 0;
  for (const auto &[name, t] : sorted) {
    all += t.seconds;
    launches += t.launches;
  }
  std::string out =
      "kernel                               launches   total ms    "
      "mean us   share\n";
  char line[160];
  for (size_t i = 0; i < sorted.size() && i < top; ++i) {
    const auto &[name, t] = sorted[i];
    std::snprintf(line, sizeof line, "%-36s %8lld %10.2f %10.1f %6.1f%%\n",
                  name.c_str(), static_cast<long long>(t.launches),
                  1e3 * t.seconds, 1e6 * t.seconds / double(t.launches),
                  all > 0 ? 100 * t.seconds / all : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-36s %8lld %10.2f   (%zu kernels)\n",
                "all", static_cast<long long>(launches), 1e3 * all,
                sorted.size());
  return out + line;
}

} // namespace drc
