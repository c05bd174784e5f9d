//===- Interrupt.cpp - Stop long work at a safe point on Ctrl-C -----------===//
#include "runtime/Interrupt.h"

namespace drc {

namespace {

volatile std::sig_atomic_t pendingSignal = 0;

/// Async-signal-safe: records the first signal; a second one restores the
/// default action and raises itself again, which ends the process.
extern "C" void onInterrupt(int signal) {
  if (pendingSignal != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  pendingSignal = signal;
}

} // namespace

InterruptRequests::InterruptRequests() {
  pendingSignal = 0;
  struct sigaction action = {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  // A read or write the signal lands in is restarted, not failed with EINTR.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previousInt);
  sigaction(SIGTERM, &action, &previousTerm);
}

InterruptRequests::~InterruptRequests() {
  sigaction(SIGINT, &previousInt, nullptr);
  sigaction(SIGTERM, &previousTerm, nullptr);
  pendingSignal = 0;
}

int InterruptRequests::requested() const { return pendingSignal; }

const char *signalName(int signal) {
  return signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
                             : "a signal";
}

} // namespace drc
