//===- AtomicFile.cpp - Replace files; never half-written -----------------===//

#include "runtime/AtomicFile.h"

#include "runtime/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace drc {

void throwFileError(const std::string &what, const std::string &path,
                    int errnum) {
  std::string message =
      "cannot " + what + " " + path + ": " + std::strerror(errnum);
  switch (errnum) {
  case ENOENT:
  case ENOTDIR:
  case EACCES:
  case EPERM:
  case EROFS:
  case EISDIR:
  case ENAMETOOLONG:
    throw InputError(message + "; check the path and its permissions");
  default:
    throw Error(message);
  }
}

AtomicFileWriter::AtomicFileWriter(std::string path)
    : target(std::move(path)),
      temporary(target + ".tmp." + std::to_string(getpid())) {
  fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throwFileError("create", temporary, errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd >= 0) {
    ::close(fd);
    ::unlink(temporary.c_str());
  }
}

void AtomicFileWriter::write(const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throwFileError("write", temporary, errno);
    bytes += n;
    size -= size_t(n);
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd) != 0)
    throwFileError("fsync", temporary, errno);
  int closed = ::close(fd);
  fd = -1;
  // Some file systems (NFS) report deferred write errors only at close.
  if (closed != 0) {
    int errnum = errno;
    ::unlink(temporary.c_str());
    throwFileError("close", temporary, errnum);
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    int errnum = errno;
    ::unlink(temporary.c_str());
    throwFileError("rename " + temporary + " to", target, errnum);
  }
  syncParentDirectory(target);
}

void writeFileAtomically(const std::string &path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.write(contents.data(), contents.size());
  writer.commit();
}

void syncParentDirectory(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    throwFileError("open directory", dir, errno);
  int synced = ::fsync(dirFd);
  int errnum = errno;
  ::close(dirFd);
  // Some file systems cannot fsync a directory (EINVAL); the rename is then
  // as durable as that file system allows.
  if (synced != 0 && errnum != EINVAL)
    throwFileError("fsync directory", dir, errnum);
}

} // namespace drc
