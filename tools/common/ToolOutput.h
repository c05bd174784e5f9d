//===- ToolOutput.h - Where a compiler tool writes its result ---*- C++ -*-===//
//
// drc-compile and drc-instantiate write one text to `-o OUT` (atomically) or
// to standard output.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_TOOLS_COMMON_TOOLOUTPUT_H
#define DRC_TOOLS_COMMON_TOOLOUTPUT_H

#include <optional>
#include <string>
#include <vector>

namespace drc {

/// argv with `-o`, the one short option as in every compiler, spelled
/// `--output` for CommandLine.
std::vector<char *> withLongOutputOption(int argc, char **argv);

/// Writes `text` to `path` atomically, or to standard output when `path` is
/// absent or "-".
void writeOutput(const std::optional<std::string> &path,
                 const std::string &text);

} // namespace drc

#endif // DRC_TOOLS_COMMON_TOOLOUTPUT_H
