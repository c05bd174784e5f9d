//===- ScratchDirectory.h - A temporary directory for one test --*- C++ -*-===//
#ifndef DRC_TEST_UNIT_RUNTIME_SCRATCHDIRECTORY_H
#define DRC_TEST_UNIT_RUNTIME_SCRATCHDIRECTORY_H

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace drc::test {

/// A fresh directory under $TMPDIR, removed with everything in it when the
/// test ends, so tests run in parallel without sharing files.
class ScratchDirectory {
public:
  ScratchDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "drc-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("mkdtemp failed for " + pattern);
    root = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }
  ScratchDirectory(const ScratchDirectory &) = delete;
  ScratchDirectory &operator=(const ScratchDirectory &) = delete;

  const std::filesystem::path &path() const { return root; }
  std::filesystem::path operator/(const std::string &name) const {
    return root / name;
  }

private:
  std::filesystem::path root;
};

} // namespace drc::test

#endif // DRC_TEST_UNIT_RUNTIME_SCRATCHDIRECTORY_H
