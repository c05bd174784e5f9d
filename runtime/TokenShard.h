//===- TokenShard.h - llm.c-compatible uint16 token shards ------*- C++ -*-===//
//
// The on-disk unit of training data. The format is llm.c's, so shards built
// by its data scripts work unchanged: a 1024-byte header of 256 little-endian
// int32 (magic 20240520, version 1, token count, the rest zero) followed by
// that many little-endian uint16 tokens.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TOKENSHARD_H
#define DRC_RUNTIME_TOKENSHARD_H

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace drc {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;
inline constexpr size_t kTokenShardHeaderBytes = 1024;
/// The header stores the count as int32.
inline constexpr size_t kTokenShardMaxTokens = INT32_MAX;

/// Reads and validates a whole shard. Throws InputError naming the file when
/// it is missing or unreadable, shorter than the header, has the wrong magic
/// or version, or its size disagrees with the token count in the header.
std::vector<uint16_t> readTokenShard(const std::filesystem::path &path);

/// Writes a shard atomically: a temporary file in the same directory is
/// written, fsynced and renamed over `path`, so a reader never sees a partial
/// shard. Throws InputError for more than kTokenShardMaxTokens tokens or a
/// path the user can fix (missing directory, no permission), drc::Error for
/// other I/O failures (disk full).
void writeTokenShard(const std::filesystem::path &path,
                     std::span<const uint16_t> tokens);

} // namespace drc

#endif // DRC_RUNTIME_TOKENSHARD_H
