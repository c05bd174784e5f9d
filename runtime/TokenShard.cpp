//===- TokenShard.cpp - llm.c-compatible uint16 token shards --------------===//
#include "runtime/TokenShard.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

// Shards are raw little-endian arrays, read and written as host memory.
static_assert(
    std::endian::native == std::endian::little,
    "token shards are little-endian; add byte swapping for this host");

namespace drc {
namespace {

std::string quoted(const std::filesystem::path &path) {
  return "'" + path.string() + "'";
}

/// Owns a POSIX file descriptor.
class File {
public:
  explicit File(int fd) : fd(fd) {}
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  ~File() {
    if (fd >= 0)
      ::close(fd);
  }
  int get() const { return fd; }

private:
  int fd;
};

/// Reads exactly `size` bytes; false on EOF or error (errno set on error).
bool readFully(int fd, void *data, size_t size) {
  auto *bytes = static_cast<char *>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, bytes, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

std::vector<uint16_t> readTokenShard(const std::filesystem::path &path) {
  File file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0)
    throw InputError("cannot open token shard " + quoted(path) + ": " +
                     std::strerror(errno));
  struct stat info;
  if (::fstat(file.get(), &info) != 0)
    throw InputError("cannot stat token shard " + quoted(path) + ": " +
                     std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    throw InputError(quoted(path) + " is not a regular file; expected a token "
                                    "shard");
  auto fileBytes = static_cast<size_t>(info.st_size);
  if (fileBytes < kTokenShardHeaderBytes)
    throw InputError(
        "token shard " + quoted(path) + " has " + std::to_string(fileBytes) +
        " bytes, fewer than the " + std::to_string(kTokenShardHeaderBytes) +
        "-byte header; the file is truncated or not a token shard");

  int32_t header[kTokenShardHeaderBytes / sizeof(int32_t)];
  if (!readFully(file.get(), header, sizeof(header)))
    throw InputError("cannot read the header of token shard " + quoted(path) +
                     ": " + std::strerror(errno));
  if (header[0] != kTokenShardMagic)
    throw InputError("token shard " + quoted(path) + " has magic " +
                     std::to_string(header[0]) + ", expected " +
                     std::to_string(kTokenShardMagic) +
                     "; it is not an llm.c uint16 token shard");
  if (header[1] != kTokenShardVersion)
    throw InputError("token shard " + quoted(path) + " has version " +
                     std::to_string(header[1]) + ", expected " +
                     std::to_string(kTokenShardVersion) +
                     " (uint16 tokens); rebuild it with drc-data");
  if (header[2] < 0)
    throw InputError("token shard " + quoted(path) +
                     " has a negative token count " +
                     std::to_string(header[2]) + " in its header");

  auto tokenCount = static_cast<size_t>(header[2]);
  size_t expectedBytes = kTokenShardHeaderBytes + tokenCount * sizeof(uint16_t);
  if (fileBytes != expectedBytes)
    throw InputError("token shard " + quoted(path) + " header says " +
                     std::to_string(tokenCount) + " tokens (" +
                     std::to_string(expectedBytes) +
                     " bytes with the header) but the file has " +
                     std::to_string(fileBytes) + " bytes: " +
                     (fileBytes < expectedBytes
                          ? "the file is truncated"
                          : "the file has trailing bytes") +
                     "; rebuild the shard");

  std::vector<uint16_t> tokens(tokenCount);
  if (!readFully(file.get(), tokens.data(), tokenCount * sizeof(uint16_t)))
    throw InputError("cannot read the tokens of token shard " + quoted(path) +
                     ": " + std::strerror(errno));
  return tokens;
}

void writeTokenShard(const std::filesystem::path &path,
                     std::span<const uint16_t> tokens) {
  if (tokens.size() > kTokenShardMaxTokens)
    throw InputError("cannot write " + std::to_string(tokens.size()) +
                     " tokens to " + quoted(path) + ": a shard holds at most " +
                     std::to_string(kTokenShardMaxTokens) +
                     "; use smaller shards");

  int32_t header[kTokenShardHeaderBytes / sizeof(int32_t)] = {};
  header[0] = kTokenShardMagic;
  header[1] = kTokenShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());

  AtomicFileWriter file(path.string());
  file.write(header, sizeof(header));
  file.write(tokens.data(), tokens.size_bytes());
  file.commit();
}

} // namespace drc
