//===- CommandLine.h - Strict option parsing for drc tools ------*- C++ -*-===//
//
// `--name value`, `--name=value` and `--flag`, plus positional arguments.
// Anything unknown, repeated or missing its value is a UsageError that the
// tool reports with a pointer to --help and exit code 2.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_COMMANDLINE_H
#define DRC_RUNTIME_COMMANDLINE_H

#include "runtime/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace drc {

/// Wrong command-line usage.
class UsageError : public InputError {
public:
  using InputError::InputError;
};

class CommandLine {
public:
  /// Parses argv[1..]; `valued` options take a value, `flags` do not.
  CommandLine(int argc, char **argv, std::set<std::string> valued,
              std::set<std::string> flags);

  const std::vector<std::string> &positional() const { return args; }
  /// The one positional argument (`what` names it in the error otherwise).
  const std::string &onlyPositional(const std::string &what) const;
  /// Prints `text` to stdout when --help was given; true if it was.
  bool printedHelp(const char *text) const;
  bool flag(const std::string &name) const { return setFlags.count(name); }
  std::optional<std::string> value(const std::string &name) const;
  /// The value of a required option.
  std::string required(const std::string &name) const;
  /// An integer option (or `fallback` when absent), range-checked.
  int64_t integer(const std::string &name, int64_t fallback, int64_t min,
                  int64_t max) const;

private:
  std::vector<std::string> args;
  std::map<std::string, std::string> values;
  std::set<std::string> setFlags;
};

/// Runs `body` and turns drc errors into "tool: error: ..." and their exit
/// code; usage errors add a pointer to --help.
int runTool(const char *tool, int (*body)(int, char **), int argc, char **argv);

} // namespace drc

#endif // DRC_RUNTIME_COMMANDLINE_H
