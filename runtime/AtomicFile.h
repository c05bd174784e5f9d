//===- AtomicFile.h - Replace files; never half-written ---------*- C++ -*-===//
//
// Checkpoints and rewritten metrics files must survive a crash or power loss
// at any instant: the reader finds either the old file or the new one. The
// new content goes to `<path>.tmp.<pid>` in the same directory, is fsynced,
// renamed over `path` (atomic within one file system), and the directory is
// fsynced so that the rename itself is durable.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_ATOMICFILE_H
#define DRC_RUNTIME_ATOMICFILE_H

#include <cstddef>
#include <string>
#include <string_view>

namespace drc {

/// Writes a new version of one file. Nothing is visible at `path` until
/// commit() returns; if commit() is never reached (an exception, a crash) the
/// old file is untouched and the destructor removes the temporary.
class AtomicFileWriter {
public:
  /// Creates the temporary. Throws InputError if the directory does not exist
  /// or is not writable, drc::Error for other I/O failures.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

  /// Appends `size` bytes; retries short writes. Throws drc::Error (disk
  /// full, file too large, ...).
  void write(const void *data, size_t size);

  /// fsync, close, rename over the target, fsync the directory.
  void commit();

  /// The file that commit() replaces.
  const std::string &path() const { return target; }

private:
  std::string target;
  std::string temporary;
  int fd = -1;
};

/// Writes `contents` to `path` atomically (see AtomicFileWriter).
void writeFileAtomically(const std::string &path, std::string_view contents);

/// fsyncs the directory that holds `path`, so that a create or rename of
/// `path` survives power loss.
void syncParentDirectory(const std::string &path);

/// Throws for a failed system call on `path`, with strerror(errnum): an
/// InputError when the user can fix it by choosing another path (ENOENT,
/// EACCES, EROFS, ...), drc::Error otherwise.
[[noreturn]] void throwFileError(const std::string &what,
                                 const std::string &path, int errnum);

} // namespace drc

#endif // DRC_RUNTIME_ATOMICFILE_H
