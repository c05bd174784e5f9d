//===- ToolOutput.cpp - Where a compiler tool writes its result ----------===//
#include "tools/common/ToolOutput.h"

#include "runtime/AtomicFile.h"

#include <cstdio>

std::vector<char *> drc::withLongOutputOption(int argc, char **argv) {
  std::vector<char *> args(argv, argv + argc);
  for (char *&a : args)
    if (std::string(a) == "-o")
      a = const_cast<char *>("--output");
  return args;
}

void drc::writeOutput(const std::optional<std::string> &path,
                      const std::string &text) {
  if (!path || *path == "-")
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    writeFileAtomically(*path, text);
}
