//===- DomainWriter.h - Write one corpus domain of byte tokens --*- C++ -*-===//
//
// Turns documents of bytes into a corpus domain directory (train_NNNNNN.bin,
// val_NNNNNN.bin) with the byte-level tokenizer: token = byte value, vocabulary
// 256. Every document is preceded by kDocumentSeparator, as llm.c precedes
// each document with its end-of-text token, so a model sees where documents
// begin and a window never silently joins two texts.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_DOMAINWRITER_H
#define DRC_RUNTIME_DOMAINWRITER_H

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace drc {

/// Vocabulary of the byte-level tokenizer.
inline constexpr uint32_t kByteVocabSize = 256;
/// Starts every document. Text files never contain NUL, so the token is free.
inline constexpr uint8_t kDocumentSeparator = 0;
/// llm.c's shard size; the bundled corpus fits one shard per split.
inline constexpr size_t kDefaultShardTokens = 100'000'000;

/// What was written to one split of a domain.
struct SplitSizes {
  size_t documents = 0;
  size_t tokens = 0; ///< bytes plus one separator per document
  size_t shards = 0;
};

struct DomainSizes {
  SplitSizes train;
  SplitSizes val;
};

/// Streams documents into numbered shards of at most `shardTokens` tokens.
/// Shards are written as they fill, so memory stays at one shard per split.
class DomainWriter {
public:
  /// Creates `directory` and deletes train_NNNNNN.bin / val_NNNNNN.bin files
  /// an earlier build left there, so the result never mixes two builds.
  DomainWriter(std::filesystem::path directory, size_t shardTokens);

  /// Appends a document; `source` names it in the error for a NUL byte.
  void addTrain(std::string_view document, std::string_view source);
  void addVal(std::string_view document, std::string_view source);

  /// Writes the partial last shards and returns the sizes. Throws InputError
  /// when a split received no document.
  DomainSizes finish();

private:
  struct Split {
    const char *name;
    std::vector<uint16_t> pending;
    SplitSizes sizes;
  };

  std::filesystem::path directory;
  size_t shardTokens;
  Split train{"train", {}, {}};
  Split val{"val", {}, {}};

  void add(Split &split, std::string_view document, std::string_view source);
  void flush(Split &split);
};

/// Writes documents 0, 1, ... of a generated domain (`document(val, index)`)
/// to `directory` until train has at least `trainBytes` bytes of text and val
/// at least `valBytes`. Throws InputError naming the domain `what` when a
/// size is zero.
DomainSizes buildGeneratedDomain(
    const std::filesystem::path &directory, std::string_view what,
    size_t trainBytes, size_t valBytes, size_t shardTokens,
    const std::function<std::string(bool val, uint64_t index)> &document);

/// `train_000003.bin` for ("train", 3).
std::string shardFileName(std::string_view split, size_t index);

} // namespace drc

#endif // DRC_RUNTIME_DOMAINWRITER_H
