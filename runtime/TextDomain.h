//===- TextDomain.h - Build a corpus domain from text files ----*- C++ -*-===//
//
// The byte-level path from text files to a corpus domain (drc-data text).
// Each file is one document. The val split takes whole documents spread
// evenly over the input, so it samples every part of it (every genre of a
// corpus whose files are sorted by genre) and no document is split between
// train and val.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_TEXTDOMAIN_H
#define DRC_RUNTIME_TEXTDOMAIN_H

#include "runtime/DomainWriter.h"

#include <filesystem>
#include <optional>
#include <span>

namespace drc {

struct TextDomainOptions {
  /// Share of the documents, and so on average of the bytes, that goes to
  /// val, in (0, 1).
  double valFraction = 0.05;
  /// When set, overrides valFraction with valBytes / total input bytes.
  std::optional<size_t> valBytes;
  size_t shardTokens = kDefaultShardTokens;
};

/// Writes `files`, in the order given, as a domain in `directory`.
///
/// With fraction F (valFraction, or valBytes / total input bytes), document
/// i goes to val when (k + 1/2) / F lies in [i, i + 1) for an integer k: one
/// document in every 1/F, evenly spaced and chosen without regard to size,
/// so val is an unbiased sample whose size is F of the input on average.
/// With a single file, the file's last F of bytes, starting at a line, is
/// the val document. Throws InputError for an unreadable file, a file with
/// a NUL byte, a split option out of range, or a split that leaves train or
/// val empty.
DomainSizes buildTextDomain(std::span<const std::filesystem::path> files,
                            const std::filesystem::path &directory,
                            const TextDomainOptions &options);

} // namespace drc

#endif // DRC_RUNTIME_TEXTDOMAIN_H
