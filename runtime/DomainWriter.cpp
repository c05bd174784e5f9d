//===- DomainWriter.cpp - Write one corpus domain of byte tokens ----------===//
#include "runtime/DomainWriter.h"

#include "runtime/Error.h"
#include "runtime/TokenShard.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace fs = std::filesystem;

namespace drc {
namespace {

/// True for the names shardFileName produces.
bool isNumberedShard(const std::string &name) {
  for (std::string_view split : {"train_", "val_"}) {
    if (!name.starts_with(split) || !name.ends_with(".bin"))
      continue;
    std::string_view digits(name.data() + split.size(),
                            name.size() - split.size() - 4);
    if (digits.size() == 6 &&
        std::all_of(digits.begin(), digits.end(),
                    [](char c) { return std::isdigit(c) != 0; }))
      return true;
  }
  return false;
}

} // namespace

std::string shardFileName(std::string_view split, size_t index) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "_%06zu.bin", index);
  return std::string(split) + digits;
}

DomainWriter::DomainWriter(fs::path directory, size_t shardTokens)
    : directory(std::move(directory)), shardTokens(shardTokens) {
  if (shardTokens == 0 || shardTokens > kTokenShardMaxTokens)
    throw InputError("shard size " + std::to_string(shardTokens) +
                     " tokens is out of range 1.." +
                     std::to_string(kTokenShardMaxTokens));
  std::error_code error;
  fs::create_directories(this->directory, error);
  if (error)
    throw Error("cannot create the domain directory '" +
                this->directory.string() + "': " + error.message());
  for (const fs::directory_entry &entry :
       fs::directory_iterator(this->directory))
    if (isNumberedShard(entry.path().filename().string()))
      fs::remove(entry.path());
}

void DomainWriter::addTrain(std::string_view document,
                            std::string_view source) {
  add(train, document, source);
}

void DomainWriter::addVal(std::string_view document, std::string_view source) {
  add(val, document, source);
}

void DomainWriter::add(Split &split, std::string_view document,
                       std::string_view source) {
  size_t nul = document.find(char(kDocumentSeparator));
  if (nul != std::string_view::npos)
    throw InputError(std::string(source) + " has a NUL byte at offset " +
                     std::to_string(nul) +
                     ": it is not a text file (NUL separates documents in "
                     "byte-level shards)");
  split.pending.push_back(kDocumentSeparator);
  for (char byte : document) {
    if (split.pending.size() == shardTokens)
      flush(split);
    split.pending.push_back(static_cast<uint8_t>(byte));
  }
  ++split.sizes.documents;
  split.sizes.tokens += document.size() + 1;
  if (split.pending.size() == shardTokens)
    flush(split);
}

void DomainWriter::flush(Split &split) {
  writeTokenShard(directory / shardFileName(split.name, split.sizes.shards),
                  split.pending);
  ++split.sizes.shards;
  split.pending.clear();
}

DomainSizes DomainWriter::finish() {
  for (Split *split : {&train, &val}) {
    if (split->sizes.documents == 0)
      throw InputError("no " + std::string(split->name) +
                       " document for the domain in '" + directory.string() +
                       "'; give more input or change the val split");
    if (!split->pending.empty())
      flush(*split);
  }
  return {train.sizes, val.sizes};
}

DomainSizes buildGeneratedDomain(
    const std::filesystem::path &directory, std::string_view what,
    size_t trainBytes, size_t valBytes, size_t shardTokens,
    const std::function<std::string(bool val, uint64_t index)> &document) {
  if (trainBytes == 0 || valBytes == 0)
    throw InputError("the " + std::string(what) +
                     " domain needs a positive number of train and val "
                     "bytes, got " +
                     std::to_string(trainBytes) + " and " +
                     std::to_string(valBytes));
  DomainWriter writer(directory, shardTokens);
  for (bool val : {false, true}) {
    size_t written = 0, wanted = val ? valBytes : trainBytes;
    for (uint64_t index = 0; written < wanted; ++index) {
      std::string text = document(val, index);
      std::string source =
          std::string(what) + " document " + std::to_string(index);
      val ? writer.addVal(text, source) : writer.addTrain(text, source);
      written += text.size();
    }
  }
  return writer.finish();
}

} // namespace drc
