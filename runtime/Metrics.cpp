//===- Metrics.cpp - metrics.jsonl: one JSON object per eval --------------===//

#include "runtime/Metrics.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>
#include <utility>

namespace drc {

namespace {

int openForAppend(const std::string &path, int extraFlags) {
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | extraFlags, 0644);
  if (fd < 0)
    throwFileError("open", path, errno);
  return fd;
}

/// The whole file, or false if it does not exist.
bool readWholeFile(const std::string &path, std::string &contents) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return false;
    throwFileError("open", path, errno);
  }
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int errnum = errno;
      ::close(fd);
      throwFileError("read", path, errnum);
    }
    if (n == 0)
      break;
    contents.append(buf, size_t(n));
  }
  ::close(fd);
  return true;
}

} // namespace

bool isTimingField(std::string_view key) {
  return key.ends_with("_s") || key.ends_with("_ms");
}

MetricsWriter MetricsWriter::create(const std::string &path) {
  int fd = openForAppend(path, O_TRUNC);
  MetricsWriter writer(path, fd);
  syncParentDirectory(path);
  return writer;
}

MetricsWriter MetricsWriter::openForResume(const std::string &path,
                                           int64_t resumeStep) {
  std::string contents;
  if (!readWholeFile(path, contents))
    return create(path);

  std::string kept;
  bool changed = false;
  int lineNo = 0;
  for (size_t start = 0; start < contents.size();) {
    ++lineNo;
    size_t end = contents.find('\n', start);
    if (end == std::string::npos) {
      // Cut off by a crash mid-write: never a complete record.
      changed = true;
      break;
    }
    std::string_view line(contents.data() + start, end - start);
    start = end + 1;
    JsonValue record = parseJson(line, path, lineNo);
    const JsonValue *step = record.isObject() ? record.find("step") : nullptr;
    if (!step || !step->isInt64())
      throw InputError(path + ":" + std::to_string(lineNo) +
                       ": metrics line has no integer \"step\"; the file is "
                       "not a drc metrics.jsonl (move it away to start anew)");
    if (step->asInt64() > resumeStep) {
      changed = true;
      continue;
    }
    kept.append(line);
    kept += '\n';
  }
  if (changed)
    writeFileAtomically(path, kept);
  return MetricsWriter(path, openForAppend(path, 0));
}

MetricsWriter::~MetricsWriter() {
  if (fd >= 0)
    ::close(fd);
}

MetricsWriter::MetricsWriter(MetricsWriter &&other) noexcept
    : path_(std::move(other.path_)), fd(other.fd) {
  other.fd = -1;
}

MetricsWriter &MetricsWriter::operator=(MetricsWriter &&other) noexcept {
  std::swap(path_, other.path_);
  std::swap(fd, other.fd);
  return *this;
}

void MetricsWriter::write(const JsonValue &record) {
  const JsonValue *step = record.isObject() ? record.find("step") : nullptr;
  if (!step || !step->isInt64())
    throw Error("metrics record needs an integer \"step\": " + toJson(record));
  std::string line = toJson(record) + "\n";
  // One write() per line: with O_APPEND a crash can cut a line short but
  // never interleave two.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throwFileError("write", path_, errno);
    done += size_t(n);
  }
  if (::fdatasync(fd) != 0)
    throwFileError("fsync", path_, errno);
}

} // namespace drc
