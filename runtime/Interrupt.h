//===- Interrupt.h - Stop long work at a safe point on Ctrl-C ---*- C++ -*-===//
//
// A training run interrupted by Ctrl-C (SIGINT) or a job scheduler's SIGTERM
// should keep what it has done: while an InterruptRequests lives, the first
// such signal only records that the work should stop, and the work checks
// requested() where stopping loses nothing (drc's trainer: after a step,
// having written a checkpoint). A second signal ends the process as if no
// handler were installed, for work that does not reach such a point soon.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_INTERRUPT_H
#define DRC_RUNTIME_INTERRUPT_H

#include <csignal>

namespace drc {

class InterruptRequests {
public:
  /// Installs the handlers for SIGINT and SIGTERM; one instance at a time.
  InterruptRequests();
  /// Restores the handlers it replaced and forgets a request.
  ~InterruptRequests();
  InterruptRequests(const InterruptRequests &) = delete;
  InterruptRequests &operator=(const InterruptRequests &) = delete;

  /// The signal that asked the work to stop (SIGINT or SIGTERM), or 0.
  int requested() const;

private:
  struct sigaction previousInt, previousTerm;
};

/// The signal's name as a shell user knows it: "SIGINT" or "SIGTERM".
const char *signalName(int signal);

} // namespace drc

#endif // DRC_RUNTIME_INTERRUPT_H
