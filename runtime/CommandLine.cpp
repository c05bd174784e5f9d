//===- CommandLine.cpp - Strict option parsing for drc tools -------------===//
#include "runtime/CommandLine.h"

#include <charconv>
#include <cstdio>
#include <exception>

namespace drc {

CommandLine::CommandLine(int argc, char **argv, std::set<std::string> valued,
                         std::set<std::string> flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      args.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    if (flags.count(name)) {
      if (hasValue)
        throw UsageError("--" + name + " takes no value");
      setFlags.insert(name);
      continue;
    }
    if (!valued.count(name))
      throw UsageError("unknown option --" + name);
    if (!hasValue) {
      if (i + 1 >= argc)
        throw UsageError("--" + name + " needs a value");
      value = argv[++i];
    }
    if (!values.emplace(name, value).second)
      throw UsageError("--" + name + " is given twice");
  }
}

const std::string &CommandLine::onlyPositional(const std::string &what) const {
  if (args.size() != 1)
    throw UsageError("expected exactly one " + what + ", got " +
                     std::to_string(args.size()));
  return args.front();
}

bool CommandLine::printedHelp(const char *text) const {
  if (!flag("help"))
    return false;
  std::fputs(text, stdout);
  return true;
}

std::optional<std::string> CommandLine::value(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end())
    return std::nullopt;
  return it->second;
}

std::string CommandLine::required(const std::string &name) const {
  std::optional<std::string> v = value(name);
  if (!v)
    throw UsageError("--" + name + " is required");
  return *v;
}

int64_t CommandLine::integer(const std::string &name, int64_t fallback,
                             int64_t min, int64_t max) const {
  std::optional<std::string> v = value(name);
  if (!v)
    return fallback;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size())
    throw UsageError("--" + name + " must be an integer, got '" + *v + "'");
  if (out < min || out > max)
    throw UsageError("--" + name + " must be in [" + std::to_string(min) +
                     ", " + std::to_string(max) + "], got " + *v);
  return out;
}

int runTool(const char *tool, int (*body)(int, char **), int argc,
            char **argv) {
  try {
    return body(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", tool, e.what(),
                 tool);
    return e.exitCode();
  } catch (const Interrupted &e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return e.exitCode();
  } catch (const Error &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return e.exitCode();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return kExitFailure;
  }
}

} // namespace drc
