//===- Error.h - Errors a user can act on ----------------------*- C++ -*-===//
//
// The runtime reports every failure a user can fix (a bad data shard, a
// checkpoint that does not match the spec, an unwritable run directory) as a
// drc::Error whose message names the file and says what is wrong. Tools catch
// it in main, print "drc-<tool>: error: <message>" and exit with exitCode().
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_ERROR_H
#define DRC_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace drc {

/// Exit codes shared by every drc tool.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1, ///< a failure during work (I/O error, divergence, ...)
  kExitBadInput =
      2, ///< the user's input is wrong (spec, data, checkpoint, flags)
  kExitInterrupted = 130, ///< stopped by SIGINT or SIGTERM, as shells count it
};

/// A failure with a message for the user.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message, int exitCode = kExitFailure)
      : std::runtime_error(message), code(exitCode) {}
  int exitCode() const { return code; }

private:
  int code;
};

/// The user's input is wrong; the message says where and what to do.
class InputError : public Error {
public:
  explicit InputError(const std::string &message)
      : Error(message, kExitBadInput) {}
};

/// The work stopped at a signal's request (Interrupt.h) after saving what
/// it had done; the message says how to continue.
class Interrupted : public Error {
public:
  explicit Interrupted(const std::string &message)
      : Error(message, kExitInterrupted) {}
};

} // namespace drc

#endif // DRC_RUNTIME_ERROR_H
