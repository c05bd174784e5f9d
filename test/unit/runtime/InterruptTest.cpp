//===- InterruptTest.cpp - SIGINT and SIGTERM stop work at a safe point ---===//
//
// Each case runs in a forked child, so a signal that ends the process ends
// only the child.
//
//===----------------------------------------------------------------------===//
#include "runtime/Interrupt.h"

#include <catch2/catch.hpp>

#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace {

/// The wait status of a child process that runs `body` and exits with what
/// it returns.
template <typename Body> int inChild(Body body) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

} // namespace

TEST_CASE("the first SIGINT or SIGTERM is a request to stop", "[interrupt]") {
  for (int signal : {SIGINT, SIGTERM}) {
    int status = inChild([signal] {
      drc::InterruptRequests interrupts;
      if (interrupts.requested() != 0)
        return 10;
      std::raise(signal);
      return interrupts.requested() == signal ? 0 : 11;
    });
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("a second signal ends the process at once", "[interrupt]") {
  int status = inChild([] {
    drc::InterruptRequests interrupts;
    std::raise(SIGINT);
    std::raise(SIGTERM);
    return 0; // not reached
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("the handlers it replaced come back, with no request left",
          "[interrupt]") {
  int status = inChild([] {
    {
      drc::InterruptRequests interrupts;
      std::raise(SIGINT);
    }
    {
      drc::InterruptRequests again;
      if (again.requested() != 0)
        return 10;
    }
    std::raise(SIGINT); // the default action: the process ends
    return 0;           // not reached
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(std::string(drc::signalName(SIGTERM)) == "SIGTERM");
}
